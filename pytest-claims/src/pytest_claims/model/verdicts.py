"""Statement outcomes and claim verdicts, as pure functions of the registry and the statement runs.

The plugin (one run) and the merge command (several runs) both build claim records with `summarise`,
so a merged verdict is computed by exactly the rules of a single run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable

from pytest_claims.model.key_numbers import key_numbers
from pytest_claims.outcomes import (  # noqa: F401 (CRASHED..VERDICTS: the vocabulary, also read from here)
    ANY_TIER,
    CRASHED,
    DECIDED,
    ERROR,
    FAILED,
    HELD,
    INCONCLUSIVE,
    REFUTED,
    SKIPPED,
    UNDECIDED,
    VERDICTS,
    Expected,
    Verdict,
)
from pytest_claims.model.registry import Claim, Registry, Statement
from pytest_claims.model.registry_families import family_records

# 5: anytime decisions (evidence "anytime" blocks with their ledgers), replication.pooled;
# 4: the interrupted verdict, the crashed outcome, runs[].interrupted; 3: inconclusive, false_alarm, replication
SCHEMA_VERSION = 5
READABLE_SCHEMA_VERSIONS = (4, 5)  # a version-4 file reads as it is: 5 only adds optional fields

# Keys of verdicts.json that describe a run rather than its verdicts (ignored when runs are compared).
RUN_KEYS = ("runs", "timings", "changes", "report_id")


# How a mutant's test run ended (MutantResult.kind), kills first. Only the first two are kills: an unrelated
# exception (the mutant broke the code, not the mathematics) and an inconclusive end fail the power check like a
# survivor, unless the registry's mutants_expected_end says why that end is expected for that mutant.
KILL_REFUTED = "refuted"  # through the statement: ClaimRefuted, or a refuted statement that stopped being refuted
KILL_GUARD = "guard"  # an assertion in the test body (a reference check inside the statement test)
END_ERRORED = "errored"
END_TIMEOUT = "timeout"  # stopped at the time limit of a mutant run in its own process (mutant_process)
END_CRASHED = "crashed"  # its process ended or crashed under the mutant (os._exit, a segfault, a signal)
END_UNDECIDED = "undecided"
END_SURVIVED = "survived"
END_NOT_TRIED = "not tried"  # the test skipped under the mutant: it tells nothing
KILLS = (KILL_REFUTED, KILL_GUARD)
MUTANT_ENDS = (KILL_REFUTED, KILL_GUARD, END_ERRORED, END_TIMEOUT, END_CRASHED, END_UNDECIDED, END_SURVIVED)


@dataclass
class MutantResult:
    """One mutant tried against one statement test: how its run ended (`kind`, one of MUTANT_ENDS or
    END_NOT_TRIED) and whether that is a kill."""

    mutant: str
    killed: bool
    outcome: str  # the test's outcome under the mutant (failed, error, held, refuted, inconclusive, skipped)
    detail: str = ""
    kind: str = ""  # empty in verdicts.json files written before the kinds (read by their outcome)

    def __post_init__(self) -> None:
        self.outcome = str(
            self.outcome
        )  # an Outcome as a plain str: execnet carries no subclass of str to the controller


def end_of(result: dict[str, Any]) -> str:
    """A mutant result's kind; for a result recorded before kinds existed, read from its outcome."""
    if result.get("kind"):
        return result["kind"]
    outcome = result.get("outcome")
    if outcome in (SKIPPED, "not applicable"):
        return END_NOT_TRIED
    if outcome == INCONCLUSIVE:
        return END_UNDECIDED
    if outcome == ERROR:
        return END_ERRORED
    return KILL_REFUTED if result.get("killed") else END_SURVIVED


# What each end says about the mutant, after its outcome and the registered one (mutant_label).
_END_WORDS = {
    KILL_REFUTED: "killed",
    KILL_GUARD: "killed",
    END_ERRORED: "not a kill",
    END_TIMEOUT: "not a kill",
    END_CRASHED: "not a kill",
    END_UNDECIDED: "not a kill",
    END_SURVIVED: "survived",
    END_NOT_TRIED: "not tried",
}
NOT_COUNTED = "not counted: the statement did not decide as registered without the mutant"


def mutant_label(result: dict[str, Any], registered: str, *, counted: bool = True) -> str:
    """How a mutant's run reads beside the statement's registered outcome: what the test ended as under the mutant,
    the registered outcome, and what that makes the mutant ("held (registered refuted): killed", "refuted
    (registered holds): killed", "a guard failed (registered holds): killed", "refuted (registered refuted):
    survived"); `counted` False: the real run did not decide as registered, so the end is not counted."""
    end = end_of(result)
    outcome = {
        KILL_GUARD: "a guard failed",
        END_ERRORED: "errored",
        END_TIMEOUT: "timed out",
        END_CRASHED: "crashed",
    }.get(end, str(result.get("outcome", end)))
    word = _END_WORDS.get(end, end) if counted else NOT_COUNTED
    return f"{outcome} (registered {registered}): {word}"


def verbose_word(found: dict[str, Any]) -> str:
    """A mutant item's word in the verbose terminal line and the HTML row (`found`: its result, as shipped)."""
    if found["killed"]:
        return "KILLED: " + mutant_label(found, found.get("registered", "?")).rpartition(": ")[0]
    if found["expected"]:
        return f"{found['kind'].upper()} (expected)"
    return found["kind"].upper()


@dataclass
class StatementRun:
    """One statement test's definitive outcome, as carried from a worker to the controller."""

    test: str
    claim: str
    statement: str
    tier: str
    outcome: str
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    figures: list[dict[str, str]] = field(default_factory=list)  # [{"title", "path"}], path relative to the report dir
    mutants: list[dict[str, Any]] = field(default_factory=list)  # MutantResult as dicts; empty unless --mutants

    def __post_init__(self) -> None:
        self.outcome = str(
            self.outcome
        )  # an Outcome as a plain str: execnet carries no subclass of str to the controller

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "StatementRun":
        return StatementRun(**{k: data[k] for k in StatementRun.__dataclass_fields__ if k in data})


def inconclusive_chance_of(evidence: dict[str, Any]) -> float | None:
    """The largest chance of an inconclusive end that a decision in the evidence records (decide_rate's
    `inconclusive_chance`), None where no decision could compute one."""
    found = [
        v["inconclusive_chance"]
        for v in evidence.values()
        if isinstance(v, dict) and isinstance(v.get("inconclusive_chance"), (int, float))
    ]
    return max(found) if found else None


def as_registered(outcome: str, statement: Statement) -> bool:
    return (outcome, statement.expected) in ((HELD, Expected.HOLDS), (REFUTED, Expected.REFUTED))


@dataclass
class ClaimInputs:
    """Everything a claim verdict depends on besides the registry record."""

    runs: list[StatementRun] = field(default_factory=list)
    exercised: set[str] = field(default_factory=set)  # statements some collected test names
    selected: bool = False  # some test of the claim was selected in the run(s)
    has_tests: bool = False  # its test module exists, collected or not (a run of other files)
    problems: list[str] = field(default_factory=list)  # collection errors, conflicts between runs, registry drift
    not_reached: set[str] = field(default_factory=set)  # selected tests with no outcome when a run was cut off
    interrupted_by: str = ""  # what cut it off (SIGTERM, SIGINT), where not_reached is not empty


def power(claim: Claim, runs: Iterable[StatementRun]) -> dict[str, Any] | None:
    """Mutants killed per statement and in total, split by how each ended (`kinds`) and by how each reads beside
    the registered outcome (`labels`, mutant_label); None when no mutant was tried. A mutant's end counts only
    beside a real run of the statement that ended as registered: beside one that did not decide (inconclusive,
    skipped) a kill, a survival or an undecided end tells nothing, and reads "not counted" (in `not_counted`).
    `survivors` and `unexplained` (an errored or undecided end the registry does not expect) fail it."""
    per_statement: dict[str, dict[str, tuple[str, str]]] = {}  # statement -> mutant -> (its strongest end, label)
    uncounted: dict[str, dict[str, str]] = {}  # statement -> mutant -> label, beside a real run that did not decide
    for run in runs:
        statement = claim.statements[run.statement]
        for result in run.mutants:
            ends = per_statement.setdefault(run.statement, {})
            end = end_of(result)
            if end == END_NOT_TRIED:
                continue
            if not as_registered(run.outcome, statement):
                uncounted.setdefault(run.statement, {})[result["mutant"]] = mutant_label(
                    result, statement.expected, counted=False
                )
                continue
            before = ends.get(result["mutant"])
            if before is None or MUTANT_ENDS.index(end) < MUTANT_ENDS.index(before[0]):
                ends[result["mutant"]] = (end, mutant_label(result, statement.expected))
    if not per_statement:
        return None
    statements: dict[str, dict[str, Any]] = {}
    kinds = dict.fromkeys(MUTANT_ENDS, 0)
    labels: dict[str, int] = {}
    rank: dict[str, int] = {}  # a label's place: kills first, in the order of MUTANT_ENDS, then the uncounted
    survivors, unexplained = set(), set()
    for name, found in sorted(per_statement.items()):
        statement = claim.statements[name]
        listed = list(statement.mutants)
        tried = {m: found[m][0] for m in listed if m in found}
        not_counted = {m: text for m, text in uncounted.get(name, {}).items() if m in listed and m not in tried}
        expected = {
            m: statement.mutants_expected_end[m]
            for m, end in tried.items()
            if statement.mutants_expected_end.get(m, "").partition(":")[0].strip() == end
        }
        for mutant, end in tried.items():
            kinds[end] += 1
            if end == END_SURVIVED:
                survivors.add(f"{name}: {mutant}")
            elif end not in KILLS and mutant not in expected:
                unexplained.add(f"{name}: {mutant} ({end})")
        for label, place in [(found[m][1], MUTANT_ENDS.index(found[m][0])) for m in tried] + [
            (text, len(MUTANT_ENDS)) for text in not_counted.values()
        ]:
            labels[label], rank[label] = labels.get(label, 0) + 1, place
        statements[name] = {
            "killed": sum(1 for end in tried.values() if end in KILLS),
            "of": len(listed),
            "ends": tried,
            "labels": {m: found[m][1] for m in tried} | not_counted,
            "expected_ends": expected,
            "survivors": sorted(m for m, end in tried.items() if end == END_SURVIVED),
            "unexplained": sorted(
                m for m, end in tried.items() if end not in KILLS + (END_SURVIVED,) and m not in expected
            ),
            "not_counted": sorted(not_counted),
            "not_tried": sorted(set(listed) - set(tried)),
        }
    return {
        "killed": sum(s["killed"] for s in statements.values()),
        "of": sum(s["of"] for s in statements.values()),
        "kinds": kinds,
        "labels": {label: labels[label] for label in sorted(labels, key=lambda label: (rank[label], label))},
        "expected": sum(len(s["expected_ends"]) for s in statements.values()),
        "survivors": sorted(survivors),
        "unexplained": sorted(unexplained),
        "statements": statements,
    }


def power_failures(strength: dict[str, Any] | None) -> str:
    """Why the power check fails (surviving mutants, errored or undecided ends without a registry reason), or ""."""
    if not strength:
        return ""
    parts = []
    if strength["survivors"]:
        survivors = ", ".join(strength["survivors"])
        parts.append(
            f"mutants survived (the statement cannot tell them from the kernel): {survivors} "
            "(remedy: sharpen the test so the mutant changes what it checks, or add a guard: an assertion against "
            "a reference value)"
        )
    if strength.get("unexplained"):
        parts.append(
            "mutants not killed, only errored, timed out, crashed or undecided, "
            "with no reason in the registry's mutants_expected_end: "
            + ", ".join(strength["unexplained"])
            + " (remedy: sharpen the test or add a guard so the mutant is caught; if that end is right, say why in "
            "the statement's mutants_expected_end)"
        )
    return "; ".join(parts)


def claim_verdict(claim: Claim, inputs: ClaimInputs) -> tuple[str, str]:
    """(verdict, reason) for one claim."""
    runs = inputs.runs
    if inputs.problems:
        return Verdict.BROKEN, "; ".join(inputs.problems)
    if not inputs.exercised and not inputs.has_tests:
        return Verdict.NOT_EXERCISED, "no test in the suite names this claim"
    broken = [
        r for r in runs if r.outcome not in UNDECIDED and not as_registered(r.outcome, claim.statements[r.statement])
    ]
    if broken:
        names = ", ".join(
            sorted({f"{r.statement} ({r.outcome}{': ' + r.test if r.outcome == CRASHED else ''})" for r in broken})
        )
        return Verdict.BROKEN, (
            f"outcome contradicts the registry: {names} (remedy: read the test's message; fix the code or the test, "
            "or, if the paper's statement is what the run shows wrong, change the statement's expected)"
        )
    failures = power_failures(power(claim, runs))
    if failures:
        return Verdict.BROKEN, failures
    if not runs:
        if inputs.not_reached:
            return Verdict.INTERRUPTED, _not_reached(inputs)
        if not inputs.selected:
            return Verdict.NOT_SELECTED, "no test of this claim was selected in this run"
        return Verdict.NOT_RUN, "its tests were selected but none ran"
    ran = [r for r in runs if r.outcome in DECIDED]
    undecided = [r for r in runs if r.outcome == INCONCLUSIVE]
    if not ran and not undecided:
        reasons = sorted({r.reason for r in runs if r.reason})
        return Verdict.NOT_RUN, "; ".join(reasons) if reasons else "every test skipped"

    def decisive(run: StatementRun) -> bool:
        return run.tier in claim.statements[run.statement].decisive_tiers or run.tier == ANY_TIER

    printed = sorted({r.statement for r in ran if r.outcome == REFUTED and claim.statements[r.statement].refutes_claim})
    if any(r.statement in printed and decisive(r) for r in ran):
        return Verdict.FALSIFIED, "refuted as printed: " + ", ".join(
            s for s in printed if any(r.statement == s and decisive(r) for r in ran)
        )
    if inputs.not_reached:
        return Verdict.INTERRUPTED, _not_reached(inputs)
    # A required statement decided at a decisive scale in some run but inconclusive in another (one of
    # its cells) is not shown: the claim is inconclusive, naming it.
    inconclusive = sorted({r.statement for r in undecided if decisive(r) and claim.statements[r.statement].required})
    if inconclusive:
        return (
            Verdict.INCONCLUSIVE,
            "required statements inconclusive at a decisive scale: "
            + "; ".join(_named_reasons(name, undecided) for name in inconclusive),
        )
    missing, skipped = [], []
    for name, statement in claim.statements.items():
        if not statement.required:
            continue
        if not any(r.statement == name and decisive(r) for r in ran):
            missing.append(name)
            if not any(r.statement == name for r in ran + undecided) and any(
                r.statement == name and r.outcome == SKIPPED for r in runs
            ):
                skipped.append(name)
    if skipped:  # a required statement was selected and skipped at every scale: undecided, say why
        reasons = sorted({r.reason for r in runs if r.statement in skipped and r.reason})
        return Verdict.NOT_RUN, f"required statements skipped: {', '.join(skipped)} ({'; '.join(reasons)})"
    if missing:
        reason = "not run at a decisive scale: " + ", ".join(missing)
        if printed:
            reason = "refuted as printed at reduced scale (" + ", ".join(printed) + "); " + reason
        return Verdict.REDUCED_SCALE, reason
    return Verdict.VERIFIED, "every required statement ran at a decisive scale as registered"


REASON_CHARS = 600  # of each inconclusive statement's reason in a claim's line, as one had (its run keeps it whole)


def _named_reasons(name: str, runs: list[StatementRun]) -> str:
    """One inconclusive statement in a claim's reason: its name and why (its runs' distinct reasons), each cut at
    REASON_CHARS with an ellipsis, so that one long reason neither hides another's nor ends mid-word unmarked."""
    reasons = sorted({r.reason for r in runs if r.statement == name and r.reason})
    cut = [r if len(r) <= REASON_CHARS else r[: REASON_CHARS - 3].rstrip() + "..." for r in reasons]
    return f"{name} ({'; '.join(cut)})" if cut else name


def _not_reached(inputs: ClaimInputs) -> str:
    tests = sorted(inputs.not_reached)
    shown = ", ".join(tests[:6]) + (f" and {len(tests) - 6} more" if len(tests) > 6 else "")
    return (
        f"the run was cut off ({inputs.interrupted_by or 'interrupted'}) "
        f"before {len(tests)} of its selected tests: {shown}; rerun with the same store to resume"
    )


def thumbnail(claim: Claim, runs: list[StatementRun]) -> dict[str, str] | None:
    if not claim.figure:
        return None
    for run in runs:
        if run.statement == claim.figure and run.figures:
            return run.figures[0]
    return None


def registry_record(claim: Claim) -> dict[str, Any]:
    """The registry fields a merge needs to recompute a verdict (verdicts.json carries them)."""
    return {
        "tests": claim.tests,
        "key_numbers": list(claim.key_numbers),
        "figure": claim.figure,
        **({"families": family_records(claim.families)} if claim.families else {}),  # the family records, if any
        "statements": {
            name: {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(s).items() if k != "name"}
            for name, s in claim.statements.items()
        },
    }


def summarise(registry: Registry, inputs: dict[str, ClaimInputs]) -> list[dict[str, Any]]:
    """Claim records for the report and verdicts.json, in registry order (deterministic)."""
    records = []
    for claim in registry.claims.values():
        claim_inputs = inputs.get(claim.id, ClaimInputs())
        runs = sorted(claim_inputs.runs, key=lambda r: r.test)
        verdict, reason = claim_verdict(claim, replace(claim_inputs, runs=runs))
        collected = bool(claim_inputs.exercised) or not claim_inputs.has_tests
        records.append(
            {
                "id": claim.id,
                "key": claim.key,
                "paper": claim.paper,
                "where": claim.where,
                "statement": claim.text,
                "provenance": claim.provenance,
                "expected": claim.expected,
                "verdict": verdict,
                "reason": reason,
                "tiers_run": sorted({r.tier for r in runs if r.outcome in DECIDED}),
                "key_numbers": key_numbers(claim, runs),
                "figure": thumbnail(claim, runs),
                "power": power(claim, runs),
                "statements": [
                    {
                        "test": r.test,
                        "statement": r.statement,
                        "text": claim.statements[r.statement].text,
                        "tier": r.tier,
                        "expected": claim.statements[r.statement].expected,
                        "outcome": r.outcome,
                        "as_registered": as_registered(r.outcome, claim.statements[r.statement])
                        if r.outcome not in UNDECIDED
                        else None,
                        "false_alarm": claim.statements[r.statement].false_alarm_at(r.tier)
                        if r.tier != ANY_TIER
                        else max(claim.statements[r.statement].false_alarm.values(), default=0.0),
                        "inconclusive_chance": inconclusive_chance_of(r.evidence),
                        "reason": r.reason,
                        "evidence": r.evidence,
                        "figures": r.figures,
                        "mutants": r.mutants,
                    }
                    for r in runs
                ],
                "statements_without_tests": sorted(set(claim.statements) - claim_inputs.exercised) if collected else [],
                "not_reached": sorted(claim_inputs.not_reached),
                "interrupted_by": claim_inputs.interrupted_by if claim_inputs.not_reached else "",
                "problems": list(claim_inputs.problems),  # causes of broken besides outcomes: a merge keeps them
                "registry": registry_record(claim),
            }
        )
    return records


CONDITIONS = ("seed", "tier")  # a run's conditions that change what its verdicts mean


def changes(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Claims whose verdict changed and statement tests whose outcome changed, previous -> current, and (apart)
    the claims that only one of the two runs selected: their verdicts were not compared (`selection`), and the
    conditions (master seed, tier) the two runs differ in (`conditions`).

    A test that did not run in both is not a change."""
    before = {c["id"]: c for c in previous.get("claims", [])}
    claims: list[dict[str, Any]] = []
    statements: list[dict[str, Any]] = []
    selection: list[dict[str, Any]] = []
    for record in current.get("claims", []):
        old = before.get(record["id"])
        if old is None:
            claims.append({"id": record["id"], "key": record["key"], "before": "absent", "after": record["verdict"]})
            continue
        if record["verdict"] != old["verdict"]:
            entry = {"id": record["id"], "key": record["key"], "before": old["verdict"], "after": record["verdict"]}
            (selection if Verdict.NOT_SELECTED in (record["verdict"], old["verdict"]) else claims).append(entry)
        old_outcomes = {s["test"]: s["outcome"] for s in old.get("statements", [])}
        for s in record.get("statements", []):
            was = old_outcomes.get(s["test"])
            if was is not None and was != s["outcome"]:
                statements.append(
                    {
                        "test": s["test"],
                        "claim": record["key"],
                        "statement": s.get("statement"),
                        "before": was,
                        "after": s["outcome"],
                    }
                )
    return {
        "previous": previous.get("runs", [{}])[0].get("date", "") if previous.get("runs") else "",
        "claims": claims,
        "statements": statements,
        "selection": selection,
        "conditions": [  # what the reader must know to read "nothing changed": the runs differ in seed or tier
            {"name": name, "before": previous.get(name), "after": current.get(name)}
            for name in CONDITIONS
            if previous.get(name) != current.get(name)
        ],
    }
