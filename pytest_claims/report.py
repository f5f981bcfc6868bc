"""HTML pieces of the verdict report: the claim tables at the top and the evidence in each row."""
from __future__ import annotations

import html
import json
from typing import Any

from pytest_claims.evidence import Evidence
from pytest_claims.registry import Registry
from pytest_claims.verdicts import VERDICTS, StatementRun

COLOURS = {
    "verified": "#1a7f37",
    "falsified": "#8250df",
    "reduced scale": "#bf8700",
    "not run": "#6e7781",
    "not exercised": "#afb8c1",
    "broken": "#cf222e",
}
OUTCOME_COLOURS = {"held": "#1a7f37", "refuted": "#8250df", "skipped": "#6e7781", "failed": "#cf222e", "error": "#cf222e"}


def _badge(text: str, colour: str) -> str:
    return (
        f'<span style="background:{colour};color:#fff;border-radius:4px;padding:1px 6px;'
        f'white-space:nowrap;font-weight:600">{html.escape(text)}</span>'
    )


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, dict)):
        text = json.dumps(value)
        return html.escape(text if len(text) < 160 else text[:157] + "...")
    return html.escape(str(value))


def outcome_badge(run: dict[str, Any], registry: Registry) -> str:
    expected = registry.claims[run["claim"]].statements[run["statement"]].expected
    label = f'{run["outcome"]} (registered: {expected})'
    return _badge(label, OUTCOME_COLOURS.get(run["outcome"], "#6e7781"))


def summary_html(payload: dict[str, Any], registry: Registry) -> str:
    """Environment, then one table per paper: claim, verdict badge, key numbers, scale, provenance."""
    if not payload:
        return "<p>No verdicts were computed (the session ended before its finish).</p>"
    env = dict(payload["environment"], tier=payload["tier"], master_seed=payload["seed"])
    parts = ['<div class="claims-verdicts" style="margin:1em 0">']
    parts.append("<h2>Run</h2><p>" + "; ".join(f"<b>{html.escape(k)}</b> {html.escape(str(v))}" for k, v in env.items()) + "</p>")
    counts = {v: sum(r["verdict"] == v for r in payload["claims"]) for v in VERDICTS}
    parts.append("<p>" + " ".join(_badge(f"{n} {v}", COLOURS[v]) for v, n in counts.items() if n) + "</p>")
    order = {v: i for i, v in enumerate(VERDICTS)}
    for paper, meta in payload["papers"].items():
        records = sorted((r for r in payload["claims"] if r["paper"] == paper), key=lambda r: (order[r["verdict"]], r["key"]))
        if not records:
            continue
        parts.append(f"<h2>{html.escape(meta['title'])}</h2><p><i>source: {html.escape(meta['source'])}</i></p>")
        parts.append(
            '<table style="border-collapse:collapse;width:100%" border="1" cellpadding="4">'
            "<tr><th>claim</th><th>text</th><th>verdict</th><th>key numbers</th><th>scale run</th><th>provenance</th></tr>"
        )
        for r in records:
            numbers = "<br>".join(f"{html.escape(k)} = {_number(v)}" for k, v in r["headline"].items()) or "&mdash;"
            missing = r["statements_without_tests"]
            note = html.escape(r["provenance"])
            if missing and r["verdict"] != "not exercised":
                note += f"<br><i>statements without tests: {html.escape(', '.join(missing))}</i>"
            parts.append(
                "<tr>"
                f"<td><b>{html.escape(r['key'])}</b><br><code>{html.escape(r['id'])}</code><br>{html.escape(r['where'])}</td>"
                f"<td>{html.escape(r['statement'])}</td>"
                f"<td>{_badge(r['verdict'], COLOURS[r['verdict']])}<br><small>{html.escape(r['reason'])}</small>"
                f"<br><small>expected: {html.escape(r['expected'])}</small></td>"
                f"<td><small>{numbers}</small></td>"
                f"<td>{html.escape(', '.join(r['tiers_run']) or '-')}</td>"
                f"<td><small>{note}</small></td>"
                "</tr>"
            )
        parts.append("</table>")
    parts.append("</div>")
    return "\n".join(parts)


def evidence_extras(run: StatementRun, evidence: Evidence) -> list[dict[str, Any]]:
    """pytest-html extras for one statement test: its evidence table and its figures."""
    from pytest_html import extras

    rows = "".join(
        f"<tr><td><code>{html.escape(k)}</code></td><td>{_number(v)}</td></tr>"
        for k, v in evidence.as_dict().items()
        if k != "headline"
    )
    table = (
        f"<div><b>{html.escape(run.claim)} / {html.escape(run.statement)}</b> ({html.escape(run.tier)}): "
        f"{_badge(run.outcome, OUTCOME_COLOURS.get(run.outcome, '#6e7781'))}"
        f'<table border="1" cellpadding="3" style="border-collapse:collapse;margin:4px 0">{rows}</table></div>'
    )
    out = [extras.html(table)]
    out.extend(extras.png(data, name=title) for title, _, data in evidence.figures)
    return out
