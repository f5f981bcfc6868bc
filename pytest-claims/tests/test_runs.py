"""The master seed, the chance of an inconclusive end, saved runs and pytest-claims-compare (each on a throwaway
project). The README's and the documentation's files and commands run as pasted in test_docs.py."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy  # noqa: F401  (imported before pytester's in-process runs, which cannot load NumPy a second time)
import pytest
from pytest_claims import decide_rate
from pytest_claims.stats.binomial import rate_lower_bound, rate_upper_bound
from pytest_claims.statements.decide import INCONCLUSIVE_CHANCE_MAX_TRIALS, inconclusive_chance
from pytest_claims.merge.command import main as merge_main
from pytest_claims.outcomes import ClaimRefuted, StatementInconclusive
from pytest_claims.cli.compare import main as compare_main
from pytest_claims.report.history import save_run, saved_runs

pytestmark = pytest.mark.smoke

# ------------------------------------------------------------------------------------------------
# The master seed

PROJECT_INI = """
[pytest]
claims_registry = registry.toml
claims_tiers = smoke
claims_report_dir = out
{extra}
"""

PROJECT_REGISTRY = """
[paper.p]
title = "t"

[[claim]]
id = "p/coin"
key = "P1"
paper = "p"
where = "Eq. 1"
text = "a draw keyed by the master seed"
expected = "verified"
tests = "test_seeded.py"

[[claim.statement]]
name = "draw"
text = "the keyed draw is in [0, 1)"
expected = "holds"
"""

PROJECT_CONFTEST = """
def pytest_claims_environment(config):
    return {"seed_seen_by_the_hook": config.getoption("claims_seed")}
"""

PROJECT_TEST = """
import json
import pytest
from pytest_claims import keyed_rng, statement_holds


@pytest.mark.smoke
@pytest.mark.claim("p/coin", statement="draw")
def test_draw(evidence, claims_seed):
    draw = float(keyed_rng("p|coin").random())
    evidence.headline(seed=claims_seed, draw=draw)
    statement_holds(0.0 <= draw < 1.0, "out of range")
"""


def seeded_project(pytester: pytest.Pytester, extra: str = "") -> None:
    pytester.makefile(".ini", pytest=PROJECT_INI.format(extra=extra))
    pytester.makefile(".toml", registry=PROJECT_REGISTRY)
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(test_seeded=PROJECT_TEST)


def verdicts(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out" / "verdicts.json").read_text())


def headline(payload: dict) -> dict:
    """The statement's evidence (its headline names list aside)."""
    return payload["claims"][0]["statements"][0]["evidence"]


def test_the_master_seed_comes_from_the_option_else_the_ini_key_and_reaches_hooks_fixture_and_verdicts(pytester):
    seeded_project(pytester, "claims_seed = 29589")
    assert pytester.runpytest_inprocess("-p", "no:randomly").ret == 0
    from_ini = verdicts(pytester)
    assert from_ini["seed"] == 29589 and from_ini["environment"]["master_seed"] == 29589
    assert from_ini["environment"]["seed_seen_by_the_hook"] == 29589 and headline(from_ini)["seed"] == 29589
    assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", "7").ret == 0
    from_option = verdicts(pytester)
    assert from_option["seed"] == 7 and from_option["environment"]["seed_seen_by_the_hook"] == 7
    assert headline(from_option)["seed"] == 7 and headline(from_option)["draw"] != headline(from_ini)["draw"]
    assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", "29589").ret == 0
    assert headline(verdicts(pytester))["draw"] == headline(from_ini)["draw"]  # the same seed, the same draw


def test_the_master_seed_is_the_same_on_xdist_workers(pytester):
    seeded_project(pytester, "claims_seed = 5")
    assert pytester.runpytest_subprocess("-p", "no:randomly", "-n", "2").ret == 0
    found = verdicts(pytester)
    assert found["seed"] == 5 and headline(found)["seed"] == 5


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--claims-seed", "-3"], "", "ERROR: --claims-seed must be a non-negative integer, got -3"),
        (["--claims-seed=abc"], "", "ERROR: --claims-seed must be a non-negative integer, got 'abc'"),
        (
            ["--seed=-3"],
            "claims_short_options = true",
            "ERROR: --seed must be a non-negative integer, got -3",
        ),  # as typed
        ([], "claims_seed = 1.5", "ini claims_seed must be a non-negative integer, got '1.5'"),
    ],
)
def test_a_bad_master_seed_stops_the_run_in_one_line(pytester, args, ini, message):
    seeded_project(pytester, ini)
    result = pytester.runpytest_inprocess("-p", "no:randomly", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str() and "Traceback" not in result.stdout.str() + result.stderr.str()


def test_keyed_generators_depend_on_the_seed_and_the_key_only_in_any_process():
    """The same (seed, key) gives the same draws in another process with another hash salt (a key hashed with
    Python's hash() would not), another key or seed other draws."""
    from pytest_claims import keyed_rng, seed_sequence

    here = keyed_rng("a|b", seed=3).integers(0, 2**62, size=4).tolist()
    code = "from pytest_claims import keyed_rng; print(keyed_rng('a|b', seed=3).integers(0, 2**62, size=4).tolist())"
    there = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, PYTHONHASHSEED="12345"), capture_output=True, text=True
    )
    assert json.loads(there.stdout) == here, there.stderr
    assert keyed_rng("a|c", seed=3).integers(0, 2**62, size=4).tolist() != here
    assert keyed_rng("a|b", seed=4).integers(0, 2**62, size=4).tolist() != here
    assert seed_sequence("a|b", seed=3).entropy == 3 and len(seed_sequence("a|b", seed=3).spawn_key) == 4
    with pytest.raises(RuntimeError, match="need seed="):
        keyed_rng("a|b")


def test_a_replication_set_is_made_by_the_plugins_seed(pytester, tmp_path):
    """Two runs under --claims-seed 1 and 2 (no hook reports a seed) merge into a replication over both seeds."""
    seeded_project(pytester)
    paths = []
    for seed in ("1", "2"):
        assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", seed).ret == 0
        paths.append(tmp_path / f"seed{seed}.json")
        paths[-1].write_text((pytester.path / "out" / "verdicts.json").read_text())
    assert merge_main([*map(str, paths), "-o", str(tmp_path / "merged")]) == 0
    merged = json.loads((tmp_path / "merged" / "verdicts.json").read_text())
    assert merged["replication"]["seeds"] == ["1", "2"] and merged["replication"]["claims_replicated"] == 1


# ------------------------------------------------------------------------------------------------
# The chance of an inconclusive end


def _brute_force_inconclusive(trials, threshold, rate, *, at_least, alpha, held_alpha):
    """decide_rate at every success count, each inconclusive count weighted by its binomial probability."""
    total = 0.0
    for k in range(trials + 1):
        try:
            decide_rate(k, trials, threshold, at_least=at_least, alpha=alpha, what="r", held_confidence=1 - held_alpha)
        except StatementInconclusive:
            total += math.comb(trials, k) * rate**k * (1 - rate) ** (trials - k)
        except ClaimRefuted:
            pass
    return total


@pytest.mark.parametrize(
    ("trials", "threshold", "rate", "at_least", "alpha", "held_alpha"),
    [
        (60, 0.6, 0.65, True, 0.01, 0.01),
        (60, 0.6, 0.65, False, 0.01, 0.05),
        (40, 0.1, 0.05, False, 1e-3, 0.01),
        (80, 0.9, 0.93, True, 1e-3, 0.01),
        (25, 0.5, 0.5, True, 0.2, 0.3),
        (30, 0.0, 0.0, False, 1e-4, 1e-4),  # 'rate <= 0': never held at a finite sample
        (30, 0.0, 0.2, True, 1e-4, 1e-4),  # 'rate >= 0': always held
        (30, 1.0, 1.0, True, 1e-4, 1e-4),
        (400, 0.3, 0.33, True, 1e-4, 0.01),
    ],
)
def test_the_inconclusive_chance_is_decide_rates_own(trials, threshold, rate, at_least, alpha, held_alpha):
    computed = inconclusive_chance(trials, threshold, rate, at_least=at_least, alpha=alpha, held_alpha=held_alpha)
    expected = _brute_force_inconclusive(trials, threshold, rate, at_least=at_least, alpha=alpha, held_alpha=held_alpha)
    assert computed == pytest.approx(expected, rel=1e-9, abs=1e-13)


def test_the_inconclusive_chance_agrees_where_a_bound_is_the_threshold():
    """Issue 39: with a threshold equal to a Clopper-Pearson bound to rounding, the binomial tail and the inverted
    bound could fall on either side of it, and the chance disagreed with decide_rate's own ends (710 of these 3,432
    cases before). decide_rate computes its held level as 1 - (1 - held_alpha), so the chance is asked at that."""
    disagree = []
    for trials in (1, 2, 3, 5, 8):
        for alpha in (0.01, 0.05, 0.2):
            for held_alpha in (0.01, 0.05, 0.2):
                thresholds = {0.0, 0.5, 1.0}
                for k in range(trials + 1):
                    for level in (alpha, held_alpha, 1 - (1 - held_alpha)):
                        thresholds |= {rate_lower_bound(k, trials, level), rate_upper_bound(k, trials, level)}
                for t in sorted(thresholds):
                    for at_least in (True, False):
                        for rate in (0.3, 0.7):
                            computed = inconclusive_chance(
                                trials, t, rate, at_least=at_least, alpha=alpha, held_alpha=1 - (1 - held_alpha)
                            )
                            counted = _brute_force_inconclusive(
                                trials, t, rate, at_least=at_least, alpha=alpha, held_alpha=held_alpha
                            )
                            if abs(computed - counted) > 1e-12:
                                disagree.append((trials, t, rate, at_least, alpha, held_alpha, computed, counted))
    assert not disagree, f"{len(disagree)} cases, the first: {disagree[:3]}"


def test_the_inconclusive_chance_is_bounded_in_trials():
    assert inconclusive_chance(INCONCLUSIVE_CHANCE_MAX_TRIALS + 1, 0.6, 0.62, at_least=True, alpha=1e-4) is None


def test_both_numbers_reach_verdicts_json_the_terminal_and_the_report(pytester):
    """The registered false alarm and the computed inconclusive chance, per statement (the coin project of
    test_inconclusive: 62 heads of 100 against 0.6 at 1e-4)."""
    from test_inconclusive import make

    make(pytester, heads=62, trials=100)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-p", "no:randomly", "--html=out/r.html")
    assert result.ret == 0
    record = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]
    rate = next(s for s in record["statements"] if s["statement"] == "rate")
    expected = inconclusive_chance(100, 0.6, 0.62, at_least=True, alpha=1e-4)
    assert rate["false_alarm"] == 1e-4 and 0.9 < expected < 1
    assert rate["inconclusive_chance"] == expected == rate["evidence"]["heads rate"]["inconclusive_chance"]
    result.stdout.fnmatch_lines([f"*chance of an inconclusive end*largest {expected:.3g} (C1 rate*"])
    html = (pytester.path / "out" / "r.html").read_text()
    assert "chance of an inconclusive end at this sample size" in html and f"{expected:.3g}" in html


# ------------------------------------------------------------------------------------------------
# Saved runs and pytest-claims-compare


def test_each_run_is_saved_under_a_new_number_and_the_last_is_the_previous(pytester, capsys):
    seeded_project(pytester, "claims_seed = 1")
    for seed in ("1", "1", "2"):
        assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", seed).ret == 0
    saved = saved_runs(pytester.path / "out")
    assert [n for n, _ in saved] == [1, 2, 3]
    assert [d.name.endswith(f"_seed{s}") for (_, d), s in zip(saved, "112")] == [True] * 3
    last = json.loads((saved[-1][1] / "verdicts.json").read_text())
    assert last == verdicts(pytester)
    assert "changes" not in json.loads((saved[0][1] / "verdicts.json").read_text())
    assert last["changes"]["previous"] == json.loads((saved[1][1] / "verdicts.json").read_text())["runs"][0]["date"]
    assert not list((pytester.path / "out" / "runs").glob("*/.*.tmp"))
    (pytester.path / "pytest.ini").write_text(PROJECT_INI.format(extra="claims_save_runs = false"))
    assert pytester.runpytest_inprocess("-p", "no:randomly").ret == 0
    assert len(saved_runs(pytester.path / "out")) == 3


def test_changes_since_the_previous_run_say_when_the_seed_differs(pytester):
    """ "Changed since the previous run: nothing" after a run under another master seed hid the seed change."""
    seeded_project(pytester, "claims_seed = 1")
    assert pytester.runpytest_inprocess("-p", "no:randomly").ret == 0
    result = pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", "7")
    assert result.ret == 0
    assert verdicts(pytester)["changes"]["conditions"] == [{"name": "seed", "before": 1, "after": 7}]
    result.stdout.fnmatch_lines(["*changed since the previous run*", "the runs differ in seed 1 -> 7", "nothing"])
    from pytest_claims.report.html_report import changes_html

    assert "(the runs differ in seed 1 &rarr; 7)" in changes_html(verdicts(pytester)["changes"])
    assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", "7").ret == 0
    assert verdicts(pytester)["changes"]["conditions"] == []  # the same seed: nothing to say


def test_a_damaged_last_saved_run_is_passed_over_for_the_previous_one(pytester):
    seeded_project(pytester)
    for _ in range(2):
        assert pytester.runpytest_inprocess("-p", "no:randomly").ret == 0
    first, second = (d / "verdicts.json" for _, d in saved_runs(pytester.path / "out"))
    second.write_text("{")
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    assert result.ret == 0, result.stderr.str()
    assert verdicts(pytester)["changes"]["previous"] == json.loads(first.read_text())["runs"][0]["date"]


def test_a_saved_run_whose_seed_is_nan_is_passed_over_and_this_runs_file_stays_json(pytester):
    """Its seed went into this run's changes.conditions, and json.dumps wrote it as NaN: not JSON (RFC 8259)."""
    seeded_project(pytester)
    assert pytester.runpytest_inprocess("-p", "no:randomly").ret == 0
    ((_, directory),) = saved_runs(pytester.path / "out")
    saved = directory / "verdicts.json"
    saved.write_text(saved.read_text().replace('"seed": ', '"seed": NaN, "was_seed": ', 1))
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    assert result.ret == 0 and "verdicts.json: field seed must be" in result.stderr.str()
    assert "NaN" not in (pytester.path / "out" / "verdicts.json").read_text()


def test_a_saved_run_is_never_overwritten(tmp_path):
    first = save_run(tmp_path, {"seed": 1, "claims": [], "n": 1})
    (tmp_path / "runs" / "0002_taken_by_another_run").mkdir()  # a run that took the next number meanwhile
    second = save_run(tmp_path, {"seed": 1, "claims": [], "n": 2})
    third = save_run(tmp_path, {"seed": [1, 2], "claims": [], "n": 3})
    assert first.parent.name.startswith("0001_") and second.parent.name.startswith("0003_")
    assert third.parent.name.startswith("0004_") and third.parent.name.endswith("_seed1-2")
    assert json.loads(first.read_text())["n"] == 1 and json.loads(second.read_text())["n"] == 2


def test_no_run_is_saved_under_a_number_saved_runs_cannot_read(tmp_path):
    (tmp_path / "runs" / "999999999_named_by_hand").mkdir(parents=True)
    with pytest.raises(OSError, match="numbered 999999999"):  # not 1000000000_..., which no later run would find
        save_run(tmp_path, {"seed": 1, "claims": []})
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["999999999_named_by_hand"]


def _compare(capsys, *args: str) -> tuple[int, str]:
    code = compare_main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_compare_names_what_changed_and_exits_by_it(pytester, capsys):
    seeded_project(pytester, "claims_seed = 1")
    for seed in ("1", "2"):
        assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", seed).ret == 0
    out = str(pytester.path / "out")
    code, text = _compare(capsys, "1", "2", "--report-dir", out)
    assert code == 0 and "no verdict or outcome changed" in text and "master_seed: 1 -> 2" in text, text
    assert _compare(capsys, "--report-dir", out)[0] == 0  # the last two
    # A third run whose statement fails (saved like any other): a verdict and an outcome changed.
    test_file = pytester.path / "test_seeded.py"
    test_file.write_text(test_file.read_text().replace("0.0 <= draw < 1.0", "draw > 1.0"))
    assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", "2").ret == 1
    code, text = _compare(capsys, "0002", str(pytester.path / "out" / "runs"), "--report-dir", out)
    assert code == 2 and "no such run" in text  # the runs folder itself is not a run
    third = saved_runs(pytester.path / "out")[-1][1]
    for later in ("3", str(third), str(third / "verdicts.json")):
        code, text = _compare(capsys, "2", later, "--report-dir", out)
        assert code == 1, text
        assert "P1  p/coin: verified -> broken" in text, text  # a holds statement refuted
        assert "test_seeded.py::test_draw: held -> refuted" in text, text
        assert "master_seed" not in text  # the same seed


def test_a_mutants_run_is_compared_only_with_a_mutants_run(pytester, capsys):
    """A --claims-mutants run's verdicts say what its mutants did: the plain compare and the report's previous run
    pass it over (the newcomer's `pytest-claims-compare` compared a plain run with a mutants run)."""
    seeded_project(pytester, "claims_seed = 1")
    for seed in ("1", "2"):
        assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", seed).ret == 0
    out = pytester.path / "out"
    plain = json.loads((saved_runs(out)[-1][1] / "verdicts.json").read_text())
    mutants = json.loads(json.dumps(plain))  # as a mutants run whose mutant survived would read
    mutants["mutants_run"], mutants["runs"][0]["date"] = True, "2000-01-01T00:00:00+00:00"
    mutants["claims"][0]["verdict"] = "broken"
    save_run(out, mutants)
    code, text = _compare(capsys, "--report-dir", str(out))
    assert code == 0 and "passed over 1 saved --claims-mutants run(s): 0003_" in text, text
    assert "0001_" in text.split("before:")[1] and "0002_" in text.split("after:")[1], text
    code, text = _compare(capsys, "3", "--report-dir", str(out))  # the only mutants run: none of its kind to compare
    assert code == 2 and "0 saved --claims-mutants run(s) of 3" in text, text
    code, text = _compare(capsys, "1", "3", "--report-dir", str(out))  # named runs are compared as named
    assert code == 1 and "P1  p/coin: verified -> broken" in text, text
    assert pytester.runpytest_inprocess("-p", "no:randomly", "--claims-seed", "2").ret == 0
    assert verdicts(pytester)["changes"]["previous"] == plain["runs"][0]["date"]


@pytest.mark.parametrize(
    "bad", ["missing number", "not json", "no claims", "three runs", "one saved run", "5000 digits", "name too long"]
)
def test_compare_refuses_bad_input_with_status_2(tmp_path, capsys, bad):
    save_run(tmp_path, {"seed": 1, "claims": []})
    (tmp_path / "junk.json").write_text("{" if bad == "not json" else '{"claims": 3}')
    args = {
        "missing number": ["1", "9"],
        "not json": ["1", str(tmp_path / "junk.json")],
        "no claims": [str(tmp_path / "junk.json"), "1"],
        "three runs": ["1", "1", "1"],
        "one saved run": [],
        "5000 digits": ["1" * 5000, "1"],  # beyond int()'s 4,300 digits
        "name too long": ["a" * 300, "1"],  # ENAMETOOLONG from Path.is_dir
    }[bad]
    code, text = _compare(capsys, *args, "--report-dir", str(tmp_path))
    assert code == 2 and text.startswith("pytest-claims-compare: ") and text.count("\n") == 1, text


def test_compare_shows_the_control_characters_a_file_holds_escaped(tmp_path, capsys):
    """A key of ESC sequences and a newline cleared the terminal, retitled it and forged a line of the comparison."""
    key = "K\x1b[2J\x1b]0;title\x07\nP9  p/forged: broken -> verified\x9b"
    files = []
    for verdict in ("verified", "broken"):
        files.append(tmp_path / f"{verdict}.json")
        files[-1].write_text(json.dumps({"claims": [{"id": "c", "key": key, "verdict": verdict}]}))
    code, text = _compare(capsys, *map(str, files))
    assert (
        code == 1
        and "  K\\x1b[2J\\x1b]0;title\\x07\\x0aP9  p/forged: broken -> verified\\x9b  c: verified -> broken" in text
    )
    assert not any(ch in text.replace("\n", "") for ch in "\x1b\x07\x9b"), text


def test_a_key_number_no_float_holds_is_not_compared_and_stops_nothing(tmp_path, capsys):
    def run(big: str) -> str:
        claim = {"id": "c", "key": "K", "verdict": "verified"}
        values = [{"label": "small", "values": [{"value": 1.0}]}, {"label": "big", "values": [{"value": "BIG"}]}]
        path = tmp_path / f"{len(big)}.json"
        path.write_text(json.dumps({"claims": [{**claim, "key_numbers": values}]}).replace('"BIG"', big))
        if big == "2":
            path.write_text(path.read_text().replace('"value": 1.0', '"value": 1.5'))
        return str(path)

    code, text = _compare(capsys, run("2"), run("1" + "0" * 400))  # json reads 10**400 as an int
    assert code == 0 and "K  small: 1.5 -> 1 (x0.6667)" in text and "big" not in text, text


def _with_rate(payload: dict, seed: int, rate: float) -> dict:
    """A copy of a run's verdicts as a run of `seed` whose key number (a rate, per parametrisation) read `rate`."""
    out = json.loads(json.dumps(payload))
    out["seed"] = seed
    out["claims"][0]["key_numbers"] = [
        {"label": "draw: heads rate counts", "values": [{"run": "smoke", "tier": "smoke", "value": {"rate": rate}}]},
        {"label": "draw: note", "values": [{"run": "smoke", "tier": "smoke", "value": "text is not compared"}]},
    ]
    return out


def test_compare_shows_the_key_numbers_that_moved_and_can_fail_on_a_relative_change(pytester, tmp_path, capsys):
    seeded_project(pytester, "claims_seed = 1")
    assert pytester.runpytest_inprocess("-p", "no:randomly").ret == 0
    files = []
    for seed, rate in [(1, 0.1238), (2, 0.1284)]:
        (tmp_path / str(seed)).mkdir()
        (tmp_path / str(seed) / "verdicts.json").write_text(json.dumps(_with_rate(verdicts(pytester), seed, rate)))
        files.append(str(tmp_path / str(seed) / "verdicts.json"))
    code, text = _compare(capsys, *files)
    assert code == 0 and "no verdict or outcome changed" in text, text
    assert "key numbers that moved (1):\n  P1  draw: heads rate counts.rate [smoke]: 0.1238 -> 0.1284 (x1.037)" in text
    assert "note" not in text.split("key numbers that moved")[1]
    assert _compare(capsys, *files, "--fail-on-change", "0.05")[0] == 0  # moved 3.7%: within 5%
    code, text = _compare(capsys, *files, "--fail-on-change", "0.01")
    assert code == 4 and "1 key number(s) moved by more than 0.01 (relative): --fail-on-change" in text, text
    assert _compare(capsys, files[0], files[0], "--fail-on-change", "0")[0] == 0  # nothing moved
    for bad in ("-1", "nan", "ten"):
        code, text = _compare(capsys, *files, "--fail-on-change", bad)
        assert code == 2 and text.startswith("pytest-claims-compare: --fail-on-change") and text.count("\n") == 1, text
