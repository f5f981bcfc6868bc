"""HTML of a replication set (runs under several master seeds): each claim's verdict per seed, the statement tests
whose outcome differs, and the anytime statements the merge pooled over the seeds (pytest_claims.merge.pool)."""

from __future__ import annotations

from typing import Any

from pytest_claims.outcomes import NEUTRAL_COLOUR, OUTCOME_COLOURS
from pytest_claims.outcomes import VERDICT_COLOURS as COLOURS
from pytest_claims.report.style import badge, esc
from pytest_claims.stats.shown_numbers import significant

OUTCOME_WORD_COLOURS: dict[str, str] = {
    word.value: colour for word, colour in OUTCOME_COLOURS.items()
}  # by a file's word


def replication_html(replication: dict[str, Any] | None) -> str:
    """A replication set (runs under several master seeds): per claim its verdict under each seed and
    'replicated on k of K'; claims whose verdict differs first, then statement tests whose outcome differs."""
    if not replication:
        return ""
    seeds = replication["seeds"]
    head = "".join(f"<th>seed {esc(s)}</th>" for s in seeds)
    rows = []
    for c in replication["claims"]:
        cells = "".join(
            f"<td>{badge(c['verdicts'].get(s, '-'), COLOURS.get(c['verdicts'].get(s, ''), '#afb8c1'))}</td>"
            for s in seeds
        )
        mark = "" if c["replicated"] == c["of"] else ' style="background:#ffebe9"'
        rows.append(
            f"<tr{mark}><td><b>{esc(c['key'])}</b> <code>{esc(c['id'])}</code></td>"
            f"<td><b>{c['replicated']} of {c['of']}</b></td>{cells}</tr>"
        )
    replicated, claim_count = replication["claims_replicated"], len(replication["claims"])
    replicated_colour = "#1a7f37" if replicated == claim_count else "#cf222e"
    parts = [
        f"<h2>Replication over {len(seeds)} master seeds</h2>",
        f"<p>{badge(replication_line(replication), replicated_colour)} "
        "<small>a claim replicates on every seed when each seed decided it alone, the same way; the columns give each "
        "seed's verdict alone (a pooled outcome is in the claim table, and below); a claim replicates on k of K seeds "
        "when k seeds give its most common verdict; differing claims are listed first</small></p>",
        f"<table><tr><th>claim</th><th>replicated</th>{head}</tr>{''.join(rows)}</table>",
    ]
    differing = [s for s in replication["statements"] if s["replicated"] != s["of"]]
    if differing:
        items = "".join(
            f"<tr><td>{esc(s['claim'])} / <code>{esc(s['statement'])}</code><br><small>{esc(s['test'])}</small></td>"
            f"<td>{s['replicated']} of {s['of']}</td>"
            + "".join(
                f"<td>{badge(s['outcomes'].get(x, '-'), OUTCOME_COLOURS.get(s['outcomes'].get(x, ''), '#afb8c1'))}</td>"
                for x in seeds
            )
            + "</tr>"
            for s in differing
        )
        parts.append(
            "<h3>Statement tests whose outcome differs between seeds</h3>"
            f"<table><tr><th>statement test</th><th>replicated</th>{head}</tr>{items}</table>"
        )
    else:
        parts.append(
            f"<p>Every one of {len(replication['statements'])} statement tests "
            "has the same outcome under every seed.</p>"
        )
    parts.append(pooled_html(replication.get("pooled"), seeds))
    return "".join(parts)


def replication_line(replication: dict[str, Any]) -> str:
    """The replication set in one line: "K of M claims replicated on every seed" (each seed decided alone), and, where
    the merge pooled, "N of M claims decided when pooled; K replicated on every seed alone"."""
    count, replicated = len(replication["claims"]), replication["claims_replicated"]
    if "claims_decided_pooled" in replication:
        return (
            f"{replication['claims_decided_pooled']} of {count} claims decided when pooled; "
            f"{replicated} replicated on every seed alone"
        )
    return f"{replicated} of {count} claims replicated on every seed"


def _chain_cell(chain: dict[str, Any] | None) -> str:
    if not chain:
        return "<td>-</td>"
    outcome = str(chain.get("outcome"))
    counted = f"{esc(chain['successes'])} of {esc(chain['trials'])} in " if "trials" in chain else ""
    counts = (
        f"<br><small>{counted}{esc(chain['batches'])} batch(es); "
        f"ln E {significant(chain['log_e_for'])} for, {significant(chain['log_e_against'])} against</small>"
        if "batches" in chain
        else ""
    )
    return f"<td>{badge(outcome, OUTCOME_WORD_COLOURS.get(outcome, NEUTRAL_COLOUR))}{counts}</td>"


def pooled_html(pooled: list[dict[str, Any]] | None, seeds: list[str]) -> str:
    """The anytime statements pooled over the seeds: each seed's chain, and the one decision they make together."""
    if not pooled:
        return ""
    rows = []
    for p in pooled:
        outcome: str | None = p.get("outcome")
        if outcome is None:
            result = f"<td>not pooled<br><small>{esc(p.get('why', ''))}</small></td>"
        else:
            at = p.get("decided_at")
            where = f"crossed at seed {esc(at['seed'])}, batch {esc(at['batch'])}" if at else "neither crossed"
            result = (
                f"<td>{badge('pooled: ' + outcome, OUTCOME_WORD_COLOURS.get(outcome, NEUTRAL_COLOUR))}<br><small>ln E "
                f"{significant(p['log_e_for'])} for (needs {significant(p['needs_for'])}), "
                f"{significant(p['log_e_against'])} against (needs {significant(p['needs_against'])}); "
                f"{where}</small></td>"
            )
        cells = "".join(_chain_cell(p["seeds"].get(s)) for s in seeds)
        rows.append(
            f"<tr><td>{esc(p['claim'])} / <code>{esc(p['statement'])}</code><br><small>{esc(p['test'])}</small></td>"
            f"{result}{cells}</tr>"
        )
    head = "".join(f"<th>seed {esc(s)}</th>" for s in seeds)
    return (
        "<h3>Anytime statements pooled over the seeds</h3><p><small>each seed's chain is independent of the others; "
        "joined in seed order they are one anytime-valid chain, decided at its first crossing; pooled only when the "
        "seeds are the declared replication set (seeds S, S+1, ... in ascending order with no gaps), whole and in order"
        "</small></p>"
        f"<table><tr><th>statement test</th><th>pooled</th>{head}</tr>{''.join(rows)}</table>"
    )
