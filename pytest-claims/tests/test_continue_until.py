"""Continuing an anytime statement until it decides, in one run, within a stated budget (--claims-continue-until,
--claims-budget): the test's body is called once per batch (its draws counted in a file), the chain is the one that
separate --claims-continue runs build, the stop is kept in the ledger, a budget that runs out ends inconclusive with
its e-value, and a run that meets a decided ledger computes nothing."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from chains import INI, toy_registry
from pytest_claims.roles.continuation import Budget, parse_budget
from pytest_claims.stats.shown_numbers import significant

pytestmark = pytest.mark.smoke

UNTIL = "--claims-continue-until=decided"

# The body appends the batch it draws to draws.txt: the count of draws is the count of times the body ran.
COIN_TEST = """
import pytest
from pytest_claims import decide_rate, registered_false_alarm
from pytest_claims.roles.seeding import keyed_rng


@pytest.mark.smoke
@pytest.mark.claim("coin/biased", statement="rate")
def test_rate(claims_batch):
    with open("draws.txt", "a") as drawn:
        drawn.write(f"{{claims_batch}}\\n")
    n = {trials}
    heads = int((keyed_rng(f"coin|batch{{claims_batch}}").random(n) < {rate}).sum())
    decide_rate(heads, n, 0.6, at_least=True, alpha=registered_false_alarm(), what="heads rate"{batch})
"""


def make_coin(pytester, *, rate=0.68, trials=200, decision='decision = "anytime"', batch=", batch=claims_batch"):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("coin/biased", "rate", "test_coin.py", decision))
    pytester.makepyfile(test_coin=COIN_TEST.format(trials=trials, rate=rate, batch=batch))


def run(pytester, *args):
    result = pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", *args)
    verdicts = pytester.path / "out" / "verdicts.json"
    record = json.loads(verdicts.read_text())["claims"][0]["statements"][0] if verdicts.exists() else None
    return result, record


def draws(pytester) -> list[int]:
    path = pytester.path / "draws.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def the_ledger(pytester) -> dict:
    (path,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    return json.loads(path.read_text())


def test_decided_in_one_command_and_its_rerun_computes_nothing(pytester):
    make_coin(pytester)
    result, record = run(pytester, UNTIL, "--claims-budget=batches:50")
    ledger = the_ledger(pytester)
    looks = len(ledger["batches"])
    assert record["outcome"] == "held" and looks > 1  # a continuation, not a first batch that decided alone
    assert draws(pytester) == list(range(looks))  # the body ran once per batch, each batch drawn once
    block = record["evidence"]["heads rate"]["anytime"]
    assert block["decided_at_look"] == looks and block["ledger"] == ledger["batches"]
    lines = [line for line in result.outlines if line.startswith("claims continue:")]
    assert len(lines) == looks + 1 and f"held: crossed at batch {looks - 1}" in lines[-1], lines
    assert ledger["stops"][-1]["ended"] == "crossed" and ledger["stops"][-1]["last_batch"] == looks - 1
    assert ledger["decided"]["outcome"] == "held"

    # the rerun reads the ledger and calls nothing: no draw, the same decision and chain
    for args in ((), (UNTIL, "--claims-budget=batches:50"), ("--claims-continue",)):
        result, again = run(pytester, *args)
        assert draws(pytester) == list(range(looks)), args
        assert again["outcome"] == "held" and again["evidence"]["heads rate"]["anytime"]["ledger"] == block["ledger"]
        assert "nothing computed" in again["evidence"]["heads rate"]["anytime"]["note"]
        result.stdout.fnmatch_lines([f"claims continue: *already decided: held at batch {looks - 1}*nothing computed"])
    assert the_ledger(pytester)["batches"] == ledger["batches"]


def test_one_run_builds_the_chain_that_one_batch_per_run_builds(pytester):
    make_coin(pytester)
    run(pytester, UNTIL, "--claims-budget=batches:50")
    in_one = the_ledger(pytester)["batches"]
    for path in (pytester.path / "claims-evidence").rglob("*.ledger.json"):
        path.unlink()
    for _ in range(len(in_one) + 2):  # a run per batch, as before, until decided
        _, record = run(pytester, "--claims-continue")
        if record["outcome"] != "inconclusive":
            break
    per_run = the_ledger(pytester)["batches"]
    same = ("batch", "stream", "successes", "trials", "cum_successes", "cum_trials", "log_e_for", "log_e_against")
    assert [{k: b[k] for k in same} for b in per_run] == [{k: b[k] for k in same} for b in in_one]


def test_a_budget_spent_ends_inconclusive_with_its_e_value_and_is_kept(pytester):
    make_coin(pytester, rate=0.61)  # near the threshold: three batches of 200 cannot decide it
    result, record = run(pytester, UNTIL, "--claims-budget=batches:3")
    ledger = the_ledger(pytester)
    last = ledger["batches"][-1]
    assert record["outcome"] == "inconclusive" and draws(pytester) == [0, 1, 2] and len(ledger["batches"]) == 3
    spent = f"budget batches:3 spent (3 batch(es)) at batch 2: ln E for {significant(last['log_e_for'])}"
    assert spent in record["reason"], record["reason"]
    stop = ledger["stops"][-1]
    assert (stop["ended"], stop["budget"], stop["first_batch"], stop["last_batch"]) == ("budget", "batches:3", 0, 2)
    assert stop["log_e_for"] == last["log_e_for"] and "decided" not in ledger
    assert record["evidence"]["heads rate"]["anytime"]["continued"] == stop
    lines = [line for line in result.outlines if line.startswith("claims continue:")]
    assert len(lines) == 4 and all(f"batch {k} ({k + 1} this run" in lines[k] for k in range(3)), lines
    # the next run continues the chain where the budget left it, with a budget of trials (two batches of 200 fit 500)
    _, record = run(pytester, UNTIL, "--claims-budget=trials:500")
    assert draws(pytester) == [0, 1, 2, 3, 4] and "(400 trials)" in record["reason"], record["reason"]
    assert [s["ended"] for s in the_ledger(pytester)["stops"]] == ["budget", "budget"]


def test_a_time_budget_starts_no_batch_it_expects_to_overrun(pytester):
    make_coin(pytester, rate=0.6)
    # each batch sleeps 0.3 s: 1 s of budget has room for three at most (0.9 s), never a fourth
    slow = "    import time; time.sleep(0.3)\n    n = 200"
    source = (pytester.path / "test_coin.py").read_text().replace("    n = 200", slow)
    (pytester.path / "test_coin.py").write_text(source)
    _, record = run(pytester, UNTIL, "--claims-budget=time:1s")
    assert record["outcome"] == "inconclusive" and 1 <= len(draws(pytester)) <= 3, draws(pytester)
    assert "budget time:1s spent" in record["reason"]


def test_a_fixed_sample_statement_is_not_continued(pytester):
    make_coin(pytester, rate=0.61, decision='decision = "fixed"', batch="")
    _, record = run(pytester, UNTIL, "--claims-budget=batches:5")
    assert record["outcome"] == "inconclusive" and draws(pytester) == [0]
    assert "not continued, a fixed-sample decision keeps no ledger" in record["reason"], record["reason"]


SPENT_TEST = """
import pytest
from pytest_claims import decide_test, registered_false_alarm


@pytest.mark.smoke
@pytest.mark.claim("coin/biased", statement="rate")
def test_rate(claims_batch):
    with open("draws.txt", "a") as drawn:
        drawn.write(f"{claims_batch}\\n")
    p_for = 1e-9 if claims_batch == 2 else 0.5  # round 3 (batch 2) rejects at its spent level
    decide_test(p_for, 0.5, alpha=registered_false_alarm(), what="effect", batch=claims_batch, round_data="batch")
"""


def test_alpha_spent_over_rounds_continues_round_by_round(pytester):
    make_coin(pytester)
    pytester.makepyfile(test_coin=SPENT_TEST)
    result, record = run(pytester, UNTIL, "--claims-budget=batches:10")
    assert record["outcome"] == "held" and draws(pytester) == [0, 1, 2]
    assert record["evidence"]["effect"]["anytime"]["decided_at_look"] == 3
    result.stdout.fnmatch_lines(["claims continue: *batch 2 *round 3: p for 1e-09 (needs < *"])
    _, record = run(pytester, UNTIL, "--claims-budget=trials:10")  # rounds count no trials; decided anyway
    assert record["outcome"] == "held" and draws(pytester) == [0, 1, 2]


def test_a_refuted_ledger_is_reported_refuted_without_computing(pytester):
    make_coin(pytester, rate=0.5)
    _, first = run(pytester, UNTIL, "--claims-budget=batches:20")
    assert first["outcome"] == "refuted" and "reproduce:" in first["reason"]
    drawn = draws(pytester)
    _, again = run(pytester)
    assert again["outcome"] == "refuted" and again["reason"] == first["reason"] and draws(pytester) == drawn


def test_a_decision_without_its_record_is_replayed_once_then_kept(pytester):
    make_coin(pytester)
    run(pytester, UNTIL, "--claims-budget=batches:50")
    (path,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    earlier = json.loads(path.read_text())
    looks = len(earlier["batches"])
    del earlier["decided"]  # as a ledger decided before the record existed
    path.write_text(json.dumps(earlier))
    _, record = run(pytester)
    assert record["outcome"] == "held" and draws(pytester) == [*range(looks), looks - 1]  # the last batch replayed
    _, record = run(pytester)
    assert record["outcome"] == "held" and draws(pytester) == [*range(looks), looks - 1]  # now nothing computed


def test_a_changed_false_alarm_is_not_read_from_the_record(pytester):
    make_coin(pytester)
    run(pytester, UNTIL, "--claims-budget=batches:50")
    looks = len(draws(pytester))
    registry = (pytester.path / "registry.toml").read_text().replace("false_alarm = 1e-4", "false_alarm = 1e-3")
    (pytester.path / "registry.toml").write_text(registry)
    _, record = run(pytester)
    assert len(draws(pytester)) == looks + 1  # the body ran: the ledger's parameters are checked against it
    assert record["outcome"] == "error" and "cannot change after the data" in record["reason"], record["reason"]


@pytest.mark.parametrize(
    "args, named",
    [
        ((UNTIL,), "needs a budget"),
        ((UNTIL, "--claims-budget=batches:0"), "--claims-budget 'batches:0': batches '0' is not a whole number"),
        ((UNTIL, "--claims-budget=trials:1.5"), "trials '1.5' is not a whole number"),
        ((UNTIL, "--claims-budget=minutes:3"), "'minutes:3' names no budget"),
        ((UNTIL, "--claims-budget=time:-1m"), "time '-1m' is not a positive duration"),
        ((UNTIL, "--claims-budget=batches:2,batches:3"), "batches given twice"),
        (("--claims-budget=batches:3",), "is the budget of --claims-continue-until=decided"),
        ((UNTIL, "--claims-budget=batches:3", "--claims-no-store"), "--claims-no-store does not keep"),
    ],
)
def test_a_bad_budget_is_one_line_naming_the_option(pytester, args, named):
    make_coin(pytester)
    result, _ = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and draws(pytester) == []
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and named in errors[0], result.errlines


def test_a_bad_ini_budget_names_the_ini_key(pytester):
    make_coin(pytester)
    pytester.makefile(".ini", pytest=INI + "claims_budget = batches:many\n")
    result, _ = run(pytester, UNTIL)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ini key claims_budget 'batches:many': batches 'many' is not a number*"])


def test_budgets_parse_to_their_limits():
    assert parse_budget("batches:50, trials:1e7,time:10m", "x") == Budget(
        "batches:50, trials:1e7,time:10m", 50, 10_000_000, 600.0
    )
    assert parse_budget("time:90", "x").seconds == 90.0 and parse_budget("time:2h", "x").seconds == 7200.0
    assert math.isclose(parse_budget("time:1.5s", "x").seconds, 1.5)


def test_each_batch_records_its_evidence_afresh(pytester):
    make_coin(pytester)
    source = (pytester.path / "test_coin.py").read_text()
    source = source.replace("def test_rate(claims_batch):", "def test_rate(claims_batch, evidence):")
    recorded = '    evidence.record(**{f"drawn in batch {claims_batch}": True})\n    n = 200'
    source = source.replace("    n = 200", recorded)
    (pytester.path / "test_coin.py").write_text(source)
    _, record = run(pytester, UNTIL, "--claims-budget=batches:50")
    looks = len(draws(pytester))
    assert looks > 1 and [k for k in record["evidence"] if k.startswith("drawn")] == [f"drawn in batch {looks - 1}"]


def test_two_runs_continuing_one_chain_at_once_keep_the_batch_once_and_neither_breaks(pytester):
    """Both runs read the ledger (claims_batch = 1) before either keeps batch 1 (a barrier in the body): the one that
    takes the ledger's lock second finds batch 1 kept with its own data, and replays it; it used to refuse it as a
    stream drawn twice (a ValueError: the statement an error, its claim broken)."""
    make_coin(pytester, rate=0.605)
    barrier = (
        "    import os, time\n"
        "    open(f'ready-{os.getpid()}', 'w').close()\n"
        "    deadline = time.monotonic() + 60\n"
        "    while len([p for p in os.listdir('.') if p.startswith('ready-')]) < 2 and time.monotonic() < deadline:\n"
        "        time.sleep(0.05)\n"
    )
    path = pytester.path / "test_coin.py"
    run(pytester)  # batch 0, before the barrier is in place
    path.write_text(path.read_text().replace("    n = ", barrier + "    n = "))
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "smoke"]
    runs = [
        subprocess.Popen(
            [*command, "--claims-continue", "-o", f"claims_report_dir=out{i}"],
            cwd=pytester.path,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in (1, 2)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in runs]
    assert draws(pytester) == [0, 1, 1]  # both drew batch 1
    for i, (process, output) in enumerate(zip(runs, outputs), 1):
        assert process.returncode == 0, output[-3000:]
        record = json.loads((pytester.path / f"out{i}" / "verdicts.json").read_text())["claims"][0]["statements"][0]
        assert record["outcome"] == "inconclusive", record
        assert len(record["evidence"]["heads rate"]["anytime"]["ledger"]) == 2
    assert [b["batch"] for b in the_ledger(pytester)["batches"]] == [0, 1]
