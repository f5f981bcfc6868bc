"""The pytest-html hooks: the report's title, the verdict summary and the results table's claim columns.

The HTML itself is rendered by pytest_claims.report.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pytest_claims import report as html_report
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
        cells[2:2] = html_report.claim_header_cells()

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: list) -> None:
        if len(cells) > 1:
            cells[1] = html_report.test_id_cell(cells[1], report)
        props = dict(getattr(report, "user_properties", None) or [])  # collect reports carry none
        run = props.get(RUN_PROPERTY)
        if run is None:
            reference = REFERENCE_PROPERTY in props
            cells[2:2] = html_report.claim_row_cells(None, props.get(REFERENCE_PROPERTY, ""), reference)
            return
        expected = self.state.registry.claims[run["claim"]].statements[run["statement"]].expected
        cells[2:2] = html_report.claim_row_cells(run, expected, True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: Any, data: list) -> None:
        props = dict(getattr(report, "user_properties", None) or [])
        html_report.refutation_log(props.get(RUN_PROPERTY), getattr(report, "longreprtext", ""), data)
