"""Fixed-sample or anytime-valid, per rate statement: the exact chance of each end at the tier's size, both ways.

    .venv/bin/python benchmarks/decision_choice.py reports/verdicts.json [NAME=VERDICTS_JSON ...]
    .venv/bin/python benchmarks/decision_choice.py --under NAME DIR PYTEST_ARGS...   # a run with mutant NAME applied

Reads every decide_rate decision a run recorded (its evidence: the counts, the threshold, the held and refuting
levels) and, for the rate it observed and for the rate each named mutant produced (a run's verdicts.json made
under that mutant with --under, which runs pytest in this process with the mutant applied, its evidence kept in
DIR: a --claims-mutants run keeps only how each mutant ended), prints the exact probability that one look at the same
number of trials ends held, refuted or inconclusive: under today's Clopper-Pearson rule and under the
beta-mixture e-process (the uniform prior, and the prior planned for this many trials, planned_prior). The
decision counts come from the plugin's own functions (decide.rate_decision_counts, anytime.anytime_decision_counts);
the probabilities are binomial tails at the observed rate, which stands in for the true one.

What it is for (issue 35 item 4): a statement the suite decides once, at its tier's registered size, keeps its
registered false alarm with either rule; the e-process pays for its second looks with power at the first. The
table says what that costs each statement, in its own numbers, and whether its mutants would still be refuted.
Not a pass/fail test: the registry's `decision` records the choice and cites this table (RESULTS.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pytest-claims" / "src"))

from scipy import stats  # noqa: E402

from pytest_claims.anytime.evalues import UNIFORM, anytime_decision_counts, planned_prior  # noqa: E402
from pytest_claims.statements.decide import rate_decision_counts  # noqa: E402
from pytest_claims.model.verdicts_json import PayloadError, read_any  # noqa: E402


def rate_decisions(payload: dict, mutant: str | None = None) -> list[dict]:
    """Each decide_rate decision in a verdicts.json: statement, mutant (or None), counts, threshold, side, levels."""
    found = []
    for claim in payload["claims"]:
        for statement in claim.get("statements", []):
            records = statement.get("evidence") or {}
            for what, record in records.items():
                counts = records.get(f"{what} counts")
                if not (isinstance(record, dict) and isinstance(counts, dict) and "refute_alpha" in record):
                    continue
                found.append(
                    {
                        "statement": f"{claim['key']} {statement['statement']}",
                        "tier": statement.get("tier"),
                        "mutant": mutant,
                        "what": what,
                        "successes": int(counts["successes"]),
                        "trials": int(counts["trials"]),
                        "threshold": float(record["threshold"]),
                        "at_least": ">=" in record["statement"],
                        "alpha": float(record["refute_alpha"]),
                        "held_alpha": 1.0 - float(record["held_confidence"]),
                    }
                )
    return found


def ends(decision: dict, rate: float, rule: str) -> tuple[float, float, float]:
    """(P held, P refuted, P inconclusive) of one look at the decision's trials when the true rate is `rate`."""
    n, t = decision["trials"], decision["threshold"]
    if not decision["at_least"]:  # 'rate <= t' is 'failure rate >= 1 - t', counted in failures
        t, rate = 1.0 - t, 1.0 - rate
    levels = {"alpha": decision["alpha"], "held_alpha": decision["held_alpha"]}
    if rule == "fixed":
        refuted_max, held_min = rate_decision_counts(n, t, **levels)
    else:
        prior = UNIFORM if rule == "anytime" else planned_prior(t, n, min(levels.values()))
        refuted_max, held_min = anytime_decision_counts(n, t, prior=prior, **levels)
    held = float(stats.binom.sf(held_min - 1, n, rate))
    refuted = float(stats.binom.cdf(refuted_max, n, rate)) if refuted_max >= 0 else 0.0
    return held, refuted, max(0.0, 1.0 - held - refuted)


def registered_mutants(registry: Path) -> dict[str, tuple[str, ...]]:
    """'KEY statement' -> the mutants the registry says the statement must kill (a row is shown for those only)."""
    import tomllib

    claims = tomllib.loads(registry.read_text())["claim"]
    return {f"{c['key']} {s['name']}": tuple(s.get("mutants", ())) for c in claims for s in c.get("statement", [])}


def _load(path: str) -> dict:
    """A verdicts.json read as the plugin reads any (bounded, checked to hold claims); one line if it cannot be."""
    try:
        return read_any(path)
    except PayloadError as error:
        raise SystemExit(str(error)) from None


def run_under(name: str, folder: str, pytest_args: list[str]) -> int:
    """pytest in this process with mutant `name` applied (the project's catalogue), reporting to `folder`."""
    import pytest

    from pytest_claims.roles.mutants import applied, catalogue

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    with applied(catalogue("claims.mutants")[name]):
        args = ["-p", "no:randomly", "--no-store", "-o", f"claims_report_dir={folder}", *pytest_args]
        return int(pytest.main(args))


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__.split("\n\n")[1])
    if argv[0] == "--under":
        raise SystemExit(run_under(argv[1], argv[2], argv[3:]))
    decisions = rate_decisions(_load(argv[0]))
    mutants = [d for arg in argv[1:] for d in rate_decisions(_load(arg.split("=", 1)[1]), arg.split("=", 1)[0])]
    registered = registered_mutants(Path(__file__).resolve().parents[1] / "claims" / "registry.toml")
    rules = ("fixed", "anytime", "planned")
    print("statement | tier | what | rate at | n | t | P held: fixed / anytime / planned | P refuted: same")
    for d in decisions:
        rows = [("observed", d["successes"] / d["trials"])]
        rows += [
            (f"mutant {m['mutant']}", m["successes"] / m["trials"])
            for m in mutants
            if m["mutant"] in registered.get(d["statement"], ())
            and (m["statement"], m["what"], m["tier"]) == (d["statement"], d["what"], d["tier"])
        ]
        for label, rate in rows:
            found = [ends(d, rate, rule) for rule in rules]
            held = " / ".join(f"{e[0]:.3g}" for e in found)
            refuted = " / ".join(f"{e[1]:.3g}" for e in found)
            side = ">=" if d["at_least"] else "<="
            print(
                f"{d['statement']} | {d['tier']} | {d['what']} | {label} {rate:.3f} | {d['trials']} | {side} "
                f"{d['threshold']:g} | {held} | {refuted}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
