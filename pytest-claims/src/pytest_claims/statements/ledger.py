"""The continuation ledger of an anytime statement: its batches, kept in the evidence directory, checked when read.

An anytime-valid decision (a rate's, pytest_claims.statements.anytime_rate; two proportions' or a safe t-test's,
pytest_claims.statements.anytime_batches) may be looked at again after more data: its e-process stays valid at every
look along one chain of looks, each holding all the data of the one before. The ledger is that chain: one entry per
batch, in the order drawn (its random stream's id, the run that drew it, its own data, and what the chain derives after
it: running totals, log e-values; pytest_claims.anytime.chain_kinds), with the statement's parameters it was started
under. It is kept per (master seed, test) in a JSON file in the run's evidence directory (`claims_evidence_dir`, default
`claims-evidence/` in the rootdir: evidence, so never in pytest's cache, which `--cache-clear` empties; a folder a
project can commit), named by `ResultStore.key_of` (the store's key format is untouched), written atomically, and
checked field by field when read: the data of the kind its parameters name (counts whole, successes <= trials),
everything derived recomputed from the data, stream ids unique.
A file that fails is a note and a fresh ledger, never a verdict; the failed file is moved aside (renamed, kept
whole), never overwritten. Nothing is read or written without a store directory (--claims-no-store) or under a
mutant (its batch is decided alone). A ledger left where earlier versions kept it (beside the store's entries) is
never read or moved silently: the statement's evidence names it and the command that moves it. Reading, deciding
and writing hold the ledger's file lock, so that two runs continuing one chain at once cannot lose a batch: the
second one reads the first one's.

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
from pytest_claims.store.atomic import atomic_write
from pytest_claims.store.bounded import InputRefused, read_json
from pytest_claims.anytime.chain_kinds import ChainInvalid, decide_chain, derive_chain, kind_of
from pytest_claims.store.result_store import ResultStore

LEDGER_NAME = "claims-ledger"
LEDGER_VERSION = 1
MAX_LEDGER_BYTES = 4_000_000  # about 20 000 batches: a larger file is not one the plugin wrote
LOCK_SECONDS = 60.0  # a ledger's read-decide-write takes milliseconds: a lock held longer is another run's fault


class LedgerInvalid(ChainInvalid):
    """A ledger file that is not one the plugin wrote (the message says what is wrong)."""


def stream_id(seed: int | None, test: str, batch: int) -> str:
    """The id of the random stream a batch is drawn from: keyed_rng(f"{key}|batch{batch}") under the master seed."""
    return f"seed={seed}|test={test}|batch={batch}"


def ledger_path(store: ResultStore, seed: int | None, item: pytest.Item) -> Path | None:
    """Where the ledger of the statement test `item` under master seed `seed` lies, in the store's evidence directory;
    None without a store directory or an evidence directory, under a mutant, or for a test that is no statement (a
    harness test of a decision: each call is decided alone, and nothing it decides is continued)."""
    if store.root is None or store.evidence_root is None or store.namespace or item.get_closest_marker("claim") is None:
        return None
    digest = store.key_of(LEDGER_NAME, {"seed": seed, "test": item.nodeid}, namespace="")
    return store.evidence_root / "ledgers" / digest[:2] / f"{digest}.ledger.json"


def earlier_ledger_note(store: ResultStore, seed: int | None, item: pytest.Item, path: Path | None) -> str:
    """Where a ledger of this test is left at the place earlier versions kept it (beside the store's entries, in
    pytest's cache) and none is in the evidence directory: one note naming both and the move, "" otherwise. Nothing
    is read from there or moved: a chain is continued only from the evidence directory."""
    if path is None or store.root is None or path.exists():
        return ""
    digest = store.key_of(LEDGER_NAME, {"seed": seed, "test": item.nodeid}, namespace="")
    earlier = store.root / digest[:2] / f"{digest}.ledger.json"
    if not earlier.is_file():
        return ""
    return (
        f"a ledger of this test is at its earlier place {earlier}, not in the evidence directory: it is neither read "
        f"nor moved; to continue that chain, `mkdir -p {path.parent} && mv {earlier} {path}` and rerun"
    )


def check_ledger(raw: Any, seed: Any = None, test: str | None = None) -> dict[str, Any]:
    """`raw` if it is a ledger the plugin wrote, else LedgerInvalid: its batches in order, batch i's stream id naming
    batch i (and, given the `test` it is read for, that test under master seed `seed`: a ledger copied from another
    seed or test is not this chain), and every number a batch records after its data (running totals, e-values)
    recomputed from the data (to 1e-9), so the ledger's decision is its data's, whatever a hand-edited file says."""
    if not isinstance(raw, dict) or raw.get("version") != LEDGER_VERSION:
        raise LedgerInvalid(f"is not a version-{LEDGER_VERSION} ledger")
    batches = raw.get("batches")
    if not isinstance(batches, list) or not batches:
        raise LedgerInvalid("has no batches")
    streams: set[str] = set()
    for index, entry in enumerate(batches):
        if not isinstance(entry, dict) or entry.get("batch") != index:
            raise LedgerInvalid(f"has entry {index} out of order or malformed")
        stream, run = entry.get("stream"), entry.get("run")
        if not isinstance(stream, str) or not isinstance(run, str) or stream in streams:
            raise LedgerInvalid(f"has a missing, malformed or repeated stream id at batch {index} ({stream!r})")
        streams.add(stream)
        own = stream_id(seed, test, index) if test is not None else None
        if own is not None and stream != own:
            raise LedgerInvalid(
                f"has stream {stream!r} at batch {index}, not this chain's {own!r} "
                "(batches renumbered, or a ledger copied from another seed or test)"
            )
        if not stream.endswith(f"|batch={index}"):
            raise LedgerInvalid(f"has stream {stream!r} at batch {index}, which names another batch (renumbered)")
    try:
        derived = derive_chain(raw.get("statement"), batches)
        for index, (entry, expected) in enumerate(zip(batches, derived)):
            _check_derived(entry, expected, index)
    except ChainInvalid as error:
        raise LedgerInvalid(str(error)) from None
    except OverflowError:  # JSON's integers have no bound: one past any float, where a parameter or a number is
        raise LedgerInvalid("holds an integer past any float (not a number the plugin wrote)") from None
    return raw


def _check_derived(entry: dict[str, Any], expected: dict[str, Any], index: int) -> None:
    for name, value in expected.items():
        stored = entry.get(name)
        if isinstance(value, int):
            if stored != value or isinstance(stored, bool):
                raise LedgerInvalid(f"has {name} = {stored!r} at batch {index}, not the running sum {value}")
        elif (
            isinstance(stored, bool)
            or not isinstance(stored, (int, float))
            or not math.isclose(stored, value, rel_tol=1e-9, abs_tol=1e-9)
        ):
            raise LedgerInvalid(f"has {name} = {stored!r} at batch {index}, not its data's {value!r}")


def decided_at_look(ledger: dict[str, Any] | None) -> int | None:
    """The look (1-based) of the ledger's first crossing, None while it is inconclusive (or there is no ledger)."""
    if ledger is None:
        return None
    return decide_chain(ledger["statement"], ledger["batches"]).decided_at_look


def read_ledger(path: Path | None, seed: Any = None, test: str | None = None) -> tuple[dict[str, Any] | None, str]:
    """(the ledger at `path`, "") if there is a sound one for `test` under master seed `seed`; (None, "") if there is
    none; (None, why) if it is bad (pytest_claims.store.bounded: a FIFO, a device or an oversize file is refused
    unread)."""
    if path is None:
        return None, ""
    try:
        raw = read_json(path, MAX_LEDGER_BYTES, follow_links=False, ceiling="a ledger's limit")
        return check_ledger(raw, seed, test), ""
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError, InputRefused) as error:  # LedgerInvalid and JSON's errors are ValueErrors
        shown = error if isinstance(error, (LedgerInvalid, InputRefused)) else f"unreadable ({error})"
        return None, f"ledger {path} {shown}: started again"


@contextmanager
def ledger_locked(store: ResultStore | None, path: Path | None) -> Iterator[str]:
    """Hold the ledger's lock (beside it, `<ledger>.lock`) while reading, deciding and writing it; yields "" once
    held (or where nothing is kept: no path, a read-only store), else why not, and then nothing may be written."""
    if path is None or store is None:
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
    try:
        atomic_write(path, json.dumps(ledger, indent=1).encode("utf-8"))
    except OSError as error:
        return f"ledger {path} cannot be written ({error}): this batch is decided but not kept"
    return ""


def extend_ledger(data: dict[str, Any], batch: Any, parameters: dict[str, Any]) -> tuple[list[dict], str]:
    """The ledger's batches with this run's (its `data`, added, or replayed when its stream is the last one already
    there) and a note; a batch whose stream is in the ledger otherwise, a gap, a decided ledger continued, or
    changed parameters is refused with one ValueError. The lock is held from reading the ledger to writing it."""
    session, test = context.SESSION.get(), context.running_test()
    seed = session.seed if session is not None else None
    path = ledger_path(session.store, seed, test.item) if session is not None and test is not None else None
    with ledger_locked(session.store if session is not None else None, path) as lock_problem:
        ledger, note = read_ledger(path, seed, test.item.nodeid if test is not None else None)
        batches, added = _extended(ledger, path, data, batch, parameters, seed, test)
        earlier = earlier_ledger_note(session.store, seed, test.item, path) if session and test else ""
        notes = [note, lock_problem, earlier]
        if added and not lock_problem and path is not None and session is not None:
            moved, may_write = set_aside(path) if note else ("", True)
            kept = {"stops": ledger["stops"]} if ledger is not None and "stops" in ledger else {}
            ledger = {"version": LEDGER_VERSION, "statement": parameters, "batches": batches, **kept}
            notes += [moved, write_ledger(session.store, path, ledger) if may_write else ""]
    return batches, "; ".join(n for n in notes if n)


def afresh_advice(start: str, chosen: str) -> str:
    """Returns the advice (one clause) naming the one valid way to start `start` (a new chain, a fixed-sample
    decision) of a statement whose ledger holds data: under a master seed no run of the test has used. Under the same
    seed the fresh start would draw the very batches the ledger's looks have seen, decided by `chosen` (the new
    parameters, the fixed rule) picked after seeing them; the plugin cannot tell a removed ledger from one never
    started, so removing the file is no fresh start."""
    return (
        f"to start {start}, run under a master seed no run of this test has used (--claims-seed N): under this "
        f"seed, removing the ledger would draw the batches it has seen again, decided by {chosen} chosen after "
        "seeing them"
    )


def refuse_fixed_over_ledger(what: str) -> None:
    """A fixed-sample decision of `what` where this test's ledger holds `what`'s anytime chain (the statement switched
    from anytime to fixed, or its `anytime=`/`batch=` dropped) is refused with one ValueError: the fixed rule would be
    fed a fresh sample after the chain's looks, a look again that no level accounts for."""
    session, test = context.SESSION.get(), context.running_test()
    if session is None or test is None:
        return
    path = ledger_path(session.store, session.seed, test.item)
    ledger, _ = read_ledger(path, session.seed, test.item.nodeid)
    if ledger is not None and ledger["statement"].get("what") == what:
        raise ValueError(
            f"{what}: decided by the fixed-sample rule, but its anytime ledger {path} holds "
            f"{len(ledger['batches'])} batch(es) of this statement: restore decision = 'anytime' (and "
            f"batch=claims_batch) to continue the chain, or {afresh_advice('a fixed-sample decision', 'a rule')}"
        )


def _extended(ledger, path, data: dict[str, Any], batch: Any, parameters: dict, seed, test):
    """(the batches with this run's, whether it was added rather than replayed), or the ValueError that refuses it."""
    if ledger is not None and ledger["statement"].get("what") != parameters["what"]:
        raise ValueError(
            f"{parameters['what']}: this test already keeps the anytime ledger of {ledger['statement'].get('what')!r} "
            f"({path}): a test holds one anytime decision (one ledger per test and master seed); decide "
            f"{parameters['what']!r} in a test of its own"
        )
    if ledger is not None and ledger["statement"] != parameters:
        raise ValueError(
            f"{parameters['what']}: the threshold, levels and prior cannot change after the data "
            f"({afresh_advice('a new chain', 'parameters')}); its ledger {path} was started under "
            f"{ledger['statement']}, not {parameters}"
        )
    batches = list(ledger["batches"]) if ledger is not None else []
    expected = next_batch(ledger, test.continuing() if test is not None else False)
    if batch is None and expected > 0:
        raise ValueError(
            f"{parameters['what']}: its ledger holds {len(batches)} batch(es): pass batch=claims_batch so that this "
            "run draws from the stream the ledger expects (a batch is never drawn twice)"
        )
    batch = expected if batch is None else check_batch(batch)
    stream = stream_id(seed, test.item.nodeid if test is not None else "", batch)
    if batch < len(batches):
        # the batch this run was told to draw (claims_batch), kept meanwhile by another run continuing the chain at once
        told = getattr(test.item, "funcargs", {}).get("claims_batch") if test is not None else None
        _check_replay(batches, batch, expected if told != batch or batch != len(batches) - 1 else batch, stream, data)
        return batches, False
    if batch > len(batches) or decided_at_look(ledger) is not None:
        why = "is decided: the first crossing is final" if batch == len(batches) else "would leave a gap"
        raise ValueError(f"{parameters['what']}: batch {batch} refused: the ledger of {len(batches)} batch(es) {why}")
    derived = kind_of(parameters).derive(batches[-1] if batches else None, data, parameters)
    run = test.run_id() if test is not None else ""
    return [*batches, {"batch": batch, "stream": stream, "run": run, **data, **derived}], True


def _shown(data: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in data.items())


def _check_replay(batches: list[dict], batch: int, expected: int, stream: str, data: dict[str, Any]) -> None:
    """A batch already in the ledger is drawn again only as the replay of its last look (no --claims-continue, or
    a decided ledger, or the batch this run was told to draw, which another run continuing the chain at once kept
    first), and must reproduce its data; anything else would count a stream twice."""
    kept = {name: batches[batch].get(name) for name in data}
    if batch != expected or kept != data:
        raise ValueError(
            f"stream {stream} is already in the ledger (batch {batch}: {_shown(kept)}; this run: {_shown(data)}): "
            f"a batch is never drawn twice; the ledger expects batch {expected} now (draw it with "
            "keyed_rng(f'...|batch{claims_batch}') and pass batch=claims_batch)"
        )


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
    ledger, _ = read_ledger(ledger_path(session.store, session.seed, request.node), session.seed, request.node.nodeid)
    return next_batch(ledger, continuing(request.config))


def continuing(config: pytest.Config) -> bool:
    """Whether this run draws the next batch of an inconclusive ledger (--claims-continue or
    --claims-continue-until)."""
    return bool(config.getoption("claims_continue", False) or config.getoption("claims_continue_until", None))
