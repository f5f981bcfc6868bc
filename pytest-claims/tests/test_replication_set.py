"""Pooling that cannot be gamed (issue 47, item 3; pytest_claims.merge.replication_set): a merge pools an anytime
statement over seeds only when its inputs hold the declared replication set (seeds S, S+1, ... with no gaps, started in
ascending order) whole, as far as the inputs and the saved runs beside them show, and each seed's stream is its own
(known by the data it drew); otherwise each seed's own outcome stands, the claim is broken, one line names the seeds,
and the merge exits 1. "Replicated on every seed" counts the seeds that decided alone; a merge that pooled says how
many claims the pooled outcomes decide. And a simulation: cherry-picking favourable seeds no longer inflates the pooled
false alarm."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from chains import INI, ledger_batches, toy_registry
from pytest_claims.report import export
from pytest_claims.anytime.evalues import UNIFORM, rate_log_evalues_for
from pytest_claims.merge.command import main as merge_main
from pytest_claims.merge.pool import pool_seeds

COIN_TEST = """
import numpy as np
import pytest
from pytest_claims import decide_rate, registered_false_alarm
from pytest_claims.roles.seeding import keyed_rng


@pytest.mark.smoke
@pytest.mark.claim("coin/biased", statement="rate")
def test_rate(claims_batch):
    rng = {rng}
    heads = int((rng.random(200) < 0.68).sum())
    decide_rate(heads, 200, 0.6, at_least=True, alpha=registered_false_alarm(), what="heads rate", batch=claims_batch)
"""
SEEDED = 'keyed_rng(f"coin|batch{claims_batch}")'
IGNORES_THE_SEED = "np.random.default_rng(claims_batch)"  # the same data under every master seed


def coin(pytester, rng: str = SEEDED) -> None:
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("coin/biased", "rate", "test_coin.py", 'decision = "anytime"'))
    pytester.makepyfile(test_coin=COIN_TEST.format(rng=rng))


def run(pytester, seed: int, *args: str) -> Path:
    """One run under `seed`; its saved run's verdicts.json (pytest_claims.report.history saves every run under
    out/runs)."""
    before = set((pytester.path / "out" / "runs").glob("*/verdicts.json"))
    pytester.runpytest_inprocess(
        "-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", "--claims-seed", str(seed), *args
    )
    (saved,) = set((pytester.path / "out" / "runs").glob("*/verdicts.json")) - before
    return saved


def merged(capsys, tmp_path, *files: Path) -> tuple[int, dict, list[str], str]:
    """(exit status, merged verdicts.json, the merge's lines on stderr that name a refused pooling, its stdout)."""
    capsys.readouterr()
    rc = merge_main([*map(str, files), "-o", str(tmp_path / "merged")])
    out, err = capsys.readouterr()
    payload = json.loads((tmp_path / "merged" / "verdicts.json").read_text())
    return rc, payload, [line for line in err.splitlines() if "not pooled" in line], out


def test_a_merge_of_a_subset_of_the_seeds_run_is_not_pooled_and_names_the_missing_seeds(pytester, tmp_path, capsys):
    coin(pytester)
    one, two, three = (run(pytester, seed) for seed in (1, 2, 3))
    for files, missing in (([three], (1, 2)), ([one], (2, 3)), ([one, two], (3,))):
        rc, payload, lines, _ = merged(capsys, tmp_path, *files)
        (line,) = lines  # one line, naming every missing seed and where its chain is
        assert rc == 1 and payload["claims"][0]["verdict"] == "broken", (files, rc)
        assert all(f"seed {s} (its chain is in " in line for s in missing) and "test_rate" in line, line
        assert line.removeprefix("merge: ") in payload["claims"][0]["problems"]
        assert not any(p.get("outcome") for p in payload.get("replication", {}).get("pooled", []))
    rc, payload, lines, _ = merged(capsys, tmp_path, one, two, three)  # the whole set, in order: pooled
    assert not lines and payload["replication"]["pooled"][0]["outcome"] in ("held", "inconclusive")


def test_a_gap_between_the_seeds_merged_is_named(pytester, tmp_path, capsys):
    coin(pytester)
    one, three = run(pytester, 1), run(pytester, 3)
    rc, payload, (line,), _ = merged(capsys, tmp_path, one, three)
    assert rc == 1 and "seed 2 (no chain anywhere the merge can see: a gap)" in line
    assert payload["replication"]["pooled"][0]["outcome"] is None


def _next_second() -> None:
    """Wait for the clock's next second: a run id names its start to the second."""
    time.sleep(1.05 - time.time() % 1)


def test_a_seed_started_below_one_already_run_is_not_pooled(pytester, tmp_path, capsys):
    coin(pytester)
    five = run(pytester, 5)  # seed 5 run (and merged, seen) first, then seed 4 added below it
    _next_second()
    four = run(pytester, 4)
    rc, payload, (line,), _ = merged(capsys, tmp_path, four, five)
    assert rc == 1 and "seed 4 was started" in line and "after seed 5" in line, line
    assert payload["replication"]["pooled"][0]["outcome"] is None
    assert {s: v["outcome"] for s, v in payload["replication"]["pooled"][0]["seeds"].items()} == {
        "4": json.loads(four.read_text())["claims"][0]["statements"][0]["outcome"],
        "5": json.loads(five.read_text())["claims"][0]["statements"][0]["outcome"],
    }  # each seed's own outcome is reported


def test_one_stream_under_two_seed_labels_is_refused(pytester, tmp_path, capsys):
    coin(pytester, IGNORES_THE_SEED)
    files = []
    for seed in (1, 2):  # three batches each: two independent streams of 200 coins coincide so with chance ~1e-4
        for _ in range(3):
            saved = run(pytester, seed, "--claims-continue")
        files.append(saved)
    rc, payload, (line,), _ = merged(capsys, tmp_path, *files)
    assert rc == 1 and "seeds 1 and 2 hold the same observations batch for batch" in line, line
    assert "one stream under 2 labels (chance of so many coinciding: " in line
    pooled = payload["replication"]["pooled"][0]
    assert pooled["outcome"] is None and pooled["seeds"]["1"]["stream"] == pooled["seeds"]["2"]["stream"]
    assert payload["claims"][0]["verdict"] == "broken"


def test_counts_that_may_coincide_by_chance_are_not_pooled_nor_a_broken_claim(pytester, tmp_path, capsys):
    """One batch of 200 coins: two honest seeds give the same count with chance ~4 %, so the same data may be chance:
    not pooled (one stream cannot be told from a coincidence), and no claim is broken for it."""
    coin(pytester, IGNORES_THE_SEED)
    rc, payload, (line,), _ = merged(capsys, tmp_path, run(pytester, 1), run(pytester, 2))
    assert (
        "one stream under 2 labels, or chance (independent streams of these counts coincide so with chance 0.0" in line
    )
    assert payload["replication"]["pooled"][0]["outcome"] is None and not payload["claims"][0].get("problems")
    assert rc == 0 and payload["claims"][0]["verdict"] == "inconclusive"


def test_replicated_on_every_seed_means_each_seed_decided_alone(pytester, tmp_path, capsys):
    coin(pytester)
    files = []
    for seed in (1, 2):  # each seed continued twice: inconclusive alone (as test_anytime_decisions shows)
        for _ in range(2):
            saved = run(pytester, seed, "--claims-continue")
        files.append(saved)
    alone = [json.loads(f.read_text())["claims"][0]["verdict"] for f in files]
    rc, payload, lines, out = merged(capsys, tmp_path, *files)
    rep = payload["replication"]
    assert not lines and alone == ["inconclusive", "inconclusive"] and payload["claims"][0]["verdict"] == "verified"
    assert rep["claims"][0]["verdicts"] == {"1": "inconclusive", "2": "inconclusive"}  # each seed alone
    assert rep["claims_replicated"] == 0 and rep["claims_decided_pooled"] == 1
    label = "1 of 1 claims decided when pooled; 0 replicated on every seed alone"
    assert label in out and label in (tmp_path / "merged" / "verdict.html").read_text()
    assert "pooled over master seeds 1, 2" in payload["claims"][0]["statements"][0]["reason"]
    assert "pooled: held" in (tmp_path / "merged" / "verdict.html").read_text()
    for fmt in ("csv", "markdown", "latex"):  # the exports say the verdict rests on the pooled seeds
        assert "verified (pooled over seeds 1, 2)" in export.render(payload, fmt), fmt


def test_a_seeds_chain_shorter_than_one_saved_is_not_pooled_and_the_longer_run_is_named(pytester, tmp_path, capsys):
    """Seed 1 run, then continued (its saved runs hold its chain at 1 and 2 batches), seed 2 run: pooling seed 1's
    shorter chain, picked after the longer turned against the user, is a look chosen after the data: refused in one
    line naming the file, the statement, the seed and the longer saved run; the longest (alone, or beside the shorter)
    is pooled."""
    coin(pytester)
    short = run(pytester, 1, "--claims-continue")
    _next_second()
    longer = run(pytester, 1, "--claims-continue")
    two = run(pytester, 2)
    assert [len(ledger_of(f)) for f in (short, longer)] == [1, 2]
    rc, payload, (line,), _ = merged(capsys, tmp_path, short, two)
    assert rc == 1 and payload["claims"][0]["verdict"] == "broken", rc
    assert f"{short} holds seed 1's chain of 'rate' at 1 batch(es), but the saved run {longer} holds it at 2" in line
    assert "test_rate" in line and line.removeprefix("merge: ") in payload["claims"][0]["problems"], line
    assert payload["replication"]["pooled"][0]["outcome"] is None
    for files in ((longer, two), (short, longer, two)):
        rc, payload, lines, _ = merged(capsys, tmp_path, *files)
        assert not lines and payload["replication"]["pooled"][0]["seeds"]["1"]["batches"] == 2, lines
        assert payload["replication"]["pooled"][0]["outcome"] in ("held", "inconclusive")


def ledger_of(saved: Path) -> list:
    return json.loads(saved.read_text())["claims"][0]["statements"][0]["evidence"]["heads rate"]["anytime"]["ledger"]


# ------------------------------------------------------------------------------------------------
# Simulation: cherry-picking favourable seeds under the null
# ------------------------------------------------------------------------------------------------

SEEDS, TRIALS, REPLICATES, ALPHA, NULL_RATE = 30, 50, 300, 0.05, 0.5


def _record(seed: int, successes: int) -> dict:
    """A statement record of one batch of TRIALS under `seed`, its run started at second `seed` (ascending order)."""
    batches = ledger_batches((successes, TRIALS), threshold=NULL_RATE, seed=seed)
    batches[0]["run"] = f"20261205T0000{seed:02d}Z-host-1-abc"
    block = {"method": "beta-mixture", "prior": {"a": 1.0, "b": 1.0, "point_mass": 0.0}, "ledger": batches}
    block.update(held_alpha=ALPHA, refute_alpha=ALPHA)
    decision = {"threshold": NULL_RATE, "statement": f"rate >= {NULL_RATE}", "anytime": block}
    outcome = "held" if block["ledger"][0]["log_e_for"] >= -math.log(ALPHA) else "inconclusive"
    return {"test": "t", "outcome": outcome, "reason": "", "evidence": {"heads rate": decision}}


def _payload(record: dict) -> dict:
    return {"claims": [{"statements": [record]}]}


def _held_as_given(counts: list[int]) -> bool:
    """The decision of the seeds' counts pooled as given, in seed order, without the declared set (the merge before
    the check: pool_chains' decision): whether the pooled chain crosses ln(1/alpha) for the statement at some look."""
    looks = np.cumsum(counts)
    return any(
        rate_log_evalues_for(int(k), TRIALS * (i + 1), NULL_RATE, at_least=True, prior=UNIFORM)[0] >= -math.log(ALPHA)
        for i, k in enumerate(looks)
    )


def test_cherry_picking_favourable_seeds_no_longer_inflates_the_pooled_false_alarm():
    """Under the null (rate exactly the threshold), 30 seeds each run; the user merges only the seeds whose own data
    favour the statement. Pooled as given (as the merge did before) the false "held" comes far above alpha; through the
    merge's check (pool_seeds, the other seeds seen in the saved runs) a picked subset is refused, and the whole set,
    the only one pooled, keeps alpha. About 3 s."""
    rng = np.random.default_rng(47)
    picked_held = refused = whole_held = 0
    for _ in range(REPLICATES):
        counts = rng.binomial(TRIALS, NULL_RATE, size=SEEDS)
        records = {str(s): _record(s, int(k)) for s, k in enumerate(counts, start=1)}
        picked = {s: r for s, r in records.items() if int(counts[int(s) - 1]) > TRIALS * NULL_RATE}
        picked_held += _held_as_given([int(counts[int(s) - 1]) for s in picked])
        seen = {"t": {s: f"runs/{s}" for s in records if s not in picked}}
        checked = pool_seeds({s: _payload(r) for s, r in picked.items()}, seen)["t"]
        refused += checked.get("refused", False) and checked["outcome"] is None and "the inputs lack" in checked["why"]
        whole = pool_seeds({s: _payload(r) for s, r in records.items()}, {})["t"]
        assert whole["outcome"] is not None, whole["why"]  # the whole set in order is pooled
        whole_held += whole["outcome"] == "held"
    # a one-sided 99.9 % binomial bound around alpha: what REPLICATES draws of a valid route can reach
    bound = ALPHA + 3.1 * math.sqrt(ALPHA * (1 - ALPHA) / REPLICATES)
    assert picked_held / REPLICATES > 3 * ALPHA, picked_held  # the attack, on pooling without the declared set
    assert refused == REPLICATES  # every picked subset (never the whole of 30 seeds here) is refused
    assert whole_held / REPLICATES <= bound, whole_held
    print(f"cherry-picked, pooled as given: {picked_held / REPLICATES:.3f}; whole set: {whole_held / REPLICATES:.3f}")


# ------------------------------------------------------------------------------------------------
# A relabelled seed, and one stream under two labels continued to different lengths
# ------------------------------------------------------------------------------------------------


def _chain_record(seed: int, *counts: int, label: int | None = None) -> dict:
    """A record of batches of TRIALS with these successes under `seed`, its stream ids naming seed `label` (default:
    `seed`; another label is a verdicts.json whose seed was edited), its run started at second `seed`."""
    batches = ledger_batches(*((k, TRIALS) for k in counts), threshold=NULL_RATE, seed=seed if label is None else label)
    for b in batches:
        b["run"] = f"20261205T0000{seed:02d}Z-host-1-abc"
    block = {"method": "beta-mixture", "prior": {"a": 1.0, "b": 1.0, "point_mass": 0.0}, "ledger": batches}
    block.update(held_alpha=ALPHA, refute_alpha=ALPHA)
    decision = {"threshold": NULL_RATE, "statement": f"rate >= {NULL_RATE}", "anytime": block}
    return {"test": "t", "outcome": "inconclusive", "reason": "", "evidence": {"heads rate": decision}}


def test_a_relabelled_seed_is_refused_and_its_own_label_pooled():
    """Seed 7's chain merged as seed 2 (its verdicts.json's seed edited, its other saved runs deleted): the seeds are
    1 and 2, in order, but seed 2's stream ids name seed 7: refused, named. The same chains under their own labels
    (seed 2 drawn as seed 2) are pooled: the check reads the label, not the data."""
    relabelled = {"1": _payload(_chain_record(1, 27)), "2": _payload(_chain_record(2, 31, label=7))}
    found = pool_seeds(relabelled, {})["t"]
    assert found["outcome"] is None and found.get("refused"), found
    assert "seed 2's chain was drawn under another seed" in found["why"] and "'seed=7|test=t|batch=0'" in found["why"]
    own = pool_seeds({"1": _payload(_chain_record(1, 27)), "2": _payload(_chain_record(2, 31))}, {})["t"]
    assert own["outcome"] is not None, own["why"]


def test_one_stream_continued_further_under_one_label_is_refused():
    """A test whose data ignore the seed: seed 1 continued to 5 batches, seed 2 to 4 of the same stream. The chains'
    whole digests differ, but their 4 shared batches coincide (two honest streams of 50 coins do so with chance
    0.08^4 ~ 4e-5 < 1e-3): one stream under two labels, refused. Seed 2 drawing its third batch of its own (2 shared
    batches, chance ~6e-3: may be chance) is pooled as independent."""
    stream = (27, 31, 22, 26, 29)
    found = pool_seeds({"1": _payload(_chain_record(1, *stream)), "2": _payload(_chain_record(2, *stream[:4]))}, {})
    why = found["t"]["why"]
    assert found["t"]["outcome"] is None and found["t"].get("refused"), found["t"]
    assert "seeds 1 and 2 hold the same observations batch for batch over their first 4 batch(es)" in why, why
    own = (*stream[:2], 24, 30)
    found = pool_seeds({"1": _payload(_chain_record(1, *stream)), "2": _payload(_chain_record(2, *own))}, {})
    assert found["t"]["outcome"] is not None, found["t"]["why"]


# ------------------------------------------------------------------------------------------------
# Seeds far apart: the gap between them is counted, never listed
# ------------------------------------------------------------------------------------------------

FAR_SEEDS = """
import resource, sys
from pytest_claims.merge.replication_set import not_the_declared_set
with open("/proc/self/statm") as f:
    used = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + 200 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
print(not_the_declared_set(["0", "1"], {"3000000000": "runs/0004_seed3000000000/verdicts.json"}))
"""


def test_a_saved_run_under_a_far_seed_is_named_without_listing_the_gap():
    """An honest earlier run under master seed 3000000000 saved beside the inputs, and seeds 0 and 1 merged: the
    merge names the seeds the inputs lack in one line (the first five, and how many more of seeds 0 to 3000000000),
    in 200 MB of memory; listing the three thousand million seeds between (as the check did) ran out of memory: a
    MemoryError, or the machine's."""
    if not Path("/proc/self/statm").exists():
        pytest.skip("measures its own memory from /proc (Linux)")
    done = subprocess.run([sys.executable, "-c", FAR_SEEDS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert "the inputs lack seed 2 (no chain anywhere the merge can see: a gap)" in done.stdout, done.stdout
    assert "seed 6 (no chain" in done.stdout and "seed 7" not in done.stdout, done.stdout
    assert f"and {3_000_000_001 - 2 - 5} more" in done.stdout, done.stdout


def test_a_lone_run_whose_outcome_was_edited_apart_from_its_chain_is_refused_naming_both(pytester, tmp_path, capsys):
    coin(pytester)
    saved = json.loads(run(pytester, 1).read_text())
    honest = saved["claims"][0]["statements"][0]
    assert honest["outcome"] == "inconclusive"  # one batch of 200 at 68%: its chain crosses neither way
    for name, outcome in (("honest", honest["outcome"]), ("edited", "held"), ("edited_refuted", "refuted")):
        honest["outcome"] = outcome
        (tmp_path / name).mkdir()
        (tmp_path / name / "verdicts.json").write_text(json.dumps(saved))
    rc, payload, _, _ = merged(capsys, tmp_path, tmp_path / "honest" / "verdicts.json")
    assert rc == 0 and payload["claims"][0]["statements"][0]["outcome"] == "inconclusive"
    for name, outcome in (("edited", "held"), ("edited_refuted", "refuted")):
        edited = tmp_path / name / "verdicts.json"
        assert merge_main([str(edited), "-o", str(tmp_path / f"out_{name}")]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert str(edited) in line and "test_coin.py::test_rate" in line, line
        assert f"records outcome {outcome!r}" in line and "decides 'inconclusive'" in line, line
        assert not (tmp_path / f"out_{name}").exists()  # nothing merged from it
