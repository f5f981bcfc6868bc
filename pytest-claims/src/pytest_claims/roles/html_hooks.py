"""The pytest-html hooks: the report's title, the verdict summary and the results table's claim columns.

The verdict summary is rendered by pytest_claims.report.html_report; the results table's cells here.
"""

from __future__ import annotations

import datetime as dt
import html
from typing import Any

import pytest

from pytest_claims.report import html_report
from pytest_claims.outcomes import FAILED, HELD, INCONCLUSIVE, NEUTRAL_COLOUR, OUTCOME_COLOURS, REFUTED
from pytest_claims.report.style import badge, esc
from pytest_claims.statements.families import decided_families
from pytest_claims.roles.state import MUTANT_PROPERTY, REFERENCE_PROPERTY, RUN_PROPERTY, State, tier_of
from pytest_claims.model.verdicts import verbose_word


class HtmlHooks:
    """pytest-html's hooks, where the report is written (the controller)."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.config = state.config
        self.payload: dict[str, Any] = {}  # the verdicts, once published (pytest_claims_payload)

    def pytest_claims_payload(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: Any) -> None:
        report.title = f"{self.state.settings.title}: tier {tier_of(self.config)}, run {dt.date.today().isoformat()}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session: pytest.Session) -> None:
        families = decided_families(self.payload)  # read by statements, beside the report: passed to it
        prefix.append(html_report.summary_html(self.payload, self.state.report_dir, families))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A statement test's evidence table on its row, rendered here on the controller from the run the worker
        shipped as data (before pytest-html's own logreport, which is trylast, reads `report.extras`)."""
        props: dict[str, Any] = dict(report.user_properties or [])
        run = props.get(RUN_PROPERTY) if report.when == "call" else None
        if run is not None:
            extras: list[Any] = list(getattr(report, "extras", None) or [])
            setattr(report, "extras", extras + html_report.row_extras(run))  # pytest-html's attribute, not pytest's

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list) -> None:
        cells[2:2] = claim_header_cells()

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: list) -> None:
        if len(cells) > 1:
            cells[1] = test_id_cell(cells[1], report)
        props = dict(getattr(report, "user_properties", None) or [])  # collect reports carry none
        mutant = props.get(MUTANT_PROPERTY)
        if mutant is not None and cells:  # pytest-html would read "Passed" (the item passes whatever the end)
            cells[0] = result_cell(cells[0], mutant_result_word(mutant, report))
            cells[2:2] = mutant_row_cells(mutant)
            return
        run = props.get(RUN_PROPERTY)
        if run is not None and run.get("outcome") == INCONCLUSIVE and cells:  # not "Skipped"
            cells[0] = result_cell(cells[0], "Inconclusive")
        if run is None:
            reference = REFERENCE_PROPERTY in props
            cells[2:2] = claim_row_cells(None, props.get(REFERENCE_PROPERTY, ""), reference)
            return
        expected = self.state.registry.claims[run["claim"]].statements[run["statement"]].expected
        cells[2:2] = claim_row_cells(run, expected, True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: Any, data: list) -> None:
        props = dict(getattr(report, "user_properties", None) or [])
        if props.get(MUTANT_PROPERTY) is not None:
            mutant_log(props[MUTANT_PROPERTY], data)
            return
        refutation_log(props.get(RUN_PROPERTY), getattr(report, "longreprtext", ""), data)
        inconclusive_log(props.get(RUN_PROPERTY), data)


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
    if run is None or run.get("outcome") != REFUTED or not run.get("reason") or not longrepr:
        return
    traceback = html.escape(longrepr) + "\n"
    if log and log[0] == traceback:
        log[0] = html.escape(f"refuted: {run['reason']}") + "\n"


def result_cell(cell: str, shown: str) -> str:
    """pytest-html's result cell showing `shown` (by the stylesheet's data-claims-result rule) while its text stays
    pytest-html's category (Passed, Skipped), which its filters and counts read from the cell."""
    return cell.replace('<td class="col-result">', f'<td class="col-result" data-claims-result="{esc(shown)}">', 1)


def mutant_result_word(found: dict[str, Any], report: Any) -> str:
    """The result column of a mutant item: how the mutant run ended, not pytest's "Passed"."""
    if getattr(report, "skipped", False):
        return "Mutant not tried"
    if found["killed"]:
        return "Mutant killed"
    return "Mutant end expected" if found["expected"] else "Mutant not killed"


def mutant_row_cells(found: dict[str, Any]) -> list[str]:
    """A mutant item's claim cells: which statement's mutant run it is, and how it ended (KILLED (refuted), ...)."""
    colour = OUTCOME_COLOURS[HELD] if found["killed"] else OUTCOME_COLOURS[FAILED]
    if found["expected"] and not found["killed"]:
        colour = NEUTRAL_COLOUR
    return [
        f'<td class="col-claim">{esc(found["claim"])} / {esc(found["statement"])}<br>'
        f"<small>mutant run: {esc(found['mutant'])}</small></td>",
        f'<td class="col-statement_outcome">{badge("mutant " + verbose_word(found), colour)}</td>',
    ]


def mutant_log(found: dict[str, Any], log: list[str]) -> None:
    """A mutant item's log: the statement test it reran, the mutant, how it ended and why (in full)."""
    log[:] = [
        html.escape(
            f"mutant run of {found['test']} under mutant {found['mutant']!r}: {verbose_word(found)}\n{found['detail']}"
        )
        + "\n"
    ]


def inconclusive_log(run: dict[str, Any] | None, log: list[str]) -> None:
    """An inconclusive statement's log is its message (pytest's skip tuple would show as a raw Python tuple)."""
    if run is None or run.get("outcome") != INCONCLUSIVE:
        return
    kept = [entry for entry in log if entry.startswith(" ") or entry.startswith("-")]  # captured output sections
    log[:] = [html.escape(f"inconclusive: {run.get('reason', '')}") + "\n", *kept]
