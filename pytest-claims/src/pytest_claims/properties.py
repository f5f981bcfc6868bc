"""hypothesis as a first-class citizen: the master seed seeds it, the `evidence` fixture works in `@given` tests,
and a failing property's evidence names its shrunk example.

- `seed_hypothesis`: unless `--hypothesis-seed` was given, the run's master seed is handed to hypothesis as that
  option (read by hypothesis's own pytest_configure), so one `--claims-seed` decides hypothesis's draws too, the
  same serially and under `-n N`.
- `Properties.pytest_runtest_call`: hypothesis's health check `function_scoped_fixture` fails an `@given` test that
  requests a function-scoped fixture. `evidence` is made for that: one recorder per test, filled across the
  examples (`evidence.example(...)` counts them and keeps the worst). Where `evidence` is the test's only
  function-scoped fixture, the check is suppressed for that test, as hypothesis's own plugin adjusts a test's
  settings; another function-scoped fixture keeps the check.
- `Properties.pytest_runtest_makereport`: a failed property's last example (hypothesis replays the shrunk one last)
  is recorded as `shrunk_example`; hypothesis's explanation ("lines always and only run by failing test cases")
  loses the plugin's own lines (those that build a refutation's message run only on failure by design, and say
  nothing about the property), and goes where none is left.
hypothesis is never imported here unless the project has imported it.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.state import EVIDENCE

OURS = {"evidence"}  # function-scoped fixtures of the plugin meant to span a property's examples
PACKAGE = Path(__file__).resolve().parent
EXPLANATION = "Explanation:"  # hypothesis's explain-phase note, its second line, then one note per location
LOCATION_INDENT = " " * 8


def _is_ours(location: str) -> bool:
    path = location.strip().rpartition(":")[0]
    return bool(path) and Path(path).resolve().is_relative_to(PACKAGE)


def without_own_explanations(error: BaseException) -> None:
    """Drop the plugin's own files from hypothesis's explanation notes on `error` (and on the errors of a group),
    and the explanation itself where no location of the project's is left."""
    for inner in getattr(error, "exceptions", ()) or ():
        without_own_explanations(inner)
    notes = getattr(error, "__notes__", None)
    if not isinstance(notes, list) or EXPLANATION not in notes:
        return
    start = notes.index(EXPLANATION)
    end = start + 2
    while end < len(notes) and notes[end].startswith(LOCATION_INDENT):
        end += 1
    kept = [note for note in notes[start + 2 : end] if not _is_ours(note)]
    if not any(note.strip().rpartition(":")[0] for note in kept):  # only "(and N more ...)" or nothing
        kept = []
    notes[start:end] = notes[start : start + 2] + kept if kept else []


def seed_hypothesis(config: pytest.Config, seed: int) -> bool:
    """Give hypothesis the master seed unless the user gave --hypothesis-seed; whether it was given."""
    if not hasattr(config.option, "hypothesis_seed") or config.option.hypothesis_seed is not None:
        return False
    config.option.hypothesis_seed = str(seed)
    return True


def _is_property(item: pytest.Item) -> bool:
    hypothesis = sys.modules.get("hypothesis")
    return hypothesis is not None and hasattr(item, "obj") and hypothesis.is_hypothesis_test(item.obj)


def function_scoped_arguments(item: pytest.Item) -> set[str]:
    """The function-scoped fixtures the test function names in its signature (what hypothesis's check looks at)."""
    names = set(inspect.signature(item.function).parameters)
    info = getattr(item, "_fixtureinfo", None)
    found = set()
    for name, definitions in info.name2fixturedefs.items() if info is not None else []:
        if name in names and definitions and definitions[-1].scope == "function":
            found.add(name)
    return found


class Properties:
    """Registered where the plugin is active (every process that runs tests)."""

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outside hypothesis's own wrapper, which runs the check
    def pytest_runtest_call(self, item: pytest.Item):
        self.suppress_for_evidence(item)
        yield

    @staticmethod
    def suppress_for_evidence(item: pytest.Item) -> None:
        scoped = function_scoped_arguments(item) if _is_property(item) else set()
        if not scoped or scoped - OURS:
            return
        from hypothesis import HealthCheck, settings

        function = getattr(item.obj, "__func__", item.obj)
        current = getattr(function, "_hypothesis_internal_use_settings", settings.default)
        if HealthCheck.function_scoped_fixture not in current.suppress_health_check:
            function._hypothesis_internal_use_settings = settings(
                parent=current,
                suppress_health_check={HealthCheck.function_scoped_fixture} | set(current.suppress_health_check),
            )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]):
        if call.excinfo is not None and _is_property(item):  # before the report renders the notes
            without_own_explanations(call.excinfo.value)
        outcome = yield
        report = outcome.get_result()
        evidence = item.stash.get(EVIDENCE, None)
        if report.when == "call" and call.excinfo is not None and evidence is not None:
            if "last_example" in evidence.values and _is_property(item):
                evidence.values["shrunk_example"] = evidence.values.pop("last_example")
