"""Tests of the verdict machinery itself: claim verdicts, strict refutations, bad options."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_claims.registry import load_registry
from pytest_claims.verdicts import StatementRun, claim_verdict

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = load_registry(ROOT / "claims" / "registry.toml")
K1 = REGISTRY.claims["kmeans/hartigan-fixed-implies-lloyd-fixed"]
K3 = REGISTRY.claims["kmeans/hartigan-escapes"]


def _run(statement: str, outcome: str, tier: str = "smoke", reason: str = "") -> StatementRun:
    return StatementRun(test=f"t::{statement}::{tier}", claim=K1.id, statement=statement, tier=tier, outcome=outcome, reason=reason)


ALL_K1 = {"property", "grid-endpoints", "converse"}


@pytest.mark.smoke
@pytest.mark.parametrize(
    "runs, verdict",
    [
        ([_run("property", "held"), _run("grid-endpoints", "held"), _run("converse", "refuted")], "verified"),
        ([_run("property", "held"), _run("grid-endpoints", "held"), _run("converse", "held")], "broken"),
        ([_run("property", "failed"), _run("grid-endpoints", "held"), _run("converse", "refuted")], "broken"),
        ([_run("property", "error"), _run("grid-endpoints", "held"), _run("converse", "refuted")], "broken"),
        ([_run("property", "held"), _run("converse", "refuted")], "reduced scale"),
        ([_run("property", "skipped", reason="no CUDA")], "not run"),
        ([], "not run"),
    ],
)
def test_claim_verdict_rules(runs, verdict):
    assert claim_verdict(K1, runs, ALL_K1)[0] == verdict


@pytest.mark.smoke
def test_claim_verdicts_for_printed_refutation_and_optional_statements():
    assert claim_verdict(K1, [], set())[0] == "not exercised"
    printed = REGISTRY.claims["kmeans/hartigan-fixed-implies-lloyd-fixed"]
    # a refuted statement that is the claim as printed falsifies it
    from dataclasses import replace

    falsifiable = replace(printed, statements=dict(printed.statements, converse=replace(printed.statements["converse"], refutes_claim=True)))
    runs = [_run("property", "held"), _run("grid-endpoints", "held"), _run("converse", "refuted")]
    assert claim_verdict(falsifiable, runs, ALL_K1)[0] == "falsified"
    # K3's huge-d statement is optional and decisive only in full: smoke without it is verified
    k3 = [
        StatementRun(f"t{i}", K3.id, name, "smoke", "held")
        for i, name in enumerate(["leaves-start", "paired-nmi", "nmi-to-one"])
    ]
    assert claim_verdict(K3, k3, set(K3.statements))[0] == "verified"


def _pytest(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.smoke
@pytest.mark.parametrize(
    "option, message",
    [
        (["--backend", "jax"], "unknown backend 'jax'"),
        (["--backend", "torch", "--device", "cuda"], "--device cuda requested but no CUDA device"),
        (["--seed", "-3"], "--seed must be a non-negative integer"),
        (["--kmeans-dims", "20,0"], "--kmeans-dims must be comma-separated positive integers"),
        (["--data-dir", "/nonexistent/data"], "is not a directory"),
    ],
)
def test_bad_options_fail_with_one_clear_line(option, message):
    from kernels.backend import cuda_available

    if "cuda" in option and cuda_available():
        pytest.skip("a CUDA device is present, so --device cuda is valid here")
    result = _pytest([*option, "--collect-only", "-q"], ROOT)
    assert result.returncode == 4, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


FAKE_SUITE = """
import pytest
from pytest_claims import ClaimRefuted, statement_holds

K1 = "kmeans/hartigan-fixed-implies-lloyd-fixed"

@pytest.mark.smoke
@pytest.mark.claim(K1, statement="converse")
def test_converse(evidence):
    evidence.record(mode=MODE)
    if MODE == "refute":
        statement_holds(False, "pinned counterexample")
    if MODE == "crash":
        raise RuntimeError("kernel crashed")
"""


@pytest.mark.smoke
@pytest.mark.parametrize(
    "mode, exit_code, outcome, verdict",
    [("refute", 0, "refuted", "reduced scale"), ("hold", 1, "held", "broken"), ("crash", 1, "error", "broken")],
)
def test_refuted_statement_is_satisfied_only_by_a_recorded_refutation(tmp_path, mode, exit_code, outcome, verdict):
    (tmp_path / "test_fake.py").write_text(f"MODE = {mode!r}\n" + textwrap.dedent(FAKE_SUITE))
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    result = _pytest(["-q", "-m", "smoke", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)], tmp_path)
    assert result.returncode == exit_code, result.stdout + result.stderr
    payload = json.loads((tmp_path / "reports" / "verdicts.json").read_text())
    k1 = next(c for c in payload["claims"] if c["id"] == "kmeans/hartigan-fixed-implies-lloyd-fixed")
    assert k1["statements"][0]["outcome"] == outcome
    assert k1["statements"][0]["evidence"]["mode"] == mode
    assert k1["verdict"] == verdict


@pytest.mark.smoke
def test_unknown_claim_fails_collection(tmp_path):
    (tmp_path / "test_fake.py").write_text(
        "import pytest\n\n@pytest.mark.smoke\n@pytest.mark.claim('kmeans/no-such-claim', statement='x')\ndef test_x():\n    pass\n"
    )
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    result = _pytest(["-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)], tmp_path)
    assert result.returncode != 0
    assert "unknown claim 'kmeans/no-such-claim'" in result.stdout + result.stderr
