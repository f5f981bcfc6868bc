"""One verdict path: every cause of `broken` in a run survives a merge of that run and a merge of the merged file,
and the causes only a merge can find (conflicting outcomes, a registry record that differs) survive a second
merge. The run and the merge build verdicts.json with the same function (pytest_claims.model.verdicts_json.build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy_project import claim, constant_tests, kernel, registry

from pytest_claims.merge.command import comparable, main as merge_main

CRASHING_REFERENCE = constant_tests(reference_prelude="    import os\n\n    os._exit(3)  # the worker dies\n")


def merged(paths: list[Path], out: Path) -> dict:
    """Merge `paths` into `out` (a broken claim makes the merge exit 1) and read the result."""
    assert merge_main([*map(str, paths), "-o", str(out)]) == 1
    return json.loads((out / "verdicts.json").read_text())


def broken_through_two_merges(run_file: Path, key: str, phrase: str) -> None:
    """A run's broken claim keeps its verdict and its reason in a merge of the run and in a merge of that merge."""
    run = json.loads(run_file.read_text())
    record = claim(run, key)
    assert record["verdict"] == "broken" and phrase in record["reason"], record["reason"]
    once = merged([run_file], run_file.parent.parent / "once")
    twice = merged([run_file.parent.parent / "once" / "verdicts.json"], run_file.parent.parent / "twice")
    for level, payload in (("once", once), ("twice", twice)):
        found = claim(payload, key)
        assert (found["verdict"], found["reason"]) == (record["verdict"], record["reason"]), level
    assert comparable(once)["claims"] == comparable(run)["claims"]  # a merge of one run reproduces it
    assert comparable(twice)["claims"] == comparable(run)["claims"]


@pytest.mark.smoke
def test_a_crashed_worker_survives_two_merges(project):
    """A worker that dies in a reference test of a claim module breaks the claim (a problem, not a statement
    outcome): merging that run once or twice keeps it broken (it was laundered to `verified` before)."""
    pytester = project(constant_tests=CRASHING_REFERENCE)
    result = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    broken_through_two_merges(pytester.path / "out" / "verdicts.json", "T2", "crashed")


@pytest.mark.smoke
def test_a_collection_error_survives_two_merges(project):
    pytester = project(constant_tests="def broken(:\n    pass\n")
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store").ret == pytest.ExitCode.TESTS_FAILED
    broken_through_two_merges(pytester.path / "out" / "verdicts.json", "T2", "collection error in test_constant.py")


@pytest.mark.smoke
def test_a_surviving_mutant_survives_two_merges(project):
    pytester = project(mutants='["off-by-one", "harmless"]')
    assert (
        pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret
        == pytest.ExitCode.TESTS_FAILED
    )
    broken_through_two_merges(pytester.path / "out" / "verdicts.json", "T1", "mutants survived")


def two_runs(pytester: pytest.Pytester, change: str) -> list[Path]:
    """Two runs of the toy project, the second with `change` applied: another outcome, another registry, or another
    outcome under another master seed (a replication set whose claim's verdict differs between the seeds)."""
    seeds = (["--claims-seed", "1"], ["--claims-seed", "2"]) if change == "seed" else ([], [])
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-o", "claims_report_dir=first", *seeds[0])
    if change in ("outcome", "seed"):
        pytester.makepyfile(toy_kernel=kernel(answer="41"))
    else:
        pytester.makefile(
            ".toml",
            registry=registry(answer_text="the answer is forty-two"),
        )
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-o", "claims_report_dir=second", *seeds[1])
    return [pytester.path / "first" / "verdicts.json", pytester.path / "second" / "verdicts.json"]


@pytest.mark.smoke
@pytest.mark.parametrize(
    "change, phrase",
    [
        ("outcome", "conflicting outcomes"),
        ("registry", "registry record differs"),
        ("seed", "the verdict differs between master seeds: verified under seed 1, broken under seed 2"),
    ],
)
def test_what_only_a_merge_finds_survives_a_second_merge(project, change, phrase):
    """A merged replication set keeps the first seed's statement records only: a verdict that differs between the
    seeds is among the claim's problems, or the merge of the merged file decided the claim from that seed alone (it
    said `verified`, exit status 0, before); and "replicated on every seed" counts the claims every seed decided
    alike, not one that no seed exercised."""
    pytester = project()
    once = merged(two_runs(pytester, change), pytester.path / "once")
    found = claim(once, "T2")
    assert found["verdict"] == "broken" and phrase in found["reason"], found["reason"]
    twice = merged([pytester.path / "once" / "verdicts.json"], pytester.path / "twice")
    assert (claim(twice, "T2")["verdict"], claim(twice, "T2")["reason"]) == (found["verdict"], found["reason"])
    if change == "seed":
        assert [(c["id"], c["verdict"], c["reason"]) for c in twice["claims"]] == [
            (c["id"], c["verdict"], c["reason"]) for c in once["claims"]
        ]  # (the key numbers of every seed are the replication set's: a merge of one seed's records has that seed's)
        # T1 verified under both seeds, T3 (no test names it) not exercised under both: not decided, not replicated
        by_key = {c["key"]: c["verdicts"] for c in once["replication"]["claims"]}
        assert by_key["T1"] == {"1": "verified", "2": "verified"} and set(by_key["T3"].values()) == {"not exercised"}
        assert once["replication"]["claims_replicated"] == 1  # T1 alone (2 before: T3 counted)
    else:
        assert comparable(twice)["claims"] == comparable(once)["claims"]


def test_replicated_on_every_seed_counts_a_verdict_earned_alike_on_every_seed():
    """Every verdict word, alike under two seeds: counted as replicated where the statements that ran earned it
    (verified, falsified, reduced scale), not where nothing decided it (broken, interrupted, inconclusive, not run,
    not selected, not exercised); never where the seeds differ."""
    from pytest_claims.merge.command import replicated_alike
    from pytest_claims.outcomes import Verdict

    earned = {Verdict.VERIFIED, Verdict.FALSIFIED, Verdict.REDUCED_SCALE}
    for verdict in Verdict:
        row = {"replicated": 2, "of": 2, "verdicts": {"1": str(verdict), "2": str(verdict)}}
        assert replicated_alike(row) == (verdict in earned), verdict
    differ = {"replicated": 1, "of": 2, "verdicts": {"1": "verified", "2": "falsified"}}
    assert not replicated_alike(differ)
