"""Continuing anytime statements until they decide, within a stated budget, in one run; decided ones never recomputed.

`--claims-continue-until=decided` with a budget (`--claims-budget`, or the ini key `claims_budget`: `batches:N`,
`trials:N`, `time:D`, comma-separated; each counted per statement test, in this run) reruns a statement test's body
once per batch: the plugin calls the test function again with the next `claims_batch`, so a test written to draw one
batch per run is continued unchanged (no batch generator to write; the decide_* routes still see one batch per
call, and every check of the ledger applies to every batch). It stops at the first crossing, when the next batch
would not fit the budget (a batch is started only where the batches so far say it fits: `batches` counts them,
`trials` adds the last batch's size, `time` the mean batch's seconds), or when a call ends otherwise than
inconclusive. Each call records its evidence afresh, as the next run would. Each batch's e-values are a progress
line as it goes (none under -q; written here, where the batch ends inside a test, not by pytest_claims.roles.progress,
which counts finished tests on the controller), and the end is one line: crossed at batch k, budget spent at ln E, or
already decided. The stop is kept in the ledger (`stops`).

Continuing in one run is as valid as continuing over runs: an e-process (and alpha spent over rounds that each test
their own new batch) keeps its level under any rule for when to look and when to stop, the budget and the first
crossing included (docs/explanation/anytime-design.md). A fixed-sample decision keeps no ledger: it is never
continued (its inconclusive reason says so: a second look would spend its level again).

A ledger that is decided is final, so a run that meets one computes nothing: the test body is not called, and the
decision the deciding run recorded (its outcome, message and evidence, kept in the ledger under `decided`) is reported,
its chain read from the ledger's checked batches. The recorded decision is used only where it agrees with the chain's
own decision and the statement is still registered anytime at the ledger's false alarm; otherwise (and for a ledger
decided before this record existed) the last batch is replayed once, as before, and its decision recorded.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_claims.anytime.chain_kinds import SPENT_P, batch_size, decide_chain, kind_of
from pytest_claims.statements.ledger import decided_at_look, ledger_locked, ledger_path, read_ledger, write_ledger
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED, ClaimRefuted, StatementInconclusive
from pytest_claims.stats.shown_numbers import significant
from pytest_claims.roles.state import EVIDENCE, STATEMENT, State, declared_tier, is_worker
from pytest_claims.roles.options import Settings

UNTIL_OPTION = "--claims-continue-until"
BUDGET_OPTION = "--claims-budget"
BUDGET_INI = "claims_budget"
MAX_STOPS = 1000  # stops a ledger keeps (the oldest dropped): one per run that continued it
BUDGET = pytest.StashKey["Budget | None"]()  # this run's budget (None: not continuing until decided)
_INSIDE = pytest.StashKey[bool]()  # set while the plugin calls the test body itself (the hook then steps aside)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Budget:
    """What one statement test may spend in one run of --claims-continue-until=decided (None: no limit of that kind;
    at least one is set). `text` is the budget as the user wrote it."""

    text: str
    batches: int | None = None
    trials: int | None = None
    seconds: float | None = None


def parse_budget(text: str, source: str) -> Budget:
    """The budget `text` (`batches:N`, `trials:N`, `time:D` with D in seconds or ending in s, m or h; comma-separated,
    each kind once), or one pytest.UsageError naming `source` (the option or ini key it came from)."""
    found: dict[str, Any] = {}
    for part in (p.strip() for p in str(text).split(",")):
        kind, _, value = part.partition(":")
        kind, value = kind.strip().lower(), value.strip()
        try:
            if kind in found:
                raise ValueError(f"{kind} given twice")
            if kind in ("batches", "trials"):
                found[kind] = _positive_whole(value, kind)
            elif kind == "time":
                unit = _UNITS.get(value[-1:].lower(), None)
                try:
                    number = float(value[:-1] if unit else value) * (unit or 1.0)
                except ValueError:
                    number = math.nan
                if not 0 < number < math.inf:
                    raise ValueError(f"time {value!r} is not a positive duration")
                found[kind] = number
            else:
                raise ValueError(f"{part!r} names no budget")
        except ValueError as error:
            raise pytest.UsageError(
                f"{source} {text!r}: {error}; "
                "a budget is batches:N, trials:N or time:D (D like 90s, 10m, 2h), comma-separated, "
                "e.g. batches:50,time:10m"
            ) from None
    return Budget(str(text), found.get("batches"), found.get("trials"), found.get("time"))


def _number(value: str, kind: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{kind} {value!r} is not a number") from None


def _positive_whole(value: str, kind: str) -> int:
    number = _number(value, kind)  # 1e7 is a whole number of trials
    if not (1 <= number < math.inf and number == int(number)):
        raise ValueError(f"{kind} {value!r} is not a whole number >= 1")
    return int(number)


def configured(settings: Settings) -> Budget | None:
    """The budget of this run's --claims-continue-until=decided (None where the run does not continue until
    decided); a budget missing, given without the option, or unreadable, and the option without a store, is one
    UsageError."""
    until = settings.continue_until
    given = settings.budget_option
    if until is None:
        if given:
            raise pytest.UsageError(
                f"{BUDGET_OPTION} {given!r} is the budget of {UNTIL_OPTION}=decided: give that option too"
            )
        return None
    if settings.no_store:
        raise pytest.UsageError(f"{UNTIL_OPTION}: continuing needs the ledger, which --claims-no-store does not keep")
    raw = given or settings.budget
    if not raw:
        raise pytest.UsageError(
            f"{UNTIL_OPTION}=decided needs a budget: {BUDGET_OPTION}=batches:N, trials:N or time:D (comma-separated "
            f"for several), or the ini key {BUDGET_INI}"
        )
    return parse_budget(raw, BUDGET_OPTION if given else f"ini key {BUDGET_INI}")


def look_line(ledger: dict[str, Any]) -> str:
    """The chain's state after its last batch: ln E for and against it with the levels they need (p-values and
    their spent levels for rounds of p-values)."""
    statement, last = ledger["statement"], ledger["batches"][-1]
    if kind_of(statement).name == SPENT_P:
        p_for, p_against = last["p_for"], last["p_against"]
        shown = [f"{'none' if p is None else f'{p:.3g}'}" for p in (p_for, p_against)]
        return (
            f"round {last['round']}: p for {shown[0]} (needs < {last['held_level']:.3g}), "
            f"against {shown[1]} (needs < {last['refute_level']:.3g})"
        )
    return (
        f"ln E for {significant(last['log_e_for'])} (needs {significant(-math.log(statement['held_alpha']))}), "
        f"against {significant(last['log_e_against'])} (needs {significant(-math.log(statement['alpha']))})"
    )


def _clock(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class Continuation:
    """The pytest_pyfunc_call of every statement test that keeps a ledger (registered where the plugin is active, in
    every process): a decided ledger reported without calling the test, the test called per batch under
    --claims-continue-until, and each decision and stop kept in the ledger."""

    def __init__(self, state: State, budget: Budget | None) -> None:
        self.state = state
        self.budget = budget

    # ---- where the lines go
    def say(self, item: pytest.Item, line: str) -> None:
        config = item.config
        if config.get_verbosity() < 0:
            return
        line = f"claims continue: {item.nodeid} {line}"
        writer = config.pluginmanager.get_plugin("terminalreporter") if not is_worker(config) else None
        capture = config.pluginmanager.getplugin("capturemanager")  # the test's output is captured: this is not
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            if writer is not None:
                writer.ensure_newline()
                writer.write_line(line)
            else:  # a pytest-xdist worker: its stderr reaches the controller's terminal
                sys.stderr.write(f"\n{line}\n")
                sys.stderr.flush()

    # ---- the hook
    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        item, state = pyfuncitem, self.state
        if item.stash.get(_INSIDE, False) or state.mutants.active or STATEMENT not in item.stash:
            return None
        path = ledger_path(state.store, state.running.seed, item)
        if path is None:
            return None
        ledger, _ = read_ledger(path, state.running.seed, item.nodeid)
        if ledger is not None and decided_at_look(ledger) is not None:
            recorded = self.recorded_decision(item, ledger)
            if recorded is not None:
                return self.report_recorded(item, ledger, recorded)
        return self.run_batches(item, path, ledger)

    def _call(self, item: pytest.Function) -> None:
        item.stash[_INSIDE] = True
        try:
            item.ihook.pytest_pyfunc_call(pyfuncitem=item)
        finally:
            item.stash[_INSIDE] = False

    def run_batches(self, item: pytest.Function, path: Any, ledger: dict[str, Any] | None) -> bool:
        """Call the test once (or, until decided, once per batch within the budget); keep the decision and the stop
        in the ledger; end as the last call ended."""
        __tracebackhide__ = True
        state, budget = self.state, self.budget
        seed = state.running.seed
        loops = budget is not None and "claims_batch" in item._fixtureinfo.argnames
        start, added, trials, first = time.monotonic(), 0, 0, None
        while True:
            before = len(ledger["batches"]) if ledger is not None else 0
            began = time.monotonic()
            ended: BaseException | None = None
            try:
                self._call(item)
            except (StatementInconclusive, ClaimRefuted) as error:
                ended = error
            ledger, _ = read_ledger(path, seed, item.nodeid)
            grown = ledger is not None and len(ledger["batches"]) > before
            if not grown:
                if budget is not None and isinstance(ended, StatementInconclusive) and ledger is None:
                    ended = StatementInconclusive(
                        f"{ended}; {UNTIL_OPTION}: not continued, a fixed-sample decision keeps no ledger (a second "
                        'look would spend its level again: register the statement decision = "anytime")',
                        ended.needed,
                    )
                elif (
                    ledger is not None
                    and decided_at_look(ledger) is not None
                    and not isinstance(ended, StatementInconclusive)
                ):  # a decided ledger's last batch replayed (recorded before this record existed): record it now
                    self.keep_decision(item, path, ledger, ended)
                break
            assert ledger is not None  # grown: the call wrote a ledger (narrows the type for the checker)
            added, last = added + 1, ledger["batches"][-1]["batch"]
            first = before if first is None else first
            size = batch_size(ledger["statement"], ledger["batches"][-1]) if budget else None
            trials += size or 0
            elapsed = time.monotonic() - start
            if budget is not None:
                self.say(
                    item,
                    f"batch {last} ({added} this run, budget {budget.text}): {look_line(ledger)}; "
                    f"{_clock(time.monotonic() - began)}",
                )
            look = decided_at_look(ledger)
            if look is not None:
                self.keep_decision(item, path, ledger, ended, stop=self.stop("crossed", first, ledger, elapsed))
                if budget is not None:
                    outcome = REFUTED if isinstance(ended, ClaimRefuted) else HELD
                    self.say(item, f"{outcome}: crossed at batch {look - 1}, {added} batch(es) in {_clock(elapsed)}")
                break
            if not loops or not isinstance(ended, StatementInconclusive):
                break
            spent = self.spent(added, trials, size, elapsed)
            if spent:
                stop = self.stop("budget", first, ledger, elapsed)
                self.keep_decision(item, path, ledger, None, stop=stop)
                line = f"budget {budget.text if budget else ''} spent ({spent}) at batch {last}: {look_line(ledger)}"
                self.say(item, f"{INCONCLUSIVE}: {line}")
                ended = StatementInconclusive(f"{ended}; {UNTIL_OPTION}: {line}", ended.needed)
                break
            evidence = item.stash.get(EVIDENCE, None)
            if evidence is not None:  # the next call records afresh, as the next run would
                evidence.values.clear()
                evidence.headline_names.clear()
                evidence.figures.clear()
            item.funcargs["claims_batch"] = len(ledger["batches"])
        if ended is not None:
            raise ended
        return True

    def spent(self, added: int, trials: int, size: int | None, elapsed: float) -> str:
        """Why the next batch would not fit the budget, or ""."""
        budget = self.budget
        assert budget is not None
        if budget.batches is not None and added >= budget.batches:
            return f"{added} batch(es)"
        if budget.trials is not None and (size is None or trials + size > budget.trials):
            return f"{trials} trials" if size is not None else "its batches count no trials"
        if budget.seconds is not None and elapsed + elapsed / added > budget.seconds:
            return f"{_clock(elapsed)}, {_clock(elapsed / added)} a batch"
        return ""

    def stop(self, how: str, first: int | None, ledger: dict[str, Any], elapsed: float) -> dict[str, Any]:
        last = ledger["batches"][-1]
        return {
            "run": self.state.inputs.report_id,
            "ended": how,
            "budget": self.budget.text if self.budget is not None else None,
            "first_batch": first,
            "last_batch": last["batch"],
            "seconds": round(elapsed, 3),
            **{name: last[name] for name in ("log_e_for", "log_e_against") if name in last},
        }

    def _mark(self, item: pytest.Item, ledger: dict[str, Any], stop: dict[str, Any]) -> None:
        """The stop beside the decision's record in the test's evidence (`anytime` -> `continued`)."""
        evidence = item.stash.get(EVIDENCE, None)
        block = evidence.values.get(ledger["statement"]["what"]) if evidence is not None else None
        if isinstance(block, dict) and isinstance(block.get("anytime"), dict):
            block["anytime"]["continued"] = stop

    # ---- the ledger's records
    def keep_decision(
        self, item: pytest.Item, path: Any, ledger: dict[str, Any], ended: BaseException | None, stop: Any = None
    ) -> None:
        """Keep in the ledger, under its lock and only if its chain is still the one just read, the stop (if any) and,
        for a decided chain, the decision as this run recorded it (outcome, message, evidence without the chain's
        batches, which the ledger holds), so that a later run reports it without computing."""
        decided = decided_at_look(ledger) is not None
        if stop is None and not decided:
            return
        evidence = item.stash.get(EVIDENCE, None)
        if stop is not None:
            self._mark(item, ledger, stop)
        with ledger_locked(self.state.store, path) as problem:
            if problem:
                return
            now, _ = read_ledger(path, self.state.running.seed, item.nodeid)
            if now is None or now["batches"] != ledger["batches"]:
                return
            if stop is not None:
                now["stops"] = [*_stops(now), stop][-MAX_STOPS:]
            if decided and evidence is not None:
                outcome = REFUTED if isinstance(ended, ClaimRefuted) else HELD
                values = _without_chain(evidence.as_dict(), ledger["statement"]["what"])
                figures = list(evidence.figures)
                now["decided"] = {"outcome": str(outcome), "message": str(ended or ""), "evidence": values}
                now["decided"]["figures"] = figures
                now["decided"]["run"] = self.state.inputs.report_id
            write_ledger(self.state.store, path, now)

    def recorded_decision(self, item: pytest.Item, ledger: dict[str, Any]) -> dict[str, Any] | None:
        """The decision the ledger keeps, where it may stand for this run: well formed, the chain's own outcome, and the
        statement still registered anytime at the ledger's false alarm (else None: the last batch is replayed)."""
        record = ledger.get("decided")
        chain = decide_chain(ledger["statement"], ledger["batches"])
        if not isinstance(record, dict) or record.get("outcome") != chain.decision:
            return None
        if not isinstance(record.get("message"), str) or not isinstance(record.get("evidence"), dict):
            return None
        what = ledger["statement"]["what"]
        block = record["evidence"].get(what)
        if not isinstance(block, dict) or block.get("decision") != chain.decision:
            return None
        _claim, statement = item.stash[STATEMENT]
        if statement.decision.get("method") == "fixed":
            return None
        tier = declared_tier(item)
        if statement.false_alarm.get(tier) != ledger["statement"]["alpha"]:
            return None
        return record

    def report_recorded(self, item: pytest.Function, ledger: dict[str, Any], record: dict[str, Any]) -> bool:
        """End the test as its deciding run did, from the ledger: nothing drawn, nothing computed."""
        __tracebackhide__ = True
        from pytest_claims.roles.worker import new_evidence

        evidence = item.stash.get(EVIDENCE, None) or new_evidence(item)
        values = dict(record["evidence"])
        what = ledger["statement"]["what"]
        block = dict(values[what])
        look = decided_at_look(ledger)
        assert look is not None  # report_recorded is reached only for a decided ledger (narrows the type)
        said = f"decided at look {look} in run {record.get('run') or '?'}: reported from the ledger, nothing computed"
        if isinstance(block.get("anytime"), dict):
            block["anytime"] = {**block["anytime"], "ledger": ledger["batches"], "note": said}
        values[what] = block
        headline = values.pop("headline", [])
        evidence.record(**values)
        if isinstance(headline, list):
            evidence.headline_names.extend(str(h) for h in headline if h not in evidence.headline_names)
        for figure in record.get("figures") or []:
            if isinstance(figure, dict) and (self.state.report_dir / str(figure.get("path", ""))).is_file():
                evidence.figures.append({"title": str(figure.get("title", "")), "path": str(figure["path"])})
        self.say(
            item, f"already decided: {record['outcome']} at batch {look - 1}, {look_line(ledger)}; nothing computed"
        )
        if record["outcome"] == REFUTED:
            raise ClaimRefuted(record["message"])
        return True


def _stops(ledger: dict[str, Any]) -> list[Any]:
    stops = ledger.get("stops")
    return [s for s in stops if isinstance(s, dict)] if isinstance(stops, list) else []


def _without_chain(values: dict[str, Any], what: str) -> dict[str, Any]:
    """The evidence less the chain's batches under `what` (the ledger keeps them; the report reads them back)."""
    block = values.get(what)
    if isinstance(block, dict) and isinstance(block.get("anytime"), dict):
        values = {**values, what: {**block, "anytime": {**block["anytime"], "ledger": None}}}
    return values
