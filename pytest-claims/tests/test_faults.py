"""Faults a big run meets, each as a test that fails without its fix: a scheduler's SIGTERM, Ctrl-C, a
worker killed, damaged or hostile store entries seen through the plugin, an unusable store path."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toy_project import CONSTANT_TESTS, claim, verdicts

SLOW_TRIANGLE = """
import os
import time
from pathlib import Path

import pytest

import toy_kernel
from pytest_claims import current_store, statement_holds


def compute(checkpoint):
    state = checkpoint.load() or {"step": 0, "values": []}
    for step in range(state["step"] + 1, 51):
        state = {"step": step, "values": state["values"] + [toy_kernel.triangle(step - 1)]}
        if checkpoint.due(step):
            checkpoint.save(state)
        if step == 30 and os.environ.get("TOY_SLOW") == "1":
            Path("reached-step-30").write_text("")
            time.sleep(60)  # the signal arrives here
    return state["values"]


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="formula")
def test_formula(evidence):
    values = current_store().get_or_compute("toy/triangles", {"n": 50}, compute, code=[toy_kernel], checkpoint_every=10)
    wrong = [n for n in range(50) if values[n] != sum(range(n + 1))]
    evidence.headline(checked=50, wrong=len(wrong))
    statement_holds(not wrong, f"triangle differs from the sum at {wrong[:5]}")


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="squares")
def test_squares(evidence):
    if os.environ.get("TOY_CRASH") == "1":
        os.kill(os.getpid(), 9)  # the worker dies mid-test (the OOM killer, a node lost)
    statement_holds(toy_kernel.triangle(3) == 9, f"triangle(3) = {toy_kernel.triangle(3)}, not 9")
"""


def _pytest(pytester: pytest.Pytester, *args: str, env: dict | None = None) -> subprocess.Popen:
    environment = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]), **(env or {})
    )
    # SIGINT as a terminal delivers it: a shell's background job inherits SIGINT ignored, and Python then
    # keeps it ignored (seen: this test hung when the suite ran under `nohup ... &`)
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(path: Path, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"the run ended before {path.name}: {process.stdout.read()[-3000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"{path.name} never appeared")
        time.sleep(0.05)


@pytest.mark.smoke
@pytest.mark.parametrize(
    "how",
    ["SIGTERM, serial", "SIGTERM to the controller, -n 2", "SIGTERM to the process group, -n 2", "SIGINT, serial"],
)
def test_a_time_limit_writes_both_reports_and_the_rerun_resumes(project, how):
    pytester = project(triangle_tests=SLOW_TRIANGLE)
    workers = ["-n", "2"] if "-n 2" in how else []
    process = _pytest(
        pytester, "-m", "smoke", "--claims-store-dir=store", "--html=out/verdict.html", *workers, env={"TOY_SLOW": "1"}
    )
    _wait_for(pytester.path / "reached-step-30", process)
    sig = signal.SIGINT if "SIGINT" in how else signal.SIGTERM
    if "process group" in how:
        os.killpg(process.pid, sig)
    else:
        process.send_signal(sig)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert (pytester.path / "out" / "verdict.html").is_file(), output[-3000:]
    cut = verdicts(pytester)
    t1 = claim(cut, "T1")
    assert t1["verdict"] == "interrupted", (t1["verdict"], t1["reason"])
    assert "test_triangle.py::test_formula" in t1["not_reached"] and "test_triangle.py::test_formula" in t1["reason"]
    assert ("SIGINT" if sig == signal.SIGINT else "SIGTERM") in t1["reason"] or "interrupt" in t1["reason"], t1[
        "reason"
    ]
    assert cut["runs"][0]["interrupted"]

    rerun = _pytest(pytester, "-m", "smoke", "--claims-store-dir=store", *workers)
    output, _ = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, output[-3000:]
    resumed = verdicts(pytester)
    events = resumed["timings"]["store"]["test_triangle.py::test_formula"]
    assert events[0]["status"] == "resumed" and events[0]["resumed_from_step"] == 30, events
    assert {c["key"]: c["verdict"] for c in resumed["claims"]} == {
        "T1": "verified",
        "T2": "verified",
        "T3": "not exercised",
    }


def test_a_figure_the_disk_cannot_hold_is_a_note_and_the_claim_stands(project):
    """A write limit (RLIMIT_FSIZE: EFBIG, as a full disk's ENOSPC) below the figure's size: the figure is left out
    with a note in the statement's evidence, its verdict stands, and an earlier run's figure is not cut short."""
    pytester = project()
    output, _ = _pytest(pytester, "-m", "smoke").communicate(timeout=120)
    (figure,) = (pytester.path / "out" / "figures").glob("*.png")
    before = figure.read_bytes()
    limit = len(before) // 2  # below the figure, above the report (a few kB) and the store entries

    def limited() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "smoke"],
        cwd=pytester.path,
        env=environment,
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert claim(verdicts(pytester), "T1")["verdict"] == "verified"
    formula = next(s for s in claim(verdicts(pytester), "T1")["statements"] if s["statement"] == "formula")
    (note,) = formula["evidence"]["figures_not_written"]
    assert "'triangles'" in note and "File too large" in note, note
    assert figure.read_bytes() == before


@pytest.mark.smoke
def test_a_worker_killed_mid_test_makes_its_statement_crashed_and_its_claim_broken(project):
    pytester = project(triangle_tests=SLOW_TRIANGLE)
    process = _pytest(pytester, "-m", "smoke", "--claims-no-store", "-n", "2", env={"TOY_CRASH": "1"})
    output, _ = process.communicate(timeout=120)
    assert process.returncode == pytest.ExitCode.TESTS_FAILED, output[-3000:]
    t1 = claim(verdicts(pytester), "T1")
    crashed = [s for s in t1["statements"] if s["outcome"] == "crashed"]
    assert [s["test"] for s in crashed] == ["test_triangle.py::test_squares"] and crashed[0][
        "statement"
    ] == "squares", t1["statements"]
    assert t1["verdict"] == "broken" and "test_triangle.py::test_squares" in t1["reason"], t1["reason"]
    assert claim(verdicts(pytester), "T2")["verdict"] == "verified"


@pytest.mark.smoke
def test_a_hostile_store_entry_is_recomputed_named_and_never_run(project):
    import pickle

    from test_store import _RunsCode

    pytester = project(constant_tests=CONSTANT_TESTS)
    pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir=store").assert_outcomes(passed=3, xfailed=1)
    (entry,) = (pytester.path / "store").glob("*/*.npz")
    marker = pytester.path / "code-ran"
    entry.write_bytes(pickle.dumps(_RunsCode(marker)))
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir=store", "--html=out/verdict.html")
    result.assert_outcomes(passed=3, xfailed=1)
    assert not marker.exists()
    result.stdout.fnmatch_lines([f"result store: store entry {entry} unreadable*recomputed"])
    events = verdicts(pytester)["timings"]["store"]["test_triangle.py::test_formula"]
    assert events[0]["status"] == "recomputed" and str(entry) in events[0]["note"]
    assert (
        f"store entry {entry} unreadable" in (pytester.path / "out" / "verdict.html").read_text()
    )  # the report names it too


@pytest.mark.smoke
def test_a_store_path_that_is_a_file_is_one_line_before_any_work(project):
    pytester = project()
    (pytester.path / "store").write_text("")
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir=store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*the result store path *store is not a directory (--claims-store-dir or the ini key claims_store_dir)*"]
    )
    assert not (pytester.path / "out" / "verdicts.json").exists()


@pytest.mark.smoke
@pytest.mark.parametrize(
    "option, what, ini",
    [
        ("--claims-store-dir", "result store", "claims_store_dir"),
        ("--claims-evidence-dir", "evidence directory", "claims_evidence_dir"),
    ],
)
@pytest.mark.parametrize("fault", ["a file", "a link loop", "below a file"])
def test_a_store_or_evidence_path_that_is_a_file_or_a_link_loop_is_one_line_naming_it(
    project, option, what, ini, fault
):
    """Neither an INTERNALERROR traceback (a loop) nor a run that silently keeps no ledger (a file): one line."""
    pytester = project()
    place = pytester.path / "place"
    if fault == "a link loop":
        place.symlink_to("place")
    else:
        place.write_text("the user's\n")
    below = "/sub" if fault == "below a file" else ""
    result = pytester.runpytest_inprocess("-m", "smoke", f"{option}=place{below}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*the {what} path *place{below} *({option} or the ini key {ini})*"])
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str()
    assert not (pytester.path / "out" / "verdicts.json").exists()
    assert place.is_symlink() or place.read_text() == "the user's\n"


@pytest.mark.smoke
@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "refutes_claim = false",
            'refutes_claim = "false"',
            "statement toy/triangle:squares field 'refutes_claim' must be a boolean",
        ),
        ("refutes_claim = false\n", "", "toy/triangle:squares is registered refuted and must say refutes_claim"),
        ("scale_free = true", "scale_free = 1", "statement toy/constant:answer field 'scale_free' must be a boolean"),
        (
            'mutants = ["off-by-one", "wrong-sign"]',
            'mutants = "off-by-one"',
            "toy/triangle:formula field 'mutants' must be an array of strings",
        ),
        ('text = "answer() == 42"', "", "statement toy/constant:answer lacks ['text']"),
        ('key = "T2"', "key = 2", "claim 'toy/constant' field 'key' must be a string"),
    ],
)
def test_a_registry_value_of_the_wrong_type_is_one_line_before_any_work(project, old, new, message):
    pytester = project()
    registry = pytester.path / "registry.toml"
    assert old in registry.read_text()
    registry.write_text(registry.read_text().replace(old, new, 1))
    result = pytester.runpytest_inprocess("-m", "smoke")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert message in err and "Traceback" not in err, err


@pytest.mark.smoke
@pytest.mark.parametrize(
    "where", ["report directory is a file", "html directory is a file", "previous verdicts is a list"]
)
def test_an_unusable_report_path_is_one_line_before_any_work(project, where):
    pytester = project()
    args = ["-m", "smoke"]
    if where == "report directory is a file":
        (pytester.path / "out").write_text("")
        message = "the report directory (ini key claims_report_dir): "
    elif where == "html directory is a file":
        (pytester.path / "html").write_text("")
        args.append("--html=html/verdict.html")
        message = "the directory of the HTML report (--html html/verdict.html): "
    else:
        (pytester.path / "previous.json").write_text("[]")
        args.append("--claims-previous-verdicts=previous.json")
        message = "--claims-previous-verdicts previous.json: not a verdicts.json"
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str(), result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")


@pytest.mark.smoke
def test_two_runs_into_one_report_directory_keep_each_others_figures(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    first = claim(verdicts(pytester), "T1")["figure"]["path"]
    pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "-k", "answer"
    )  # another run, same report directory
    assert (pytester.path / "out" / first).is_file(), "the second run deleted the first run's figure"


@pytest.mark.smoke
@pytest.mark.parametrize(
    "old, new, ini, message",
    [
        (
            'expected = "verified"\ntests = "test_triangle.py"',
            'expected = "verifed"\ntests = "test_triangle.py"',
            "",
            "claim 'toy/triangle' field 'expected' must be a verdict",
        ),
        (
            'tests = "test_constant.py"',
            'tests = "test_konstant.py"',
            "",
            "claim 'toy/constant' field 'tests' names 'test_konstant.py', not a file",
        ),
        (
            'mutants = ["off-by-one", "wrong-sign"]',
            "mutants = []",
            "claims_min_mutants = 2\n",
            "statement toy/triangle:formula field 'mutants' lists 0, fewer than claims_min_mutants = 2",
        ),
    ],
)
def test_the_registry_is_checked_against_the_project(project, old, new, ini, message):
    pytester = project()
    registry = pytester.path / "registry.toml"
    assert old in registry.read_text()
    registry.write_text(registry.read_text().replace(old, new, 1))
    if ini:
        (pytester.path / "pytest.ini").write_text((pytester.path / "pytest.ini").read_text().rstrip("\n") + "\n" + ini)
    result = pytester.runpytest_inprocess("-m", "smoke")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and message in result.stderr.str(), result.stderr.str()


@pytest.mark.smoke
def test_a_waiver_stands_in_for_mutants_and_says_why(project):
    pytester = project(mutants="[]")
    registry = pytester.path / "registry.toml"
    text = registry.read_text().replace("mutants = []", 'mutants = []\nmutants_waived = "no mutant can reach it"', 1)
    registry.write_text(text.replace("scale_free = true", 'scale_free = true\nmutants_waived = "a constant"', 1))
    (pytester.path / "pytest.ini").write_text(
        (pytester.path / "pytest.ini").read_text().rstrip("\n") + "\n" + "claims_min_mutants = 2\n"
    )
    result = pytester.runpytest_inprocess("-m", "smoke")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


@pytest.mark.smoke
def test_without_xdist_the_plugin_loads_and_a_folder_without_an_ini_is_silent(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "claim verdicts" not in text and "result store" not in text, text
