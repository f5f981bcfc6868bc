"""hypothesis as a first-class citizen: the master seed seeds it, the `evidence` fixture works in `@given` tests,
and a failing property's evidence names its shrunk example.

- `seed_hypothesis`: unless `--hypothesis-seed` was given, the run's master seed is handed to hypothesis as that
  option (read by hypothesis's own pytest_configure), so one `--claims-seed` decides hypothesis's draws too, the
  same serially and under `-n N`.
- `seeded_examples`: each statement test's searches draw from a seed of their own, derived from that seed and the
  test's node id (`statement_seed`), so replication seeds vary a property's examples while one (seed, test) always
  draws the same ones, serially or under `-n N`. A profile's `derandomize=True` (which hypothesis reads before any
  seed) keeps its meaning per (seed, test): within a statement test the default settings are the profile's with
  derandomize off (and no example database, as derandomize implies), so a search whose settings are built in the
  test inherits that; a property that is the test itself is seeded as hypothesis's `@seed` would. A `@seed` of
  the project's wins, and a settings object built before the test (at import) keeps the derandomize it read then.
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

import contextlib
import hashlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_claims.roles.state import EVIDENCE, STATEMENT

OURS = {"evidence"}  # function-scoped fixtures of the plugin meant to span a property's examples
PACKAGE = Path(__file__).resolve().parent.parent  # the whole package, every room of it
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


def _test_function(item: pytest.Item) -> Any:
    """The function a test item runs (pytest.Function's `function`: its `obj`, unbound), or None for an item without
    one. Any: hypothesis keeps its state in attributes it sets on that function."""
    obj = getattr(item, "obj", None)
    return getattr(obj, "__func__", obj)


def _is_property(item: pytest.Item) -> bool:
    hypothesis = sys.modules.get("hypothesis")
    return hypothesis is not None and hasattr(item, "obj") and hypothesis.is_hypothesis_test(getattr(item, "obj"))


def function_scoped_arguments(item: pytest.Item) -> set[str]:
    """The function-scoped fixtures the test function names in its signature (what hypothesis's check looks at)."""
    names = set(inspect.signature(_test_function(item)).parameters)
    info = getattr(item, "_fixtureinfo", None)
    found = set()
    for name, definitions in info.name2fixturedefs.items() if info is not None else []:
        if name in names and definitions and definitions[-1].scope == "function":
            found.add(name)
    return found


def statement_seed(base: int | str, nodeid: str) -> int:
    """The seed of a statement test's hypothesis searches: 128 bits of SHA-256 of the run's hypothesis seed (the
    master seed, or the --hypothesis-seed given) and the test's node id, the same in every process."""
    return int.from_bytes(hashlib.sha256(f"{base}|{nodeid}".encode()).digest()[:16], "big")


@contextlib.contextmanager
def seeded_examples(item: pytest.Item) -> Iterator[None]:
    """Within a statement test's call: hypothesis's forced seed set to the test's `statement_seed`, the default
    settings without derandomize, and a property that is the test itself seeded as by `@seed`; all restored
    after. Nothing where hypothesis is not imported, the test names no statement, or hypothesis's plugin is off."""
    base = getattr(item.config.option, "hypothesis_seed", None)
    if base is None or item.stash.get(STATEMENT, None) is None or "hypothesis" not in sys.modules:
        yield
        return
    from hypothesis import core, settings
    from hypothesis._settings import local_settings

    # settings.default is typed Optional (hypothesis sets it while importing itself); set once it is imported
    seed, current = statement_seed(base, item.nodeid), cast(settings, settings.default)
    # derandomize wins over every seed but @seed's (hypothesis.core.get_random_for_wrapped_test): off here, with the
    # example database it implies off too, so the forced seed decides the draws
    local = settings(current, derandomize=False, database=None) if current.derandomize else current
    function: Any = _test_function(item) if _is_property(item) else None
    own = function is not None and getattr(function, "_hypothesis_internal_use_seed", None) is None
    before = core.global_force_seed
    # hypothesis declares global_force_seed = None unannotated, so mypy types it None: set through Any
    cast(Any, core).global_force_seed = seed
    if own:
        function._hypothesis_internal_use_seed = seed
    try:
        with local_settings(local):
            yield
    finally:
        core.global_force_seed = before
        if own:
            function._hypothesis_internal_use_seed = None


class Properties:
    """Registered where the plugin is active (every process that runs tests)."""

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outside hypothesis's own wrapper, which runs the check
    def pytest_runtest_call(self, item: pytest.Item):
        self.suppress_for_evidence(item)
        with seeded_examples(item):
            yield

    @staticmethod
    def suppress_for_evidence(item: pytest.Item) -> None:
        scoped = function_scoped_arguments(item) if _is_property(item) else set()
        if not scoped or scoped - OURS:
            return
        from hypothesis import HealthCheck, settings

        function = _test_function(item)
        # the test's own @settings, or the default ones (Optional only while hypothesis imports itself)
        current = cast(settings, getattr(function, "_hypothesis_internal_use_settings", settings.default))
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
