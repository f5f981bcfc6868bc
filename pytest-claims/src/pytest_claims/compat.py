"""The private APIs of pytest and pytest-html the plugin relies on, in one place, each checked against the versions
it is known to work with: a version that changes one fails here (and in tests/test_compat.py) with a line that
names it, never somewhere deep in a run.

- `_pytest.runner.runtestprotocol(item, log, nextitem)`: runs one test's setup, call and teardown and returns their
  reports without logging them (the mutant runner reruns a statement test under a mutant with it; pytest has no
  public equivalent that leaves the real run's reports alone).
- pytest-html's `BaseReport._write_report(rendered)`: the method that writes the rendered page with open("w") (the
  report writer takes the text instead, to write it with verdicts.json as one unit). pytest-html 4 has no public
  way: its hooks (`pytest_html_report_title`, `pytest_html_results_summary`, `pytest_html_results_table_*`)
  change the page's content, none hands over the rendered text or the writing, and its `pytest_sessionfinish`
  writes `--html`'s path in place; rewriting the page after it would leave a half-written page beside the
  previous verdicts.json for a moment (asked upstream as a temporary file moved into place: pytest-html #796).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import pytest

RUNTESTPROTOCOL_PARAMETERS = ("item", "log", "nextitem")
WRITE_REPORT_PARAMETERS = ("self", "rendered_report")


class PrivateAPIChanged(RuntimeError):
    """A private API the plugin uses is not what the supported versions have."""


def _parameters(function: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters)


def runtestprotocol() -> Callable[..., list[pytest.TestReport]]:
    """pytest's runtestprotocol, checked: (item, log=True, nextitem=None) -> the phases' reports."""
    from _pytest.runner import runtestprotocol as found

    if _parameters(found) != RUNTESTPROTOCOL_PARAMETERS:
        raise PrivateAPIChanged(
            f"pytest {pytest.__version__}: _pytest.runner.runtestprotocol takes {_parameters(found)}, not "
            f"{RUNTESTPROTOCOL_PARAMETERS}; pytest-claims' mutant runner needs updating for this pytest"
        )
    return found


def html_report_base() -> type | None:
    """pytest-html's BaseReport, the class of its report object (None without pytest-html)."""
    try:
        from pytest_html.basereport import BaseReport
    except ImportError:
        return None
    return BaseReport


def write_report_problem(base: type) -> str:
    """Why `base._write_report(rendered_report)` is not what the report writer replaces ("" when it is): the writer
    then leaves pytest-html to write its page itself, and tests/test_compat.py fails with this line."""
    write = getattr(base, "_write_report", None)
    if callable(write) and _parameters(write) == WRITE_REPORT_PARAMETERS:
        return ""
    found = _parameters(write) if callable(write) else "missing"
    return (
        f"pytest-html: BaseReport._write_report is {found}, not {WRITE_REPORT_PARAMETERS}; pytest-claims' report "
        "writer needs updating for this pytest-html"
    )
