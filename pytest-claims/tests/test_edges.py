"""Faults at the edges (issue 23, items 2, 3, 5 and 7), each as a test that fails without its fix: hostile merge inputs
and --previous-verdicts files, HTML injection through test ids, the report pair under a signal, a failed write and a
second run, figure pruning beside committed files, and bad inputs that must stop the run in one line."""

from __future__ import annotations

import base64
import errno
import html
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402, F401 (imported before the in-process runs, which then keep these modules:
import numpy  # noqa: E402, F401 (NumPy's extension loads once per process, and pyplot's classes must stay one)
from pytest_claims.merge.command import main as merge_main
from test_faults import SLOW_TRIANGLE, _pytest, _wait_for
from toy_project import CONSTANT_TESTS, claim, constant_tests, verdicts


def one_run(project, *args: str) -> pytest.Pytester:
    pytester = project()
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    return pytester


def merge_error(capsys, *argv: str) -> str:
    """The merge's exit status must be 2 and its error one line: that line."""
    assert merge_main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def formula_run(payload: dict) -> dict:
    return next(s for s in claim(payload, "T1")["statements"] if s["statement"] == "formula")


# ------------------------------------------------------------------------------------------------
# Item 2: merge inputs and --previous-verdicts are data, checked


@pytest.mark.smoke
def test_a_figure_path_outside_its_run_is_refused_and_nothing_outside_is_read_or_written(project, tmp_path, capsys):
    pytester = one_run(project)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"SECRET-BYTES-OF-ANOTHER-FILE")
    (tmp_path / "escaped.png").write_bytes(b"not to be copied")
    run_dir = tmp_path / "in"
    run_dir.mkdir()
    for case, path, message in [
        ("absolute", str(secret), "is absolute"),
        ("dotdot", "../escaped.png", "leaves its run's directory"),
    ]:
        payload = verdicts(pytester)
        formula_run(payload)["figures"][0]["path"] = path
        source = run_dir / f"{case}.json"
        source.write_text(json.dumps(payload))
        out = tmp_path / "deep" / case
        err = merge_error(capsys, str(source), "-o", str(out))
        assert str(source) in err and "claims[0].statements[0].figures[0].path" in err and message in err, err
        assert not (out / "verdict.html").exists()
    assert not (tmp_path / "deep" / "escaped.png").exists()  # `..` from -o: nothing written outside it


@pytest.mark.smoke
def test_a_figure_that_links_outside_its_run_is_neither_read_nor_copied(project, tmp_path):
    pytester = one_run(project)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"SECRET-BYTES-OF-ANOTHER-FILE")
    figure = pytester.path / "out" / formula_run(verdicts(pytester))["figures"][0]["path"]
    figure.unlink()
    figure.symlink_to(secret)  # a relative path inside the run's directory that leads out of it
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(tmp_path / "m")]) == 0
    page = (tmp_path / "m" / "verdict.html").read_text()
    assert base64.b64encode(secret.read_bytes()).decode() not in page
    assert not any((tmp_path / "m").rglob("*.png"))


def _set(payload: dict, where: str, value) -> None:
    """Set a field by a dotted path of keys and list indices (`claims.0.statements.1.outcome`)."""
    parts = where.split(".")
    target = payload
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    last = parts[-1]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value


@pytest.mark.smoke
@pytest.mark.parametrize(
    "where, value, field",
    [
        ("claims.0.statements.0.outcome", KeyError, "claims[0].statements[0] lacks outcome"),
        ("claims.0.statements.0.outcome", "passed", "claims[0].statements[0].outcome must be one of"),
        ("claims.1.registry.statements.answer.expected", 1, "claims[1].registry.statements['answer'].expected"),
        ("claims.1.registry.statements.answer.surprise", True, "statements['answer'].surprise is not a field"),
        (
            "claims.1.registry.statements.answer.false_alarm",
            {"smoke": "<b>"},
            "false_alarm['smoke'] must be a finite number",
        ),
        ("claims.0.statements.0.evidence.headline", 3, "claims[0].statements[0].evidence.headline must be a list"),
        ("papers.toy", "a string", "papers['toy'] must be an object"),
        ("reference_tests.0.outcome", "refuted-ish", "reference_tests[0].outcome must be one of"),
        ("timings.store", {"t": [{"name": "x", "status": "s", "seconds": "<script>", "key": "k"}]}, "seconds"),
        ("claims.0.statements.0.statement", "nowhere", "statement 'nowhere' is not a statement of claim"),
        ("false_alarm.budget", None, "false_alarm.budget must be a finite number, got None"),
        ("false_alarm.budget", KeyError, "false_alarm.budget must be a finite number, got None"),
    ],
)
def test_a_merge_input_is_checked_field_by_field_in_one_line(project, tmp_path, capsys, where, value, field):
    pytester = one_run(project)
    payload = verdicts(pytester)
    _set(payload, where, value)
    (tmp_path / "run.json").write_text(json.dumps(payload))
    err = merge_error(capsys, str(tmp_path / "run.json"), "-o", str(tmp_path / "m"))
    assert err.startswith(f"merge: {tmp_path / 'run.json'}: field ") and field in err, err


@pytest.mark.smoke
def test_hostile_text_in_an_input_reaches_the_merged_html_escaped(project, tmp_path, capsys):
    pytester = one_run(project)
    payload = verdicts(pytester)
    attack = "<script>alert(1)</script>"
    run = formula_run(payload)
    run["test"] = f"test_triangle.py::test_formula[{attack}]"
    run["reason"] = attack
    run["evidence"][attack] = attack
    (tmp_path / "run.json").write_text(json.dumps(payload))
    assert merge_main([str(tmp_path / "run.json"), "-o", str(tmp_path / "m")]) == 0
    page = (tmp_path / "m" / "verdict.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "left out of the page" in capsys.readouterr().err  # its figure was not copied beside run.json
    # a field that is a number in the schema, made text: refused before it can reach the page unescaped
    payload["timings"]["store"] = {run["test"]: [{"name": "x", "status": "resumed", "seconds": 1.0, "key": "k"}]}
    payload["timings"]["store"][run["test"]][0]["resumed_from_step"] = attack
    (tmp_path / "run.json").write_text(json.dumps(payload))
    err = merge_error(capsys, str(tmp_path / "run.json"), "-o", str(tmp_path / "n"))
    assert "resumed_from_step must be an integer" in err, err


@pytest.mark.smoke
def test_a_truncated_input_is_one_line(project, tmp_path, capsys):
    pytester = one_run(project)
    text = (pytester.path / "out" / "verdicts.json").read_text()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    err = merge_error(capsys, str(tmp_path / "cut.json"), "-o", str(tmp_path / "m"))
    assert "cut.json: not a readable verdicts.json" in err, err


@pytest.mark.smoke
@pytest.mark.parametrize("which", ["a run", "the previous"])
def test_the_merge_refuses_an_output_directory_that_holds_an_input(project, tmp_path, capsys, which):
    pytester = one_run(project)
    source = pytester.path / "out" / "verdicts.json"
    before = source.read_bytes()
    other = tmp_path / "other.json"
    other.write_bytes(before)
    runs = [str(source)] if which == "a run" else [str(other), "--previous", str(source)]
    err = merge_error(capsys, *runs, "-o", str(pytester.path / "out"))
    assert f"-o {pytester.path / 'out'}: holds the input {source}" in err, err
    assert source.read_bytes() == before


@pytest.mark.smoke
@pytest.mark.parametrize(
    "previous, field",
    [
        (
            {"claims": [{"id": "toy/triangle", "key": "T1", "verdict": "verified", "statements": [{"test": "x"}]}]},
            "lacks outcome",
        ),
        ({"claims": [5]}, "claims[0] must be an object"),
        (
            {"claims": [{"id": "toy/triangle", "key": "T1", "verdict": ["verified"]}]},
            "claims[0].verdict must be a string",
        ),
    ],
)
def test_previous_verdicts_are_checked_field_by_field_in_one_line(project, previous, field):
    pytester = project()
    (pytester.path / "previous.json").write_text(json.dumps(previous))
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "--claims-previous-verdicts=previous.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    err = result.stderr.str()
    assert "--claims-previous-verdicts previous.json: field " in err and field in err and "Traceback" not in err, err
    result.stdout.no_fnmatch_line("*passed*")


PARAMETRISED_TESTS = (
    CONSTANT_TESTS
    + """

@pytest.mark.smoke
@pytest.mark.parametrize("case", [1], ids=["<img src=x onerror=alert(1)>"])
def test_hostile_id(case):
    assert case == 1
"""
)


def results_table_cells(page: str) -> list[str]:
    blob = re.search(r'data-jsonblob="([^"]*)"', page).group(1)
    data = json.loads(html.unescape(blob))
    return [cell for test in data["tests"].values() for row in test for cell in row["resultsTableRow"]]


@pytest.mark.smoke
def test_pytest_html_shows_a_test_id_as_text_not_markup(project):
    pytester = project(constant_tests=PARAMETRISED_TESTS)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--html=out/verdict.html")
    assert result.ret == pytest.ExitCode.OK
    cells = results_table_cells((pytester.path / "out" / "verdict.html").read_text())
    ids = [c for c in cells if "col-testId" in c and "hostile" in c]
    assert ids and all("<img" not in c and "&lt;img src=x onerror=alert(1)&gt;" in c for c in ids), ids


# ------------------------------------------------------------------------------------------------
# Item 3: the report pair, atomic and named


def report_ids(directory: Path) -> tuple[str, str]:
    payload = json.loads((directory / "verdicts.json").read_text())
    found = re.search(r'data-report-id="([^"]*)"', (directory / "verdict.html").read_text())
    return payload.get("report_id", ""), found.group(1) if found else ""


@pytest.mark.smoke
def test_both_reports_name_the_same_run_and_a_new_run_renames_both(project):
    pytester = one_run(project, "--html=out/verdict.html")
    first = report_ids(pytester.path / "out")
    assert first[0] and first[0] == first[1]
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--html=out/verdict.html")
    second = report_ids(pytester.path / "out")
    assert second[0] == second[1] and second[0] != first[0]
    assert not list((pytester.path / "out").glob(".*.tmp"))


SIGNAL_IN_THE_WRITE = """
import os
import signal
import time


def pytest_html_results_summary(prefix, summary, postfix, session):
    if os.environ.get("TOY_SIGNAL") == "render":  # while pytest-html renders the page, after verdicts.json is built
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)


def pytest_sessionstart(session):
    if os.environ.get("TOY_SIGNAL") == "write":  # between the two files of the pair
        from pytest_claims.report import files

        write = files._write_file
        calls = []

        def slow(path, text):
            write(path, text)
            calls.append(path)
            if len(calls) == 1:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.3)

        files._write_file = slow
"""


@pytest.mark.smoke
@pytest.mark.parametrize("when", ["render", "write"])
def test_sigterm_while_the_reports_are_written_finishes_both(project, when):
    pytester = project()
    pytester.makeconftest(SIGNAL_IN_THE_WRITE)
    args = ("-m", "smoke", "--claims-no-store", "--html=out/verdict.html")
    assert _pytest(pytester, *args).wait(timeout=120) == 0
    before = report_ids(pytester.path / "out")
    process = _pytest(pytester, *args, env={"TOY_SIGNAL": when})
    output, _ = process.communicate(timeout=120)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert "SIGTERM arrived while the reports were written; they were finished first" in output, output[-3000:]
    after = report_ids(pytester.path / "out")
    assert after[0] == after[1] and after[0] != before[0], (before, after)
    assert {c["key"]: c["verdict"] for c in verdicts(pytester)["claims"]}["T1"] == "verified"
    assert not list((pytester.path / "out").glob(".*.tmp"))


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.smoke
def test_a_write_that_fails_part_way_keeps_the_previous_pair_and_says_so(project):
    pytester = one_run(project, "--html=out/verdict.html", "--self-contained-html")
    pair = {name: (pytester.path / "out" / name).read_bytes() for name in ("verdicts.json", "verdict.html")}
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.run(  # every file of the run limited to 3000 bytes: the reports cannot be completed
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "smoke", "--claims-no-store", "-k", "answer"]
        + ["--html=out/verdict.html", "--self-contained-html"],
        cwd=pytester.path,
        env=environment,
        capture_output=True,
        text=True,
        preexec_fn=_limit_file_size(3000),
        timeout=120,
    )
    output = process.stdout + process.stderr
    assert process.returncode == pytest.ExitCode.INTERNAL_ERROR, output[-3000:]
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-3000:]
    lines = [line for line in output.splitlines() if "the reports were not written" in line]
    assert len(lines) == 1 and "File too large" in lines[0] and "kept as they were" in lines[0], output[-3000:]
    assert {name: (pytester.path / "out" / name).read_bytes() for name in pair} == pair
    assert not list((pytester.path / "out").glob(".*.tmp"))


@pytest.mark.smoke
def test_a_full_disk_keeps_the_previous_pair_and_says_so_in_one_line(project, monkeypatch):
    from pytest_claims.report import files

    pytester = one_run(project, "--html=out/verdict.html")
    pair = {name: (pytester.path / "out" / name).read_bytes() for name in ("verdicts.json", "verdict.html")}
    write = files._write_file

    def full_disk(path, text):
        write(path, text[: len(text) // 2])  # part of it reaches the disk, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(files, "_write_file", full_disk)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--html=out/verdict.html")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(
        ["pytest-claims: the reports were not written (No space left on device)*kept as they were"]
    )
    assert "INTERNALERROR" not in result.stdout.str()
    assert {name: (pytester.path / "out" / name).read_bytes() for name in pair} == pair
    assert not list((pytester.path / "out").glob(".*.tmp"))


@pytest.mark.smoke
def test_a_second_run_into_a_report_directory_in_use_is_refused_naming_the_first(project):
    pytester = project(triangle_tests=SLOW_TRIANGLE)
    first = _pytest(pytester, "-m", "smoke", "--claims-store-dir=store", env={"TOY_SLOW": "1"})
    try:
        _wait_for(pytester.path / "reached-step-30", first)
        second = _pytest(pytester, "-m", "smoke", "--claims-no-store", "-k", "answer")
        output, _ = second.communicate(timeout=120)
        assert second.returncode == pytest.ExitCode.USAGE_ERROR, output[-3000:]
        assert "is in use by run " in output and f"(pid {first.pid} on " in output, output[-3000:]
        assert not (pytester.path / "out" / "verdicts.json").exists()
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert claim(verdicts(pytester), "T1")["verdict"] == "interrupted"  # the first run's own pair


# ------------------------------------------------------------------------------------------------
# Item 5: figure pruning touches only what the plugin wrote


@pytest.mark.smoke
def test_pruning_removes_only_figures_the_plugin_wrote(project):
    pytester = one_run(project)
    out = pytester.path / "out"
    written = formula_run(verdicts(pytester))["figures"][0]["path"]
    committed = out / "figures" / "committed.png"
    committed.write_bytes(b"a figure of the project, in git")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(committed, (two_days_ago, two_days_ago))
    os.utime(out / written, (two_days_ago, two_days_ago))
    manifest = json.loads((out / ".claims-figures.json").read_text())
    assert written in manifest["figures"]
    manifest["figures"][written] = two_days_ago  # named last two days ago
    (out / ".claims-figures.json").write_text(json.dumps(manifest))
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "-k", "answer"
    )  # a run that names no figure
    assert result.ret == pytest.ExitCode.OK
    assert committed.is_file(), "the run deleted a file it did not write"
    assert not (out / written).exists(), "a figure the plugin wrote, unnamed for two days, was kept"


# ------------------------------------------------------------------------------------------------
# Item 7: bad input, one line, exit 4, before any test runs

TWO_MARKERS = (
    CONSTANT_TESTS
    + """

@pytest.mark.smoke
@pytest.mark.claim("toy/constant", statement="answer")
@pytest.mark.claim("toy/triangle", statement="formula")
def test_two(evidence):
    statement_holds(True, "")
"""
)

RESERVED_NAME = constant_tests(headline="evidence.record(headline=toy_kernel.answer())")
DYNAMIC_RESERVED_NAME = constant_tests(headline='evidence.record(**{"head" + "line": toy_kernel.answer()})')


@pytest.mark.smoke
@pytest.mark.parametrize(
    "case, message",
    [
        (
            "two claim markers",
            "test_constant.py::test_two: 2 claim markers (toy/triangle:formula, toy/constant:answer)",
        ),
        ("catalogue raises", "claims_mutants = toy_mutants: importing it raised ZeroDivisionError: division by zero ("),
        ("catalogue lists a tuple", "claims_mutants = toy_mutants: toy_mutants: MUTANTS[0] is a tuple, not a Mutant"),
        ("reserved evidence name", "test_constant.py:10: evidence name 'headline' is the report's own key"),
        ("reserved key number", "key number 'answer: headline': evidence name 'headline' is the report's own key"),
    ],
)
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "-n 2"])
def test_bad_input_is_one_line_and_exit_4_before_any_test(project, case, message, workers):
    tests = {"two claim markers": TWO_MARKERS, "reserved evidence name": RESERVED_NAME}.get(case, CONSTANT_TESTS)
    pytester = project(constant_tests=tests)
    if case == "catalogue raises":
        pytester.makepyfile(toy_mutants="from pytest_claims.roles.mutants import Mutant\n\nMUTANTS = [1 / 0]\n")
    if case == "catalogue lists a tuple":
        pytester.makepyfile(toy_mutants='MUTANTS = [("off-by-one", "toy_kernel:triangle", "n + 1", "n + 2")]\n')
    if case == "reserved key number":
        registry = pytester.path / "registry.toml"
        registry.write_text(
            registry.read_text().replace(
                'tests = "test_constant.py"', 'tests = "test_constant.py"\nkey_numbers = ["answer: headline"]'
            )
        )
    result = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", "-p", "no:cacheprovider", *workers)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output[-3000:]
    assert message in output and "INTERNALERROR" not in output and "Traceback" not in output, output[-3000:]
    if case == "catalogue raises":
        assert f"{pytester.path / 'toy_mutants.py'}:3)" in output, output[-3000:]
    assert not re.search(r"\d+ passed", output) and not (pytester.path / "out" / "verdicts.json").exists()


@pytest.mark.smoke
def test_a_reserved_evidence_name_built_at_run_time_errors_its_test_and_the_report_stands(project):
    pytester = project(constant_tests=DYNAMIC_RESERVED_NAME)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--html=out/verdict.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    payload = verdicts(pytester)
    t2 = claim(payload, "T2")
    assert (
        t2["verdict"] == "broken"
        and "evidence name 'headline' is the report's own key" in t2["statements"][0]["reason"]
    )
    assert claim(payload, "T1")["verdict"] == "verified"  # the other claims keep their verdicts


@pytest.mark.smoke
def test_the_merge_schema_of_a_registered_statement_is_the_registrys_statement():
    """inputs.REGISTERED_STATEMENT is derived from registry.Statement: a statement as verdicts.json carries it passes,
    every field and its type is checked, and a field the dataclass lacks is refused, so a field added to the registry
    cannot make every merge of a run that uses it fail as 'not a field of this schema'."""
    import dataclasses

    from pytest_claims.model.inputs import REGISTERED_STATEMENT, _Bad
    from pytest_claims.model.registry import Statement
    from pytest_claims.model.verdicts import registry_record

    statement = Statement(
        "s",
        "a statement",
        "holds",
        mutants=("m",),
        decisive_tiers=("full",),
        false_alarm={"full": 0.01},
        mutants_expected_end={"m": "errored: why"},
        false_alarm_basis="a level",
        mutants_waived="",
    )
    claim = dataclasses.replace(toy_claim(), statements={"s": statement})
    written = registry_record(claim)["statements"]["s"]
    assert set(written) == {f.name for f in dataclasses.fields(Statement)} - {"name"}
    REGISTERED_STATEMENT(written, "s")  # passes
    assert Statement(name="s", **{k: tuple(v) if isinstance(v, list) else v for k, v in written.items()}) == statement
    for field, wrong in [("refutes_claim", "false"), ("mutants", "m"), ("false_alarm", {"full": "x"}), ("x", 1)]:
        with pytest.raises(_Bad):
            REGISTERED_STATEMENT(dict(written, **{field: wrong}), "s")
    for field in ("text", "expected", "decisive_tiers"):  # no default: a record without it could not be rebuilt
        with pytest.raises(_Bad, match=field):
            REGISTERED_STATEMENT({k: v for k, v in written.items() if k != field}, "s")


def toy_claim():
    from pytest_claims.model.registry import Claim

    return Claim(id="toy/c", key="T9", paper="toy", where="here", text="a claim", expected="verified")
