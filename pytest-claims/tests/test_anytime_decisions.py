"""Anytime-valid rate decisions in decide_rate (registered before the data) and their continuation ledger: the
e-process decides instead of Clopper-Pearson, the registry's choice cannot be overridden, a continued run adds a
fresh batch and decides on the cumulative counts, the first crossing is final, a stream is never counted twice,
and a corrupt ledger is a note, never a verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from chains import INI, ledger_batches, toy_registry
from filelock import FileLock
from pytest_claims.statements import ledger as ledger_module
from pytest_claims.anytime.evalues import (
    UNIFORM,
    BetaPrior,
    anytime_trials_to_decide,
    planned_prior,
    rate_log_evalues_for,
)
from pytest_claims.stats.binomial import rate_lower_bound
from pytest_claims.statements.decide import decide_rate
from pytest_claims.statements.ledger import LedgerInvalid, check_ledger
from pytest_claims.outcomes import ClaimRefuted, StatementInconclusive
from pytest_claims.model.registry import RegistryError, load_registry

pytestmark = pytest.mark.smoke


# ------------------------------------------------------------------------------------------------
# decide_rate(anytime=...) outside a session: one batch


def _held_by_clopper_pearson_only(trials: int, threshold: float, alpha: float) -> int:
    """The least success count that Clopper-Pearson holds at `alpha`; the e-process must not hold it (found, not
    assumed: the first count where the two rules differ)."""
    return next(k for k in range(trials + 1) if rate_lower_bound(k, trials, alpha) >= threshold)


def test_anytime_decides_by_the_e_process_not_by_clopper_pearson():
    n, t, alpha = 1000, 0.5, 1e-4
    k = _held_by_clopper_pearson_only(n, t, alpha)
    assert decide_rate(k, n, t, at_least=True, alpha=alpha, what="fixed")["decision"] == "held"
    log_for, _ = rate_log_evalues_for(k, n, t, at_least=True)
    assert log_for < -math.log(alpha)  # the e-value has not crossed: the anytime rule cannot hold it
    with pytest.raises(StatementInconclusive) as ended:
        decide_rate(k, n, t, at_least=True, alpha=alpha, what="anytime", anytime=True)
    needed = anytime_trials_to_decide(k / n, t, alpha, at_least=True, trials=n)
    assert ended.value.needed == needed and f"{needed} trials in total ({needed - n} more)" in str(ended.value)


def test_anytime_holds_at_the_crossing_and_records_the_block():
    found = decide_rate(700, 1000, 0.6, at_least=True, alpha=1e-4, what="rate", anytime=True)
    block = found["anytime"]
    assert found["decision"] == "held" and block["decided_at_look"] == 1
    assert block["log_e_for"] == pytest.approx(rate_log_evalues_for(700, 1000, 0.6, at_least=True)[0], rel=1e-12)
    assert block["log_e_for"] >= -math.log(1e-4) and block["prior"] == {"a": 1.0, "b": 1.0, "point_mass": 0.0}
    assert found["lower"] == block["bounds"][0] >= 0.6 and [b["cum_trials"] for b in block["ledger"]] == [1000]


def test_anytime_refutes_with_the_reproduce_line():
    with pytest.raises(ClaimRefuted, match="e-value against the statement.*reproduce: "):
        decide_rate(500, 1000, 0.6, at_least=True, alpha=1e-4, what="rate", anytime=True)
    with pytest.raises(ClaimRefuted):  # 'rate <= t' mirrored
        decide_rate(700, 1000, 0.6, at_least=False, alpha=1e-4, what="rate", anytime=True)


def test_a_planned_size_and_a_prior_are_the_priors_decided_by():
    planned = decide_rate(700, 1000, 0.6, at_least=True, alpha=1e-4, what="r", anytime=800)["anytime"]["prior"]
    assert planned == {**vars(planned_prior(0.6, 800, 1e-4))}
    chosen = decide_rate(700, 1000, 0.6, at_least=True, alpha=1e-4, what="r", anytime=BetaPrior(2.0, 1.0))
    assert chosen["anytime"]["prior"]["a"] == 2.0
    with pytest.raises(TypeError, match="planned number of trials"):
        decide_rate(700, 1000, 0.6, at_least=True, alpha=1e-4, what="r", anytime="uniform")
    with pytest.raises(ValueError, match="batch= is for anytime"):
        decide_rate(700, 1000, 0.6, at_least=True, alpha=1e-4, what="r", batch=0)


def test_the_fixed_sample_rule_is_unchanged_by_default():
    found = decide_rate(700, 1000, 0.6, at_least=True, alpha=1e-4, what="r")
    assert "anytime" not in found and found["lower"] == rate_lower_bound(700, 1000, 1e-4)


# ------------------------------------------------------------------------------------------------
# The registry field


REGISTRY = """
[paper.p]
title = "t"
source = "s"

[[claim]]
id = "c"
key = "K"
paper = "p"
where = "w"
text = "t"
expected = "verified"

[[claim.statement]]
name = "s"
text = "t"
expected = "holds"
{decision}
"""


@pytest.mark.parametrize(
    "line, expected",
    [
        ("", {}),
        ('decision = "fixed"', {"method": "fixed"}),
        ('decision = "anytime"', {"method": "anytime"}),
        ('decision = { method = "anytime", plan = 800 }', {"method": "anytime", "plan": 800}),
        (
            'decision = { method = "anytime", prior = { a = 2, b = 1 } }',
            {"method": "anytime", "prior": {"a": 2, "b": 1}},
        ),
        ('decision = { method = "fixed", why = "one look" }', {"method": "fixed", "why": "one look"}),
    ],
)
def test_the_registry_reads_a_decision(tmp_path, line, expected):
    (tmp_path / "r.toml").write_text(REGISTRY.format(decision=line))
    assert load_registry(tmp_path / "r.toml", ("smoke", "full")).claims["c"].statements["s"].decision == expected


@pytest.mark.parametrize(
    "line, problem",
    [
        ('decision = "sequential"', "method must be"),
        ("decision = 1", "must be a string or a table"),
        ('decision = { method = "fixed", plan = 10 }', "takes no prior"),
        ('decision = { method = "anytime", plan = 0 }', "plan must be"),
        ('decision = { method = "anytime", plan = 10, prior = { a = 1, b = 1 } }', "not both"),
        ('decision = { method = "anytime", prior = { a = 0, b = 1 } }', "a, b > 0"),
        ('decision = { method = "anytime", prior = { a = 1 } }', "prior must be a table"),
        ('decision = { method = "anytime", looks = 3 }', "unknown key"),
        ('decision = { method = "fixed", why = " " }', "why must be a non-empty string"),
        ('decision = { method = "fixed", why = "one look", plan = 3 }', "takes no prior"),
    ],
)
def test_the_registry_refuses_a_bad_decision(tmp_path, line, problem):
    (tmp_path / "r.toml").write_text(REGISTRY.format(decision=line))
    with pytest.raises(RegistryError, match=problem):
        load_registry(tmp_path / "r.toml", ("smoke", "full"))


# ------------------------------------------------------------------------------------------------
# The ledger's checks


def _ledger(*counts: tuple[int, int], threshold: float = 0.6) -> dict:
    statement = {
        "what": "r",
        "threshold": threshold,
        "at_least": True,
        "alpha": 1e-4,
        "held_alpha": 1e-4,
        "prior": {"a": 1.0, "b": 1.0, "point_mass": 0.0},
    }
    batches = ledger_batches(*counts, threshold=threshold)
    return {"version": 1, "statement": statement, "batches": batches}


def test_a_sound_ledger_passes_its_checks():
    assert check_ledger(_ledger((62, 100), (65, 100))) is not None


@pytest.mark.parametrize(
    "spoil, problem",
    [
        (lambda d: d["batches"][0].update(successes=101, cum_successes=101), "successes 101 > trials"),
        (lambda d: d["batches"][1].update(trials=-1), "not a whole number"),
        (lambda d: d["batches"][1].update(successes=6.5), "not a whole number"),
        (lambda d: d["batches"][1].update(stream=d["batches"][0]["stream"]), "repeated stream id"),
        (lambda d: d["batches"][1].update(cum_successes=0), "not the running sum 127"),
        (lambda d: d["batches"][1].update(log_e_for=50.0), "not its data's"),
        (lambda d: d["batches"][1].update(batch=5), "out of order"),
        (lambda d: d["statement"].update(alpha="small"), "not a number"),
        (lambda d: d.update(version=0), "version-1"),
        (lambda d: d.update(batches=[]), "no batches"),
    ],
)
def test_a_spoiled_ledger_is_refused(spoil, problem):
    ledger = _ledger((62, 100), (65, 100))
    spoil(ledger)
    with pytest.raises(LedgerInvalid, match=problem):
        check_ledger(ledger)


def test_next_batch_replays_unless_continuing_an_undecided_ledger():
    undecided, decided = _ledger((62, 100)), _ledger((62, 100), (900, 1000))
    assert ledger_module.next_batch(None, True) == 0
    assert ledger_module.next_batch(undecided, False) == 0 and ledger_module.next_batch(undecided, True) == 1
    assert ledger_module.decided_at_look(decided) == 2 and ledger_module.next_batch(decided, True) == 1


# ------------------------------------------------------------------------------------------------
# End to end: a toy project whose statement is continued

COIN_TEST = """
import pytest
from pytest_claims import decide_rate, registered_false_alarm
from pytest_claims.roles.seeding import keyed_rng


@pytest.mark.smoke
@pytest.mark.claim("coin/biased", statement="rate")
def test_rate(claims_batch):
    n = {trials}
    heads = int((keyed_rng(f"coin|batch{{{batch}}}").random(n) < {rate}).sum())
    decide_rate(heads, n, 0.6, at_least=True, alpha=registered_false_alarm(), what="heads rate"{extra})
"""


def make_coin(pytester, *, decision='decision = "anytime"', trials=200, rate=0.68, batch="claims_batch", extra=""):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("coin/biased", "rate", "test_coin.py", decision))
    extra = extra or (", batch=claims_batch" if batch == "claims_batch" else f", batch={batch}")
    pytester.makepyfile(test_coin=COIN_TEST.format(trials=trials, rate=rate, batch=batch, extra=extra))


def run_coin(pytester, *args):
    result = pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", *args)
    record = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0]
    return result, record


def test_a_statement_continued_until_its_first_crossing(pytester):
    make_coin(pytester)
    outcomes, looks = [], []
    for _ in range(8):
        _, record = run_coin(pytester, "--claims-continue")
        block = record["evidence"]["heads rate"]["anytime"]
        outcomes.append(record["outcome"])
        looks.append([b["cum_trials"] for b in block["ledger"]])
        if record["outcome"] != "inconclusive":
            break
    assert outcomes[0] == "inconclusive" and outcomes[-1] == "held", outcomes
    assert looks == [[200 * (k + 1) for k in range(j + 1)] for j in range(len(looks))]
    streams = [b["stream"] for b in block["ledger"]]
    assert len(set(streams)) == len(streams) and all(s.endswith(f"|batch={k}") for k, s in enumerate(streams))
    assert block["decided_at_look"] == len(streams) and block["max_log_e_for"] >= -math.log(1e-4)
    # decided: the first crossing is final, a further --claims-continue replays the deciding batch and adds nothing
    _, again = run_coin(pytester, "--claims-continue")
    assert again["outcome"] == "held" and again["evidence"]["heads rate"]["anytime"]["ledger"] == block["ledger"]


def test_a_plain_rerun_replays_the_ledger_and_adds_nothing(pytester):
    make_coin(pytester)
    _, first = run_coin(pytester)
    _, second = run_coin(pytester)
    assert first["outcome"] == second["outcome"] == "inconclusive"
    assert len(second["evidence"]["heads rate"]["anytime"]["ledger"]) == 1
    assert "would decide it" in second["reason"] and "more)" in second["reason"]


def test_a_duplicated_stream_is_refused(pytester):
    make_coin(pytester, batch="0")  # draws batch 0 whatever the ledger expects
    run_coin(pytester)
    _, record = run_coin(pytester, "--claims-continue")
    assert record["outcome"] == "error" and "already in the ledger" in record["reason"], record["reason"]
    make_coin(pytester, batch="0", extra=" ")  # no batch= at all on a continued ledger
    _, record = run_coin(pytester, "--claims-continue")
    assert record["outcome"] == "error" and "pass batch=claims_batch" in record["reason"], record["reason"]


def test_a_corrupt_ledger_is_a_note_and_a_fresh_ledger(pytester):
    make_coin(pytester)
    run_coin(pytester)
    (path,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    spoiled = json.loads(path.read_text())
    spoiled["batches"][0]["successes"] = spoiled["batches"][0]["trials"] + 1
    path.write_text(json.dumps(spoiled))
    _, record = run_coin(pytester, "--claims-continue")
    block = record["evidence"]["heads rate"]["anytime"]
    assert record["outcome"] == "inconclusive" and len(block["ledger"]) == 1
    assert "started again" in block["note"] and "> trials" in block["note"]
    assert check_ledger(json.loads(path.read_text())) is not None  # a fresh sound ledger in its place
    (aside,) = path.parent.glob(f"{path.name}.invalid-*")  # the failed file is kept whole, not overwritten
    assert json.loads(aside.read_text()) == spoiled and f"kept as {aside.name}" in block["note"]


def test_a_ledger_locked_by_another_run_is_decided_on_and_not_written(pytester, monkeypatch):
    make_coin(pytester)
    run_coin(pytester)
    (path,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    before = path.read_bytes()
    monkeypatch.setattr(ledger_module, "LOCK_SECONDS", 0.2)
    other_run = FileLock(f"{path}.lock")  # another process's hold: flock locks of two open files exclude each other
    with other_run:
        _, record = run_coin(pytester, "--claims-continue")
    block = record["evidence"]["heads rate"]["anytime"]
    assert "locked by another run" in block["note"] and "decided but not kept" in block["note"], block["note"]
    assert len(block["ledger"]) == 2 and path.read_bytes() == before  # decided on both batches; the file untouched
    _, record = run_coin(pytester, "--claims-continue")  # the lock released: the same batch is drawn and kept
    assert (
        len(record["evidence"]["heads rate"]["anytime"]["ledger"]) == 2
        and "note" not in record["evidence"]["heads rate"]["anytime"]
    )
    assert len(check_ledger(json.loads(path.read_text()))["batches"]) == 2


@pytest.mark.parametrize(
    "decision, extra, problem",
    [
        ('decision = "anytime"', ", anytime=800", "differs from the statement's registered decision"),
        ('decision = "fixed"', ", anytime=True", "registered decision (fixed-sample)"),
    ],
)
def test_a_call_cannot_overrule_the_registered_decision(pytester, decision, extra, problem):
    make_coin(pytester, decision=decision, extra=extra)
    _, record = run_coin(pytester)
    assert record["outcome"] == "error" and problem in record["reason"], record["reason"]


def test_a_p_value_decision_spends_alpha_under_a_registered_anytime_decision(pytester):
    """decide_test under a registered anytime decision tests round 1 at round_alpha(alpha, 1) = 0.608 alpha (a
    p-value read again after more data loses its level): p_for 5e-5 holds (below 6.08e-5 at alpha 1e-4), 7e-5,
    which a single read at 1e-4 would hold, is inconclusive; batch= on a statement registered fixed is refused."""
    p_values = COIN_TEST.replace("decide_rate, ", "decide_test, ").replace(
        '    decide_rate(heads, n, 0.6, at_least=True, alpha=registered_false_alarm(), what="heads rate"{extra})',
        '    decide_test({p_for}, 0.5, alpha=registered_false_alarm(), what="heads rate", batch=claims_batch{extra})',
    )
    for decision, p_for, outcome in (
        ('decision = "anytime"', 5e-5, "held"),
        ('decision = "anytime"', 7e-5, "inconclusive"),
        ('decision = { method = "fixed", why = "w" }', 7e-5, "error"),  # batch= on a fixed decision is refused
    ):
        make_coin(pytester, decision=decision)
        extra = ', round_data="batch"' if "anytime" in decision else ""
        pytester.makepyfile(
            test_coin=p_values.format(trials=200, rate=0.68, batch="claims_batch", p_for=p_for, extra=extra)
        )
        for path in (pytester.path / "claims-evidence").rglob("*.ledger.json"):
            path.unlink()
        _, record = run_coin(pytester)
        assert record["outcome"] == outcome, record
    assert "batch= is for anytime decisions" in record["reason"]


def test_changed_parameters_do_not_continue_a_ledger(pytester):
    make_coin(pytester)
    run_coin(pytester)
    make_coin(pytester, decision='decision = { method = "anytime", plan = 400 }')
    _, record = run_coin(pytester, "--claims-continue")
    assert record["outcome"] == "error" and "cannot change after the data" in record["reason"], record["reason"]
    # the advice is the valid route: a new master seed (removing the ledger would re-draw the batches already seen)
    assert "master seed no run of this test has used (--claims-seed N)" in record["reason"], record["reason"]
    assert "would draw the batches it has seen again" in record["reason"], record["reason"]


def test_a_run_with_a_registered_decision_merges(pytester, tmp_path):
    """verdicts.json carries the registry's `decision`; the merge's schema must know the field."""
    from pytest_claims.merge.command import main as merge_main

    make_coin(pytester, decision='decision = { method = "anytime", prior = { a = 2, b = 1 } }')
    run_coin(pytester)
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(tmp_path / "m")]) == 0
    merged = json.loads((tmp_path / "m" / "verdicts.json").read_text())
    assert merged["claims"][0]["registry"]["statements"]["rate"]["decision"]["prior"] == {"a": 2, "b": 1}


def continue_on(pytester, tmp_path, machine: str, seed: int, times: int) -> tuple[str, dict]:
    """`times` continued runs under `seed` with the store of `machine`; (its verdicts.json kept, its last record)."""
    for _ in range(times):
        _, record = run_coin(
            pytester,
            "--claims-seed",
            str(seed),
            "--claims-continue",
            "-o",
            f"claims_store_dir={machine}",
            "-o",
            f"claims_evidence_dir={machine}-evidence",
        )
        if record["outcome"] != "inconclusive":
            break
    kept = tmp_path / f"{machine}-seed{seed}.json"
    kept.write_bytes((pytester.path / "out" / "verdicts.json").read_bytes())
    return str(kept), record


def merged_record(tmp_path, *files: str) -> tuple[int, dict]:
    from pytest_claims.merge.command import main as merge_main

    out = tmp_path / "merged"
    rc = merge_main([*files, "-o", str(out)])
    return rc, json.loads((out / "verdicts.json").read_text())


def test_two_machines_continuations_pool_in_a_merge(pytester, tmp_path):
    make_coin(pytester)
    one, first = continue_on(pytester, tmp_path, "machine-a", 1, 2)
    two, second = continue_on(pytester, tmp_path, "machine-b", 2, 2)
    assert first["outcome"] == second["outcome"] == "inconclusive"  # neither seed decides alone
    rc, merged = merged_record(tmp_path, two, one)
    record = merged["claims"][0]["statements"][0]
    (pooled,) = merged["replication"]["pooled"]
    assert rc == 0 and merged["claims"][0]["verdict"] == "verified" and record["outcome"] == "held"
    counts = [r["evidence"]["heads rate counts"] for r in (first, second)]
    total = (sum(c["successes"] for c in counts), sum(c["trials"] for c in counts))
    expected = rate_log_evalues_for(*total, 0.6, at_least=True, prior=UNIFORM)
    assert (pooled["successes"], pooled["trials"]) == total and pooled["seeds"]["1"]["batches"] == 2
    assert (pooled["log_e_for"], pooled["log_e_against"]) == pytest.approx(expected, abs=1e-12)
    kept = record["evidence"]["heads rate"]["pooled"]  # the seeds' chains once in the file: in the evidence only
    assert {k: v for k, v in kept.items() if k != "chains"} == {k: v for k, v in pooled.items() if k not in RECORD_KEYS}
    chains = {str(s): r["evidence"]["heads rate"]["anytime"]["ledger"] for s, r in ((1, first), (2, second))}
    assert kept["chains"] == chains and list(kept["chains"]) == ["1", "2"]  # in seed order, as each seed's run held it
    assert record["evidence"]["heads rate"]["anytime"]["ledger"] == chains["2"]  # the first input's seed's record
    assert "Anytime statements pooled over the seeds" in (tmp_path / "merged" / "verdict.html").read_text()


RECORD_KEYS = ("test", "claim", "statement")


def test_a_merged_file_is_read_back_only_with_the_pooled_decision_its_seeds_chains_make(pytester, tmp_path, capsys):
    from pytest_claims.merge.command import main as merge_main

    make_coin(pytester)
    one, _ = continue_on(pytester, tmp_path, "machine-a", 1, 1)
    two, _ = continue_on(pytester, tmp_path, "machine-b", 2, 1)
    rc, merged = merged_record(tmp_path, one, two)
    record = merged["claims"][0]["statements"][0]
    assert record["outcome"] == record["evidence"]["heads rate"]["pooled"]["outcome"] == "inconclusive"
    honest = tmp_path / "honest.json"
    honest.write_text(json.dumps(merged))

    def remerged(path: Path, *more: str) -> tuple[int, dict | None, str]:
        capsys.readouterr()
        out = tmp_path / f"again-{path.stem}"
        status = merge_main([str(path), *more, "-o", str(out)])
        written = json.loads((out / "verdicts.json").read_text()) if status != 2 else None
        return status, written, capsys.readouterr().err

    status, again, _ = remerged(honest)  # merged alone again: the same verdicts and outcomes
    assert status == rc and again is not None
    assert [(c["id"], c["verdict"]) for c in again["claims"]] == [(c["id"], c["verdict"]) for c in merged["claims"]]
    assert again["claims"][0]["statements"][0]["outcome"] == record["outcome"]
    assert again["claims"][0]["statements"][0]["evidence"] == record["evidence"]

    def forged(name: str, edit) -> Path:
        payload = json.loads(honest.read_text())
        edit(payload["claims"][0]["statements"][0])
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(payload))
        return path

    def held(statement: dict) -> None:  # the review's case: an inconclusive pooled set edited to held, twice
        statement["outcome"] = statement["evidence"]["heads rate"]["pooled"]["outcome"] = "held"

    def older(statement: dict) -> None:  # a pooled record as written before it carried the seeds' chains
        del statement["evidence"]["heads rate"]["pooled"]["chains"]

    test = record["test"]
    for path, named in (
        (
            forged("held", held),
            "records pooled outcome 'held', but the seeds' chains it carries pool to 'inconclusive'",
        ),
        (
            forged("older", older),
            "carries a pooled record without its seeds' chains (written by an older pytest-claims)",
        ),
    ):
        status, again, err = remerged(path)
        assert status == 2 and again is None and f"{path}: claim coin/biased: statement test {test} {named}" in err, err
        status, again, err = remerged(Path(one), two, "--previous", str(path))  # as the previous report too
        assert status == 2 and f"{path}: claim coin/biased: statement test {test} {named}" in err, err
    # one seed's file given the merged record's pooled record, its own outcome kept: a merge of it kept the record
    # (exit 0) and `pytest-claims export` said "(pooled over seeds 1, 2)" of a verdict no pooling gave
    grafted = json.loads(Path(one).read_text())
    evidence = grafted["claims"][0]["statements"][0]["evidence"]["heads rate"]
    evidence["pooled"] = record["evidence"]["heads rate"]["pooled"]
    path = tmp_path / "grafted.json"
    path.write_text(json.dumps(grafted))
    status, again, err = remerged(path)
    assert status == 2 and again is None and f"{path}: claim coin/biased: statement test {test} carries a pooled" in err


def test_a_stream_claimed_by_two_seeds_is_not_pooled(pytester, tmp_path):
    make_coin(pytester)
    one, _ = continue_on(pytester, tmp_path, "machine-a", 1, 2)
    two, _ = continue_on(pytester, tmp_path, "machine-b", 2, 2)
    forged = json.loads(Path(two).read_text())  # seed 2's file, its chain relabelled as seed 1's streams
    for batch in forged["claims"][0]["statements"][0]["evidence"]["heads rate"]["anytime"]["ledger"]:
        batch["stream"] = batch["stream"].replace("seed=2", "seed=1")
    Path(two).write_text(json.dumps(forged))
    _, merged = merged_record(tmp_path, one, two)
    (pooled,) = merged["replication"]["pooled"]
    assert pooled["outcome"] is None and "appears under two seeds" in pooled["why"]
    assert merged["claims"][0]["statements"][0]["outcome"] == "inconclusive"


def test_one_seed_continued_further_on_another_machine_is_one_chain(pytester, tmp_path):
    make_coin(pytester)
    further, decided = continue_on(pytester, tmp_path, "machine-a", 1, 8)
    once, undecided = continue_on(pytester, tmp_path, "machine-b", 1, 1)
    assert decided["outcome"] == "held" and undecided["outcome"] == "inconclusive"
    rc, merged = merged_record(tmp_path, once, further)
    assert rc == 0 and merged["claims"][0]["verdict"] == "verified", merged["claims"][0]["reason"]
    assert merged["claims"][0]["statements"][0]["evidence"] == decided["evidence"]


def test_the_longer_of_two_undecided_continuations_of_one_seed_is_kept(pytester, tmp_path):
    make_coin(pytester)
    twice, longer = continue_on(pytester, tmp_path, "machine-a", 1, 2)
    once, _ = continue_on(pytester, tmp_path, "machine-b", 1, 1)
    _, merged = merged_record(tmp_path, once, twice)
    assert merged["claims"][0]["statements"][0]["evidence"] == longer["evidence"]


def test_a_version_4_file_still_merges_and_an_older_one_is_refused(pytester, tmp_path):
    make_coin(pytester)
    kept, _ = continue_on(pytester, tmp_path, "machine-a", 1, 1)
    payload = json.loads(Path(kept).read_text())
    assert payload["schema_version"] == 5
    Path(kept).write_text(json.dumps(dict(payload, schema_version=4)))
    rc, merged = merged_record(tmp_path, kept)
    assert rc == 0 and merged["schema_version"] == 5 and merged["claims"][0]["verdict"] == "inconclusive"
    Path(kept).write_text(json.dumps(dict(payload, schema_version=3)))
    from pytest_claims.merge.command import main as merge_main

    assert merge_main([kept, "-o", str(tmp_path / "refused")]) == 2


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "-n 2"])
def test_each_batch_names_the_run_that_drew_it(pytester, workers):
    """Under -n the controller hands its report id to the workers, so a worker's batch names the run as a serial
    run's does (it was empty on workers before)."""
    make_coin(pytester)
    pytester.runpytest_subprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", *workers)
    payload = json.loads((pytester.path / "out" / "verdicts.json").read_text())
    (batch,) = payload["claims"][0]["statements"][0]["evidence"]["heads rate"]["anytime"]["ledger"]
    assert batch["run"] and batch["run"] == payload["runs"][0]["run"] == payload["report_id"], batch
