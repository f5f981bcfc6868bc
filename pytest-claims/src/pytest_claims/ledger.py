"""The continuation ledger of an anytime statement: its batches, kept in the result store and checked when read.

An anytime-valid rate decision (pytest_claims.anytime_rate) may be looked at again after more trials: its e-process
stays valid at every look along one chain of looks, each holding all the data of the one before. The ledger is
that chain: one entry per batch, in the order drawn (its random stream's id, the run that drew it, its counts, the
cumulative counts and the log e-values after it), with the statement's parameters it was started under. It is kept
per (master seed, test) in a JSON file beside the store's entries, named by `ResultStore.key_of` (the store's key
format is untouched), written atomically, and checked field by field when read: counts whole and non-negative,
successes <= trials, the cumulative counts the running sums, the e-values those of the counts, stream ids unique.
A file that fails is a note and a fresh ledger, never a verdict; the failed file is moved aside (renamed, kept
whole), never overwritten. Nothing is read or written without a store directory or under a mutant (its batch is
decided alone), and nothing is written in a read-only store. Reading, deciding and writing hold the ledger's file
lock, so that two runs continuing one chain at once cannot lose a batch: the second one reads the first one's.

Which batch a test draws (`next_batch`, the `claims_batch` fixture): 0 for a new ledger; under --claims-continue,
the next one of an inconclusive ledger; otherwise the ledger's last batch again, a replay that must reproduce its
counts and adds nothing, so that a plain rerun repeats the run's verdict, as a master seed promises.
"""

from __future__ import annotations

import json
import math
import operator
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock, Timeout

from pytest_claims import context
from pytest_claims.anytime import BetaPrior, decide_log_evalues, rate_log_evalues_for
from pytest_claims.atomic import atomic_write
from pytest_claims.store import ResultStore

LEDGER_NAME = "claims-ledger"
LEDGER_VERSION = 1
MAX_LEDGER_BYTES = 4_000_000  # about 20 000 batches: a larger file is not one the plugin wrote
LOG_E_FLOOR = -1e6  # log e-values below it are kept as it (JSON has no -inf; no decision reads below 0)
LOCK_SECONDS = 60.0  # a ledger's read-decide-write takes milliseconds: a lock held longer is another run's fault
PARAMETERS = ("what", "threshold", "at_least", "alpha", "held_alpha", "prior")


class LedgerInvalid(ValueError):
    """A ledger file that is not one the plugin wrote (the message says what is wrong)."""


def stream_id(seed: int | None, test: str, batch: int) -> str:
    """The id of the random stream a batch is drawn from: keyed_rng(f"{key}|batch{batch}") under the master seed."""
    return f"seed={seed}|test={test}|batch={batch}"


def floored(log_evalue: float) -> float:
    return max(float(log_evalue), LOG_E_FLOOR)


def ledger_path(store: ResultStore, seed: int | None, test: str) -> Path | None:
    """Where the ledger of `test` under master seed `seed` lies; None without a store directory or under a mutant."""
    if store.root is None or store.namespace:
        return None
    digest = store.key_of(LEDGER_NAME, {"seed": seed, "test": test}, namespace="")
    return store.root / digest[:2] / f"{digest}.ledger.json"


def _whole(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LedgerInvalid(f"has {name} = {value!r}, not a whole number >= 0")
    return value


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise LedgerInvalid(f"has {name} = {value!r}, not a number")
    return float(value)


def _check_statement(statement: Any) -> dict[str, Any]:
    if not isinstance(statement, dict) or sorted(statement) != sorted(PARAMETERS):
        raise LedgerInvalid(f"has statement parameters {statement!r}, not {list(PARAMETERS)}")
    prior = statement["prior"]
    try:
        BetaPrior(**prior)
        for name in ("threshold", "alpha", "held_alpha"):
            _number(name, statement[name])
    except (TypeError, ValueError) as error:
        raise LedgerInvalid(f"has statement parameters that are not valid ({error})") from None
    if not isinstance(statement["what"], str) or not isinstance(statement["at_least"], bool):
        raise LedgerInvalid("has statement parameters of the wrong types (what: a string, at_least: a boolean)")
    return statement


def check_ledger(raw: Any) -> dict[str, Any]:
    """`raw` if it is a ledger the plugin wrote (every field, count and e-value checked), else LedgerInvalid."""
    if not isinstance(raw, dict) or raw.get("version") != LEDGER_VERSION:
        raise LedgerInvalid(f"is not a version-{LEDGER_VERSION} ledger")
    statement = _check_statement(raw.get("statement"))
    batches = raw.get("batches")
    if not isinstance(batches, list) or not batches:
        raise LedgerInvalid("has no batches")
    streams: set[str] = set()
    total_s = total_n = 0
    for index, entry in enumerate(batches):
        if not isinstance(entry, dict) or entry.get("batch") != index:
            raise LedgerInvalid(f"has entry {index} out of order or malformed")
        stream, run = entry.get("stream"), entry.get("run")
        if not isinstance(stream, str) or not isinstance(run, str) or stream in streams:
            raise LedgerInvalid(f"has a missing, malformed or repeated stream id at batch {index} ({stream!r})")
        streams.add(stream)
        successes, trials = _whole("successes", entry.get("successes")), _whole("trials", entry.get("trials"))
        if successes > trials:
            raise LedgerInvalid(f"has successes {successes} > trials {trials} at batch {index}")
        total_s, total_n = total_s + successes, total_n + trials
        if (entry.get("cum_successes"), entry.get("cum_trials")) != (total_s, total_n):
            raise LedgerInvalid(f"has cumulative counts at batch {index} that are not the running sums")
        _check_evalues(entry, statement, index)
    return raw


def _check_evalues(entry: dict[str, Any], statement: dict[str, Any], index: int) -> None:
    """The entry's log e-values must be those of its cumulative counts (to 1e-9): the ledger's decision is the
    counts', whatever a hand-edited file says."""
    expected = rate_log_evalues_for(
        entry["cum_successes"],
        entry["cum_trials"],
        statement["threshold"],
        at_least=statement["at_least"],
        prior=BetaPrior(**statement["prior"]),
    )
    for name, value in zip(("log_e_for", "log_e_against"), expected):
        stored = _number(name, entry.get(name))
        if not math.isclose(stored, floored(value), rel_tol=1e-9, abs_tol=1e-9):
            raise LedgerInvalid(f"has {name} = {stored!r} at batch {index}, not its counts' {floored(value)!r}")


def decided_at_look(ledger: dict[str, Any] | None) -> int | None:
    """The look (1-based) of the ledger's first crossing, None while it is inconclusive (or there is no ledger)."""
    if ledger is None:
        return None
    statement, batches = ledger["statement"], ledger["batches"]
    return decide_log_evalues(
        [b["log_e_for"] for b in batches],
        [b["log_e_against"] for b in batches],
        alpha=statement["alpha"],
        held_alpha=statement["held_alpha"],
    ).decided_at_look


def read_ledger(path: Path | None) -> tuple[dict[str, Any] | None, str]:
    """(the ledger at `path`, "") if there is a sound one; (None, "") if there is none; (None, why) if it is bad."""
    if path is None:
        return None, ""
    try:
        if path.stat().st_size > MAX_LEDGER_BYTES:
            raise LedgerInvalid(f"is over {MAX_LEDGER_BYTES} bytes")
        raw = json.loads(path.read_bytes())
        return check_ledger(raw), ""
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as error:  # LedgerInvalid and JSON's errors are ValueErrors
        return (
            None,
            f"ledger {path} {error if isinstance(error, LedgerInvalid) else f'unreadable ({error})'}: started again",
        )


@contextmanager
def ledger_locked(store: ResultStore | None, path: Path | None) -> Iterator[str]:
    """Hold the ledger's lock (beside it, `<ledger>.lock`) while reading, deciding and writing it; yields "" once
    held (or where nothing is kept: no path, a read-only store), else why not, and then nothing may be written."""
    if path is None or store is None or store.read_only:
        yield ""
        return
    lock = FileLock(f"{path}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire(timeout=LOCK_SECONDS)
    except Timeout:
        yield f"ledger {path} was locked by another run for over {LOCK_SECONDS:g} s: this batch is decided but not kept"
        return
    except OSError as error:
        yield f"ledger {path} cannot be locked ({error}): this batch is decided but not kept"
        return
    try:
        yield ""
    finally:
        lock.release()


def set_aside(path: Path) -> tuple[str, bool]:
    """Move a ledger that failed its checks aside (`<ledger>.invalid-<UTC time>`), so that the fresh one does not
    overwrite it: (what was done, whether the fresh ledger may now be written at `path`)."""
    aside = path.with_name(f"{path.name}.invalid-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    try:
        path.rename(aside)
    except FileNotFoundError:
        return "", True
    except OSError as error:
        return f"it cannot be moved aside ({error}): this batch is decided but not kept", False
    return f"the failed file is kept as {aside.name}", True


def write_ledger(store: ResultStore, path: Path | None, ledger: dict[str, Any]) -> str:
    """Keep `ledger` at `path` (atomically): "" once kept, else why not (the decision stands all the same)."""
    if path is None:
        return ""
    if store.read_only:
        return f"the store is read-only: ledger {path} not updated (this batch is decided but not kept)"
    try:
        atomic_write(path, json.dumps(ledger, indent=1).encode("utf-8"))
    except OSError as error:
        return f"ledger {path} cannot be written ({error}): this batch is decided but not kept"
    return ""


def next_batch(ledger: dict[str, Any] | None, continuing: bool) -> int:
    """The batch a test draws now: 0 without a ledger; the next one when continuing an inconclusive ledger; else
    the last one again (a replay: the first crossing is final, and a plain rerun repeats the run)."""
    if ledger is None:
        return 0
    last = len(ledger["batches"]) - 1
    return last + 1 if continuing and decided_at_look(ledger) is None else last


def check_batch(batch: Any) -> int:
    try:
        batch = operator.index(batch)
    except TypeError:
        raise TypeError(f"batch must be a whole number (the claims_batch fixture), got {batch!r}") from None
    if batch < 0:
        raise ValueError(f"batch must be >= 0, got {batch}")
    return batch


@pytest.fixture
def claims_batch(request: pytest.FixtureRequest) -> int:
    """The batch this run draws for the test's anytime statement: draw its trials with
    keyed_rng(f"...|batch{claims_batch}") and pass batch=claims_batch to decide_rate (docs/how-to/continue.md)."""
    session = context.SESSION.get()
    if session is None:
        return 0
    ledger, _ = read_ledger(ledger_path(session.store, session.seed, request.node.nodeid))
    return next_batch(ledger, bool(request.config.getoption("claims_continue", False)))
