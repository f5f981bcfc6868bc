"""The running session and statement test, as a context variable: the library reads it, the plugin sets it.

The assertion and decision helpers, `current_store()`, `current_evidence()`, `registered_false_alarm()` and
`registered_decision()` read it; the plugin sets it at configure (the session: its result store) and around each
test's protocol (the running test: its evidence, false-alarm level and reproduce line: RunningSession.with_test),
and resets it with
its token at unconfigure, so a session run inside a test (pytester) hands the outer one back when it ends.
Nothing here imports the plugin (as hypothesis' statistics collector is written into by the library and
installed by its pytest plugin).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from pytest_claims.model.evidence import Evidence
from pytest_claims.outcomes import ClaimRefuted
from pytest_claims.store.result_store import ResultStore


@dataclass
class RunningTest:
    """The statement or reference test that runs now, as the helpers see it."""

    item: Any  # the pytest.Item
    evidence: Callable[[], Evidence]  # its evidence recorder (created on first use)
    false_alarm: Callable[[], float]  # its registered false-alarm probability at its tier
    reproduce: Callable[[], str]  # the command that reruns it under this run's conditions
    decision: Callable[[], dict[str, Any]] = dict  # its registry record's `decision` ({}: not said)
    continuing: Callable[[], bool] = bool  # whether the run continues inconclusive ledgers (--claims-continue)
    run_id: Callable[[], str] = str  # the run's report id (a worker has it from the controller)
    statement: Callable[[], str] = str  # its statement's name ("" for a reference test)
    family: Callable[[], dict[str, Any]] = dict  # its statement's registered family ({}: decided alone)


@dataclass
class RunningSession:
    """An active pytest-claims session in this process."""

    store: ResultStore
    test: RunningTest | None = None  # set by with_test only
    seed: int | None = None  # the run's master seed (pytest_claims.roles.seeding: keyed generators read it)

    @contextlib.contextmanager
    def with_test(self, test: RunningTest) -> Iterator[None]:
        """`test` is the running test inside the block, the one before it again after, even when the block raises
        (as hypothesis' `collector.with_value`)."""
        before, self.test = self.test, test
        try:
            yield
        finally:
            self.test = before


SESSION: contextvars.ContextVar[RunningSession | None] = contextvars.ContextVar("pytest_claims_session", default=None)
_OUTSIDE: list[ResultStore] = []  # the memory-only store handed out while no session is active


def enter_session(session: RunningSession) -> contextvars.Token[RunningSession | None]:
    """Make `session` the active one (the plugin calls this at configure)."""
    return SESSION.set(session)


def leave_session(token: contextvars.Token[RunningSession | None]) -> None:
    """Hand back the session that was active before (the plugin calls this at unconfigure)."""
    try:
        SESSION.reset(token)
    except ValueError:  # set in another context: fall back to the value before it
        SESSION.set(token.old_value if token.old_value is not contextvars.Token.MISSING else None)
    if SESSION.get() is None:
        _OUTSIDE.clear()  # outside any session again: a fresh memory-only store, as after a session always


def running_test() -> RunningTest | None:
    session = SESSION.get()
    return session.test if session is not None else None


def current_store() -> ResultStore:
    """Returns the session's store (a memory-only one outside a pytest session, e.g. in a benchmark script)."""
    session = SESSION.get()
    if session is not None:
        return session.store
    if not _OUTSIDE:
        _OUTSIDE.append(ResultStore(None))
    return _OUTSIDE[0]


def current_evidence() -> tuple[Evidence, Any] | None:
    """Returns the running test's evidence recorder (created on first use) and the test item; None outside a test."""
    test = running_test()
    return (test.evidence(), test.item) if test is not None else None


def record(what: str, found: dict[str, Any]) -> None:
    """Record `found` under `what` in the running test's evidence (nothing outside a test)."""
    test = running_test()
    if test is not None:
        test.evidence().record(**{what: found})


def refute(message: str) -> None:
    """Raise ClaimRefuted(message + the command that reproduces the running test)."""
    __tracebackhide__ = True
    test = running_test()
    command = test.reproduce() if test is not None else "(outside a pytest run)"
    raise ClaimRefuted(f"{message}; reproduce: {command}")


def registered_decision() -> dict[str, Any]:
    """The running statement test's registered `decision` ({} outside a test or where its record says none)."""
    test = running_test()
    return test.decision() if test is not None else {}


def running_statement() -> str:
    """The running statement test's statement name ("" outside a statement test)."""
    test = running_test()
    return test.statement() if test is not None else ""


def registered_family() -> dict[str, Any]:
    """The running statement's registered family as {name, statements, alpha, method, why} ({} outside a test or
    where the statement is decided alone)."""
    test = running_test()
    return test.family() if test is not None else {}


def registered_false_alarm() -> float:
    """Returns the running statement test's registered false-alarm probability at its tier (the level its
    decisions use, so the number the registry states is the number the test spends)."""
    test = running_test()
    if test is None:
        raise RuntimeError("registered_false_alarm() is for a statement test while it runs")
    return test.false_alarm()
