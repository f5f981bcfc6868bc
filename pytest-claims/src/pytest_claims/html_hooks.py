"""The pytest-html hooks: the report's title, the verdict summary and the results table's claim columns.

The verdict summary is rendered by pytest_claims.report; the results table's cells here.
"""

from __future__ import annotations

import datetime as dt
import html
from typing import Any

import pytest

from pytest_claims import report as html_report
from pytest_claims.outcomes import NEUTRAL_COLOUR, OUTCOME_COLOURS
from pytest_claims.report import badge, esc
from pytest_claims.session import tier_of
from pytest_claims.state import REFERENCE_PROPERTY, RUN_PROPERTY, State


class HtmlHooks:
    """pytest-html's hooks, where the report is written (the controller)."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.config = state.config

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: Any) -> None:
        report.title = (
            f"{self.config.getini('claims_title')}: tier {tier_of(self.config)}, run {dt.date.today().isoformat()}"
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session: pytest.Session) -> None:
        prefix.append(html_report.summary_html(self.state.payload, self.state.report_dir))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list) -> None:
        cells[2:2] = claim_header_cells()

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: list) -> None:
        if len(cells) > 1:
            cells[1] = test_id_cell(cells[1], report)
        props = dict(getattr(report, "user_properties", None) or [])  # collect reports carry none
        run = props.get(RUN_PROPERTY)
        if run is None:
            reference = REFERENCE_PROPERTY in props
            cells[2:2] = claim_row_cells(None, props.get(REFERENCE_PROPERTY, ""), reference)
            return
        expected = self.state.registry.claims[run["claim"]].statements[run["statement"]].expected
        cells[2:2] = claim_row_cells(run, expected, True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: Any, data: list) -> None:
        props = dict(getattr(report, "user_properties", None) or [])
        refutation_log(props.get(RUN_PROPERTY), getattr(report, "longreprtext", ""), data)


def test_id_cell(cell: str, report: Any) -> str:
    """pytest-html's test id cell with the id escaped (a parametrize id may carry any text, `<script>` included);
    a cell pytest-html did not write from the raw id (a version that escapes it) is kept."""
    when = getattr(report, "when", "call")
    raw = report.nodeid + ("" if when == "call" else f"::{when}")
    if cell == f'<td class="col-testId">{raw}</td>':
        return f'<td class="col-testId">{esc(raw)}</td>'
    return cell


def claim_header_cells() -> list[str]:
    """The results table's two claim columns (pytest-html), after its result and test columns."""
    return [
        '<th class="sortable" data-column-type="claim">Claim / statement</th>',
        '<th class="sortable" data-column-type="statement_outcome">Statement outcome</th>',
    ]


def claim_row_cells(run: dict[str, Any] | None, expected_or_outcome: str, reference: bool) -> list[str]:
    """A results-table row's claim cells: a statement test's claim / statement and its outcome against the
    registry (`expected_or_outcome`: the registered expectation), or, for another test (run None), a reference
    test's outcome (`expected_or_outcome`) or a collection row."""
    if run is None:
        label = "reference test (no claim)" if reference else "collection"
        return [
            f'<td class="col-claim">{label}</td>',
            f'<td class="col-statement_outcome">{esc(expected_or_outcome)}</td>',
        ]
    label = f"{run['outcome']} (registered: {expected_or_outcome})"
    return [
        f'<td class="col-claim">{esc(run["claim"])} / {esc(run["statement"])}</td>',
        f'<td class="col-statement_outcome">{badge(label, OUTCOME_COLOURS.get(run["outcome"], NEUTRAL_COLOUR))}</td>',
    ]


def refutation_log(run: dict[str, Any] | None, longrepr: str, log: list[str]) -> None:
    """A refuted statement's row in pytest-html's results table opens on its refutation message (the statement's
    reason) instead of the traceback that carried it; captured output after it is kept."""
    if run is None or run.get("outcome") != "refuted" or not run.get("reason") or not longrepr:
        return
    traceback = html.escape(longrepr) + "\n"
    if log and log[0] == traceback:
        log[0] = html.escape(f"refuted: {run['reason']}") + "\n"
