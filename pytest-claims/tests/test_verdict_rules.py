"""The claim-verdict rules as pure functions, and the merge of verdict payloads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_claims.model.registry import Claim, Statement
from pytest_claims.model.verdicts import ClaimInputs, StatementRun, changes, claim_verdict, power

TIERS = ("smoke", "full", "gpu")  # the toy project's claims_tiers
CLAIM = Claim(
    id="toy/claim",
    key="T1",
    paper="toy",
    where="Section 1",
    text="a toy claim",
    provenance="",
    expected="verified",
    statements={
        "main": Statement("main", "the main statement", "holds", mutants=("m1", "m2"), decisive_tiers=TIERS),
        "scale": Statement("scale", "needs the full tier", "holds", decisive_tiers=("full", "gpu")),
        "optional": Statement("optional", "not needed for verified", "holds", required=False, decisive_tiers=TIERS),
        "converse": Statement(
            "converse", "a refuted side statement", "refuted", refutes_claim=False, decisive_tiers=TIERS
        ),
    },
)
PRINTED = replace(
    CLAIM, statements=dict(CLAIM.statements, converse=replace(CLAIM.statements["converse"], refutes_claim=True))
)
ALL = set(CLAIM.statements)


def run(
    statement: str, outcome: str, tier: str = "full", reason: str = "", mutants: list | None = None
) -> StatementRun:
    return StatementRun(f"t::{statement}[{tier}]", CLAIM.id, statement, tier, outcome, reason, mutants=mutants or [])


FULL_SET = [run("main", "held"), run("scale", "held"), run("converse", "refuted")]


@pytest.mark.smoke
@pytest.mark.parametrize(
    "runs, verdict",
    [
        (FULL_SET, "verified"),
        (FULL_SET + [run("optional", "held", "smoke")], "verified"),
        ([run("main", "held"), run("scale", "held"), run("converse", "held")], "broken"),  # refuted statement held
        ([run("main", "failed"), run("scale", "held"), run("converse", "refuted")], "broken"),
        ([run("main", "error"), run("scale", "held"), run("converse", "refuted")], "broken"),
        (
            [run("main", "held", "smoke"), run("scale", "held", "smoke"), run("converse", "refuted", "smoke")],
            "reduced scale",
        ),
        # a required statement that was skipped: never verified, and not called reduced scale either
        ([run("main", "held"), run("scale", "skipped", reason="no CUDA"), run("converse", "refuted")], "not run"),
        # skipped at one scale but run below its decisive scale at another: reduced scale
        (
            [
                run("main", "held"),
                run("scale", "skipped", "full", reason="no CUDA"),
                run("scale", "held", "smoke"),
                run("converse", "refuted"),
            ],
            "reduced scale",
        ),
        ([run("main", "skipped", reason="data missing")], "not run"),
        (
            [run("main", "held"), run("scale", "held", "any"), run("converse", "refuted")],
            "verified",
        ),  # scale-free counts anywhere
        # inconclusive: never broken, never verified; one inconclusive cell of a required statement leaves it undecided
        ([run("main", "inconclusive"), run("scale", "held"), run("converse", "refuted")], "inconclusive"),
        (
            [
                run("main", "held"),
                run("main", "inconclusive", "smoke"),
                run("scale", "held"),
                run("converse", "refuted"),
            ],
            "inconclusive",
        ),
        (FULL_SET + [run("optional", "inconclusive", "smoke")], "verified"),
        ([run("main", "held"), run("scale", "held"), run("converse", "inconclusive")], "inconclusive"),
        (
            [run("main", "inconclusive", "smoke"), run("scale", "held", "smoke"), run("converse", "refuted")],
            "inconclusive",
        ),
    ],
)
def test_claim_verdict_rules(runs, verdict):
    assert claim_verdict(CLAIM, ClaimInputs(runs, ALL, True))[0] == verdict


@pytest.mark.smoke
def test_skipped_required_statement_is_named_in_the_reason():
    verdict, reason = claim_verdict(
        CLAIM,
        ClaimInputs(
            [run("main", "held"), run("scale", "skipped", reason="no CUDA"), run("converse", "refuted")], ALL, True
        ),
    )
    assert verdict == "not run" and reason == "required statements skipped: scale (no CUDA)"


@pytest.mark.smoke
def test_selection_and_exercise():
    assert claim_verdict(CLAIM, ClaimInputs([], set(), False))[0] == "not exercised"
    assert claim_verdict(CLAIM, ClaimInputs([], ALL, False))[0] == "not selected"
    assert claim_verdict(CLAIM, ClaimInputs([], set(), False, has_tests=True))[0] == "not selected"
    assert claim_verdict(CLAIM, ClaimInputs([], ALL, True))[0] == "not run"
    assert (
        claim_verdict(CLAIM, ClaimInputs(FULL_SET, ALL, True, problems=["collection error in t.py: SyntaxError"]))[0]
        == "broken"
    )


@pytest.mark.smoke
def test_printed_refutation_falsifies_at_a_decisive_tier_only():
    assert claim_verdict(PRINTED, ClaimInputs(FULL_SET, ALL, True)) == ("falsified", "refuted as printed: converse")
    reduced = replace(
        PRINTED,
        statements=dict(PRINTED.statements, converse=replace(PRINTED.statements["converse"], decisive_tiers=("full",))),
    )
    smoke_only = [run("main", "held", "smoke"), run("scale", "held", "smoke"), run("converse", "refuted", "smoke")]
    verdict, reason = claim_verdict(reduced, ClaimInputs(smoke_only, ALL, True))
    assert verdict == "reduced scale" and "refuted as printed at reduced scale (converse)" in reason


def killed(name: str, flag: bool = True) -> dict:
    return {"mutant": name, "killed": flag, "outcome": "failed" if flag else "held", "detail": ""}


@pytest.mark.smoke
def test_power_counts_and_survivors_break_the_claim():
    runs = [run("main", "held", mutants=[killed("m1"), killed("m2")]), run("scale", "held"), run("converse", "refuted")]
    assert power(CLAIM, runs)["statements"]["main"] == {
        "killed": 2,
        "of": 2,
        "ends": {"m1": "refuted", "m2": "refuted"},
        "labels": {"m1": "failed (registered holds): killed", "m2": "failed (registered holds): killed"},
        "expected_ends": {},
        "survivors": [],
        "unexplained": [],
        "not_counted": [],
        "not_tried": [],
    }
    assert claim_verdict(CLAIM, ClaimInputs(runs, ALL, True))[0] == "verified"
    # killed by one parametrisation is enough; surviving every parametrisation is not
    split = [
        run("main", "held", "smoke", mutants=[killed("m1"), killed("m2", False)]),
        run("main", "held", "full", mutants=[killed("m1", False), killed("m2")]),
    ]
    assert power(CLAIM, split)["survivors"] == []
    survivor = [
        run("main", "held", mutants=[killed("m1"), killed("m2", False)]),
        run("scale", "held"),
        run("converse", "refuted"),
    ]
    verdict, reason = claim_verdict(CLAIM, ClaimInputs(survivor, ALL, True))
    assert verdict == "broken" and "main: m2" in reason
    assert power(CLAIM, [run("main", "held")]) is None


@pytest.mark.smoke
def test_changes_list_verdict_and_outcome_changes_but_not_deselection():
    before = {
        "claims": [
            {"id": "a", "key": "A", "verdict": "verified", "statements": [{"test": "t1", "outcome": "held"}]},
            {"id": "b", "key": "B", "verdict": "verified", "statements": []},
        ]
    }
    after = {
        "claims": [
            {"id": "a", "key": "A", "verdict": "broken", "statements": [{"test": "t1", "outcome": "failed"}]},
            {"id": "b", "key": "B", "verdict": "not selected", "statements": []},
        ]
    }
    found = changes(before, after)
    assert found["claims"] == [{"id": "a", "key": "A", "before": "verified", "after": "broken"}]
    assert found["statements"] == [{"test": "t1", "claim": "A", "statement": None, "before": "held", "after": "failed"}]
