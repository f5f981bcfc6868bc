"""Issue 47's pooling rows: how users merge a replication set, each behaviour simulated under nulls and merged through
the plugin's own merge code (pytest_claims.merge.pool.pool_seeds, which checks the declared replication set of
pytest_claims.merge.replication_set and joins the chains), against the same chains joined "as given" (the chain the
merge joined before the check: derive_chain over the seeds' batches in seed order, decided at its first crossing).

Each seed's chain is built as a run writes it (its batches' data, stream ids under the seed, the run id that names its
start, everything else derived by pytest_claims.anytime.chain_kinds), so pool_seeds reads it back through the ledger's
checks. A false alarm is a "held" that the merge reports: the pooled outcome (or, in a merge of one seed, that seed's
own), with 'rate >= t' or 'mean > c' false at the boundary (rate exactly t, mean exactly c). Imported by
anytime_means_type_one.py, which prints the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pytest_claims.anytime.chain_kinds import decide_chain, derive_chain
from pytest_claims.outcomes import HELD
from pytest_claims.merge.pool import pool_seeds
from scipy import stats

ALPHA = 0.05
TEST = "t"
SIZES = {  # replicates per row, seeds of the cherry-picking rows, how many of the nulls (in `nulls`' order)
    "ci": {"runs": 30, "picked_from": (30,), "nulls": 2},
    "large": {"runs": 1000, "picked_from": (30, 100), "nulls": 4},
}
CHECK_FALSE_ALARM = 1e-3  # the chance that a row of a valid route is marked NO by Monte Carlo error alone


@dataclass(frozen=True)
class Null:
    """A chain kind under a null on the statement's boundary: its statement parameters, one batch's data drawn, and
    whether a batch's data favour the statement (what a user who picks seeds looks at)."""

    name: str
    statement: dict[str, Any]
    draw: Callable[[Any], dict[str, Any]]
    favours: Callable[[dict[str, Any]], bool]


def _rate(t: float, n: int, name: str) -> Null:
    statement = {"what": "rate", "threshold": t, "at_least": True, "alpha": ALPHA, "held_alpha": ALPHA}
    statement["prior"] = {"a": 1.0, "b": 1.0, "point_mass": 0.0}
    return Null(
        f"{name}: Bernoulli({t}), 'rate >= {t}', batches of {n}",
        statement,
        lambda rng: {"successes": int(rng.binomial(n, t)), "trials": n},
        lambda data: data["successes"] > t * data["trials"],
    )


def _betting(draw: Callable, mean: float, n: int, name: str) -> Null:
    statement = {"what": "mean", "kind": "betting", "lo": 0.0, "hi": 1.0, "threshold": mean, "at_least": True}
    statement.update(alpha=ALPHA, held_alpha=ALPHA)
    return Null(
        f"{name}, mean > c by betting, batches of {n}",
        statement,
        lambda rng: {"values": [float(v) for v in draw(rng, n)]},
        lambda data: float(np.mean(data["values"])) > mean,
    )


def nulls(means_nulls: dict[str, tuple[Callable, float]]) -> list[Null]:
    """Discrete (rates: symmetric, and skewed at 0.05) and continuous (betting: skewed, heavy-tailed) nulls, in the
    order a smaller size takes them."""
    skewed = next(k for k in means_nulls if k.startswith("skewed, heavy"))
    heavy = next(k for k in means_nulls if k.startswith("heavy-tailed"))
    return [
        _rate(0.5, 50, "discrete"),
        _betting(*means_nulls[skewed], 10, skewed),
        _rate(0.05, 200, "discrete, skewed"),
        _betting(*means_nulls[heavy], 10, heavy),
    ]


# ------------------------------------------------------------------------------------------------
# Chains as a run writes them, and the merge


def run_id(second: int) -> str:
    """A run id whose start is `second` seconds after 2026-12-05 00:00:00 UTC (report_files.new_report_id's form)."""
    return f"20261205T{second // 3600:02d}{second // 60 % 60:02d}{second % 60:02d}Z-bench-1-0"


def chain(null: Null, seed: int, data: list[dict[str, Any]], starts: list[int], label: int | None = None) -> dict:
    """The ledger batches of `data` drawn under master seed `seed` by runs started at `starts` (seconds), their stream
    ids naming seed `label` (default: `seed`; another label is a stream id rewritten)."""
    batches = [
        {"batch": i, "stream": f"seed={seed if label is None else label}|test={TEST}|batch={i}", "run": run_id(s), **d}
        for i, (d, s) in enumerate(zip(data, starts))
    ]
    return [dict(b, **derived) for b, derived in zip(batches, derive_chain(null.statement, batches))]


def payload(null: Null, batches: list[dict[str, Any]]) -> dict[str, Any]:
    """One seed's verdicts.json, as much of it as pool_seeds reads: the statement record with its chain and own
    outcome."""
    outcome = decide_chain(null.statement, batches).decision
    block = {"anytime": {"parameters": null.statement, "ledger": batches}}
    record = {"test": TEST, "outcome": outcome, "reason": "", "evidence": {null.statement["what"]: block}}
    return {"claims": [{"statements": [record]}]}


def merge(null: Null, chains: dict[int, list[dict]], seen: dict[int, str] | None = None) -> tuple[bool, str]:
    """(whether the merge reports 'held', why it did not pool or ""): pool_seeds over the seeds' chains, with the
    seeds `seen` in saved runs beside the inputs; a merge of one seed reports that seed's own outcome."""
    per_seed = {str(s): payload(null, c) for s, c in sorted(chains.items())}
    found = pool_seeds(per_seed, {TEST: {str(s): w for s, w in (seen or {}).items()}}).get(TEST)
    if found is None:  # one seed and nothing seen beside it: its own outcome stands
        (only,) = per_seed.values()
        return only["claims"][0]["statements"][0]["outcome"] == HELD, ""
    return found["outcome"] == HELD, found.get("why", "")


def as_given(null: Null, chains: list[list[dict]]) -> bool:
    """Whether the seeds' chains, joined in the order given without any check, cross for the statement."""
    joined = [b for c in chains for b in c]
    return decide_chain(null.statement, derive_chain(null.statement, joined)).decision == HELD


# ------------------------------------------------------------------------------------------------
# The users' behaviours: each returns (held as given, held as the merge reports it, the merge's line)


def fixed_in_advance(rng, null, seeds=5, batches=2):
    chains = {s: chain(null, s, [null.draw(rng) for _ in range(batches)], [s] * batches) for s in range(1, seeds + 1)}
    held, why = merge(null, chains)
    return held, held, why


def ascending_merging_after_each(rng, null, seeds=5, batches=2):
    chains, any_held, why = {}, False, ""
    for s in range(1, seeds + 1):
        chains[s] = chain(null, s, [null.draw(rng) for _ in range(batches)], [s] * batches)
        held, why = merge(null, chains)
        any_held |= held
    return any_held, any_held, why


def cherry_picked(rng, null, of=30, saved_runs_kept=True):
    """`of` seeds run, one batch each; the merge gets only the seeds whose data favour the statement; the others'
    saved runs are beside the inputs (kept) or deleted."""
    data = {s: [null.draw(rng)] for s in range(1, of + 1)}
    picked = [s for s in data if null.favours(data[s][0])]
    if not saved_runs_kept:  # the longest block of consecutive favourable seeds: no gap shows
        blocks, block = [], []
        for s in data:
            block = [*block, s] if s in picked else []
            blocks.append(block)
        picked = max(blocks, key=len)
    if len(picked) < 2:
        return False, False, ""
    chains = {s: chain(null, s, data[s], [s]) for s in picked}
    seen = {s: f"runs/{s:04d}/verdicts.json" for s in data if s not in picked} if saved_runs_kept else {}
    held, why = merge(null, chains, seen)
    return as_given(null, list(chains.values())), held, why


def relabelled(rng, null, of=30, stream_ids_rewritten=False):
    """`of` seeds run; the favourable ones relabelled 1, 2, ... (their verdicts.json's seed edited; with
    `stream_ids_rewritten`, every stream id in their ledgers too) and the other saved runs deleted."""
    data = {s: [null.draw(rng)] for s in range(1, of + 1)}
    picked = [s for s in data if null.favours(data[s][0])]
    if len(picked) < 2:
        return False, False, ""
    chains = {
        new: chain(null, old, data[old], [old], label=new if stream_ids_rewritten else None)
        for new, old in enumerate(picked, start=1)
    }
    held, why = merge(null, chains)
    return as_given(null, list(chains.values())), held, why


def below_merging_after_each(rng, null, seeds=5, batches=2):
    """Seeds added in descending order (seed 5 first, its run started first), the set merged after each."""
    chains, given, reported, why = {}, False, False, ""
    for order, s in enumerate(range(seeds, 0, -1)):
        chains[s] = chain(null, s, [null.draw(rng) for _ in range(batches)], [order] * batches)
        given |= as_given(null, [chains[k] for k in sorted(chains)])
        held, why = merge(null, chains)
        reported |= held
    return given, reported, why


def one_stream_under_labels(rng, null, labels=2, seeds=None, batches=2, extra=0):
    """A test whose data ignore the seed: one stream's batches under `labels` seed labels (of `seeds`, the others
    independent), the first label's chain continued `extra` batches further."""
    seeds = seeds or labels
    stream = [null.draw(rng) for _ in range(batches + extra)]
    chains = {}
    for s in range(1, seeds + 1):
        data = (stream if s == 1 else stream[:batches]) if s <= labels else [null.draw(rng) for _ in range(batches)]
        chains[s] = chain(null, s, data, [s] * len(data))
    held, why = merge(null, chains)
    return as_given(null, [chains[s] for s in sorted(chains)]), held, why


def continued_after_a_merge(rng, null, rounds=6, lowest=True):
    """Seeds 1 and 2, one batch each, merged; then, while the merge is not decided, seed 1 (`lowest`; else seed 2)
    continued by one batch in a run started after every run before it, and merged again."""
    data, starts = {1: [null.draw(rng)], 2: [null.draw(rng)]}, {1: [0], 2: [1]}
    held, why = merge(null, {s: chain(null, s, data[s], starts[s]) for s in data})
    for r in range(rounds):
        if held:
            break
        s = 1 if lowest else 2
        data[s].append(null.draw(rng))
        starts[s].append(2 + r)
        held, why = merge(null, {s: chain(null, s, data[s], starts[s]) for s in data})
    return held, held, why


# ------------------------------------------------------------------------------------------------
# The rows


def upper_bound(hits: int, runs: int, level: float = 0.99) -> float:
    """The one-sided Clopper-Pearson upper confidence bound on a rate of `hits` of `runs`."""
    return 1.0 if hits >= runs else float(stats.beta.ppf(level, hits + 1, runs - hits))


def measure(behaviour, rng, null, runs, **options):
    """(as given, as the merge reports, a line the merge said) over `runs` replicates."""
    given = reported = 0
    said = ""
    for _ in range(runs):
        g, r, why = behaviour(rng, null, **options)
        given, reported = given + g, reported + r
        said = said or why
    return given, reported, said


BEHAVIOURS = [  # (route, behaviour, options, what the merge must do: "valid", "refused" or an assumption's line)
    ("(a) seeds fixed in advance (1-5, 2 batches each), one merge", fixed_in_advance, {}, "valid"),
    ("(b) seeds 1-5 added in ascending order, merging after each", ascending_merging_after_each, {}, "valid"),
    ("(c) cherry-picked: the favourable seeds of {of}, the rest's saved runs kept", cherry_picked, {}, "refused"),
    (
        "(c') cherry-picked: the longest block of consecutive favourable seeds of {of}, the rest's saved runs deleted",
        cherry_picked,
        {"saved_runs_kept": False},
        "not detectable: a stated assumption (every run's report directory kept beside the merged ones)",
    ),
    ("(d) seeds 5, 4, ..., 1 added below those merged, merging after each", below_merging_after_each, {}, "refused"),
    ("(e) one stream under 2 labels", one_stream_under_labels, {"labels": 2}, "refused"),
    ("(e) one stream under 5 labels", one_stream_under_labels, {"labels": 5}, "refused"),
    ("(e) one stream under 2 of 5 labels", one_stream_under_labels, {"labels": 2, "seeds": 5}, "refused"),
    (
        "(e) one stream under 2 labels, one label continued 2 batches further",
        one_stream_under_labels,
        {"labels": 2, "extra": 2},
        "refused",
    ),
    ("(f) relabelled: the favourable seeds of {of} renamed 1, 2, ..., the rest deleted", relabelled, {}, "refused"),
    (
        "(f') relabelled, every stream id in their ledgers rewritten too",
        relabelled,
        {"stream_ids_rewritten": True},
        "not detectable: a stated assumption (a ledger edited consistently is forged data)",
    ),
    (
        "(g) seed 1 continued after merges of seeds 1-2, merging after each (up to 6 times)",
        continued_after_a_merge,
        {},
        "not detectable: a stated assumption (after a merge, continue only the highest seed, or add seeds above)",
    ),
    (
        "(g') the highest seed (2) continued after each merge instead",
        continued_after_a_merge,
        {"lowest": False},
        "valid",
    ),
]


def verdict(expected: str, reported: int, runs: int, why: str) -> str:
    """What the row says: valid (the reported rate is consistent with at most alpha), refused (the merge reported no
    pooled 'held' in any replicate: its line), the stated assumption; else NO."""
    consistent = stats.binom.sf(reported - 1, runs, ALPHA) > CHECK_FALSE_ALARM  # P(>= reported | rate alpha)
    if expected == "refused":  # a merge of one seed alone may still report its own outcome, at most alpha
        if not consistent:
            return "NO (not refused)"
        return f"refused: {why[:170]}" if why else "valid (never refused: the coincidences may be chance)"
    if expected == "valid":
        return "valid" if consistent else "NO"
    return expected


def pooling_rows(rng, size: str, means_nulls: dict[str, tuple[Callable, float]], print_row: Callable) -> None:
    """Print one row per behaviour and null: nominal alpha, the false 'held' rate as given and as the merge reports
    it (with its 99 % upper confidence bound), and valid, refused (the merge's line) or a stated assumption."""
    runs = SIZES[size]["runs"]
    for route, behaviour, options, expected in BEHAVIOURS:
        many = SIZES[size]["picked_from"] if "{of}" in route else (None,)
        for of in many:
            for null in nulls(means_nulls)[: SIZES[size]["nulls"]]:
                extra = {"of": of} if of else {}
                given, reported, why = measure(behaviour, rng, null, runs, **options, **extra)
                shown = (
                    f"as given {given / runs:.3g} ({given / runs / ALPHA:.2f} x); as the merge reports "
                    f"{reported / runs:.3g} ({reported / runs / ALPHA:.2f} x, 99 % bound "
                    f"{upper_bound(reported, runs):.3g}; {runs} runs)"
                )
                print_row(route.format(of=of), null.name, ALPHA, shown, verdict(expected, reported, runs, why))
