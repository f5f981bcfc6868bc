"""stale_mutants: the cheap check that a catalogue still applies to the code it mutates."""

from __future__ import annotations

import sys
import textwrap

import pytest

from pytest_claims.roles.mutants import stale_mutants


@pytest.fixture
def catalogue_of(tmp_path, monkeypatch):
    """Write a kernel module and a catalogue module naming its mutants; return the catalogue's name."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(kernel: str, mutants: str) -> str:
        for name in ("stale_kernel", "stale_catalogue"):
            sys.modules.pop(name, None)
        (tmp_path / "stale_kernel.py").write_text(textwrap.dedent(kernel))
        (tmp_path / "stale_catalogue.py").write_text(
            "from pytest_claims.roles.mutants import Mutant\n\nMUTANTS = [\n" + textwrap.dedent(mutants) + "]\n"
        )
        return "stale_catalogue"

    yield write
    for name in ("stale_kernel", "stale_catalogue"):
        sys.modules.pop(name, None)


KERNEL = """
def mean(xs):
    return sum(xs) / len(xs)
"""


@pytest.mark.smoke
def test_a_catalogue_that_applies_has_no_stale_mutants(catalogue_of):
    name = catalogue_of(KERNEL, 'Mutant("off-by-one", target="stale_kernel:mean", old="len(xs)", new="len(xs) + 1"),\n')
    assert stale_mutants(name) == []


@pytest.mark.smoke
def test_each_mutant_that_no_longer_applies_is_one_line_naming_it(catalogue_of):
    name = catalogue_of(
        KERNEL,
        """\
        Mutant("renamed", target="stale_kernel:average", old="len(xs)", new="1"),
        Mutant("reformatted", target="stale_kernel:mean", old="sum(xs)/len(xs)", new="0"),
        Mutant("twice", target="stale_kernel:mean", old="xs", new="ys"),
        Mutant("not-python", target="stale_kernel:mean", old="len(xs)", new="len(xs"),
        Mutant("fine", target="stale_kernel:mean", old="len(xs)", new="2"),
        """,
    )
    problems = stale_mutants(name)
    assert len(problems) == 4, problems
    assert all(line.startswith("stale_catalogue: ") and "\n" not in line for line in problems)
    assert "no attribute 'average'" in problems[0]
    assert "'reformatted'" in problems[1] and "occurs 0 times" in problems[1]
    assert "'twice'" in problems[2] and "occurs 3 times" in problems[2]  # the signature too
    assert "'not-python'" in problems[3] and "is not Python" in problems[3]


@pytest.mark.smoke
def test_a_mutant_of_a_default_argument_changes_the_default_and_puts_it_back(catalogue_of):
    """A default is evaluated once, at `def`, and kept on the function object: swapping the code alone left
    `days=365` as it was, so such a mutant was accepted and then survived every test."""
    from pytest_claims.roles.mutants import applied, catalogue

    name = catalogue_of(
        """
        def per_day(total, days=365, *, scale=1.0):
            return scale * total / days
        """,
        """\
        Mutant("leap", target="stale_kernel:per_day", old="days=365", new="days=366"),
        Mutant("scaled", target="stale_kernel:per_day", old="scale=1.0", new="scale=2.0"),
        """,
    )
    import stale_kernel

    mutants = catalogue(name)
    assert stale_kernel.per_day(732) == 732 / 365
    with applied(mutants["leap"]):
        assert stale_kernel.per_day(732) == 2.0
    with applied(mutants["scaled"]):
        assert stale_kernel.per_day(730) == 4.0
    assert stale_kernel.per_day(730, 365) == 2.0 and stale_kernel.per_day.__kwdefaults__ == {"scale": 1.0}


def _report(when: str, outcome: str, *, assertion: bool = False, message: str = "", inconclusive: str = ""):
    from types import SimpleNamespace

    longrepr = SimpleNamespace(reprcrash=SimpleNamespace(message=message)) if message else None
    report = pytest.TestReport("t.py::t", ("t.py", 0, "t"), {}, outcome, longrepr, when)
    report.claims_assertion = assertion  # what the worker side sets while a mutant is applied
    if inconclusive:
        report.claims_inconclusive = inconclusive
    return report


@pytest.mark.smoke
def test_a_mutant_result_is_classified_by_the_exception_type_not_its_message():
    """The words of a message never decide a mutant's end: the attributes the worker sets do (the exception's type)."""
    from pytest_claims.roles.mutants import classify

    passed = _report("setup", "passed")
    setup_error = _report("setup", "failed", message="RuntimeError: no ClaimRefuted here, nor an AssertionError")
    found = classify("m", [setup_error])
    assert (found.killed, found.outcome, found.kind) == (False, "error", "errored")  # the message names ClaimRefuted
    setup_assert = _report("setup", "failed", assertion=True, message="a guard in a fixture")
    assert classify("m", [setup_assert]).kind == "errored"  # a failed setup broke the code, whatever it raised
    worded = classify("m", [passed, _report("call", "failed", assertion=True, message="ClaimRefuted: x")])
    assert (worded.killed, worded.kind) == (True, "guard")  # an AssertionError that only says ClaimRefuted
    refuted_report = _report("call", "failed", assertion=True, message="a refutation in other words")
    refuted_report.claims_refuted = True  # what the worker sets for a ClaimRefuted
    refuted = classify("m", [passed, refuted_report])
    assert (refuted.killed, refuted.kind) == (True, "refuted")
    undecided = classify("m", [passed, _report("call", "skipped", inconclusive="straddles")])
    assert (undecided.killed, undecided.outcome, undecided.kind) == (False, "inconclusive", "undecided")
    held = classify("m", [passed, _report("call", "passed"), _report("teardown", "passed")])
    assert (held.killed, held.outcome) == (False, "held")
