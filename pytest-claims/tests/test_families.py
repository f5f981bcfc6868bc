"""Families of statements with one false-alarm budget (pytest_claims.statements.families, the registry's
[[claim.family]]): Holm and e-Holm against brute-force closed testing, family-wise error simulations under independent,
correlated, anti-correlated, discrete and comonotone statistics (and the mutants they catch), the registry's checks, and
a family decided end to end.

Each family-wise check fails only when the Clopper-Pearson lower bound, at level 1e-6, of the simulated family-wise
error exceeds alpha: a valid method fails one check with probability at most 1e-6, this file's 15 checks together
with at most 1.5e-5."""

from __future__ import annotations

import itertools
import json
import math
from statistics import NormalDist

import numpy as np
import pytest
from chains import INI
from pytest_claims.stats.binomial import rate_lower_bound
from pytest_claims.statements.families import decide_family, e_holm, family_decision, holm
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED, ClaimRefuted, StatementInconclusive
from pytest_claims.model.registry import RegistryError, load_registry

ALPHA = 0.1
CHECK_LEVEL = 1e-6
TRIALS = 20_000
K = 5


def _caught(errors: int) -> bool:
    return rate_lower_bound(int(errors), TRIALS, CHECK_LEVEL) > ALPHA


# ------------------------------------------------------------------------------------------------
# Oracles: closed testing over every subset


def _closed(values: dict[str, float], local) -> dict[str, bool]:
    """Closed testing: a member is rejected when every subset holding it is rejected by `local`."""
    names = list(values)
    subsets = [s for r in range(1, len(names) + 1) for s in itertools.combinations(names, r)]
    return {k: all(local([values[i] for i in s]) for s in subsets if k in s) for k in names}


@pytest.mark.parametrize("seed", range(30))
def test_holm_and_e_holm_are_closed_testing_of_bonferroni_and_of_the_average(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 7))
    p = {f"s{i}": float(v) for i, v in enumerate(rng.choice([0.001, 0.01, 0.02, 0.03, 0.2, 0.9], size) * rng.random())}
    assert holm(p, ALPHA) == _closed(p, lambda ps: min(ps) < ALPHA / len(ps))
    log_e = {f"s{i}": float(v) for i, v in enumerate(rng.normal(1.5, 2.0, size))}
    assert e_holm(log_e, ALPHA) == _closed(log_e, lambda ls: np.mean(np.exp(ls)) >= 1 / ALPHA - 1e-9)


# ------------------------------------------------------------------------------------------------
# Family-wise error: every member at the boundary of its null (or some far from it), statistics dependent


def _normals(setting: str, rng) -> np.ndarray:
    """TRIALS x K standard normals, dependent as `setting` says."""
    eps, shared = rng.standard_normal((TRIALS, K)), rng.standard_normal((TRIALS, 1))
    if setting == "independent":
        return eps
    if setting == "equicorrelated 0.5":
        return math.sqrt(0.5) * shared + math.sqrt(0.5) * eps
    if setting == "equicorrelated 0.99":
        return math.sqrt(0.99) * shared + math.sqrt(0.01) * eps
    if setting == "anti-correlated pairs":  # Z_1 = -Z_2, Z_3 = -Z_4: one of each pair is always high
        return np.column_stack([eps[:, 0], -eps[:, 0], eps[:, 1], -eps[:, 1], eps[:, 2]])
    raise AssertionError(setting)


SETTINGS = ["independent", "equicorrelated 0.5", "equicorrelated 0.99", "anti-correlated pairs"]
FALSE_MEMBERS = 2  # in the "mixed" runs, the first two members are far from their nulls (and may be rejected)


def _p_values(setting: str, mixed: bool, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, SETTINGS.index(setting) if setting in SETTINGS else 9, mixed])
    if setting == "discrete":  # exact one-sided binomial p-values of 12 fair coins, two members sharing the coins
        heads = rng.binomial(12, 0.5, (TRIALS, K))
        heads[:, 1] = heads[:, 0]
        tail = np.array([sum(math.comb(12, j) for j in range(k, 13)) / 4096 for k in range(13)])
        p = tail[heads]
    else:
        z = _normals(setting, rng)
        if mixed:
            z[:, :FALSE_MEMBERS] += 4.0
        p = 1.0 - np.vectorize(NormalDist().cdf)(z)
    return p


def _family_wise_errors(rejections: list[dict[str, bool]], mixed: bool) -> int:
    true = [f"s{i}" for i in range(FALSE_MEMBERS if mixed else 0, K)]
    return sum(any(r[k] for k in true) for r in rejections)


@pytest.mark.parametrize("mixed", [False, True], ids=["all true", "two false"])
@pytest.mark.parametrize("setting", [*SETTINGS[:3], "discrete"])
def test_holm_keeps_the_family_wise_error_under_dependence(setting, mixed):
    p = _p_values(setting, mixed, seed=1)
    rejections = [holm({f"s{i}": float(v) for i, v in enumerate(row)}, ALPHA) for row in p]
    assert not _caught(_family_wise_errors(rejections, mixed)), setting


def test_the_simulation_catches_unadjusted_p_values():
    p = _p_values("independent", False, seed=2)
    assert _caught(int(np.sum((p < ALPHA).any(axis=1))))


def _log_e_values(setting: str, seed: int) -> np.ndarray:
    """ln of likelihood-ratio e-values exp(lam Z - lam^2 / 2) (mean exactly 1 under the null), or (comonotone)
    all-or-nothing e-values 1{U < alpha} / alpha of one shared U: the extreme case, where the average reaches 1 / alpha
    with probability exactly alpha."""
    rng = np.random.default_rng([seed, 7, SETTINGS.index(setting) if setting in SETTINGS else 9])
    if setting.endswith("all-or-nothing"):
        u = rng.random((TRIALS, 1 if setting.startswith("comonotone") else K)) * np.ones((1, K))
        return np.where(u < ALPHA, -math.log(ALPHA), -np.inf)
    lam = 2.5
    return lam * _normals(setting, rng) - lam * lam / 2


@pytest.mark.parametrize("setting", [*SETTINGS, "comonotone all-or-nothing", "independent all-or-nothing"])
def test_e_holm_keeps_the_family_wise_error_under_any_dependence(setting):
    log_e = _log_e_values(setting, seed=3)
    rejections = [e_holm({f"s{i}": float(v) for i, v in enumerate(row)}, ALPHA) for row in log_e]
    assert not _caught(_family_wise_errors(rejections, False)), setting


def test_the_simulation_catches_the_maximum_and_the_product_of_dependent_e_values():
    """Merging by the maximum (no adjustment) of independent all-or-nothing e-values, and by the product (valid for
    independent e-values only) of nearly identical ones: both exceed alpha, caught."""
    independent = _log_e_values("independent all-or-nothing", seed=4)
    assert _caught(int(np.sum(independent.max(axis=1) >= -math.log(ALPHA))))
    halves = np.random.default_rng(5).random((TRIALS, 1)) < 0.5  # one shared coin: e = 2 or 0 for every member
    identical = np.where(halves, math.log(2.0), -np.inf) * np.ones((1, K))
    assert _caught(int(np.sum(identical.sum(axis=1) >= -math.log(ALPHA))))  # 2^5 >= 10 half of the time


# ------------------------------------------------------------------------------------------------
# Decisions


def test_each_member_is_held_refuted_or_left_by_the_family():
    decided = family_decision(
        {"a": (0.001, 0.999), "b": (0.02, 0.98), "c": (0.5, 0.5), "d": (0.999, 0.0001)}, method="holm", alpha=0.05
    )
    # held side: 0.001 < 0.05/4, 0.02 >= 0.05/3 stops; against: 0.0001 < 0.05/4
    assert [m.decision for m in decided.members] == [HELD, INCONCLUSIVE, INCONCLUSIVE, REFUTED]
    assert decided.decision_of("d") == REFUTED
    with pytest.raises(KeyError):
        decided.decision_of("e")


def test_outside_a_registered_family_the_test_ends_with_the_conjunction():
    both = {"a": (0.001, 0.9), "b": (0.01, 0.9)}
    assert decide_family(both, what="f", method="holm", alpha=0.05).method == "holm"
    with pytest.raises(StatementInconclusive, match="family 'f' by holm at family-wise 0.05: the family"):
        decide_family({**both, "c": (0.3, 0.7)}, what="f", method="holm", alpha=0.05)
    with pytest.raises(ClaimRefuted, match="refuted"):
        decide_family({"a": (math.log(1e3), 0.0), "b": (0.0, math.log(1e3))}, what="f", method="e-merging", alpha=0.05)
    with pytest.raises(ValueError, match="needs method= and alpha="):
        decide_family(both, what="f")
    with pytest.raises(ValueError, match="member 'a' needs a pair"):
        decide_family({"a": (2.0, 0.5)}, what="f", method="holm", alpha=0.05)


# ------------------------------------------------------------------------------------------------
# The registry


REGISTRY = """
[paper.toy]
title = "A toy paper"
source = "nowhere"

[[claim]]
id = "toy/family"
key = "F1"
paper = "toy"
where = "Table 1"
text = "three settings each beat the baseline"
expected = "verified"
tests = "test_family.py"
{statements}
{family}
"""
STATEMENT = """
[[claim.statement]]
name = "{name}"
text = "setting {name} beats the baseline"
expected = "holds"
mutants_waived = "a toy"
{decision}
"""


def _registry(family: str, decisions: dict[str, str] | None = None) -> str:
    decisions = decisions or {}
    statements = "".join(STATEMENT.format(name=n, decision=decisions.get(n, "")) for n in "abc")
    return REGISTRY.format(statements=statements, family=family)


FAMILY = '[[claim.family]]\nname = "settings"\nstatements = ["a", "b", "c"]\nalpha = 0.05\nmethod = "holm"\n'


def test_a_registered_family_is_read(tmp_path):
    (tmp_path / "r.toml").write_text(_registry(FAMILY))
    claim = load_registry(tmp_path / "r.toml", ("smoke",)).claims["toy/family"]
    assert claim.family_of("b").alpha == 0.05 and claim.family_of("b").statements == ("a", "b", "c")


@pytest.mark.parametrize(
    "family, decisions, problem",
    [
        (FAMILY.replace('"c"]', '"z"]'), {}, "family 'settings' names unknown statement(s) ['z']"),
        (FAMILY.replace('"holm"', '"bonferroni"'), {}, "method must be one of"),
        (FAMILY.replace("0.05", "0.5"), {}, "alpha must be a family-wise false alarm in (0, 0.5)"),
        (FAMILY.replace('["a", "b", "c"]', '["a"]'), {}, "two or more"),
        (FAMILY + FAMILY.replace('"settings"', '"again"'), {}, "already in family 'settings'"),
        (FAMILY, {"b": 'decision = "anytime"'}, "by 'holm' cannot hold ['b'], registered decision = 'anytime'"),
        (FAMILY.replace("method", "metod"), {}, "must give name, statements, alpha and method"),
    ],
)
def test_a_malformed_family_is_one_line_naming_the_claim(tmp_path, family, decisions, problem):
    (tmp_path / "r.toml").write_text(_registry(family, decisions))
    with pytest.raises(RegistryError) as caught:
        load_registry(tmp_path / "r.toml", ("smoke",))
    message = str(caught.value)
    assert "claim 'toy/family'" in message and problem in message and "\n" not in message


TESTS = """
import pytest
from pytest_claims.statements.families import decide_family

# The members' p-values (p_for, p_against), computed once for the module: every member's test decides from all of them.
P = {"a": (0.001, 0.999), "b": (0.02, 0.98), "c": (0.5, 0.5)}


@pytest.mark.smoke
@pytest.mark.claim("toy/family", statement="a")
def test_a():
    decide_family(P, what="settings")


@pytest.mark.smoke
@pytest.mark.claim("toy/family", statement="b")
def test_b():
    decide_family(P, what="settings")


@pytest.mark.smoke
@pytest.mark.claim("toy/family", statement="c")
def test_c():
    decide_family(P, what="settings", alpha={alpha})
"""


FAMILY_LINE = "toy/family: family 'settings' by holm at family-wise 0.05: a held, b held, c inconclusive"


def test_a_family_decided_end_to_end_by_holm(pytester):
    """Holm at 0.05 holds a (0.001 < 0.05/3) and b (0.02 < 0.05/2), which Bonferroni (0.05/3) would not; c stays
    inconclusive; each member's evidence shows the whole family, and the terminal one line for it; its alpha counts
    in the false-alarm budget (past the default 0.001 the run stops, naming it). Another alpha in a call is refused."""
    ini = INI.replace("claims_tiers = smoke full", "claims_tiers = smoke")
    pytester.makefile(".ini", pytest=ini)
    pytester.makefile(".toml", registry=_registry(FAMILY))
    pytester.makepyfile(test_family=TESTS.replace("{alpha}", "None"))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*sum past the budget 0.001*toy/family:family settings (a, b, c) 0.05*"])
    pytester.makefile(".ini", pytest=ini + "claims_false_alarm_budget = 0.05\n")
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*families (one false-alarm budget each)*", FAMILY_LINE])
    statements = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"]
    outcomes = {s["statement"]: s["outcome"] for s in statements}
    assert outcomes == {"a": HELD, "b": HELD, "c": INCONCLUSIVE}
    members = next(s for s in statements if s["statement"] == "b")["evidence"]["settings"]["members"]
    assert {k: v["decision"] for k, v in members.items()} == outcomes
    pytester.makepyfile(test_family=TESTS.replace("{alpha}", "0.1"))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*alpha=0.1 differs from family 'settings'*registered alpha 0.05*"])


def test_a_merge_keeps_the_family_records(pytester, tmp_path, capsys):
    """verdicts.json carries each claim's [[claim.family]] records beside its statements' registry records, and
    `pytest-claims-merge` keeps them (read back, checked as the registry's, written again), with the family's row in
    the false-alarm budget and each member's family evidence; a family record that names no statement of its claim is
    refused in one line naming the file, the claim and the family."""
    from pytest_claims.merge.command import main as merge_main

    ini = INI.replace("claims_tiers = smoke full", "claims_tiers = smoke") + "claims_false_alarm_budget = 0.05\n"
    pytester.makefile(".ini", pytest=ini)
    pytester.makefile(".toml", registry=_registry(FAMILY))
    pytester.makepyfile(test_family=TESTS.replace("{alpha}", "None"))
    pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    run = pytester.path / "out" / "verdicts.json"
    written = json.loads(run.read_text())
    family = {"name": "settings", "statements": ["a", "b", "c"], "alpha": 0.05, "method": "holm"}
    assert written["claims"][0]["registry"]["families"] == [family]
    assert merge_main([str(run), "-o", str(tmp_path / "merged")]) in (0, 1)
    merged = json.loads((tmp_path / "merged" / "verdicts.json").read_text())
    assert merged["claims"][0]["registry"]["families"] == [family]
    rows = [r["statement"] for tier in merged["false_alarm"]["tiers"].values() for r in tier["statements"]]
    assert "family settings (a, b, c)" in rows
    kept = {s["statement"]: s["evidence"]["settings"]["members"] for s in merged["claims"][0]["statements"]}
    assert kept == {s["statement"]: s["evidence"]["settings"]["members"] for s in written["claims"][0]["statements"]}
    written["claims"][0]["registry"]["families"][0]["statements"] = ["a", "z"]
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(written))
    capsys.readouterr()
    assert merge_main([str(tampered), "-o", str(tmp_path / "refused")]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "claim toy/family: family 'settings' names unknown statement(s) ['z']" in said[0]


def test_a_merge_of_a_file_written_before_families_were_recorded_names_it_to_rerun(pytester, tmp_path, capsys):
    """A verdicts.json written before registry records carried `families` (no such key), merged with a newer run of
    a claim that has a family: its record differs only by the families it could not record, and the merge says so in
    one line naming the older file and to rerun it (not the bare "registry record differs"); the claim is broken."""
    from pytest_claims.merge.command import main as merge_main

    ini = INI.replace("claims_tiers = smoke full", "claims_tiers = smoke") + "claims_false_alarm_budget = 0.05\n"
    pytester.makefile(".ini", pytest=ini)
    pytester.makefile(".toml", registry=_registry(FAMILY))
    pytester.makepyfile(test_family=TESTS.replace("{alpha}", "None"))
    files = []
    for name in ("older", "newer"):
        pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-o", f"claims_report_dir={name}")
        files.append(pytester.path / name / "verdicts.json")
    older = json.loads(files[0].read_text())
    del older["claims"][0]["registry"]["families"]  # as an older pytest-claims wrote it
    files[0].write_text(json.dumps(older))
    assert merge_main([*map(str, files), "-o", str(tmp_path / "merged")]) == 1
    record = json.loads((tmp_path / "merged" / "verdicts.json").read_text())["claims"][0]
    line = f"registry record differs between the merged runs: {files[0]} records no families (written by an older"
    assert record["verdict"] == "broken" and any(p.startswith(line) for p in record["problems"]), record["problems"]
    assert any(p.endswith("rerun it") for p in record["problems"]), record["problems"]
    edited = dict(older["claims"][0], statement=older["claims"][0]["statement"] + " (edited)")
    files[0].write_text(json.dumps(dict(older, claims=[edited])))  # differs in more than families: the bare line
    assert merge_main([*map(str, files), "-o", str(tmp_path / "merged2")]) == 1
    problems = json.loads((tmp_path / "merged2" / "verdicts.json").read_text())["claims"][0]["problems"]
    assert "registry record differs between the merged runs" in problems, problems


def test_the_terminal_line_says_when_members_decided_from_different_statistics():
    from pytest_claims.statements.families import family_lines

    def member(name: str, p_b: float) -> dict:
        found = {"family": "f", "method": "holm", "alpha": 0.05, "members": {"a": {"decision": HELD}}}
        found["members"]["b"] = {"decision": HELD if p_b < 0.025 else INCONCLUSIVE}
        return {"statement": name, "evidence": {"f": found}}

    same = {"claims": [{"id": "c", "statements": [member("a", 0.01), member("b", 0.01)]}]}
    assert family_lines(same) == ["c: family 'f' by holm at family-wise 0.05: a held, b held"]
    differ = {"claims": [{"id": "c", "statements": [member("a", 0.01), member("b", 0.03)]}]}
    assert "passed different statistics" in family_lines(differ)[0]


def test_decided_families_reads_each_family_once_with_its_members_numbers():
    """decided_families (the data the terminal lines and the HTML section are built from): one entry per family of
    a claim, with the record's method, levels and each member's statistics; numbers the record does not hold as
    numbers (a payload is data from elsewhere) read None, not an error."""
    from pytest_claims.statements.families import decided_families

    record = {
        "family": "f",
        "method": "e-merging",
        "alpha": 0.05,
        "held_alpha": 0.1,
        "members": {"a": {"decision": HELD, "for": 4.5, "against": -1.0}, "b": {"decision": INCONCLUSIVE}},
    }
    other = {**record, "family": "g", "alpha": "0.05", "members": {"c": "not a record"}}
    payload = {
        "claims": [
            {"id": "c1", "statements": [{"evidence": {"f": record, "x": {"family": "no members"}}}]},
            {"id": "c1", "statements": [{"evidence": {"f": record}}, {"evidence": {"g": other}}]},
        ]
    }
    first, second = decided_families(payload)
    assert (first.claim, first.name, first.method, first.alpha, first.held_alpha) == ("c1", "f", "e-merging", 0.05, 0.1)
    assert first.statistic == "ln E" and not first.statistics_differ
    assert [(m.name, m.decision, m.for_statistic, m.against_statistic) for m in first.members] == [
        ("a", HELD, 4.5, -1.0),
        ("b", INCONCLUSIVE, None, None),
    ]
    assert (second.name, second.alpha, second.members[0].decision) == ("g", None, "None")
    payload["claims"][1]["statements"][0]["evidence"]["f"] = {**record, "members": {"a": {"decision": REFUTED}}}
    assert decided_families(payload)[0].statistics_differ
    assert decided_families({"claims": [{"id": "c", "statements": [{"evidence": None}]}]}) == []


def family_rows(page: str) -> list[list[str]]:
    """The families table's member rows, each a list of its cells' text (tags dropped, entities read)."""
    import html
    import re

    found = re.search(r'<table class="families">(.*?)</table>', page, re.S)
    assert found, "no families table"
    rows = re.findall(r'<tr class="family-member"[^>]*>(.*?)</tr>', found.group(1), re.S)
    return [
        [html.unescape(re.sub(r"<[^>]+>", " ", c)).split() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in rows
    ]


def _family_run(pytester):
    """The toy family decided in one smoke run with an HTML report (out/report.html). Returns pytester's result."""
    ini = INI.replace("claims_tiers = smoke full", "claims_tiers = smoke") + "claims_false_alarm_budget = 0.05\n"
    pytester.makefile(".ini", pytest=ini)
    pytester.makefile(".toml", registry=_registry(FAMILY))
    pytester.makepyfile(test_family=TESTS.replace("{alpha}", "None"))
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--html=out/report.html")


def test_the_html_report_and_the_merged_page_show_the_family(pytester, tmp_path):
    """The run's page (pytest-html) and the merge's page each have a Families section: the family's claim, name,
    method and family-wise alpha once, and a row per member with its adjusted decision (the outcome its test ended
    with) and its p-values for and against, as the members' evidence recorded them."""
    from pytest_claims.merge.command import main as merge_main
    from pytest_claims.stats.shown_numbers import significant

    result = _family_run(pytester)
    statements = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"]
    outcomes = {s["statement"]: s["outcome"] for s in statements}
    assert outcomes == {"a": HELD, "b": HELD, "c": INCONCLUSIVE}, result.stdout.str()[-2000:]
    p = {"a": (0.001, 0.999), "b": (0.02, 0.98), "c": (0.5, 0.5)}  # TESTS's P
    expected = [
        [[name], [outcomes[name]], ["p", "=", significant(p[name][0])], ["p", "=", significant(p[name][1])]]
        for name in "abc"
    ]
    expected[0] = [["toy/family", "#"], ["settings"], ["holm"], ["0.05", "to", "refute", "0.05", "to", "hold"]] + (
        expected[0]
    )
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(tmp_path / "merged")]) in (0, 1)
    for page in (pytester.path / "out" / "report.html", tmp_path / "merged" / "verdict.html"):
        text = page.read_text()
        assert text.count("<h2>Families</h2>") == 1 and 'rowspan="3"' in text, page
        assert family_rows(text) == expected, page


HOSTILE = '<script>alert("family")</script>'


def test_the_families_section_escapes_what_the_payload_says(pytester, tmp_path):
    """A verdicts.json is data from elsewhere: a family name, method, member name and decision that carry markup
    reach the merged page escaped, never as markup (the family section reads them from the members' evidence)."""
    import html

    from pytest_claims.merge.command import main as merge_main

    _family_run(pytester)
    run = pytester.path / "out" / "verdicts.json"
    written = json.loads(run.read_text())
    for statement in written["claims"][0]["statements"]:
        record = statement["evidence"]["settings"]
        record.update(family=HOSTILE, method=HOSTILE.replace("family", "method"))
        record["members"] = {
            HOSTILE.replace("family", k): {**v, "decision": f"<b>{k}</b>"} for k, v in record["members"].items()
        }
    run.write_text(json.dumps(written))
    assert merge_main([str(run), "-o", str(tmp_path / "merged")]) in (0, 1)
    page = (tmp_path / "merged" / "verdict.html").read_text()
    assert "<script>alert" not in page and "<b>a</b>" not in page
    section = page[page.index('<table class="families">') :]
    section = section[: section.index("</table>")]
    shown = [html.escape(HOSTILE.replace("family", k)) for k in ("family", "method", "a", "b", "c")]
    assert all(text in section for text in [*shown, html.escape("<b>a</b>")]), section


def test_a_family_decided_at_two_tiers_of_a_merge_is_one_per_tier_and_says_its_tier():
    """A merge of a smoke and a full run holds a family's records from both tiers: each tier's records are that tier's
    decision (not members' tests that passed different statistics), and the tier is shown only where there are
    several."""
    from pytest_claims.report.html_report import families_html
    from pytest_claims.statements.families import decided_families, family_lines

    def member(name: str, tier: str, b_decision: str) -> dict:
        found = {"family": "f", "method": "holm", "alpha": 0.05, "members": {"a": {"decision": HELD}}}
        found["members"]["b"] = {"decision": b_decision}
        return {"statement": name, "tier": tier, "evidence": {"f": found}}

    merged = [member("a", "smoke", INCONCLUSIVE), member("b", "full", HELD)]  # each tier's own statistics
    lines = family_lines({"claims": [{"id": "c", "statements": merged}]})
    assert lines == [
        "c: family 'f' (smoke tier) by holm at family-wise 0.05: a held, b inconclusive",
        "c: family 'f' (full tier) by holm at family-wise 0.05: a held, b held",
    ]
    page = families_html(decided_families({"claims": [{"id": "c", "statements": merged}]}))
    assert "smoke tier" in page and "full tier" in page and "different statistics" not in page
    one_tier = [member("a", "smoke", HELD), member("b", "smoke", HELD)]
    (line,) = family_lines({"claims": [{"id": "c", "statements": one_tier}]})
    assert "tier" not in line and "tier" not in families_html(
        decided_families({"claims": [{"id": "c", "statements": one_tier}]})
    )
    differ = [member("a", "smoke", HELD), member("b", "smoke", INCONCLUSIVE), member("a", "full", HELD)]
    smoke, full = decided_families({"claims": [{"id": "c", "statements": differ}]})
    assert (smoke.tier, smoke.statistics_differ, full.tier, full.statistics_differ) == ("smoke", True, "full", False)


FILTER_HARNESS = """
// the page's filter script run on stand-ins of the page's elements: a claim row and a family row, the filters set
var rows = JSON.parse(process.argv[1]), want = JSON.parse(process.argv[2]);  // node -e: argv[1] is the first
var boxes = Object.keys(want.verdicts).map(function (v) { return {dataset: {verdict: v}, checked: want.verdicts[v]}; });
var trs = rows.map(function (r) { return {dataset: r, hidden: false}; });
var root = {querySelectorAll: function (q) {
              return q.indexOf('input') >= 0 ? boxes : q.indexOf('tr[') === 0 ? trs : []; },
            querySelector: function (q) { return {value: q.indexOf('paper') >= 0 ? want.paper : want.tier}; }};
var document = {querySelector: function () { return root; }};
eval(process.argv[3] + ';claimsFilter();');
console.log(JSON.stringify(trs.map(function (t) { return t.hidden; })));
"""


def test_a_familys_rows_carry_their_claims_verdict_tiers_and_paper_for_the_filters(pytester, tmp_path):
    """The page's filters (verdict boxes, paper and tier selects) hide a claim's rows; a family's rows in the
    Families section carry their claim's verdict, tiers and paper, so the filters hide them with it (they stayed
    shown under every filter before). Where node is on PATH, the page's own script is run on the rows' data."""
    import re
    import shutil
    import subprocess

    from pytest_claims.merge.command import main as merge_main
    from pytest_claims.report.style import SCRIPT

    _family_run(pytester)
    claim = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(tmp_path / "merged")]) in (0, 1)
    for page in (pytester.path / "out" / "report.html", tmp_path / "merged" / "verdict.html"):
        text = page.read_text()
        found = re.findall(r'<tr class="family-member"([^>]*)>', text)
        tiers = " ".join(sorted(set(claim["tiers_run"]) | {s["tier"] for s in claim["statements"]}))
        wanted = f' data-verdict="{claim["verdict"]}" data-tiers="{tiers}" data-paper="{claim["paper"]}"'
        assert found == [wanted] * 3, (page, found)
    node = shutil.which("node")
    if node is None:
        return  # the attributes are checked above; the script's reading of them needs a JavaScript engine
    script = re.search(r"^function claimsFilter\(\)\{.*?^\}$", SCRIPT, re.S | re.M).group(0)  # the filter alone
    family = {"verdict": claim["verdict"], "tiers": tiers, "paper": claim["paper"]}
    claim_row = {"verdict": claim["verdict"], "tiers": tiers}  # a claim's rows sit in their paper's section
    cases = [  # (filters, hidden as [claim row, family row])
        ({"verdicts": {claim["verdict"]: True}, "paper": "", "tier": ""}, [False, False]),
        ({"verdicts": {claim["verdict"]: False}, "paper": "", "tier": ""}, [True, True]),
        ({"verdicts": {claim["verdict"]: True}, "paper": "another", "tier": ""}, [False, True]),
        ({"verdicts": {claim["verdict"]: True}, "paper": claim["paper"], "tier": "gpu"}, [True, True]),
    ]
    for want, hidden in cases:
        ran = subprocess.run(
            [node, "-e", FILTER_HARNESS, json.dumps([claim_row, family]), json.dumps(want), script],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == hidden, (want, ran.stdout)
