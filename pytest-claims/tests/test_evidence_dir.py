"""The anytime ledgers are evidence: they live in the run's evidence directory (claims_evidence_dir, default
claims-evidence in the rootdir), never in pytest's cache, so a cache reset does not erase a continued chain; a ledger
left where earlier versions kept it (beside the store's entries) is named, never read or moved silently."""

from __future__ import annotations

import json
import shutil

import pytest

from chains import toy_registry
from test_anytime_decisions import COIN_TEST

CACHE_INI = """
[pytest]
claims_registry = registry.toml
claims_tiers = smoke full
claims_report_dir = out
"""


def make_coin(pytester, ini: str = CACHE_INI) -> None:
    """The coin project with the store in pytest's cache (no claims_store_dir): the default a user has."""
    pytester.makefile(".ini", pytest=ini)
    pytester.makefile(".toml", registry=toy_registry("coin/biased", "rate", "test_coin.py", 'decision = "anytime"'))
    pytester.makepyfile(
        test_coin=COIN_TEST.format(trials=200, rate=0.68, batch="claims_batch", extra=", batch=claims_batch")
    )


def run(pytester, *args):
    result = pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", *args)
    record = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0]
    return result, record["evidence"]["heads rate"]["anytime"]


def test_a_cache_reset_keeps_the_chain_and_continue_resumes_it(pytester):
    make_coin(pytester)
    result, block = run(pytester)
    assert len(block["ledger"]) == 1
    (ledger,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    assert ".pytest_cache" not in str(ledger)
    assert any(f"anytime ledgers: {pytester.path / 'claims-evidence'}" in line for line in result.outlines)
    _, block = run(pytester, "--cache-clear", "--claims-continue")
    assert [b["stream"].rsplit("|", 1)[1] for b in block["ledger"]] == ["batch=0", "batch=1"]
    assert len(json.loads(ledger.read_text())["batches"]) == 2


def test_the_evidence_directory_is_declared_by_its_ini_key_or_option(pytester):
    make_coin(pytester, CACHE_INI + "claims_evidence_dir = kept/evidence\n")
    run(pytester)
    assert list((pytester.path / "kept" / "evidence").rglob("*.ledger.json"))
    run(pytester, "--claims-evidence-dir", "elsewhere")
    assert list((pytester.path / "elsewhere").rglob("*.ledger.json"))


def test_a_ledger_at_its_earlier_place_is_named_and_not_moved(pytester):
    """Upgrading: a ledger beside the store's entries (where 0.1 kept it) is neither read nor moved; the evidence
    names it and the command that moves it, and the chain starts in the evidence directory."""
    make_coin(pytester, CACHE_INI + "claims_store_dir = store\n")
    run(pytester)
    (ledger,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    earlier = pytester.path / "store" / ledger.parent.name / ledger.name
    earlier.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(ledger), earlier)  # as 0.1 left it
    before = earlier.read_bytes()
    _, block = run(pytester)
    assert f"its earlier place {earlier}" in block["note"] and f"mv {earlier} {ledger}" in block["note"]
    assert earlier.read_bytes() == before and ledger.exists()  # untouched there; a new chain here


@pytest.mark.parametrize("field", ["trials", "log_e_for", "threshold"])
def test_a_ledger_holding_an_integer_past_any_float_is_a_note_and_set_aside(pytester, field):
    """JSON's integers have no bound: 10**400 where the ledger holds a count, an e-value or a parameter was an
    OverflowError out of the claims_batch fixture (the statement an error, its claim broken); it is a damaged ledger:
    a note, a fresh chain, the file kept aside whole."""
    make_coin(pytester)
    _, first = run(pytester)
    (ledger,) = (pytester.path / "claims-evidence").rglob("*.ledger.json")
    raw = json.loads(ledger.read_text())
    where = raw["statement"] if field == "threshold" else raw["batches"][0]
    where[field] = 10**400
    damaged = json.dumps(raw).encode()
    ledger.write_bytes(damaged)
    result, block = run(pytester)
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert "holds an integer past any float" in block["note"] or "not a whole number" in block["note"], block["note"]
    fresh = [{k: v for k, v in b.items() if k != "run"} for b in block["ledger"]]
    assert fresh == [{k: v for k, v in b.items() if k != "run"} for b in first["ledger"]]  # batch 0 drawn afresh
    (aside,) = ledger.parent.glob("*.invalid-*")
    assert aside.read_bytes() == damaged
