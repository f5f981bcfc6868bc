"""The private APIs of pytest and pytest-html that pytest_claims.compat wraps, checked against the installed versions:
a version that changes one fails here with the line that names it."""

from __future__ import annotations

import pytest

from pytest_claims import compat


@pytest.mark.smoke
def test_pytests_runtestprotocol_is_what_the_mutant_runner_calls():
    protocol = compat.runtestprotocol()  # raises PrivateAPIChanged, naming pytest's version, where it differs
    assert callable(protocol)


@pytest.mark.smoke
def test_pytest_htmls_write_report_is_what_the_report_writer_replaces():
    base = compat.html_report_base()
    if base is None:
        pytest.skip("pytest-html is not installed: the report writer has nothing to replace")
    problem = compat.write_report_problem(base)
    assert not problem, problem


@pytest.mark.smoke
def test_a_changed_private_api_is_named():
    class Changed:
        def _write_report(self, rendered_report, encoding):  # a parameter more
            pass

    class Gone:
        pass

    assert "('self', 'rendered_report', 'encoding')" in compat.write_report_problem(Changed)
    assert "missing" in compat.write_report_problem(Gone)
    assert compat.write_report_problem(type("Same", (), {"_write_report": lambda self, rendered_report: None})) == ""


@pytest.mark.smoke
def test_a_changed_runtestprotocol_stops_with_one_line(monkeypatch):
    import _pytest.runner

    monkeypatch.setattr(_pytest.runner, "runtestprotocol", lambda item, nextitem=None: [])
    with pytest.raises(compat.PrivateAPIChanged, match=r"pytest .*: _pytest.runner.runtestprotocol takes \('item', "):
        compat.runtestprotocol()
