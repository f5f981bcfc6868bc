"""Inline SVG charts of the verdict report (no image library; only numbers from the payload reach them): a continued
statement's chain by batch, and a paper's bounded decisions against their thresholds."""

from __future__ import annotations

import math
from typing import Any, cast

from pytest_claims.outcomes import Expected
from pytest_claims.report.style import esc
from pytest_claims.stats.binomial import finite_number
from pytest_claims.stats.shown_numbers import significant


def anytime_blocks(evidence: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (k, v)
        for k, v in evidence.items()
        if isinstance(v, dict) and isinstance(v.get("anytime"), dict) and isinstance(v["anytime"].get("ledger"), list)
    ]


def _level_line(alpha: Any) -> float | None:
    return -math.log(alpha) if isinstance(alpha, (int, float)) and 0 < alpha < 1 else None


def chain_svg(what: str, block: dict[str, Any], width: int = 420, height: int = 170) -> str:
    """A continued statement's chain as an inline chart (no image library): ln E for and against after each batch
    of its ledger, and the lines 1/alpha where each decides. Only numbers from the payload reach the SVG."""
    points = []
    for batch in block["ledger"]:
        pair = [batch.get("log_e_for") if isinstance(batch, dict) else None,
                batch.get("log_e_against") if isinstance(batch, dict) else None]  # fmt: skip
        points.append([float(v) if finite_number(v) else None for v in pair])
    held, refute = _level_line(block.get("held_alpha")), _level_line(block.get("refute_alpha"))
    values = [v for pair in points for v in pair if v is not None] + [v for v in (held, refute) if v is not None]
    if not points or not values:
        return ""
    low, high = min(0.0, *values), max(0.0, *values)
    span, left, right, top, bottom = (high - low) or 1.0, 40, width - 10, 10, height - 25
    x = lambda i: left + (right - left) * (i / max(1, len(points) - 1))  # noqa: E731 (a scale)
    y = lambda v: bottom - (bottom - top) * (v - low) / span  # noqa: E731 (a scale)
    parts = [f'<svg class="chain" width="{width}" height="{height}" role="img" aria-label="chain of {esc(what)}">']
    # the refuting line's label below its line, so that two levels that coincide do not print over each other
    for level, colour, name, dy in ((held, "#1a7f37", Expected.HOLDS, -3), (refute, "#cf222e", Expected.REFUTED, 11)):
        if level is not None:
            parts.append(
                f'<line x1="{left}" x2="{right}" y1="{y(level):.1f}" y2="{y(level):.1f}" stroke="{colour}" '
                f'stroke-dasharray="4 3"/><text x="{left + 2}" y="{y(level) + dy:.1f}" font-size="10" '
                f'fill="{colour}">{name} at ln E = {level:.3g}</text>'
            )
    for side, colour in ((0, "#0969da"), (1, "#bf3989")):
        line = [(x(i), y(p[side])) for i, p in enumerate(points) if p[side] is not None]
        if line:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in line)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
            parts.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{colour}"/>' for a, b in line)
    parts.append(
        f'<line x1="{left}" x2="{right}" y1="{y(0.0):.1f}" y2="{y(0.0):.1f}" stroke="#8c959f"/>'
        f'<text x="{left}" y="{height - 8}" font-size="10">batch 1 .. {len(points)}: ln E for the statement '
        "(blue) and against it (pink)</text></svg>"
    )
    return f"<p><small>{esc(what)}: its chain by batch</small><br>{''.join(parts)}</p>"


def _bounds(records: list[dict[str, Any]]) -> list[tuple[str, float, float, float, str]]:
    """(label, lower, upper, threshold, side) of every bounded decision in these claims' statement runs: evidence
    values with numeric lower, upper and threshold (decide_rate, decide_interval), side '>=' or '<='."""
    out: list[tuple[str, float, float, float, str]] = []
    for record in records:
        for run in record["statements"]:
            for what, value in run.get("evidence", {}).items():
                if not isinstance(value, dict):
                    continue
                numbers = [value.get(k) for k in ("lower", "upper", "threshold")]
                if not all(finite_number(v) for v in numbers):
                    continue
                side = "<=" if "<" in str(value.get("statement", ">=")) else ">="
                lower, upper, threshold = (float(cast(float, v)) for v in numbers)  # numbers: checked above
                out.append(
                    (f"{record['key']} {run['statement']} ({run['tier']}): {what}", lower, upper, threshold, side)
                )
    return out


def bounds_svg(records: list[dict[str, Any]], most: int = 40, width: int = 760) -> str:
    """A paper's bounded decisions as one chart: per decision its interval [lower, upper] on its own scale, the
    threshold marked, green where the interval lies on the statement's side of it, red on the other, grey across."""
    rows = _bounds(records)
    if not rows:
        return ""
    shown, row_height, label_width = rows[:most], 16, 330
    height = row_height * len(shown) + 24
    parts = [f'<svg class="bounds" width="{width}" height="{height}" role="img" aria-label="bounds and thresholds">']
    for i, (label, lower, upper, threshold, side) in enumerate(shown):
        low, high = min(lower, threshold), max(upper, threshold)
        pad = (high - low) * 0.1 or abs(threshold) * 0.1 or 0.1
        scale = lambda v: label_width + 10 + (width - label_width - 20) * (v - low + pad) / (high - low + 2 * pad)  # noqa: E731
        above = lower >= threshold if side == ">=" else upper <= threshold
        below = upper < threshold if side == ">=" else lower > threshold
        colour = "#1a7f37" if above else "#cf222e" if below else "#8c959f"
        y, tick = 14 + i * row_height, scale(threshold)
        parts.append(
            f'<text x="0" y="{y + 4}" font-size="10">{esc(label[:60])}</text>'
            f'<line x1="{scale(lower):.1f}" x2="{max(scale(upper), scale(lower) + 2):.1f}" y1="{y}" y2="{y}" '
            f'stroke="{colour}" stroke-width="5"/>'
            f'<line x1="{tick:.1f}" x2="{tick:.1f}" y1="{y - 6}" y2="{y + 6}" stroke="#24292f"/>'
            f'<text x="{tick + 3:.1f}" y="{y - 2}" font-size="8">{side} {significant(threshold)}</text>'
        )
    parts.append(
        f'<text x="0" y="{height - 4}" font-size="10">each interval on its own scale; the black tick is its threshold'
        f"{f'; {len(rows) - most} more in the statement folds' if len(rows) > most else ''}</text></svg>"
    )
    return (
        f"<details><summary><small>bounds against thresholds ({len(rows)})</small></summary>{''.join(parts)}</details>"
    )
