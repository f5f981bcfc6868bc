"""The declared replication set of a merge: which seeds' anytime chains must all be merged, in which order, before
the merge pools them, and each chain's stream known by the data it drew rather than by its seed label.

Pooling the chains of several master seeds (pytest_claims.merge.pool) keeps the registered false alarm only when the set
of seeds and their order were fixed before the data. Measured on pooling that let the user choose (issue 47's audit):
pooling the favourable seeds of 30 reached 9.5-87 x alpha, adding seeds below those already merged and merging after
each 5-22 x, and one stream merged under 2-5 seed labels 4-495 x. So the set is declared, and a merge that does not
hold it whole and in order reports each seed's own outcome and no pooled one, with one line saying why.

**The declaration** is a rule the plugin fixes for every statement, before any run: a replication set is the seeds
S, S+1, S+2, ... in ascending order with no gaps, each started no later than the seed above it (a seed is started by
the run that drew its first batch; runs started together on several machines are in order when launched lowest seed
first). S is the lowest seed that holds a chain of the statement anywhere the merge can see: its inputs, and the saved
runs beside them (`<report dir>/runs/`, pytest_claims.report.history). Why a rule rather than a list written in the
registry or the ini file: a list can be written, or rewritten, after the results are seen, and nothing in a run proves
when it was; the rule has nothing to choose, and every run already records what it is checked against (its master seed,
and in each ledger batch the id of the run that drew it, which begins with the run's start time). What no merge can see,
it cannot count: seeds run elsewhere and never saved beside an input. A gap shows them (seeds 1, 2 and 4 merged: seed
3 is missing), and so does a saved run; keep every run's report directory, and merge from it.

**A stream** is known by a digest of the data its batches drew (pytest_claims.anytime.chain_kinds.data_of, batch by
batch),
not by the seed in its stream ids, so a test whose data ignore the seed, merged under two seeds, is one stream under
two labels and is not pooled, also when one label's chain was continued further (the batches they share coincide).
A chain whose stream ids name another seed than the one it is merged under (a verdicts.json whose seed was edited)
is relabelled: refused. Two honest chains of few counts can coincide by chance (0 of 4 under two seeds; one batch of
50 fair coins, with chance 0.08): a rate's batch keeps its counts only (decide_rate never sees the trials), and a
digest tells streams apart only as far as the data it digests differ, so no digest can. They are not pooled when
they are the whole set (refusing never adds a false alarm; continuing both chains tells them apart), and pooled as
independent when they are part of it (measured in benchmarks/anytime_means_type_one.py: at most alpha).

**Each seed at its longest saved length** (`shorter_than_saved`): a seed's runs hold one chain at the lengths it was
continued to; a seed's chain among the inputs shorter than a sound one of the same seed and test in the saved runs is
not pooled, so that the length pooled is not chosen after the data (refused rather than replaced by the saved one:
the saved run holds other tests and states too, and the user's inputs are what the merge reports; merging the longer
run, alone or beside the shorter, pools it).

**Assumed, not checked** (a merge cannot see it; the docs state it as the pooled route's assumption): every run's
report directory is kept beside those merged (a run deleted cannot be counted); no ledger is edited consistently
(stream ids rewritten to another seed are forged data); and after a merge has pooled seeds S..T, only seed T is
continued or seeds above T added (a lower seed continued after the merge puts its new batches before seeds it has
seen; its ledger's run ids show it was continued later, but not that a merge came between, and continuing the seeds
in parallel with no merge between, as the how-to does, is the same ledger).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_claims.model import verdicts_json
from pytest_claims.anytime.chain_kinds import RATE, SIGN, TWO_PROPORTIONS, data_of, kind_of
from pytest_claims.model.inputs import checked_run
from pytest_claims.model.verdicts_json import PayloadError
from pytest_claims.report.history import RUNS_DIR, saved_runs
from pytest_claims.statements.decision import chain_in, holds_chain
from pytest_claims.statements.ledger import LEDGER_VERSION, check_ledger

COINCIDENCE = 1e-3  # below this chance two independent streams do not hold the same data: one stream, refused
SAVED_RUNS_READ = 500  # a bound on the files one merge reads beside each input
_STARTED = re.compile(r"^([0-9]{8}T[0-9]{6}Z)")  # a run id begins with its start (report_files.new_report_id)
DECLARED = "seeds S, S+1, ... in ascending order with no gaps"


def stream_digest(chain: dict[str, Any], batches: int | None = None) -> str:
    """A checked chain's stream, known by what it drew: the sha256 of its batches' own data, in order (neither the
    stream ids, which carry the seed label, nor the run, nor what the chain derives); of its first `batches` only, if
    given (None: all)."""
    kind = kind_of(chain["statement"])
    drawn = [data_of(kind, entry, index) for index, entry in enumerate(chain["batches"][:batches])]
    return hashlib.sha256(json.dumps(drawn, sort_keys=True).encode()).hexdigest()


def _shared_batches(chains: list[dict[str, Any]]) -> int:
    """How many leading batches all of `chains` hold with the same data (a chain continued further than the others
    still shares their batches: one stream is a prefix of the other)."""
    kind = kind_of(chains[0]["statement"])
    shared = min(len(c["batches"]) for c in chains)
    for index in range(shared):
        first = data_of(kind, chains[0]["batches"][index], index)
        if any(data_of(kind, c["batches"][index], index) != first for c in chains[1:]):
            return index
    return shared


def mislabelled(seeds: list[str], chains: list[dict[str, Any]]) -> str:
    """Why a chain is not its seed's ("" if each is): a batch whose stream id names another master seed than the one
    it is merged under (a verdicts.json whose seed was edited: relabelled; pytest_claims.statements.ledger.stream_id).
    """
    for seed, chain in zip(seeds, chains):
        for entry in chain["batches"]:
            if not str(entry["stream"]).startswith(f"seed={seed}|"):
                return (
                    f"seed {seed}'s chain was drawn under another seed (batch {entry['batch']}'s stream id is "
                    f"{entry['stream']!r}): a relabelled seed"
                )
    return ""


def one_stream_under_two_seeds(seeds: list[str], chains: list[dict[str, Any]]) -> tuple[str, bool]:
    """(why some seeds' chains are not their own streams, whether that is refused) or ("", False).

    A chain whose stream ids name another seed is relabelled: refused (`mislabelled`). Seeds whose chains hold the
    same data over the batches they share (one chain may be continued further: the same leading batches) are a
    group: each group of g of the K seeds, and each pair in it, is tested against chance: the chance that g
    independent streams coincide so over their shared batches, times the C(K, g) groups of g the set could have
    formed (a union bound), is the chance that an honest set shows such a group. Below COINCIDENCE (always, for
    continuous observations) the group is one stream under g labels: refused. Otherwise a group of few counts may be
    chance: pooled as independent, unless it is the whole set with the same data batch for batch (every seed the same
    data: one stream and a coincidence cannot be told apart, so not pooled, and no claim broken).
    """
    why = mislabelled(seeds, chains)
    if why:
        return why, True
    groups: dict[str, list[int]] = {}
    for index, chain in enumerate(chains):
        groups.setdefault(stream_digest(chain, 1), []).append(index)
    not_pooled = ""
    for members in groups.values():
        pairs = [list(pair) for pair in itertools.combinations(members, 2)] if len(members) > 2 else []
        for group in [members, *pairs] if len(members) > 1 else []:
            why, refused = _coinciding(seeds, chains, group)
            if refused:
                return why, True
            not_pooled = not_pooled or why
    if not_pooled:
        return not_pooled, False
    return "", False


def _coinciding(seeds: list[str], chains: list[dict[str, Any]], group: list[int]) -> tuple[str, bool]:
    """`one_stream_under_two_seeds` for one group of seeds whose first batches hold the same data."""
    members = [chains[i] for i in group]
    shared = _shared_batches(members)
    prefix = dict(members[0], batches=members[0]["batches"][:shared])
    chance = coincidence_chance(prefix, len(group)) * math.comb(len(chains), len(group))
    named = [seeds[i] for i in group]
    whole = all(len(c["batches"]) == shared for c in members)
    over = "batch for batch" if whole else f"batch for batch over their first {shared} batch(es)"
    same = (
        f"seeds {', '.join(named[:-1])} and {named[-1]} hold the same observations {over} "
        f"(digest {stream_digest(prefix)[:12]})"
    )
    if chance < COINCIDENCE:
        return f"{same}: one stream under {len(named)} labels (chance of so many coinciding: {chance:.2g})", True
    if len(group) == len(chains) and whole:
        return (
            f"{same}: one stream under {len(named)} labels, or chance (independent streams of these counts "
            f"coincide so with chance {chance:.2g}); not pooled: continue the chains to tell them apart"
        ), False
    return "", False


def coincidence_chance(chain: dict[str, Any], copies: int = 2) -> float:
    """An upper bound on the chance that `copies` independent streams all draw this chain's data batch for batch, at
    the rates its own data estimate: the product over batches and arms of sum_k Binomial(k; n, p)^copies (for signs,
    the count above alone: a bound); 0 for continuous observations (a t statistic, bounded values)."""
    batches, name = chain["batches"], kind_of(chain["statement"]).name
    arms = {RATE: [("successes", "trials")], TWO_PROPORTIONS: [("k_a", "n_a"), ("k_b", "n_b")]}.get(name)
    if name == SIGN:
        arms = [("above", "n_sign")]
        batches = [dict(b, n_sign=b["above"] + b["below"] + b["ties"]) for b in batches]
    if arms is None:
        return 0.0
    log_chance = 0.0
    for k_name, n_name in arms:
        total_k, total_n = sum(b[k_name] for b in batches), sum(b[n_name] for b in batches)
        rate = total_k / total_n if total_n else 0.0
        log_chance += sum(_log_same_binomial(b[n_name], rate, copies) for b in batches)
    return math.exp(log_chance)


def _log_same_binomial(n: int, p: float, copies: int) -> float:
    """ln sum_k Binomial(k; n, p)^copies: the chance that `copies` independent Binomial(n, p) draws are all equal
    (summed over the counts within 12 standard deviations of the mean, where all but a negligible part of it lies)."""
    if n == 0 or p in (0.0, 1.0):
        return 0.0
    sd = math.sqrt(n * p * (1 - p))
    low, high = max(0, math.floor(n * p - 12 * sd - 1)), min(n, math.ceil(n * p + 12 * sd + 1))
    log_n = math.lgamma(n + 1)
    logs = [
        copies * (log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p))
        for k in range(low, high + 1)
    ]
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs))


def started(chain: dict[str, Any]) -> dt.datetime | None:
    """When a chain's seed was started: the start of the run that drew its first batch (None if its run id does not
    say)."""
    run = chain["batches"][0].get("run") if chain["batches"] else None
    found = _STARTED.match(run) if isinstance(run, str) else None
    if found is None:
        return None
    return dt.datetime.strptime(found.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)


def report_dirs(inputs: list[Path]) -> list[Path]:
    """The report directories of merge inputs: a run's verdicts.json lies in one, a saved run's two levels below."""
    found: list[Path] = []
    for path in inputs:
        directory = Path(path).parent
        candidates = [directory]
        if directory.parent.name == RUNS_DIR:  # <report dir>/runs/NNNN_.../verdicts.json
            candidates.append(directory.parent.parent)
        found.extend(c for c in candidates if c not in found)
    return found


@dataclass(frozen=True)
class SavedChains:
    """What the saved runs beside a merge's inputs hold (`seeds_seen`): per statement test, the seeds holding an
    anytime chain of it (`seeds`: seed -> the newest saved run's verdicts.json holding one) and each seed's longest
    sound chain (`longest`: seed -> (its batches, the saved run holding it)); and one line for each saved run passed
    over (`passed_over`: unreadable, or beyond the bound)."""

    seeds: dict[str, dict[str, str]] = field(default_factory=dict)
    longest: dict[str, dict[str, tuple[int, str]]] = field(default_factory=dict)
    passed_over: list[str] = field(default_factory=list)


def seeds_seen(inputs: list[Path]) -> SavedChains:
    """The anytime chains held in the saved runs beside `inputs` (the newest SAVED_RUNS_READ of each report
    directory, each read and checked as a merge input is): returns a SavedChains. A chain that fails its checks
    (pytest_claims.statements.ledger.check_ledger) names its seed but has no length."""
    seen = SavedChains()
    for report_dir in report_dirs(inputs):
        found = saved_runs(report_dir)
        if len(found) > SAVED_RUNS_READ:
            seen.passed_over.append(
                f"merge: {len(found) - SAVED_RUNS_READ} saved run(s) under {report_dir / RUNS_DIR} older than the "
                f"newest {SAVED_RUNS_READ} were not read for the seeds they hold"
            )
        for _, directory in reversed(found[-SAVED_RUNS_READ:]):
            path = directory / "verdicts.json"
            try:
                payload = checked_run(verdicts_json.read(path), path)
            except (PayloadError, OSError) as error:
                seen.passed_over.append(f"merge: the saved run {path} was passed over ({str(error)[:200]})")
                continue
            seed = str(payload.get("seed"))
            for claim in payload["claims"]:
                for record in claim["statements"]:
                    if holds_chain(record.get("evidence")):
                        seen.seeds.setdefault(record["test"], {}).setdefault(seed, str(path))
                        length = chain_length(record)
                        kept = seen.longest.setdefault(record["test"], {})
                        if length is not None and length > kept.get(seed, (0, ""))[0]:
                            kept[seed] = (length, str(path))
    return seen


def chain_length(record: dict[str, Any]) -> int | None:
    """The number of batches of a statement record's one anytime chain, if it holds one sound chain (checked:
    pytest_claims.statements.ledger.check_ledger); None otherwise."""
    try:
        chain = chain_in(record.get("evidence"))
        return None if chain is None else len(check_ledger(chain.ledger(LEDGER_VERSION))["batches"])
    except (KeyError, TypeError, ValueError):  # LedgerInvalid is a ValueError
        return None


def held_chains(payloads: list[dict[str, Any]], sources: list[str]) -> dict[str, dict[str, tuple[int, str, str]]]:
    """Per statement test and seed, the longest sound anytime chain among the merge's inputs (`payloads`, read from
    `sources`): returns test -> seed -> (its batches, its statement's name, the source holding it)."""
    held: dict[str, dict[str, tuple[int, str, str]]] = {}
    for payload, source in zip(payloads, sources):
        seed = str(payload.get("seed"))
        for claim in payload["claims"]:
            for record in claim["statements"]:
                length = chain_length(record) if holds_chain(record.get("evidence")) else None
                if length is not None and length > held.get(record["test"], {}).get(seed, (0, "", ""))[0]:
                    what = str(record.get("statement", record["test"]))
                    held.setdefault(record["test"], {})[seed] = (length, what, source)
    return held


def shorter_than_saved(
    held: dict[str, dict[str, tuple[int, str, str]]], longest: dict[str, dict[str, tuple[int, str]]]
) -> dict[str, str]:
    """Per statement test, why its chains are not pooled when a seed's chain among the inputs is shorter than a
    sound chain of the same seed and test in a saved run (`held`: test -> seed -> (the inputs' longest chain's
    batches, its statement's name, the input file holding it); `longest`: SavedChains.longest). Runs of one seed hold
    one chain at the lengths it was continued to; pooling a shorter one, picked after the longer was seen, is a
    choice of the look after the data, which Ville's inequality does not cover (the review measured 0.0087 -> 0.016
    false held for a rate). Only the longest saved length is pooled: the inputs must hold it."""
    out: dict[str, str] = {}
    for test, seeds in held.items():
        for seed, (batches, what, source) in sorted(seeds.items()):
            saved, where = longest.get(test, {}).get(seed, (0, ""))
            if saved > batches:
                out[test] = (
                    f"{source} holds seed {seed}'s chain of {what!r} at {batches} batch(es), but the saved run "
                    f"{where} holds it at {saved}: a seed's chain is pooled at its longest saved length (a shorter "
                    f"one is a look chosen after the data); merge {where} instead"
                )
                break
    return out


def _integer(seed: str) -> bool:
    return seed.lstrip("-").isdigit()


def not_the_declared_set(
    input_seeds: list[str], seen: dict[str, str], starts: dict[str, dt.datetime | None] | None = None
) -> str:
    """Why the inputs' seeds of one statement test are not its declared replication set, whole and in order ("" if
    they are): a seed that is no integer, a seed between the lowest and the highest seen that the inputs lack (named
    with where it was seen, or as a gap), or a seed started after a higher one. `seen`: seeds held elsewhere -> where;
    `starts`: the start of each input seed with a sound chain (`started`; order not checked when `starts` is None)."""
    everything = set(input_seeds) | set(seen)
    odd = sorted(s for s in everything if not _integer(s))
    if odd:
        return f"seed {odd[0]!r} is not an integer, so the declared order ({DECLARED}) cannot place it"
    numbers = sorted(int(s) for s in everything)
    present = {int(s) for s in input_seeds}
    # Counted, not listed: the seeds seen may lie far apart (0 and 2**32), and the range between them is no list
    lacking = numbers[-1] - numbers[0] + 1 - len(present)
    if lacking:
        missing = list(itertools.islice((n for n in range(numbers[0], numbers[-1] + 1) if n not in present), 5))
        shown = ", ".join(f"seed {n} ({_where(seen.get(str(n)))})" for n in missing)
        more = f" and {lacking - 5} more" if lacking > 5 else ""
        return (
            f"the declared replication set is seeds {numbers[0]} to {numbers[-1]} ({DECLARED}); "
            f"the inputs lack {shown}{more}"
        )
    if starts is None:
        return ""
    ordered = sorted(input_seeds, key=int)
    for index, low in enumerate(ordered):
        if low not in starts:
            continue  # no sound chain: not pooled, for that reason
        begun = starts[low]
        if begun is None:
            return f"seed {low}'s chain does not say when it was started (its first batch's run id): no order to check"
        later = [(high, at) for high in ordered[index + 1 :] if (at := starts.get(high)) is not None and at < begun]
        if later:
            return (
                f"seed {low} was started ({begun:%Y-%m-%d %H:%M:%S} UTC) after seed {later[0][0]} "
                f"({later[0][1]:%Y-%m-%d %H:%M:%S} UTC): the declared order is ascending ({DECLARED})"
            )
    return ""


def _where(path: str | None) -> str:
    return f"its chain is in {path}" if path else "no chain anywhere the merge can see: a gap"
