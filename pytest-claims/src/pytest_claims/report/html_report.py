"""HTML of the verdict report, rendered from a verdicts.json payload.

The same pieces serve the pytest-html report (its summary section) and the standalone page that the merge
command writes: what changed since the previous run, filters, the false-alarm budget, then one table per paper
with a row per claim (its text, verdict and reason, power, key numbers, figure) and below it, across the full
width, a fold of its statement runs (refutation messages, evidence as named values, figures, mutants).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_claims.model.inputs import file_within
from pytest_claims.outcomes import HELD, NEUTRAL_COLOUR, OUTCOME_COLOURS, REFUTED, SKIPPED, VERDICTS, Expected, Verdict
from pytest_claims.outcomes import VERDICT_COLOURS as COLOURS
from pytest_claims.report.charts import anytime_blocks, bounds_svg, chain_svg
from pytest_claims.report.replication import replication_html
from pytest_claims.report.style import SCRIPT, STYLE, badge, esc
from pytest_claims.stats.shown_numbers import counted, significant
from pytest_claims.model.verdicts import END_ERRORED, END_SURVIVED, END_UNDECIDED, KILL_GUARD, KILL_REFUTED, end_of


def _rounded(value: Any) -> Any:
    """The value with every float in it cut to its shown digits (for display only; the full value is in the
    evidence's JSON fold)."""
    if isinstance(value, float):
        return float(significant(value))
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def number(value: Any, limit: int = 160) -> str:
    if isinstance(value, float):
        return significant(value)
    if isinstance(value, (list, dict)):
        text = json.dumps(_rounded(value))
        return esc(text if len(text) < limit else text[: limit - 3] + "...")
    return esc(value)


def named_values(value: Any, limit: int = 400) -> str:
    """A value as a reader reads it: a record's fields as 'name = value' pairs (unset ones left out), a number
    to its shown digits (pytest_claims.stats.shown_numbers), anything deeper as compact JSON of its rounded numbers."""
    if isinstance(value, dict) and value:
        shown = [f"{esc(k)} = {number(v, 120)}" for k, v in value.items() if v is not None]
        return "; ".join(shown) or "&mdash;"
    return number(value, limit)


def slug(text: str) -> str:
    """An id attribute (and URL fragment) for a claim or statement test: no whitespace, quotes or brackets."""
    return re.sub(r"[^A-Za-z0-9_.:/=-]+", "-", text).strip("-")


def permalink(anchor: str) -> str:
    return f'<a class="permalink" href="#{esc(anchor)}" title="permanent link">#</a>'


def _image(report_dir: Path | None, path: str) -> str | None:
    file = file_within(report_dir, path) if report_dir is not None else None
    if file is None:  # never a file outside the report directory, whatever the payload says
        return None
    return "data:image/png;base64," + base64.b64encode(file.read_bytes()).decode("ascii")


def _mutant_end(result: dict[str, Any]) -> str:
    end = end_of(result)
    if end == KILL_REFUTED:
        return "killed through the statement"
    if end == KILL_GUARD:
        return "killed by a reference check in the test body"
    return {END_SURVIVED: "SURVIVED", END_ERRORED: "ERRORED (not a kill)", END_UNDECIDED: "UNDECIDED (not a kill)"}.get(
        end, end
    )


def _power_cell(power: dict[str, Any] | None) -> str:
    if not power:
        return "<small>not run (--mutants)</small>"
    failing = power["survivors"] or power.get("unexplained")
    colour = "#cf222e" if failing or power["killed"] + power.get("expected", 0) < power["of"] else "#1a7f37"
    text = f"killed {power['killed']} of {power['of']}"
    out = badge(text, colour)
    ends = power.get("labels") or power.get("kinds") or {}  # by kind in a verdicts.json written before the labels
    kinds = ", ".join(f"{kind} {count}" for kind, count in ends.items() if count)
    if kinds:
        expected = f"; {power['expected']} as the registry expects" if power.get("expected") else ""
        out += f"<br><small>{esc(kinds)}{esc(expected)}</small>"
    if power["survivors"]:
        out += "<br><small>survived: " + esc(", ".join(power["survivors"])) + "</small>"
    if power.get("unexplained"):
        out += "<br><small>not killed: " + esc(", ".join(power["unexplained"])) + "</small>"
    return out


def _key_numbers(record: dict[str, Any]) -> str:
    lines = []
    for entry in record.get("key_numbers", []):
        values = entry["values"]
        if not values:
            lines.append(f"{esc(entry['label'])}: &mdash;")
        elif len(values) == 1:
            lines.append(f"{esc(entry['label'])} = <b>{number(values[0]['value'], 80)}</b>")
        else:
            shown = "; ".join(f"<b>{number(v['value'], 60)}</b> [{esc(v['run'])}]" for v in values)
            if len(values) > INLINE_VALUES:  # a parametrised statement: its range per tier, every value folded
                shown = f"{_ranges_by_tier(values)} <details><summary>all {len(values)}</summary>{shown}</details>"
            lines.append(f"{esc(entry['label'])} = {shown}")
    return "<br>".join(lines) or "&mdash;"


INLINE_VALUES = 4  # more values than this (one per parametrised run) are summarised as a range per tier


def _ranges_by_tier(values: list[dict[str, Any]]) -> str:
    """'<b>lo</b> .. <b>hi</b> [tier, n runs]' per tier, in order of appearance (the one value if all are
    equal; the first value and a count where they are not all numbers)."""
    tiers: dict[str, list[Any]] = {}
    for v in values:
        tiers.setdefault(str(v.get("tier", "")), []).append(v["value"])
    parts = []
    for tier, items in tiers.items():
        numeric = [x for x in items if isinstance(x, (int, float)) and not isinstance(x, bool)]
        where = f"[{esc(tier)}, {len(items)} run{'s' if len(items) > 1 else ''}]"
        if len(numeric) == len(items) and min(numeric) != max(numeric):
            parts.append(f"<b>{number(min(numeric), 30)}</b> .. <b>{number(max(numeric), 30)}</b> {where}")
        elif all(x == items[0] for x in items):
            parts.append(f"<b>{number(items[0], 60)}</b>{' (all)' if len(items) > 1 else ''} {where}")
        else:
            parts.append(f"<b>{number(items[0], 60)}</b>, ... {where}")
    return "; ".join(parts)


def _bold(text: str, bold: bool) -> str:
    return f"<b>{text}</b>" if bold else text


def evidence_table(evidence: dict[str, Any]) -> str:
    names = list(evidence.get("headline", [])) + sorted(
        k for k in evidence if k != "headline" and k not in evidence.get("headline", [])
    )
    headline = set(evidence.get("headline", []))
    rows = "".join(
        f"<tr><td><code>{esc(k)}</code></td><td>{_bold(named_values(evidence[k]), k in headline)}</td></tr>"
        for k in names
        if k in evidence
    )
    return f'<table class="ev">{rows}</table>' if rows else ""


def evidence_json(evidence: dict[str, Any]) -> str:
    """The evidence exactly as recorded (every digit), one fold below its named values."""
    if not evidence:
        return ""
    # one line per recorded name: a deep record stays a readable block, not one number per line
    text = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, default=str)}" for k, v in evidence.items()) + "\n}"
    return f'<details><summary><small>evidence as JSON</small></summary><pre class="json">{esc(text)}</pre></details>'


def changed_rules(record: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The claim's statements whose rule changed after their data (the registry's changed_after_data), by name."""
    registered = record.get("registry", {}).get("statements", {})
    return {name: entry["changed_after_data"] for name, entry in registered.items() if entry.get("changed_after_data")}


def changed_rule_html(name: str, changed: dict[str, str]) -> str:
    """One line saying that a statement's test, level or expectation changed after its data: when, where, why."""
    return (
        f'<small class="changed-after-data"><b>rule changed after its data</b> ({esc(name)}): '
        f"{esc(changed.get('date', ''))}, commit <code>{esc(changed.get('commit', ''))}</code>: "
        f"{esc(changed.get('why', ''))}</small>"
    )


def _statement_details(
    run: dict[str, Any],
    report_dir: Path | None,
    store_events: list[dict[str, Any]],
    changed: dict[str, str] | None = None,
) -> str:
    outcome = run["outcome"]
    label = f"{outcome} (registered: {run['expected']})"
    anchor = slug(run["test"])
    parts = [
        f'<details id="{esc(anchor)}"><summary>',
        (
            f"<code>{esc(run['statement'])}</code> [{esc(run['tier'])}] "
            f"{badge(label, OUTCOME_COLOURS.get(outcome, NEUTRAL_COLOUR))} "
        ),
        f"<small>{esc(run['test'])}</small>{permalink(anchor)}</summary>",
        *([f"<p>{changed_rule_html(run['statement'], changed)}</p>"] if changed else []),
        f"<p><i>{esc(run['text'])}</i></p>",
    ]
    if run.get("reason"):
        what = "refuted" if outcome == REFUTED else "reason"  # a refutation's message, not its traceback
        parts.append(
            f'<p class="{"refutation" if outcome == REFUTED else "reason"}"><b>{what}:</b> {esc(run["reason"])}</p>'
        )
    if run.get("false_alarm"):
        parts.append(f"<p><small>registered false-alarm probability at this tier: {run['false_alarm']:.3g}</small></p>")
    if run.get("inconclusive_chance") is not None:
        parts.append(
            "<p><small>chance of an inconclusive end at this sample size (were the true value the observed one): "
            f"{run['inconclusive_chance']:.3g}</small></p>"
        )
    parts.append(evidence_table(run.get("evidence", {})))
    parts.extend(chain_svg(name, value["anytime"]) for name, value in anytime_blocks(run.get("evidence", {})))
    parts.append(evidence_json(run.get("evidence", {})))
    for figure in run.get("figures", []):
        src = _image(report_dir, figure["path"])
        parts.append(
            f"<p>{esc(figure['title'])}<br>"
            + (
                f'<img class="figure" tabindex="0" src="{src}" title="click: full size">'
                if src
                else f"<code>{esc(figure['path'])}</code>"
            )
            + "</p>"
        )
    if run.get("mutants"):
        items = "".join(
            f"<li>{esc(m['mutant'])}: {esc(_mutant_end(m))} "
            f"({esc(m['outcome'])}{': ' + esc(m['detail']) if m.get('detail') else ''})</li>"
            for m in run["mutants"]
        )
        parts.append(f"<p><b>mutants</b></p><ul>{items}</ul>")
    if store_events:
        items = "".join(
            f"<li>{esc(e['name'])}: {esc(e['status'])}"
            + (f" at step {esc(e['resumed_from_step'])}" if e.get("resumed_from_step") not in (None, -1) else "")
            + f" ({e['seconds']:.2f} s, key {esc(e['key'][:12])})"
            + (f"<br><b>{esc(e['note'])}</b>" if e.get("note") else "")
            + "</li>"
            for e in store_events
        )
        parts.append(f"<p><b>results</b></p><ul>{items}</ul>")
    parts.append("</details>")
    return "".join(parts)


def _conditions(changes: dict[str, Any]) -> list[dict[str, str]]:
    """The conditions the two runs differ in, escaped (they come from files)."""
    return [{k: esc(c.get(k, "")) for k in ("name", "before", "after")} for c in changes.get("conditions") or []]


def changes_html(changes: dict[str, Any] | None) -> str:
    if not changes:
        return ""
    selection = changes.get("selection") or []
    differ = ", ".join(f"{c['name']} {c['before']} &rarr; {c['after']}" for c in _conditions(changes))
    differ = f" <small>(the runs differ in {differ})</small>" if differ else ""
    if not changes["claims"] and not changes["statements"] and not selection:
        return f'<div class="changes"><b>Changed since the previous run:</b> nothing.{differ}</div>'
    claim = "<li><b>{key}</b> <code>{id}</code>: {before} &rarr; <b>{after}</b></li>"
    test = "<li>{claim} / {statement}: {before} &rarr; <b>{after}</b> <small>{test}</small></li>"
    parts = [f'<div class="changes"><b>Changed since the previous run</b>{differ}']
    for title, rows, row in (
        ("", changes["claims"], claim),
        ("", changes["statements"], test),
        ("Selected by only one of the two runs, not compared:", selection, claim),
    ):
        if rows:
            items = "".join(row.format(**{k: esc(v) for k, v in r.items()}) for r in rows)
            parts.append(f"{esc(title)}<ul>{items}</ul>")
    parts.append("</div>")
    return "".join(parts)


def _runs_html(payload: dict[str, Any]) -> str:
    runs = payload.get("runs", [])
    columns = ["tier", "host", "device", "commit", "date", "store", "source"]
    heads = ["tier", "host", "device", "commit", "date", "result store", "verdicts"]
    if any("seed" in run for run in runs):  # a replication set: which seed each run had
        columns, heads = ["seed", *columns], ["seed", *heads]
    rows = "".join("<tr>" + "".join(f"<td>{esc(run.get(k, ''))}</td>" for k in columns) + "</tr>" for run in runs)
    return "<table><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr>" + rows + "</table>"


def false_alarm_html(table: dict[str, Any] | None) -> str:
    """Per tier: each statement's registered false-alarm probability, its basis, and the tier's sum."""
    if not table or not table.get("tiers"):
        return ""
    parts = [
        "<h2>False-alarm budget</h2><p><small>The probability that a statement ends against the registry although it "
        "is true (random draws, chaotic trajectories), as registered; the sum is a union bound for the tier's run "
        f"(budget {table['budget']:g}). Statements not listed have no random ingredient that decides them.</small></p>"
    ]
    for tier, found in table["tiers"].items():
        rows = "".join(
            f"<tr><td>{esc(r['key'])}</td><td><code>{esc(r['statement'])}</code></td><td>{r['probability']:.3g}</td><td><small>{esc(r['basis'])}</small></td></tr>"
            for r in found["statements"]
        )
        parts.append(
            f"<details open><summary><b>{esc(tier)}</b>: "
            f"sum {found['sum']:.3g} over {counted(len(found['statements']), 'statement')}</summary>"
            "<table><tr><th>claim</th><th>statement</th><th>false alarm</th><th>basis</th></tr>"
            f"{rows}</table></details>"
        )
    return "".join(parts)


def _statistic(kind: str, value: float | None) -> str:
    return "&mdash;" if value is None else f"{esc(kind)} = {significant(value)}"


def families_html(families: Sequence[Any], claims: Sequence[dict[str, Any]] = ()) -> str:
    """The families decided in the run, below the claim tables: a row per member (its adjusted decision and the
    statistics it was decided from, in columns a reader compares down the family), the family's claim, name, method
    and family-wise levels spanning its members' rows (and its tier, where a merge holds the family decided at
    several), and a warning where the members' tests recorded different statistics. `families`:
    pytest_claims.statements.families.decided_families(payload) (the report sits beside the statements, so its
    callers read them); empty: no section. `claims`: the payload's claim records, whose verdict, tiers and paper
    each family's rows carry so that the page's filters hide them with their claim (empty: rows the filters leave
    alone). Returns the HTML ("" for none)."""
    if not families:
        return ""
    by_id = {r.get("id"): r for r in claims}
    rows: list[str] = []
    for family in families:
        data = _filter_data(by_id[family.claim], family.tier) if family.claim in by_id else ""
        span = f' rowspan="{len(family.members)}"' if len(family.members) > 1 else ""
        alpha = "?" if family.alpha is None else significant(family.alpha)
        held = "" if family.held_alpha is None else f"<br><small>{significant(family.held_alpha)} to hold</small>"
        differ = (
            '<br><small class="family-differ">its members\' tests passed different statistics, so each decided '
            "another family; the first member's record is shown</small>"
            if family.statistics_differ
            else ""
        )
        at = "" if family.tier is None else f"<br><small>{esc(family.tier)} tier</small>"
        anchor = slug(family.claim)
        head = (
            f'<td{span}><code>{esc(family.claim)}</code><a class="permalink" href="#{esc(anchor)}" '
            f'title="the claim">#</a></td><td{span}><b>{esc(family.name)}</b>{at}{differ}</td>'
            f"<td{span}>{esc(family.method)}</td><td{span}>{alpha} to refute{held}</td>"
        )
        cells = [
            f"<td><code>{esc(m.name)}</code></td>"
            f"<td>{badge(m.decision, OUTCOME_COLOURS.get(m.decision, NEUTRAL_COLOUR))}</td>"
            f"<td>{_statistic(family.statistic, m.for_statistic)}</td>"
            f"<td>{_statistic(family.statistic, m.against_statistic)}</td>"
            for m in family.members
        ] or ['<td colspan="4">no members recorded</td>']
        rows.extend(f'<tr class="family-member"{data}>{head if i == 0 else ""}{c}</tr>' for i, c in enumerate(cells))
    return (
        "<h2>Families</h2><p><small>Statements decided as a family (registered as <code>[[claim.family]]</code>) "
        "share one false-alarm budget: a member's outcome above is its decision adjusted within the family (Holm on "
        "p-values, e-Holm on natural-log e-values), at the family-wise level shown. Statistics: for the statement "
        "(the test of its opposite, deciding held) and against it (deciding refuted).</small></p>"
        '<table class="families"><tr><th>claim</th><th>family</th><th>method</th><th>family-wise alpha</th>'
        "<th>member</th><th>adjusted decision</th><th>for</th><th>against</th></tr>" + "".join(rows) + "</table>"
    )


def _claim_tiers(record: dict[str, Any]) -> list[str]:
    """The tiers a claim record was run at (its own and its statement runs'), sorted: what the tier filter reads."""
    return sorted(set(record["tiers_run"]) | {s["tier"] for s in record["statements"]})


def _filter_data(record: dict[str, Any], tier: str | None) -> str:
    """The attributes the page's filters read on a family's rows: its claim's verdict and paper, and the tier it was
    decided at (None: its claim's tiers)."""
    tiers = [tier] if tier is not None else _claim_tiers(record)
    return (
        f' data-verdict="{esc(record["verdict"])}" data-tiers="{esc(" ".join(tiers))}"'
        f' data-paper="{esc(record.get("paper", ""))}"'
    )


def summary_html(payload: dict[str, Any], report_dir: Path | None, families: Sequence[Any] = ()) -> str:
    """Changes, run provenance, verdict counts, one claim table per paper, with folded details, and the families
    decided (`families`, as families_html takes them; empty: none)."""
    if not payload:
        return "<p>No verdicts were computed (the session ended before its finish).</p>"
    store_events = payload.get("timings", {}).get("store", {})
    env = dict(payload.get("environment", {}), tier=payload.get("tier"))
    parts = [
        STYLE,
        f'<div class="claims-verdicts" data-report-id="{esc(payload.get("report_id", ""))}">',
        replication_html(payload.get("replication")),
        changes_html(payload.get("changes")),
    ]
    counts = {v: sum(r["verdict"] == v for r in payload["claims"]) for v in VERDICTS}
    parts.append("<p>" + " ".join(badge(f"{n} {v}", COLOURS[v]) for v, n in counts.items() if n) + "</p>")
    parts.append(_test_counts_html(payload))
    parts.append(filters_html(payload))
    for paper, meta in payload["papers"].items():
        records = [r for r in payload["claims"] if r["paper"] == paper]  # the registry's (the paper's) order
        if not records:
            continue
        parts.append(f'<section data-paper="{esc(paper)}">')
        parts.append(f"<h2>{esc(meta['title'])}</h2><p><small>source: {esc(meta.get('source', ''))}</small></p>")
        parts.append(
            '<table class="claims"><tr><th style="width:34%">claim</th><th style="width:22%">verdict</th>'
            '<th style="width:9%">power</th><th style="width:23%">key numbers</th>'
            '<th style="width:12%">figure</th></tr>'
        )
        for r in records:
            parts.append(_claim_rows(r, report_dir, store_events))
        parts.append("</table>" + bounds_svg(records) + "</section>")
    parts.append(families_html(families, payload["claims"]))
    # What the verdicts rest on, folded below them: the run, its environment, the reference tests, the budget
    below = ["<h2>Run</h2>" + _runs_html(payload)]
    below.append("<p><small>" + "; ".join(f"<b>{esc(k)}</b> {esc(v)}" for k, v in env.items()) + "</small></p>")
    below.append(_reference_html(payload.get("reference_tests", [])))
    below.append(false_alarm_html(payload.get("false_alarm")))
    parts.append(
        '<details class="run-details"><summary><b>The run, its environment, reference tests and false-alarm '
        f"budget</b></summary>{''.join(below)}</details>"
    )
    parts.append("</div>")
    parts.append(SCRIPT)
    return "\n".join(parts)


CLAIM_COLUMNS = 5


def _reference_html(reference: list[dict[str, Any]]) -> str:
    if not reference:
        return ""
    bad = [r for r in reference if r["outcome"] not in (HELD, SKIPPED)]
    failed = f", <b style='color:#cf222e'>{len(bad)} failed</b>: {esc(', '.join(r['test'] for r in bad))}"
    return (
        f"<p>{len(reference)} reference tests of the kernels and the harness: "
        f"{len(reference) - len(bad)} passed or skipped{failed if bad else ''}</p>"
    )


def _test_counts_html(payload: dict[str, Any]) -> str:
    """The statement tests' ends and the mutants' as the terminal counts them, apart (pytest-html's own counts
    above the table count each mutant's run as a passed test)."""
    runs = [s for r in payload.get("claims", []) for s in r["statements"]]
    ends: dict[str, int] = {}
    for run in runs:
        ends[run["outcome"]] = ends.get(run["outcome"], 0) + 1
    mutants = [m for run in runs for m in run.get("mutants", [])]
    killed = sum(end_of(m) in (KILL_REFUTED, KILL_GUARD) for m in mutants)
    shown = ", ".join(f"{n} {end}" for end, n in sorted(ends.items())) or "none"
    tail = f"; mutants: {killed} killed of {len(mutants)}" if mutants else ""
    return f"<p><small><b>statement tests</b>: {esc(shown)}{esc(tail)}</small></p>"


def side_findings(record: dict[str, Any]) -> list[str]:
    """Statements registered refuted that do not refute the claim (refutes_claim false) and were refuted:
    findings beside the claim, named in its reason line."""
    registered = record.get("registry", {}).get("statements", {})
    found = []
    for run in record["statements"]:
        entry = registered.get(run["statement"], {})
        side = entry.get("expected") == Expected.REFUTED and not entry.get("refutes_claim", False)
        if side and run["outcome"] == REFUTED and run["statement"] not in found:
            found.append(run["statement"])
    return found


def _claim_rows(r: dict[str, Any], report_dir: Path | None, store_events: dict[str, Any]) -> str:
    """A claim's row (its text visible) and, below it, a row across the full width folding its provenance and
    statement runs; both carry the verdict and tiers the filters read."""
    thumb = ""
    if r.get("figure"):
        src = _image(report_dir, r["figure"]["path"])
        thumb = (
            f'<img class="thumb" tabindex="0" src="{src}" title="{esc(r["figure"]["title"])} (click: full size)">'
            if src
            else ""
        )
    tiers = _claim_tiers(r)
    data = f'data-verdict="{esc(r["verdict"])}" data-tiers="{esc(" ".join(tiers))}"'
    anchor = slug(r["id"])
    details = [
        f"<details><summary><small>provenance and {len(r['statements'])} statement runs</small></summary>",
    ]
    if r.get("provenance"):
        details.append(f"<p><small><b>provenance:</b> {esc(r['provenance'])}</small></p>")
    if r["statements_without_tests"] and r["verdict"] != Verdict.NOT_EXERCISED:
        details.append(
            f"<p><small>statements without tests: {esc(', '.join(r['statements_without_tests']))}</small></p>"
        )
    changed = changed_rules(r)
    details.extend(
        _statement_details(run, report_dir, store_events.get(run["test"], []), changed.get(run["statement"]))
        for run in r["statements"]
    )
    details.append("</details>")
    findings = side_findings(r)
    side = (
        f"<br><small><b>side findings</b> (refuted as registered): {esc(', '.join(findings))}</small>"
        if findings
        else ""
    ) + "".join(f"<br>{changed_rule_html(name, entry)}" for name, entry in changed.items())
    return (
        f'<tr id="{esc(anchor)}" class="claim" {data}>'
        f"<td><b>{esc(r['key'])}</b> <code>{esc(r['id'])}</code>{permalink(anchor)}"
        f"<br><small>{esc(r['where'])}</small>"
        f'<p class="claim-text">{esc(r["statement"])}</p></td>'
        f"<td>{badge(r['verdict'], COLOURS[r['verdict']])}<br><small>{esc(r['reason'])}</small>{side}"
        f"<br><small>expected: {esc(r['expected'])}; "
        f"tiers run: {esc(', '.join(r['tiers_run']) or '-')}</small></td>"
        f"<td>{_power_cell(r.get('power'))}</td>"
        f"<td><small>{_key_numbers(r)}</small></td>"
        f"<td>{thumb}</td>"
        "</tr>"
        f'<tr class="more" {data}><td colspan="{CLAIM_COLUMNS}">{"".join(details)}</td></tr>'
    )


def filters_html(payload: dict[str, Any]) -> str:
    """Checkboxes per verdict and selects for paper and tier; the inline script hides what they leave out."""
    claims = payload.get("claims", [])
    verdicts = [v for v in VERDICTS if any(r["verdict"] == v for r in claims)]
    tiers = sorted({t for r in claims for t in _claim_tiers(r)})
    boxes = "".join(
        f'<label><input type="checkbox" checked data-verdict="{esc(v)}"> {badge(v, COLOURS[v])}</label>'
        for v in verdicts
    )
    papers = "".join(
        f'<option value="{esc(k)}">{esc(meta.get("title", k))}</option>'
        for k, meta in payload.get("papers", {}).items()
    )
    tier_options = "".join(f'<option value="{esc(t)}">{esc(t)}</option>' for t in tiers)
    return (
        f'<div class="claims-filters"><b>Show</b> {boxes}'
        f'<label>paper <select name="paper"><option value="">all</option>{papers}</select></label>'
        f'<label>tier <select name="tier"><option value="">all</option>{tier_options}</select></label></div>'
    )


def standalone_html(payload: dict[str, Any], report_dir: Path, title: str, families: Sequence[Any] = ()) -> str:
    """A self-contained page (the merge command's report), with the families decided (`families`, as
    families_html takes them; empty: none)."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title></head><body style='font-family:sans-serif;margin:1.5em'>"
        f"<h1>{esc(title)}</h1>{summary_html(payload, report_dir, families)}</body></html>\n"
    )


def row_extras(run: dict[str, Any]) -> list[Any]:
    """pytest-html extras for one statement test's row: its evidence table (figures are in the summary)."""
    try:
        from pytest_html import extras
    except ImportError:  # pytest-html absent: no html report, nothing to attach
        return []
    outcome = run["outcome"]
    table = (
        f"<div><b>{esc(run['claim'])} / {esc(run['statement'])}</b> ({esc(run['tier'])}): "
        f"{badge(outcome, OUTCOME_COLOURS.get(outcome, NEUTRAL_COLOUR))}{evidence_table(run['evidence'])}</div>"
    )
    return [extras.html(table)]
