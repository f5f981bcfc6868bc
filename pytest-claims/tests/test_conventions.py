"""Conventions (issue 37 item 7): prefixed options with their short aliases, strict mode's exit status, stale mutants
caught in every run, `pytest-claims init` writing a project that runs as registered, and the claim table's exports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from pytest_claims.cli import command
from pytest_claims.report import export
from pytest_claims.cli.skeleton import FILES
from pytest_claims.roles.strict import STRICT_EXIT_STATUS

pytestmark = pytest.mark.smoke


def skeleton(pytester: pytest.Pytester, **changes: tuple[str, str]) -> None:
    """The `init` skeleton in the pytester directory, with (old, new) text replaced per file."""
    for name, text in FILES.items():
        old, new = changes.get(name.replace(".", "_"), ("", ""))
        if old:
            assert old in text, (name, old)
            text = text.replace(old, new)
        (pytester.path / name).write_text(text, encoding="utf-8")
    pytester.syspathinsert()


def verdicts(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "reports" / "verdicts.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("option", "ini"),
    [("--claims-seed", "claims_seed = 1"), ("--seed", "claims_seed = 1\nclaims_short_options = true")],
)
def test_the_prefixed_seed_option_and_the_alias_a_project_asks_for_set_the_master_seed(pytester, option, ini):
    skeleton(pytester, pytest_ini=("claims_seed = 1", ini))
    result = pytester.runpytest(option, "7", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    assert verdicts(pytester)["seed"] == 7


def test_without_the_ini_key_no_short_alias_is_registered(pytester):
    skeleton(pytester)
    for alias in ("--seed=7", "--mutants", "--no-store", "--store-dir=s", "--previous-verdicts=p.json"):
        result = pytester.runpytest(alias, "-p", "no:randomly")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (alias, result.stdout.str())
        assert "unrecognized arguments" in result.stderr.str(), (alias, result.stderr.str())


def test_a_short_alias_another_plugin_has_taken_is_left_out_and_the_prefixed_name_works(pytester):
    skeleton(pytester, pytest_ini=("claims_seed = 1", "claims_seed = 1\nclaims_short_options = true"))
    pytester.makepyfile(
        other_plugin="def pytest_addoption(parser):\n    parser.addoption('--seed', dest='other_seed', default='x')\n"
    )
    result = pytester.runpytest("-p", "other_plugin", "--claims-seed", "5", "--seed", "mine", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert verdicts(pytester)["seed"] == 5
    result.stdout.fnmatch_lines(["*claims_short_options: another plugin or a conftest has --seed (use --claims-seed)*"])


# A project of its own with the options a plugin must not take from it (issue 50 item 3): its conftest registers
# `--seed` and `--mutants` as pytest's docs show (no dest), its test reads them back and writes what it saw.
OWN_OPTIONS_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--seed", type=int, default=0, help="this project's own seed")
    parser.addoption("--mutants", action="store_true", help="this project's own switch")


def pytest_configure(config):
    config.addinivalue_line("markers", "smoke: this project's quick tests")


def pytest_claims_reproduce_args(config):
    return ["--seed", str(config.getoption("seed"))]
"""

OWN_OPTIONS_TEST = """
import json

import pytest


@pytest.mark.smoke  # a scale marker, as a project with a registry needs on every test
def test_own_options(request):
    seen = {"seed": request.config.getoption("seed"), "mutants": request.config.getoption("mutants")}
    (request.config.rootpath / "seen.json").write_text(json.dumps(seen))
"""


@pytest.mark.parametrize("with_registry", [False, True], ids=["no registry", "registry"])
def test_a_project_with_its_own_seed_and_mutants_options_runs_with_the_plugin_installed(pytester, with_registry):
    if with_registry:
        skeleton(pytester)  # the plugin active: its master seed from the ini key, its mutants from --claims-mutants
    pytester.makeconftest(OWN_OPTIONS_CONFTEST)
    pytester.makepyfile(test_own=OWN_OPTIONS_TEST)
    result = pytester.runpytest("--seed", "3", "--mutants", "-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert json.loads((pytester.path / "seen.json").read_text()) == {"seed": 3, "mutants": True}
    assert result.parseoutcomes().get("passed") == (2 if with_registry else 1), result.stdout.str()
    if with_registry:
        payload = verdicts(pytester)
        assert payload["seed"] == 1 and not payload["mutants_run"], (payload["seed"], payload["mutants_run"])
        result = pytester.runpytest("--seed", "4", "--claims-seed", "9", "--claims-mutants", "-p", "no:randomly")
        assert result.ret == 0, result.stdout.str() + result.stderr.str()
        assert json.loads((pytester.path / "seen.json").read_text()) == {"seed": 4, "mutants": False}
        payload = verdicts(pytester)
        assert payload["seed"] == 9 and payload["mutants_run"], (payload["seed"], payload["mutants_run"])


def test_strict_mode_exits_with_its_own_status_on_a_verdict_other_than_the_registered_one(pytester):
    skeleton(pytester, registry_toml=('expected = "verified"', 'expected = "falsified"'))
    assert pytester.runpytest("-p", "no:randomly").ret == 0  # not strict: marked, exit 0
    result = pytester.runpytest("-p", "no:randomly", "--claims-strict")
    assert result.ret == STRICT_EXIT_STATUS
    result.stdout.fnmatch_lines(["*strict: 1 claim(s) not as registered*", "*D1  verified (registered: falsified)*"])


PAYLOAD_SEEN = """
import json
from pathlib import Path


def pytest_claims_payload(config, payload):
    seen = Path("seen.json")
    calls = json.loads(seen.read_text()) if seen.exists() else []
    calls.append({c["id"]: c["verdict"] for c in payload["claims"]})
    seen.write_text(json.dumps(calls))
"""


def test_the_payload_is_published_once_through_the_plugins_hook(pytester):
    """A project's plugin reads the payload through `pytest_claims_payload`: once per run, on the controller, the
    verdicts verdicts.json then holds; strict mode reads it there too. No verdict, no call (--collect-only)."""
    skeleton(pytester, registry_toml=('expected = "verified"', 'expected = "falsified"'))
    pytester.makepyfile(payload_seen=PAYLOAD_SEEN)
    result = pytester.runpytest("-p", "no:randomly", "-p", "payload_seen", "--claims-strict")
    assert result.ret == STRICT_EXIT_STATUS, result.stdout.str()
    written = {c["id"]: c["verdict"] for c in verdicts(pytester)["claims"]}
    assert json.loads((pytester.path / "seen.json").read_text()) == [written]
    (pytester.path / "seen.json").unlink()
    assert pytester.runpytest("-p", "no:randomly", "-p", "payload_seen", "--collect-only").ret == 0
    assert not (pytester.path / "seen.json").exists()


def test_strict_mode_from_the_ini_key_and_quiet_when_every_verdict_is_registered(pytester):
    skeleton(pytester, pytest_ini=("claims_seed = 1", "claims_seed = 1\nclaims_strict = true"))
    result = pytester.runpytest("-p", "no:randomly")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*strict: every selected claim reads as registered*"])
    (pytester.path / "kernel.py").write_text("def triangle(n):\n    return n * (n + 1) // 2 + (n == 7)\n")
    assert pytester.runpytest("-p", "no:randomly").ret == 1  # broken stays 1: the stronger failure keeps its status


def test_strict_mode_counts_an_inconclusive_verdict_and_ignores_claims_not_selected(pytester):
    inconclusive = "    statement_inconclusive('too few n')\n    statement_holds(not wrong,"
    skeleton(pytester, test_triangle_py=("    statement_holds(not wrong,", inconclusive))
    text = (pytester.path / "test_triangle.py").read_text()
    text = text.replace("import statement_holds", "import statement_holds, statement_inconclusive")
    (pytester.path / "test_triangle.py").write_text(text)
    result = pytester.runpytest("-p", "no:randomly", "--claims-strict")
    assert result.ret == STRICT_EXIT_STATUS
    result.stdout.fnmatch_lines(["*D1  inconclusive (registered: verified)*"])
    assert pytester.runpytest("-p", "no:randomly", "--claims-strict", "-k", "as_printed").ret == 0  # D1 not selected


def test_a_stale_mutant_breaks_its_claim_in_a_run_without_mutants_and_says_the_remedy(pytester):
    skeleton(pytester, kernel_py=("n * (n + 1) // 2", "(n * n + n) // 2"))
    result = pytester.runpytest("-p", "no:randomly")
    assert result.ret == 1
    claim = verdicts(pytester)["claims"][0]
    assert claim["verdict"] == "broken"
    assert "mutant 'off-by-one' of formula no longer applies" in claim["reason"]
    assert "update its snippet in the catalogue" in claim["reason"]
    assert verdicts(pytester)["claims"][1]["verdict"] == "falsified"  # D2 lists no mutant
    result = pytester.runpytest("-p", "no:randomly", "--claims-mutants")
    assert result.ret == 4  # under --claims-mutants the run stops before any test, as before
    result.stderr.fnmatch_lines(["*mutants that no longer apply*", "*remedy: update each snippet*"])


def test_init_writes_a_project_whose_verdicts_and_mutants_are_as_registered(tmp_path):
    where = tmp_path / "paper"
    assert command.main(["init", str(where)]) == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CLAIMS_"))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "--claims-strict", "--claims-mutants"],
        cwd=where,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    payload = json.loads((where / "reports" / "verdicts.json").read_text())
    assert [(c["key"], c["verdict"], c["expected"]) for c in payload["claims"]] == [
        ("D1", "verified", "verified"),
        ("D2", "falsified", "falsified"),
    ]
    assert payload["claims"][0]["power"]["killed"] == payload["claims"][0]["power"]["of"] == 2
    assert command.main(["init", str(where)]) == 2  # never overwrites without --force
    assert command.main(["init", str(where), "--force"]) == 0


def test_export_writes_each_format_from_verdicts_json_by_command_and_by_option(pytester, capsys):
    skeleton(pytester)
    assert pytester.runpytest("-p", "no:randomly", "--claims-export=latex,csv,md").ret == 0
    reports = pytester.path / "reports"
    assert {p.name for p in reports.glob("claims.*")} == {"claims.tex", "claims.csv", "claims.md"}
    path = str(reports / "verdicts.json")
    capsys.readouterr()
    for fmt in ("csv", "markdown", "latex"):
        assert command.main(["export", "--format", fmt, path]) == 0
        printed = capsys.readouterr().out
        assert printed == (reports / export.FORMATS[fmt]).read_text()
    latex = (reports / "claims.tex").read_text()
    assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex
    assert "\\begin{tabularx}{\\linewidth}" in latex  # as wide as the text, long cells wrapped
    d1 = [line for line in latex.splitlines() if line.startswith("\\textbf{D1} ")][0]
    assert "demo/\\allowbreak{}triangle" in d1 and "wrong" not in d1  # the registry's key numbers only
    assert "formula: checked =\\allowbreak{} 50" in d1
    assert "(as printed) 1 + 2 + ... + n = n\\textasciicircum{}2." in latex  # escaped, not a math superscript
    rows = (reports / "claims.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["Key", "D1", "D2"]  # registry order
    assert command.main(["export", "--format", "pdf", path]) == 2
    (pytester.path / "bad.json").write_text('{"claims": [{"id": 3}]}')
    assert command.main(["export", "--format", "csv", str(pytester.path / "bad.json")]) == 2
    assert "claims[0].id is missing or not a string" in capsys.readouterr().err
    assert pytester.runpytest("-p", "no:randomly", "--claims-export=pdf").ret == 4


LONG_CLAIM = {  # a claims record as verdicts.json holds it, with the long words that overflowed a page
    "key": "N2",
    "id": "numerics/newton-quadratic-convergence-from-random-starts",
    "where": "Theorem 2 and Table 1",
    "statement": "Newton's method converges quadratically; |e_{k+1}| <= C |e_k|^2 in at least 95% of starts & more.",
    "expected": "verified",
    "verdict": "inconclusive",
    "power": {"killed": 4, "of": 4},
    "key_numbers": [
        {
            "label": "rate: seven-step rate",
            "values": [
                {
                    "run": "",
                    "tier": "smoke",
                    "value": {
                        "lower": 0.9677,
                        "upper": 0.9764,
                        "held_confidence": 0.9999,
                        "inconclusive_chance": 4.051e-40,
                    },
                }
            ],
        }
    ],
}


def test_the_latex_table_compiles_within_the_text_width_with_every_special_character_escaped(tmp_path):
    """A default one-column article takes the table: no LaTeX error and no overfull line (the newcomer's table ran
    211pt past the text, and `|` came out as an em dash)."""
    latex = export.as_latex({"suite": "Elementary numerics: 100% & more", "seed": 1, "claims": [LONG_CLAIM] * 3})
    assert "\\textbar{}e\\_\\{k+1\\}\\textbar{}" in latex and "inconclusive (registered: verified)" in latex
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed: the table's text was checked, its compiled width was not")
    (tmp_path / "claims.tex").write_text(latex)
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs,tabularx}\\begin{document}\\input{claims.tex}\\end{document}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert done.returncode == 0, log[-2000:]
    assert "Overfull" not in log, [line for line in log.splitlines() if "Overfull" in line]


def test_a_surviving_mutant_names_the_remedy(pytester):
    skeleton(pytester, my_mutants_py=('"n + 1", "n + 2"', '"n + 1", "1 + n"'))  # the same function: it survives
    result = pytester.runpytest("-p", "no:randomly", "--claims-mutants")
    assert result.ret == 1
    reason = verdicts(pytester)["claims"][0]["reason"]
    assert "mutants survived" in reason and "remedy: sharpen the test" in reason and "add a guard" in reason


def test_a_refuted_statement_without_its_false_alarm_is_told_what_the_number_means_for_it(pytester):
    test = FILES["test_triangle.py"].replace(
        "    evidence.headline(triangle_3=kernel.triangle(3))",
        "    from pytest_claims import registered_false_alarm\n    registered_false_alarm()",
    )
    skeleton(pytester)
    (pytester.path / "test_triangle.py").write_text(test)
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines(["*states no false_alarm*ends not refuted although it is false as registered*"])


def test_init_names_the_next_commands_without_a_cd_into_the_folder_it_is_in(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert command.main(["init", "."]) == 0
    assert "next: pytest && pytest --claims-mutants" in capsys.readouterr().out
    assert command.main(["init", "sub dir"]) == 0
    assert "next: cd 'sub dir' && pytest" in capsys.readouterr().out


def test_counts_take_their_noun_in_the_right_number():
    from pytest_claims.stats.shown_numbers import counted

    assert [counted(n, "statement") for n in (0, 1, 2)] == ["0 statements", "1 statement", "2 statements"]
