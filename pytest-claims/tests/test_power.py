"""Honest power: how each mutant ended (refuted, guard, errored, undecided, survived), which of those are kills,
the registry's expected ends, and the mutants in the terminal and over xdist workers, end to end (pytester)."""

from __future__ import annotations

import json

import pytest

from pytest_claims.model.registry import RegistryError, load_registry
from pytest_claims.model.verdicts import StatementRun, end_of, power

pytestmark = pytest.mark.smoke

INI = """
[pytest]
claims_registry = registry.toml
claims_tiers = smoke full
claims_report_dir = out
claims_mutants = rect_mutants
"""

REGISTRY = """
[paper.toy]
title = "A toy paper"
source = "nowhere"

[[claim]]
id = "toy/rect"
key = "R1"
paper = "toy"
where = "Eq. 1"
text = "a rectangle's area is its width times its height"
provenance = ""
expected = "verified"
tests = "test_rect.py"

[[claim.statement]]
name = "area"
text = "area(2, 3) = 6"
expected = "holds"
mutants = {area_mutants}
{area_expected}

[[claim.statement]]
name = "perimeter"
text = "perimeter(1, 2) = 6"
expected = "holds"
mutants = ["perimeter-plus-one"]

[[claim.statement]]
name = "square"
text = "a measured square's area is its side squared"
expected = "holds"
mutants = ["no-side"]
{square_expected}

[[claim.statement]]
name = "as-printed"
text = "area(2, 3) = 5 (false)"
expected = "refuted"
refutes_claim = false
required = false
mutants = ["w-plus-h"]
"""

KERNEL = """
def area(w, h):
    return w * h


def perimeter(w, h):
    return 2 * (w + h)


def side():
    return 4
"""

MUTANTS = """
from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant("w-plus-h", "rect:area", "return w * h", "return w + h", "a sum for a product"),
    Mutant("refuting", "rect:area", "return w * h", "return w * h if w == 0 else w * h + 1", "off by one"),
    Mutant("errors", "rect:area", "return w * h", "return w * undefined_name", "a typo"),
    Mutant("survives", "rect:area", "return w * h", "return h * w", "the same product"),
    Mutant("perimeter-plus-one", "rect:perimeter", "2 * (w + h)", "2 * (w + h) + 1", "off by one"),
    Mutant("no-side", "rect:side", "return 4", "return None", "nothing measured"),
]
"""

TESTS = """
import pytest

import rect
from pytest_claims import StatementInconclusive, statement_holds


@pytest.mark.smoke
@pytest.mark.claim("toy/rect", statement="area")
def test_area():
    assert rect.area(0, 5) == 0, "reference: a zero-width rectangle has zero area"
    statement_holds(rect.area(2, 3) == 6, f"area(2, 3) = {rect.area(2, 3)}")


@pytest.mark.smoke
@pytest.mark.claim("toy/rect", statement="perimeter")
def test_perimeter():
    assert rect.perimeter(0, 0) == 0
    statement_holds(rect.perimeter(1, 2) == 6, f"perimeter(1, 2) = {rect.perimeter(1, 2)}")


@pytest.mark.smoke
@pytest.mark.claim("toy/rect", statement="square")
def test_square():
    side = rect.side()
    if side is None:
        raise StatementInconclusive("no side was measured")
    statement_holds(rect.area(side, side) == side**2, "area of a square")


@pytest.mark.smoke
@pytest.mark.claim("toy/rect", statement="as-printed")
def test_as_printed():
    statement_holds(rect.area(2, 3) == 5, f"area(2, 3) = {rect.area(2, 3)}, not 5")
"""

ALL_AREA = '["w-plus-h", "refuting", "errors", "survives"]'
EXPECTED_ENDS = {
    "area_expected": 'mutants_expected_end = { errors = "errored: a NameError, as a typo would" }',
    "square_expected": 'mutants_expected_end = { no-side = "undecided: nothing measured decides nothing" }',
}


def make(pytester: pytest.Pytester, area_mutants: str = ALL_AREA, area_expected: str = "", square_expected: str = ""):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(
        ".toml",
        registry=REGISTRY.format(
            area_mutants=area_mutants, area_expected=area_expected, square_expected=square_expected
        ),
    )
    pytester.makepyfile(rect=KERNEL, rect_mutants=MUTANTS, test_rect=TESTS)
    pytester.syspathinsert()
    return pytester


def claim(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]


def ends(record: dict) -> dict[str, dict[str, str]]:
    return {s["statement"]: {m["mutant"]: m["kind"] for m in s["mutants"]} for s in record["statements"]}


def test_each_mutant_is_recorded_by_how_it_ended(pytester):
    make(pytester)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants")
    assert result.ret == 1
    record = claim(pytester)
    assert ends(record) == {
        "area": {"w-plus-h": "guard", "refuting": "refuted", "errors": "errored", "survives": "survived"},
        "perimeter": {"perimeter-plus-one": "guard"},
        "square": {"no-side": "undecided"},
        "as-printed": {"w-plus-h": "refuted"},  # the registered refutation stopped: strict XPASS
    }
    strength = record["power"]
    assert strength["kinds"] == {
        "refuted": 2,
        "guard": 2,
        "errored": 1,
        "timeout": 0,
        "crashed": 0,
        "undecided": 1,
        "survived": 1,
    }
    assert (strength["killed"], strength["of"]) == (4, 7)  # errored and undecided are not kills
    assert strength["survivors"] == ["area: survives"]
    assert strength["unexplained"] == ["area: errors (errored)", "square: no-side (undecided)"]
    assert record["verdict"] == "broken" and "area: errors (errored)" in record["reason"]
    details = {(s["statement"], m["mutant"]): m["detail"] for s in record["statements"] for m in s["mutants"]}
    assert details["area", "w-plus-h"] == "test_rect.py:10: reference: a zero-width rectangle has zero area"
    assert details["perimeter", "perimeter-plus-one"].startswith("test_rect.py:17: (no message) assert 1 == 0")
    assert "NameError" in details["area", "errors"] and details["square", "no-side"] == "no side was measured"


def test_an_errored_or_undecided_end_alone_breaks_the_claim(pytester):
    make(pytester, area_mutants='["w-plus-h", "errors"]')
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret == 1
    record = claim(pytester)
    assert record["verdict"] == "broken" and not record["power"]["survivors"]
    assert "crashed or undecided" in record["reason"] and "square: no-side (undecided)" in record["reason"]


def test_the_registry_can_say_why_an_end_is_expected(pytester):
    make(pytester, area_mutants='["w-plus-h", "refuting", "errors"]', **EXPECTED_ENDS)
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "--claims-mutants", "--html=out/report.html"
    )
    assert result.ret == 0
    page = (pytester.path / "out" / "report.html").read_text()
    ends = (
        "held (registered refuted): killed 1, refuted (registered holds): killed 1, "
        "a guard failed (registered holds): killed 2, errored (registered holds): not a kill 1, "
        "inconclusive (registered holds): not a kill 1; 2 as the registry expects"
    )
    assert "killed 4 of 6" in page and ends in page
    record = claim(pytester)
    assert record["verdict"] == "verified"
    strength = record["power"]
    assert (strength["killed"], strength["of"], strength["expected"]) == (4, 6, 2)  # still not counted as kills
    assert strength["statements"]["area"]["expected_ends"] == {"errors": "errored: a NameError, as a typo would"}
    result.stdout.fnmatch_lines(
        [
            "*R1  verified*[[]mutants killed 4/6: *errored (registered holds): not a kill 1, inconclusive (registered "
            "holds): not a kill 1, 2 errored or undecided as the registry*"
        ]
    )


def test_an_expected_end_must_match_how_it_ended(pytester):
    """A reason for `undecided` does not excuse an `errored` end."""
    make(
        pytester,
        area_mutants='["w-plus-h", "errors"]',
        area_expected='mutants_expected_end = { errors = "undecided: wrong kind" }',
        square_expected=EXPECTED_ENDS["square_expected"],
    )
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret == 1
    assert claim(pytester)["power"]["unexplained"] == ["area: errors (errored)"]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ('mutants_expected_end = { survives = "errored: x" }', "names 'survives', not a mutant the statement lists"),
        ('mutants_expected_end = { errors = "crashed: x" }', "must read 'errored: why' or 'undecided: why'"),
        ('mutants_expected_end = { errors = "errored:" }', "must read 'errored: why' or 'undecided: why'"),
        ("mutants_expected_end = { errors = 3 }", "must read 'errored: why' or 'undecided: why'"),
        ('mutants_expected_end = "errored: x"', "field 'mutants_expected_end' must be a table"),
    ],
)
def test_a_bad_expected_end_is_one_line(pytester, field, message):
    make(pytester, area_mutants='["w-plus-h", "errors"]', area_expected=field)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and message in errors[0] and "toy/rect:area" in errors[0], result.stderr.lines


def test_verbose_shows_a_line_per_mutant_and_progress_per_statement(pytester):
    make(pytester)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants", "-v")
    result.stdout.fnmatch_lines_random(
        [
            "test_rect.py::test_area@w-plus-h KILLED: a guard failed (registered holds)*",
            "test_rect.py::test_area@refuting KILLED: refuted (registered holds)*",
            "test_rect.py::test_as_printed@w-plus-h KILLED: held (registered refuted)*",
            "test_rect.py::test_area@errors ERRORED*",
            "test_rect.py::test_area@survives SURVIVED*",
            "test_rect.py::test_square@no-side UNDECIDED*",
            "mutants of toy/rect:area killed 2/4 (a guard failed (registered holds): killed 1, "
            "refuted (registered holds): killed 1, errored (registered holds): not a kill 1, "
            "held (registered holds): survived 1)  [[]*::test_area]",
            "mutants of toy/rect:square killed 0/1 (inconclusive (registered holds): not a kill 1)  "
            "[[]test_rect.py::test_square]",
        ]
    )
    # the items pass: a mutant one test misses may be killed by another of the statement (the verdict decides)
    counts = result.stdout.lines[-1]
    assert "3 passed" in counts and "4 mutants killed" in counts and "3 mutants not killed" in counts, counts
    assert " failed" not in counts
    quiet = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants")
    quiet.stdout.fnmatch_lines(["mutants of toy/rect:area killed 2/4*"])  # progress without -v too


def test_mutants_of_one_statement_spread_over_workers_with_the_same_verdicts(pytester):
    make(pytester)
    serial = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", "--claims-mutants", "-p", "no:randomly")
    before = claim(pytester)
    result = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", "--claims-mutants", "-n", "2", "-v")
    assert (serial.ret, result.ret) == (1, 1)
    after = claim(pytester)
    for key in ("verdict", "reason", "power"):
        assert after[key] == before[key]
    assert [s["mutants"] for s in after["statements"]] == [s["mutants"] for s in before["statements"]]
    # each (test, mutant) pair is an item of its own, run once, on whichever worker xdist's load scheduling
    # hands it to (which one depends on timing, so only that both workers ran items is asserted)
    ran = [line.split() for line in result.stdout.lines if line.startswith("[gw") and "::" in line]
    area_items = sorted(words[-1].split("::")[-1] for words in ran if "::test_area@" in words[-1])
    assert area_items == [f"test_area@{m}" for m in sorted(json.loads(ALL_AREA))], result.stdout.lines
    assert {words[0] for words in ran} == {"[gw0]", "[gw1]"}, result.stdout.lines


def test_results_written_before_the_kinds_are_read_by_their_outcome():
    """A verdicts.json of an earlier version (no `kind`) merges by the honest rules: an error is not a kill."""
    assert end_of({"mutant": "m", "killed": True, "outcome": "error"}) == "errored"
    assert end_of({"mutant": "m", "killed": True, "outcome": "inconclusive"}) == "undecided"
    assert end_of({"mutant": "m", "killed": True, "outcome": "failed"}) == "refuted"
    assert end_of({"mutant": "m", "killed": False, "outcome": "held"}) == "survived"


def test_an_undecided_mutant_beside_an_undecided_real_run_is_not_counted(tmp_path):
    path = tmp_path / "registry.toml"
    path.write_text(REGISTRY.format(area_mutants=ALL_AREA, area_expected="", square_expected=""), encoding="utf-8")
    record = load_registry(path, ("smoke", "full")).claims["toy/rect"]
    undecided = {"mutant": "no-side", "killed": False, "outcome": "inconclusive", "kind": "undecided"}
    beside = power(record, [StatementRun("t", "toy/rect", "square", "smoke", "inconclusive", mutants=[undecided])])
    assert beside["unexplained"] == [] and beside["statements"]["square"]["not_tried"] == ["no-side"]
    decided = power(record, [StatementRun("t", "toy/rect", "square", "smoke", "held", mutants=[undecided])])
    assert decided["unexplained"] == ["square: no-side (undecided)"]


def test_expected_ends_are_loaded_from_the_registry(tmp_path):
    path = tmp_path / "registry.toml"
    path.write_text(REGISTRY.format(area_mutants=ALL_AREA, **EXPECTED_ENDS), encoding="utf-8")
    statement = load_registry(path, ("smoke", "full")).claims["toy/rect"].statements["square"]
    assert statement.mutants_expected_end == {"no-side": "undecided: nothing measured decides nothing"}
    path.write_text(path.read_text().replace("no-side = ", "never-listed = "), encoding="utf-8")
    with pytest.raises(RegistryError, match="never-listed"):
        load_registry(path, ("smoke", "full"))


def test_a_merge_keeps_the_kinds_and_the_expected_ends(pytester):
    """The merge recomputes power from the runs and the registry record verdicts.json carries: the same split,
    the same expected ends, and an unexplained end still breaks the claim."""
    from pytest_claims.merge.command import main as merge_main

    make(pytester, area_mutants='["w-plus-h", "refuting", "errors"]', **EXPECTED_ENDS)
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret == 0
    single = claim(pytester)
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(pytester.path / "merged")]) == 0
    merged = json.loads((pytester.path / "merged" / "verdicts.json").read_text())["claims"][0]
    assert (merged["verdict"], merged["power"]) == (single["verdict"], single["power"])
    make(pytester, area_mutants='["w-plus-h", "errors"]')
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret == 1
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(pytester.path / "merged2")]) != 0
    merged = json.loads((pytester.path / "merged2" / "verdicts.json").read_text())["claims"][0]
    assert merged["verdict"] == "broken" and merged["power"]["unexplained"] == [
        "area: errors (errored)",
        "square: no-side (undecided)",
    ]


def test_mutant_items_follow_every_test_in_turns(pytester):
    """xdist hands out consecutive items in blocks: a statement's mutants must not be consecutive, or one worker
    gets them all (each test's first mutant, then each one's second, ...)."""
    make(pytester)
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "--claims-mutants", "--collect-only", "-q"
    )
    collected = [line for line in result.stdout.lines if line.startswith("test_rect.py::")]
    assert collected == [
        "test_rect.py::test_area",
        "test_rect.py::test_perimeter",
        "test_rect.py::test_square",
        "test_rect.py::test_as_printed",
        "test_rect.py::test_area@w-plus-h",
        "test_rect.py::test_perimeter@perimeter-plus-one",
        "test_rect.py::test_square@no-side",
        "test_rect.py::test_as_printed@w-plus-h",
        "test_rect.py::test_area@refuting",
        "test_rect.py::test_area@errors",
        "test_rect.py::test_area@survives",
    ]
    plain = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--collect-only", "-q")
    assert not [line for line in plain.stdout.lines if "@" in line]  # without --mutants: no mutant items


def test_a_mutant_beside_a_real_run_that_did_not_decide_is_never_counted_killed(tmp_path):
    """A statement registered refuted, inconclusive in the real run: its mutant that held is no kill (the
    statement never was refuted), and reads so."""
    path = tmp_path / "registry.toml"
    path.write_text(REGISTRY.format(area_mutants=ALL_AREA, area_expected="", square_expected=""), encoding="utf-8")
    record = load_registry(path, ("smoke", "full")).claims["toy/rect"]
    held = {"mutant": "w-plus-h", "killed": True, "outcome": "held", "kind": "refuted"}
    beside = power(record, [StatementRun("t", "toy/rect", "as-printed", "smoke", "inconclusive", mutants=[held])])
    assert (beside["killed"], beside["kinds"]["refuted"]) == (0, 0)
    assert beside["statements"]["as-printed"]["not_counted"] == ["w-plus-h"]
    assert beside["labels"] == {
        "held (registered refuted): not counted: the statement did not decide as registered without the mutant": 1
    }
    decided = power(record, [StatementRun("t", "toy/rect", "as-printed", "smoke", "refuted", mutants=[held])])
    assert decided["killed"] == 1 and decided["labels"] == {"held (registered refuted): killed": 1}
    refuted = {"mutant": "w-plus-h", "killed": True, "outcome": "refuted", "kind": "refuted"}
    holds = power(record, [StatementRun("t", "toy/rect", "area", "smoke", "inconclusive", mutants=[refuted])])
    assert holds["killed"] == 0 and holds["statements"]["area"]["not_counted"] == ["w-plus-h"]
    survived = {"mutant": "w-plus-h", "killed": False, "outcome": "refuted", "kind": "survived"}
    quiet = power(record, [StatementRun("t", "toy/rect", "as-printed", "smoke", "inconclusive", mutants=[survived])])
    assert quiet["survivors"] == []  # a survival beside an undecided real run breaks nothing either
