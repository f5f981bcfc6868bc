"""Hostile inputs at the plugin's edges, each as a test that fails without its fix: ledgers renumbered, copied under
another seed or switched to a fixed-sample rule; special and oversize files at every reader; runs that ran no test
body; exports onto their input or carrying formulas; bad option and ini values; `init` through links."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from chains import INI, toy_registry
from pytest_claims.anytime.chain_kinds import derive_chain
from pytest_claims.statements.ledger import LedgerInvalid, check_ledger

pytestmark = pytest.mark.smoke


def _spent_chain(streams: list[str]) -> dict:
    statement = {"what": "x", "alpha": 1e-3, "held_alpha": 1e-2, "kind": "spent-p"}
    data = [{"p_for": 0.5, "p_against": 0.5} for _ in streams]
    batches = [
        {"batch": i, "stream": stream, "run": "", **d, **derived}
        for i, (stream, d, derived) in enumerate(zip(streams, data, derive_chain(statement, data)))
    ]
    return {"version": 1, "statement": statement, "batches": batches}


LEVELS = {"what": "m", "alpha": 1e-3, "held_alpha": 1e-3}
BETTING = dict(LEVELS, kind="betting", lo=0.0, hi=1.0, threshold=0.5, at_least=True)


@pytest.mark.parametrize(
    "statement, data, why",
    [
        (dict(LEVELS, kind="safe-t", delta=0.5), {"t": 1.0, "n": 10**15 + 1, "n2": 0}, "n must be at most 1e\\+15"),
        (dict(LEVELS, kind="safe-t", delta=0.5), {"t": 1.0, "n": 10**22, "n2": 0}, "n = 10+, .*at most 2\\*\\*53"),
        (dict(LEVELS, kind="safe-t", delta=0.5), {"t": 1.0, "n": 20, "n2": 10**15 + 1}, "n2 must be at most"),
        (dict(BETTING, lo=-1e308, hi=1e308, threshold=0.0), {"values": [0.5]}, "too far apart"),
        (dict(BETTING, hi=1e10, threshold=1e-320), {"values": [0.5]}, "near a bound"),
        (dict(LEVELS, kind=[]), {"values": [0.5]}, "no known kind"),
    ],
    ids=[
        "safe-t n over its limit",
        "safe-t n 1e22 past any count",
        "safe-t n2 over its limit",
        "betting bounds 1e308 apart",
        "threshold rounds onto lo",
        "kind",
    ],
)
def test_a_chain_of_numbers_no_run_computes_is_one_value_error_not_a_crash(statement, data, why):
    """A ledger or a merged verdicts.json is data from elsewhere: a chain whose numbers make its e-values overflow,
    divide by zero or (a safe t of 1e40 observations) loop without end is refused as no ledger the plugin wrote, the
    ValueError every reader of a chain turns into a note or a refused pooling (OverflowError, ZeroDivisionError and
    TypeError escaped them: a traceback from the merge)."""
    ledger = {
        "version": 1,
        "statement": statement,
        "batches": [{"batch": 0, "stream": "seed=0|test=t|batch=0", "run": "", **data}],
    }
    with pytest.raises(ValueError, match=why):
        check_ledger(ledger)


# ------------------------------------------------------------------------------------------------
# Ledgers: a batch's stream names its batch, its test and its seed


def test_a_ledger_whose_batches_were_renumbered_is_refused():
    """A middle batch removed and the rest renumbered by hand: batch 1's stream still names batch 2."""
    check_ledger(_spent_chain(["seed=0|test=t|batch=0", "seed=0|test=t|batch=1"]))
    with pytest.raises(LedgerInvalid, match="names another batch"):
        check_ledger(_spent_chain(["seed=0|test=t|batch=0", "seed=0|test=t|batch=2"]))


SPENT_TEST = """
import pytest
from pytest_claims import decide_test, registered_false_alarm


@pytest.mark.smoke
@pytest.mark.claim("drug/better", statement="cures")
def test_cures(claims_batch):
    decide_test(0.3, 0.4, alpha=registered_false_alarm(), what="cures"{batch})
"""


ROUNDS = ', batch=claims_batch, round_data="batch"'  # each round's p-values of its own batch (decide_test_spent)


def spent_trial(pytester, *, decision='decision = "anytime"', batch=ROUNDS):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("drug/better", "cures", "test_drug.py", decision))
    pytester.makepyfile(test_drug=SPENT_TEST.format(batch=batch))


def spent_run(pytester, *args) -> dict:
    pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", *args)
    return json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0]


def test_a_ledger_copied_under_another_seed_is_not_continued_by_it(pytester):
    spent_trial(pytester)
    spent_run(pytester, "--claims-seed", "1")
    (seed_one,) = list((pytester.path / "claims-evidence").rglob("*.ledger.json"))
    copied = seed_one.read_text()
    spent_run(pytester, "--claims-seed", "2")
    (seed_two,) = [p for p in (pytester.path / "claims-evidence").rglob("*.ledger.json") if p != seed_one]
    seed_two.write_text(copied)  # seed 1's chain, copied where seed 2's lies
    record = spent_run(pytester, "--claims-seed", "2", "--claims-continue")
    assert "not this chain's" in record["reason"] + json.dumps(record), record
    ledger = record["evidence"]["cures"]["anytime"]["ledger"]
    assert [b["stream"].split("|")[0] for b in ledger] == ["seed=2"], ledger


def test_a_statement_switched_from_anytime_to_fixed_and_its_batch_dropped_over_its_ledger_is_refused(pytester):
    spent_trial(pytester)
    assert spent_run(pytester)["outcome"] == "inconclusive"
    spent_trial(pytester, decision='decision = { method = "fixed", why = "one look" }', batch="")
    record = spent_run(pytester)
    assert record["outcome"] == "error" and "anytime ledger" in record["reason"], record
    assert "master seed no run of this test has used (--claims-seed N)" in record["reason"], record["reason"]


# ------------------------------------------------------------------------------------------------
# Special files, oversize and deeply nested JSON at every reader of files from elsewhere

SOURCE = str(Path(__import__("pytest_claims").__file__).parent.parent)


def _limited():  # a child that reads /dev/zero whole fails fast instead of taking the machine's memory
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def tool(*argv: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """A command-line tool of the plugin run as its own process (a hang is a TimeoutExpired, a failure)."""
    env = {**os.environ, "PYTHONPATH": SOURCE}
    return subprocess.run(
        [sys.executable, "-m", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        preexec_fn=_limited,
    )


def one_line(done: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    err = done.stderr.strip()
    assert done.returncode == code, (done.returncode, err[-2000:])
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    assert all(n in err for n in needles), err
    return err


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "verdicts.json"
    os.mkfifo(path)
    return path


@pytest.fixture
def deep(tmp_path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["pytest_claims.merge.command", "{}", "-o", "{out}"],
        ["pytest_claims.cli.command", "export", "-f", "csv", "{}"],
        ["pytest_claims.cli.schedule", "{}"],
    ],
    ids=["merge", "export", "schedule"],
)
@pytest.mark.parametrize("kind", ["fifo", "device", "deep"])
def test_a_fifo_a_device_or_deep_json_given_to_a_tool_is_refused_in_one_line_as_bad_input(
    command, kind, tmp_path, request
):
    given = {
        "fifo": lambda: request.getfixturevalue("fifo"),
        "device": lambda: Path("/dev/zero"),
        "deep": lambda: request.getfixturevalue("deep"),
    }[kind]()
    argv = [a.format(given, out=tmp_path / "m") for a in command]
    why = {"fifo": "is a FIFO", "device": "is a device", "deep": "nested deeper"}[kind]
    one_line(tool(*argv, timeout=30), 2, str(given), why)
    assert not (tmp_path / "m").exists()


def test_a_fifo_given_as_previous_verdicts_stops_the_run_in_one_line(project, fifo, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", SOURCE)  # the child reads this source, not an installed copy
    pytester = project()
    result = pytester.runpytest_subprocess(
        "-m", "smoke", "--claims-no-store", f"--claims-previous-verdicts={fifo}", timeout=60
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    assert f"{fifo}: is a FIFO" in result.stderr.str() + result.stdout.str()


def test_a_fifo_at_a_ledgers_path_is_a_note_and_a_fresh_ledger_not_a_hang(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", SOURCE)
    spent_trial(pytester)
    spent_run(pytester)
    (ledger,) = list((pytester.path / "claims-evidence").rglob("*.ledger.json"))
    ledger.unlink()
    os.mkfifo(ledger)
    result = pytester.runpytest_subprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", timeout=60)
    record = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0]
    assert "is a FIFO" in json.dumps(record), (record, result.stdout.str()[-2000:])


def test_reading_a_verdicts_json_at_its_size_limit_needs_under_a_gigabyte(tmp_path):
    """The densest JSON there is in objects per byte (empty tables: about 20 bytes of memory per byte of file),
    filled up to the limit a verdicts.json may have: reading it must stay under 1 GiB (a 180 MB file needed 4 GB)."""
    from pytest_claims.model import verdicts_json

    path = tmp_path / "dense.json"
    count = (verdicts_json.MAX_VERDICTS_BYTES - 20) // 3
    path.write_text('{"claims": [' + ",".join(["{}"] * count) + "]}")
    assert path.stat().st_size <= verdicts_json.MAX_VERDICTS_BYTES
    script = (
        "import resource, sys; from pytest_claims.model.verdicts_json import read_any; "
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
        f"read_any({str(path)!r}); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SOURCE},
        preexec_fn=_limited,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) * 1024 < 2**30, f"{int(done.stdout) / 2**20:.0f} MiB to read {path.stat().st_size} bytes"


# ------------------------------------------------------------------------------------------------
# Runs that ran no test body replace no report and save no run


def _report_files(pytester) -> dict[str, bytes]:
    """The report directory's files but its lock's owner record (who last held it, rewritten by every run)."""
    out = pytester.path / "out"
    files = (p for p in sorted(out.rglob("*")) if p.is_file() and p.name != ".claims-report.owner")
    return {str(p.relative_to(out)): p.read_bytes() for p in files}


def test_collect_only_replaces_no_report_saves_no_run_and_is_not_strict(project):
    pytester = project()
    first = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--html=out/page.html")
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()[-2000:]
    before = _report_files(pytester)
    assert "verdicts.json" in before and "page.html" in before
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "--collect-only", "--claims-strict", "--html=out/page.html"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    after = _report_files(pytester)
    assert after == before, [name for name in {*after, *before} if after.get(name) != before.get(name)]


SIGTERM_IN_COLLECTION = """
import os, signal
os.kill(os.getpid(), signal.SIGTERM)  # a scheduler's time limit, arriving while the tests are collected
"""


def test_a_run_cut_off_before_collection_ended_reads_interrupted_and_replaces_nothing(project, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", SOURCE)
    pytester = project()
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store").ret == pytest.ExitCode.OK
    before = _report_files(pytester)
    pytester.makepyfile(test_a_first=SIGTERM_IN_COLLECTION)
    result = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", timeout=120)
    text = result.stdout.str()
    assert _report_files(pytester) == before, text[-3000:]
    assert "before collection ended" in text and "not selected" not in text, text[-3000:]
    assert "interrupted" in text


# ------------------------------------------------------------------------------------------------
# The anytime routes' inputs: counts, levels, effects and sizes


def _levels_cases():
    from pytest_claims import decide_rate, decide_safe_t, decide_two_proportions

    rate = {"at_least": True, "what": "r", "anytime": True}
    return {
        "rate, false_alarm 0": lambda: decide_rate(5, 10, 0.3, alpha=0.0, **rate),
        "rate, held_confidence 1": lambda: decide_rate(5, 10, 0.3, alpha=0.01, held_confidence=1.0, **rate),
        "two proportions, false_alarm 0": lambda: decide_two_proportions(5, 10, 1, 10, alpha=0.0, what="p"),
        "two proportions, held 0": lambda: decide_two_proportions(5, 10, 1, 10, alpha=0.01, held_alpha=0.0, what="p"),
        "safe t, false_alarm 0": lambda: decide_safe_t(2.0, 10, delta=0.5, alpha=0.0, what="t", assume="normal"),
        "safe t, held 0": lambda: decide_safe_t(
            2.0, 10, delta=0.5, alpha=0.01, held_alpha=0.0, what="t", assume="normal"
        ),
    }


@pytest.mark.parametrize("case", list(_levels_cases()))
def test_an_anytime_decision_at_a_level_of_zero_is_refused_naming_the_level(case):
    with pytest.raises(ValueError, match=r"needs a level in \(0, 0.5\)"):
        _levels_cases()[case]()


@pytest.mark.parametrize("delta", [1e300, 1e10, 1001.0])
def test_a_safe_t_effect_too_large_for_the_e_value_is_refused_naming_delta(delta):
    from pytest_claims import decide_safe_t
    from pytest_claims.anytime.safe_t import safe_t_log_evalue

    with pytest.raises(ValueError, match="delta must be a positive"):
        decide_safe_t(2.0, 10, delta=delta, alpha=0.01, what="t", assume="normal")
    with pytest.raises(ValueError, match="delta must be a positive"):
        safe_t_log_evalue(2.0, 10, delta)


def test_a_boolean_count_is_refused_on_entry_by_every_anytime_route():
    from pytest_claims import decide_rate, decide_two_proportions

    with pytest.raises(TypeError, match="not booleans"):
        decide_rate(True, 10, 0.3, at_least=True, alpha=0.01, what="r", anytime=True)
    with pytest.raises(TypeError, match="not booleans"):
        decide_two_proportions(True, 10, 1, 10, alpha=0.01, what="p")


NUMPY_RATE = """
import numpy as np
import pytest
from pytest_claims import decide_rate, registered_false_alarm


@pytest.mark.smoke
@pytest.mark.claim("drug/better", statement="cures")
def test_cures(claims_batch):
    decide_rate(np.int64(95), np.int64(100), 0.5, at_least=True, alpha=registered_false_alarm(), what="cures",
                batch=claims_batch)
"""


def test_numpy_integer_counts_are_kept_in_the_ledger_as_numbers(pytester):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("drug/better", "cures", "test_drug.py", 'decision = "anytime"'))
    pytester.makepyfile(test_drug=NUMPY_RATE)
    record = spent_run(pytester)
    assert record["outcome"] == "held", record["reason"]
    (ledger,) = list((pytester.path / "claims-evidence").rglob("*.ledger.json"))
    assert json.loads(ledger.read_text())["batches"][0]["successes"] == 95


def _full_sum_log_evalue(k_a, n_a, k_b, n_b, w_inf=0.5):
    """The two-proportions e-value by its definition, over every table of the margins (the oracle)."""
    import math

    from pytest_claims.anytime.evalues import ODDS_RATIOS

    def choose(n, k):
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    def log_sum(values):
        top = max(values)
        return top if top == -math.inf else top + math.log(sum(math.exp(v - top) for v in values))

    total = k_a + k_b
    xs = range(max(0, total - n_b), min(total, n_a) + 1)
    weights = {x: choose(n_a, x) + choose(n_b, total - x) for x in xs}
    null = log_sum(list(weights.values()))
    ratios = [
        k_a * math.log(p) + null - log_sum([w + x * math.log(p) for x, w in weights.items()]) for p in ODDS_RATIOS
    ]
    mixture = log_sum(ratios) - math.log(len(ratios))
    extreme = null - weights[k_a] if k_a == xs[-1] else -math.inf
    parts = [
        math.log(w_inf) + extreme if w_inf > 0 else -math.inf,
        math.log1p(-w_inf) + mixture if w_inf < 1 else -math.inf,
    ]
    return log_sum(parts)


def test_the_two_proportions_e_value_from_its_terms_near_the_mode_is_the_full_sums():
    import random

    from pytest_claims.anytime.evalues import two_proportions_log_evalue

    rng = random.Random(7)
    cases = [(k, n, j, m) for n in (0, 1, 5) for m in (0, 1, 5) for k in range(n + 1) for j in range(m + 1)]
    for _ in range(300):
        n, m = rng.randint(1, 400), rng.randint(1, 400)
        cases.append((rng.randint(0, n), n, rng.randint(0, m), m))
    cases += [(int(n * 0.5), n, int(n * 0.48), n) for n in (2000, 8000)]
    for case in cases:
        for w_inf in (0.0, 0.5, 1.0):
            expected = _full_sum_log_evalue(*case, w_inf=w_inf)
            assert two_proportions_log_evalue(*case, w_inf=w_inf) == pytest.approx(expected, rel=1e-12, abs=1e-12), case


def test_two_proportions_at_a_million_per_arm_is_fast_and_at_a_billion_needs_no_array():
    import time

    from pytest_claims.anytime.evalues import two_proportions_log_evalue

    began = time.perf_counter()
    two_proportions_log_evalue(500_000, 10**6, 499_000, 10**6)
    assert time.perf_counter() - began < 2.0  # the whole-range sum took 6 to 12 s here
    script = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
        "from pytest_claims.anytime.evalues import two_proportions_log_evalue as e; "
        "print(e(500_000_000, 10**9, 499_990_000, 10**9))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": SOURCE},
    )
    assert done.returncode == 0 and float(done.stdout) < 0, done.stderr[-2000:]


# ------------------------------------------------------------------------------------------------
# init: never through a link, never shadowing a configuration silently, never half-written


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling link", "link to a file"])
def test_init_never_writes_through_a_symbolic_link_even_with_force(tmp_path, capsys, dangling):
    from pytest_claims.cli.command import main

    outside = tmp_path / "outside.md"
    if not dangling:
        outside.write_text("someone else's file\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").symlink_to(outside)
    for force in ([], ["--force"]):
        assert main(["init", str(project), *force]) == 2
        err = capsys.readouterr().err
        assert "symbolic link" in err and len(err.strip().splitlines()) == 1, err
    assert outside.exists() != dangling and (dangling or outside.read_text() == "someone else's file\n")
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]


@pytest.mark.parametrize(
    "name, text",
    [
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = -q\n"),
        ("tox.ini", "[pytest]\naddopts = -q\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = -q\n"),
    ],
)
def test_init_refuses_to_shadow_an_existing_pytest_configuration_unless_forced(tmp_path, capsys, name, text):
    from pytest_claims.cli.command import main

    (tmp_path / name).write_text(text)
    assert main(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert name in err and "shadow" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "pytest.ini").exists()
    assert main(["init", str(tmp_path), "--force"]) == 0
    assert f"not {name}" in capsys.readouterr().out


def test_a_failed_forced_init_leaves_nothing_half_written(tmp_path, capsys):
    from pytest_claims.cli.command import main
    from pytest_claims.cli.skeleton import FILES

    (tmp_path / "registry.toml").write_text("mine\n")
    (tmp_path / "test_triangle.py").mkdir()  # a folder where the skeleton has a file: the write must fail whole
    assert main(["init", str(tmp_path), "--force"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert (tmp_path / "registry.toml").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["registry.toml", "test_triangle.py"]
    assert not [
        name for name in FILES if name not in ("registry.toml", "test_triangle.py") and (tmp_path / name).exists()
    ]


# ------------------------------------------------------------------------------------------------
# Option and ini values, checked where they enter


@pytest.mark.parametrize(
    "key, args", [("claims_strict", []), ("claims_thread_limit", ["-n", "1"]), ("claims_save_runs", [])]
)
def test_a_bad_true_false_ini_value_stops_the_run_in_one_line_naming_the_key(project, key, args):
    pytester = project()
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-o", f"{key}=maybe", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and key in errors[0] and "'maybe'" in errors[0], result.stderr.str()


@pytest.mark.parametrize("value", ["soon", "nan", "inf", "-0.1", "1.5"])
def test_a_false_alarm_budget_that_is_no_probability_stops_the_run_in_one_line(project, value):
    """NaN and inf passed before: the run then wrote them into verdicts.json, which JSON has no number for."""
    pytester = project()
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "-o", f"claims_false_alarm_budget={value}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and "claims_false_alarm_budget must be a probability" in errors[0], result.stderr.str()
    assert not (pytester.path / "out" / "verdicts.json").exists()


def test_the_thread_header_says_when_threadpoolctl_cannot_reach_a_blas_loaded_first(monkeypatch):
    import importlib.util
    from types import SimpleNamespace

    from pytest_claims.roles import threads

    config = SimpleNamespace(
        option=SimpleNamespace(numprocesses=2, dist="load", claims_no_thread_limit=False),
        getini=lambda key: True,
    )
    for name in threads.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert "threadpoolctl" not in threads.header_line(config)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "threadpoolctl" else real(name))
    assert "threadpoolctl is not installed" in threads.header_line(config)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--claims-mutants", "--claims-mutant=no-such-mutant"], "'no-such-mutant': no statement"),
        (["--claims-mutants", "--claims-mutant="], "'': no statement"),
        (["--claims-mutant=off-by-one"], "give --claims-mutants too"),
    ],
    ids=["unknown", "empty", "without --claims-mutants"],
)
def test_a_mutant_selection_that_would_select_nothing_stops_the_run_in_one_line(project, args, message):
    pytester = project()
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and message in errors[0], result.stderr.str()


# ------------------------------------------------------------------------------------------------
# Mutants under xdist are bounded in time too


def test_a_hanging_mutant_under_xdist_ends_timeout_at_its_limit(project, monkeypatch):
    from test_mutant_process import hostile_project

    monkeypatch.setenv("PYTHONPATH", SOURCE)
    pytester = hostile_project(project, '["off-by-one", "hangs"]')
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", "2", "--claims-no-store", "--claims-mutants", timeout=150
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    record = next(
        c for c in json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"] if c["key"] == "T1"
    )
    ends = {m["mutant"]: (m["kind"], m["detail"]) for s in record["statements"] for m in s.get("mutants", [])}
    assert ends["hangs"][0] == "timeout" and "time limit" in ends["hangs"][1], ends
    assert ends["off-by-one"][0] != "timeout", ends


# ------------------------------------------------------------------------------------------------
# A run waiting on another process's store lock says so while it waits

WAITER = """
import pytest
from pytest_claims import current_store


@pytest.mark.smoke
def test_waits():
    assert current_store().get_or_compute("shared", {}, lambda _: 5) == 5
"""


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="no SIGSTOP here")
def test_a_run_waiting_on_a_stopped_holders_store_lock_says_who_holds_it_and_for_how_long(project, tmp_path):
    import select
    import time

    from test_store_faults import _holder

    pytester = project()
    pytester.makepyfile(test_waits=WAITER)
    holder = _holder(pytester.path / "store", "stop")
    run = None
    try:
        _, status = os.waitpid(holder.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                "--claims-store-dir=store",
                "test_waits.py",
            ],
            cwd=pytester.path,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": SOURCE},
        )
        heard, deadline = b"", time.monotonic() + 60
        while b"held by" not in heard and time.monotonic() < deadline and run.poll() is None:
            if select.select([run.stderr], [], [], 1.0)[0]:
                heard += os.read(run.stderr.fileno(), 4096)
    finally:
        holder.kill()
        holder.wait()
        if run is not None:
            run.kill()
            run.wait()
    line = next((x for x in heard.decode().splitlines() if "held by" in x), "")
    assert f"held by pid {holder.pid} on host " in line and "no sign of life from it for" in line, heard[-2000:]


TWO_DECISIONS = """
import pytest
from pytest_claims import decide_test, registered_false_alarm


@pytest.mark.smoke
@pytest.mark.claim("drug/better", statement="cures")
def test_cures(claims_batch):
    decide_test(1e-9, 0.9, alpha=registered_false_alarm(), what="cures", batch=claims_batch, round_data="batch")
    decide_test(1e-9, 0.9, alpha=registered_false_alarm(), what="also", batch=claims_batch, round_data="batch")
"""


def test_a_second_anytime_decision_in_one_test_is_refused_stating_the_limit(pytester):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("drug/better", "cures", "test_drug.py", 'decision = "anytime"'))
    pytester.makepyfile(test_drug=TWO_DECISIONS)
    record = spent_run(pytester)
    assert record["outcome"] == "error" and "a test holds one anytime decision" in record["reason"], record


# ------------------------------------------------------------------------------------------------
# Catalogue mutants: checking one runs none of the project's code; applying one changes only what it says

from test_mutants import catalogue_of  # noqa: E402, F401 (the fixture)

DEFAULTS_KERNEL = """
CALLS = []


def days_in_year():
    CALLS.append(1)
    return 365


def per_day(total, days=days_in_year(), *, scale=1.0):
    return scale * total / days
"""


def test_a_mutant_whose_new_default_is_undefined_is_one_line_and_the_plain_check_runs_nothing(catalogue_of):
    from pytest_claims.roles.mutants import MutantError, applied, catalogue, stale_mutants

    name = catalogue_of(
        DEFAULTS_KERNEL,
        """\
        Mutant("undefined", target="stale_kernel:per_day", old="scale=1.0", new="scale=no_such_name"),
        Mutant("body", target="stale_kernel:per_day", old="scale * total", new="total"),
        """,
    )
    import stale_kernel

    calls = len(stale_kernel.CALLS)
    assert stale_mutants(name) == []  # what every plain run checks: compiled, never run
    assert len(stale_kernel.CALLS) == calls  # no default expression of the project was evaluated
    with pytest.raises(MutantError, match=r"'undefined'.*NameError"), applied(catalogue(name)["undefined"]):
        pass


def test_an_equivalent_mutant_keeps_the_defaults_the_project_set_at_run_time(catalogue_of):
    from pytest_claims.roles.mutants import applied, catalogue

    name = catalogue_of(
        DEFAULTS_KERNEL,
        'Mutant("same", target="stale_kernel:per_day", old="scale * total / days", new="total * scale / days"),\n',
    )
    import stale_kernel

    stale_kernel.per_day.__defaults__ = (366,)  # the project's own choice, made at run time
    with applied(catalogue(name)["same"]):
        assert stale_kernel.per_day(732) == 2.0  # as without the mutant: an equivalent mutant changes nothing
    assert stale_kernel.per_day(732) == 2.0


SIGTERM_TO_THE_CONTROLLER = """
import os, signal
if "PYTEST_XDIST_WORKER" in os.environ:  # each worker, while it collects: the controller's time limit arrives
    os.kill(os.getppid(), signal.SIGTERM)
"""


def test_a_run_cut_off_while_xdist_workers_collect_replaces_nothing(project, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", SOURCE)
    pytester = project()
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store").ret == pytest.ExitCode.OK
    before = _report_files(pytester)
    pytester.makepyfile(test_a_first=SIGTERM_TO_THE_CONTROLLER)
    result = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", "-n", "2", timeout=120)
    text = result.stdout.str()
    assert _report_files(pytester) == before, text[-3000:]
    assert "before collection ended" in text and "not selected" not in text, text[-3000:]


def _claim_table_input(tmp_path, **fields) -> str:
    path = tmp_path / "verdicts.json"
    path.write_text(json.dumps({"claims": [{"id": "c/1", "key": "K1", "verdict": "verified", **fields}]}))
    return str(path)


@pytest.mark.parametrize(
    "fields, needle",
    [
        ({"key_numbers": ["x"]}, "wrong type"),
        ({"key_numbers": [{"label": "L", "values": [{"run": "r"}]}]}, "lacks 'value'"),
        ({"statements": [1]}, "wrong type"),
        ({"statements": [{"evidence": [1, 2]}]}, "wrong type"),
        ({"power": "all"}, "wrong type"),
        ({"power": {"of": 3}}, "lacks 'killed'"),
        ({"key_numbers": [{"label": "L", "values": [{"value": "DEEP"}]}]}, "nested too deeply"),
    ],
)
def test_export_of_a_claim_whose_table_fields_are_malformed_is_one_line_naming_the_file(
    tmp_path, capsys, fields, needle
):
    from pytest_claims.cli import command

    path = _claim_table_input(tmp_path, **fields)
    Path(path).write_text(
        Path(path).read_text().replace('"DEEP"', "[" * 900 + "]" * 900)
    )  # JSON reads it, not the table
    for fmt in ("csv", "markdown", "latex"):
        assert command.main(["export", "--format", fmt, path]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and path in err and needle in err, err
