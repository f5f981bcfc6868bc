"""Pooling an anytime statement's chains in a merge: one decision from the ledgers of several runs.

An anytime statement (pytest_claims.statements.anytime_rate, pytest_claims.statements.anytime_batches) leaves its chain
of looks in its evidence: the ledger, one entry per batch, each batch drawn from a stream keyed by the master seed. A
merge meets such chains in two ways.

- **Runs of one master seed** hold the same chain, perhaps at different lengths (a machine that continued it
  further): every ledger must be a prefix of the longest, whose decision stands (`longest_chain`); anything else (a
  stream with other counts, a gap) is left to the merge's "conflicting outcomes". A seed's chain is pooled only at
  its longest saved length: one shorter than a chain of the same seed and statement in the saved runs beside the
  inputs is refused (pytest_claims.merge.replication_set.shorter_than_saved: choosing the length after seeing the
  longer chain is a look chosen after the data). Merged files of one seed set (merged again together) carry pooled
  records: the one whose every seed's chain is that seed's longest is kept, and none where none is (differing outcomes
  then conflict), so the order of the inputs does not choose a seed's look.
- **Runs under several master seeds** hold independent chains (their streams differ). `pool_seeds` joins them into
  one chain, the seeds in ascending order (an order fixed before the data): each batch of a later seed continues the
  chain of the seeds before it, as one more batch would (pytest_claims.anytime.chain_kinds.derive_chain: a product of
  batch e-values goes on multiplying), so for a rate each look is the mixture e-value of the counts pooled so far, and
  the last one that of all the seeds' counts (by the chain rule, the first seeds' e-value times the next seed's under
  their posterior: the prior's cost is paid once, not once per seed). The data of the seeds are independent draws of
  the same code, so the joined chain is one chain of looks, and Ville's inequality keeps the registered false alarms
  at its first crossing, however long each seed was continued. The first crossing is final. A seed held and another
  refuted are not pooled: the replication set calls that claim broken. The seeds must be the statement's declared
  replication set, whole and in order (pytest_claims.merge.replication_set): leaving a seed out after seeing it, or
  adding one below those already merged, is a choice after the data, and one stream under two seed labels counts its
  data twice; the merge refuses these in one line, and reports each seed's own outcome.

Every chain is data from elsewhere: it is read back through pytest_claims.statements.ledger.check_ledger (each batch's
data, stream ids, and running totals and e-values recomputed from the data), and a chain that fails is not pooled (the
merge says why). So is a merged file read back (a merge input, `--previous`): its pooled record carries the seeds'
chains, which are pooled again by the same code and must give the record as written (`pooled_contradiction`).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from pytest_claims.anytime.evalues import decide_log_evalues
from pytest_claims.anytime.chain_kinds import RATE, decide_chain, derive_chain, kind_of
from pytest_claims.statements.decision import chain_in, holds_chain
from pytest_claims.statements.ledger import LEDGER_VERSION, LedgerInvalid, check_ledger
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED, Verdict
from pytest_claims.merge.replication_set import (
    not_the_declared_set,
    one_stream_under_two_seeds,
    started,
    stream_digest,
)
from pytest_claims.stats.shown_numbers import significant

POOLABLE = (HELD, REFUTED, INCONCLUSIVE)
NOT_POOLED = ": not pooled: "  # marks a refused pooling among a claim's problems


def chain_of(record: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(the evidence name, the checked ledger) of a statement record's one anytime decision, read as the typed
    ChainRecord the decision recorded (pytest_claims.statements.decision.chain_in); None if it has none or several;
    LedgerInvalid if its chain is not one the plugin wrote."""
    try:
        chain = chain_in(record.get("evidence"))
    except (KeyError, TypeError):
        raise LedgerInvalid("its anytime block lacks a field of the chain") from None
    if chain is None:
        return None
    return chain.what, check_ledger(chain.ledger(LEDGER_VERSION))


def chain_contradiction(record: dict[str, Any], merged_seeds: bool = False) -> str:
    """Why a statement run's recorded outcome is not its own anytime chain's ("" when it is, or when the record holds
    no anytime chain): an outcome of held, refuted or inconclusive other than the chain's own decision where that is
    refuted or inconclusive (pytest_claims.statements.decision.conclude ends the test there), and held where the
    chain did not hold. Only certain contradictions: a chain that held lets its test go on, so a later check of the
    test may refute it or leave it inconclusive. A held or refuted outcome on a chain that fails its check (chain_of:
    numbers no run computes) is named as that. `merged_seeds`: the record is from a merged replication set (False: a
    file of one master seed, which carries no pooled record: one is named, `ONE_SEED_POOLED`, as a merge of the file
    would keep it and the exports show it), whose pooled statements carry the pooled
    outcome; their pooled record is pooled again from the seeds' chains it carries (`pooled_contradiction`) and must
    be what the merge wrote. Returns the reason, without the file or test."""
    outcome = record.get("outcome")
    counted = counts_contradiction(record)
    if counted:
        return counted
    if merged_seeds:
        why = pooled_contradiction(record)
        if why is not None:
            return why
    elif _pooled_records(record):  # kept by a merge of the file, shown as pooled (exports, key numbers): refused
        return ONE_SEED_POOLED
    if outcome not in POOLABLE:
        return ""
    try:
        found = chain_of(record)
    except (ValueError, TypeError) as error:  # LedgerInvalid, or numbers the e-values refuse
        return (
            ""
            if outcome == INCONCLUSIVE
            else f"records outcome {outcome!r} on an anytime chain that fails its check: {error}"
        )
    if found is None:
        return ""
    what, chain = found
    decided = decide_chain(chain["statement"], chain["batches"])
    if decided.decision in (HELD, outcome):  # after a held chain its test goes on: any outcome may follow
        return ""
    statement = chain["statement"]
    shown = (
        f" (largest ln E for the statement {significant(decided.max_log_e_for)}, needs "
        f"{significant(-math.log(statement['held_alpha']))}; against it {significant(decided.max_log_e_against)}, "
        f"needs {significant(-math.log(statement['alpha']))})"
        if kind_of(statement).evalues
        else ""
    )
    return f"records outcome {outcome!r}, but its anytime chain {what!r} decides {decided.decision!r}{shown}"


def counts_contradiction(record: dict[str, Any]) -> str:
    """Why a statement record's recorded counts of a rate chain (`"<what> counts"`, as decide_rate records them and a
    key number reads them) are not its own anytime chain's totals ("" when they are, or when it holds no sound rate
    chain or no counts: the other checks name a chain that fails). Returns the reason, without the file or test."""
    try:
        found = chain_of(record)
    except (ValueError, TypeError):  # LedgerInvalid, or numbers the e-values refuse: named by the outcome's check
        return ""
    if found is None or kind_of(found[1]["statement"]).name != RATE or not found[1]["batches"]:
        return ""
    what, last = found[0], found[1]["batches"][-1]
    recorded = record["evidence"].get(f"{what} counts")
    successes, trials = last["cum_successes"], last["cum_trials"]
    if recorded is None or not trials:
        return ""
    if recorded != {"successes": successes, "trials": trials, "rate": successes / trials}:
        return (
            f"records {what + ' counts'!r} {recorded!r}, but its anytime chain {what!r} totals {successes} of {trials}"
        )
    return ""


ONE_SEED_POOLED = (
    "carries a pooled record, but its file is one master seed's (only a merged replication set, whose seed is the "
    "list of its seeds, carries pooled records)"
)
OLDER_POOLED = (
    "carries a pooled record without its seeds' chains (written by an older pytest-claims), so its pooled outcome "
    "cannot be checked: merge the per-seed files again"
)


def pooled_contradiction(record: dict[str, Any]) -> str | None:
    """Why a merged replication set's statement record does not carry the pooled decision of its seeds' chains (""
    when it does; None when it carries no pooled record). The pooled record (`pool_chains`, attached by `with_pooled`)
    holds each seed's chain as the seed's record held it (`chains`) and each seed's outcome (`seeds`): the seeds'
    records are rebuilt from them, each seed's outcome checked against its own chain (`chain_contradiction`), and
    pooled again by the code that pooled them (`pool_test`: the declared replication set, then `pool_chains`). The
    result must be the pooled record as written, field for field; the record's outcome must be the pooled one; and
    the record's own chain (a merge keeps the records of its first input's seed) must be one of the pooled seeds'
    chains. A pooled record without `chains` (written before they were kept) cannot be checked: refused
    (`OLDER_POOLED`), to be merged afresh from the per-seed files. Returns the reason, without the file or test."""
    found = _pooled_records(record)
    if not found:
        return None
    if len(found) > 1:
        return f"carries {len(found)} pooled records (a statement test pools one anytime chain)"
    what, pooled = found[0]
    if not isinstance(pooled, dict):
        return f"carries a pooled record under {what!r} that is not a record"
    if "chains" not in pooled:
        return OLDER_POOLED
    try:
        records = _seed_records(record, what, pooled)
    except (KeyError, TypeError, ValueError, AttributeError):  # fields of another shape: nothing to pool again
        return f"carries a pooled record under {what!r} whose seeds and chains do not match"
    for seed, seed_record in records.items():
        why = chain_contradiction(seed_record)
        if why:
            return f"pools seed {seed}, which {why}"
    again = pool_test(records) or {"outcome": None, "why": "one seed: nothing to pool"}
    if again != pooled:
        differ = sorted(k for k in {*pooled, *again} if k not in pooled or k not in again or pooled[k] != again[k])
        why = f" ({again['why']})" if again["outcome"] is None and again.get("why") else ""
        return (
            f"records pooled outcome {pooled.get('outcome')!r}, but the seeds' chains it carries pool to "
            f"{again['outcome']!r}{why}; its pooled record differs in {', '.join(differ)}"
        )
    if record.get("outcome") != pooled["outcome"]:
        return f"records outcome {record.get('outcome')!r}, but its pooled record decides {pooled['outcome']!r}"
    try:
        own = chain_of(record)
    except (ValueError, TypeError) as error:  # LedgerInvalid, or numbers the e-values refuse
        return f"holds an anytime chain that fails its check: {error}"
    if own is None or own[0] != what or own[1]["batches"] not in list(pooled["chains"].values()):
        return f"holds an anytime chain that is none of the chains its pooled record {what!r} pools"
    return ""


def _pooled_records(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """(evidence name, its pooled record) for each evidence entry of a statement record that carries one."""
    evidence = record.get("evidence")
    if not isinstance(evidence, dict):
        return []
    return [(k, v["pooled"]) for k, v in evidence.items() if isinstance(v, dict) and "pooled" in v]


def _seed_records(record: dict[str, Any], what: str, pooled: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each pooled seed's statement record as its run held it, rebuilt from a merged record and its pooled record:
    the seed's outcome (`seeds`) and its chain (`chains`) in place of the record's own, no pooled record, and not the
    record's own counts (`counts_contradiction` checks them against its own chain). KeyError,
    TypeError or ValueError where the fields have another shape."""
    seeds, chains = pooled["seeds"], pooled["chains"]
    if not isinstance(seeds, dict) or not isinstance(chains, dict) or list(seeds) != list(chains):
        raise KeyError("seeds")
    entry = {k: v for k, v in record["evidence"][what].items() if k != "pooled"}
    others = {k: v for k, v in record["evidence"].items() if k != f"{what} counts"}  # the record's own seed's counts
    return {
        seed: dict(
            record,
            outcome=seeds[seed]["outcome"],
            evidence=dict(others, **{what: dict(entry, anytime=dict(entry["anytime"], ledger=batches))}),
        )
        for seed, batches in chains.items()
    }


def _chains(records: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    try:
        chains = [chain_of(r) for r in records]
    except (ValueError, TypeError):  # LedgerInvalid, or a number the e-values refuse (a threshold of 5)
        return None
    return [c[1] for c in chains if c is not None] if all(c is not None for c in chains) else None


def longest_chain(records: list[dict[str, Any]]) -> int | None:
    """The index of the record whose chain is the longest, if every record's chain (one master seed) is a prefix of
    it, with the same statement parameters; None otherwise (the records are then not one chain). Records of merged
    replication sets of one seed set carry pooled records (`with_pooled`) over chains their own does not show: each
    seed's chain in them must be a prefix of that seed's longest, and the record kept is the one longest in every
    seed (`_longest_pooled`); None where none is, or where some carry a pooled record and some do not."""
    chains = _chains(records)
    if chains is None:
        return None
    longest = max(range(len(chains)), key=lambda i: len(chains[i]["batches"]))
    whole = chains[longest]
    for chain in chains:
        drawn = [_drawn(b) for b in whole["batches"][: len(chain["batches"])]]
        if chain["statement"] != whole["statement"] or [_drawn(b) for b in chain["batches"]] != drawn:
            return None
    pooled = [_pooled_records(r) for r in records]
    if not any(pooled):
        return longest
    return _longest_pooled([found[0][1] if len(found) == 1 else None for found in pooled], longest)


def _longest_pooled(pooled: list[Any], longest: int) -> int | None:
    """`longest_chain` for records that carry pooled records: the index of the one whose seeds' chains are each the
    longest of that seed's (each a prefix of it), preferring `longest` (the longest own chain) among equals; None
    where no record is (a choice between them would choose a seed's look after the data: the merge's "shorter than
    saved" repeated where its inputs are merged files)."""
    if any(not isinstance(p, dict) or not isinstance(p.get("chains"), dict) for p in pooled):
        return None
    seeds = list(pooled[0]["chains"])
    if any(list(p["chains"]) != seeds for p in pooled):
        return None
    try:
        for seed in seeds:
            runs = [p["chains"][seed] for p in pooled]
            whole = max(runs, key=len)
            if any([_drawn(b) for b in run] != [_drawn(b) for b in whole[: len(run)]] for run in runs):
                return None
    except (TypeError, AttributeError):  # chains of another shape (a reader checks them first: pooled_contradiction)
        return None
    tops = [
        i
        for i, p in enumerate(pooled)
        if all(len(p["chains"][s]) == max(len(q["chains"][s]) for q in pooled) for s in seeds)
    ]
    return (longest if longest in tops else tops[0]) if tops else None


def _drawn(batch: dict[str, Any]) -> dict[str, Any]:
    """A batch as its stream determines it: all but the run that drew it (two machines draw the same batch)."""
    return {k: v for k, v in batch.items() if k != "run"}


def _seed_order(seed: str) -> tuple[int, Any]:
    return (0, int(seed)) if seed.lstrip("-").isdigit() else (1, seed)


def pool_chains(by_seed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The pooled record of one statement test from its record under each master seed: its chains joined in
    ascending seed order (each seed's counts added to those before it) and decided at the first crossing;
    "outcome" is None (with "why") when not pooled. A pooled one carries each seed's chain as its record held it
    (`chains`: seed -> its batches, in seed order), so that a reader of the merged file pools them again
    (`pooled_contradiction`) rather than take the decision as written."""
    seeds = sorted(by_seed, key=_seed_order)
    records = [by_seed[s] for s in seeds]
    chains = _chains(records)
    per_seed = {s: {"outcome": r.get("outcome")} for s, r in zip(seeds, records)}
    if chains is None:
        return {"seeds": per_seed, "outcome": None, "why": "a seed's record holds no single sound anytime chain"}
    if not all(kind_of(chain["statement"]).evalues for chain in chains):
        return {"seeds": per_seed, "outcome": None, "why": "alpha spent over rounds of p-values is not pooled"}
    for seed, chain in zip(seeds, chains):
        last = chain["batches"][-1]
        per_seed[seed].update(batches=len(chain["batches"]), **_totals(chain["statement"], last))
        per_seed[seed].update(log_e_for=last["log_e_for"], log_e_against=last["log_e_against"])
        per_seed[seed]["stream"] = stream_digest(chain)
    why, refused = _not_independent(seeds, chains)
    if why:  # a duplicated stream would count its evidence twice: not pooled (refused: the claim is broken)
        return {"seeds": per_seed, "outcome": None, "why": why, **({"refused": True} if refused else {})}
    why = _not_poolable(records, chains)
    if why:
        return {"seeds": per_seed, "outcome": None, "why": why}
    statement = chains[0]["statement"]
    joined = [entry for chain in chains for entry in chain["batches"]]
    looks = [(seed, entry["batch"]) for seed, chain in zip(seeds, chains) for entry in chain["batches"]]
    derived = derive_chain(statement, joined)  # each seed's batches continue the chain of the seeds before it
    log_for, log_against = [d["log_e_for"] for d in derived], [d["log_e_against"] for d in derived]
    decided = decide_log_evalues(log_for, log_against, alpha=statement["alpha"], held_alpha=statement["held_alpha"])
    at = looks[decided.decided_at_look - 1] if decided.decided_at_look else None
    return {
        "what": statement["what"],
        "seeds": per_seed,
        "outcome": decided.decision,
        "batches": len(joined),
        **_totals(statement, derived[-1]),
        "log_e_for": decided.log_e_for,
        "log_e_against": decided.log_e_against,
        "max_log_e_for": decided.max_log_e_for,
        "max_log_e_against": decided.max_log_e_against,
        "needs_for": -math.log(statement["held_alpha"]),
        "needs_against": -math.log(statement["alpha"]),
        "decided_at": {"seed": at[0], "batch": at[1]} if at else None,
        "chains": {seed: chain["batches"] for seed, chain in zip(seeds, chains)},  # what a reader pools again
    }


def _totals(statement: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """A chain's whole as a pooled record reports it: a rate's counts (successes, trials); nothing for a product."""
    return {name.removeprefix("cum_"): last[name] for name in kind_of(statement).totals}


def _not_independent(seeds: list[str], chains: list[dict[str, Any]]) -> tuple[str, bool]:
    """(why these seeds' chains are not independent streams, whether that is refused), or ("", False): a stream id,
    or the same data, twice."""
    streams = [b["stream"] for c in chains for b in c["batches"]]
    if len(set(streams)) != len(streams):
        return "a stream id appears under two seeds (the chains are not independent)", True
    return one_stream_under_two_seeds(seeds, chains)  # known by what they drew, not by the seed in their ids


def _not_poolable(records: list[dict[str, Any]], chains: list[dict[str, Any]]) -> str:
    """Why these seeds' chains are not one pooled decision ("" if they are)."""
    if any(r.get("outcome") not in POOLABLE for r in records):
        return "a seed's outcome is not held, refuted or inconclusive"
    if any(c["statement"] != chains[0]["statement"] for c in chains):
        return "the seeds' chains were started under different statement parameters"
    outcomes = {r["outcome"] for r in records}
    if {HELD, REFUTED} <= outcomes:
        return "held under one seed and refuted under another"
    return ""


def pooled_reason(pooled: dict[str, Any]) -> str:
    seeds = ", ".join(pooled["seeds"])
    decided = pooled["decided_at"]
    where = f"crossed at seed {decided['seed']}, batch {decided['batch']}" if decided else "neither crossed"
    counted = f"{pooled['successes']} of {pooled['trials']}" if "trials" in pooled else f"{pooled['batches']} batches"
    return (
        f"{pooled['what']}: pooled over master seeds {seeds} ({counted}; their chains joined in seed order, "
        "anytime-valid): "
        f"ln E for the statement {significant(pooled['log_e_for'])} (needs {significant(pooled['needs_for'])}), "
        f"against it {significant(pooled['log_e_against'])} (needs {significant(pooled['needs_against'])}); {where}"
    )


def pool_seeds(
    per_seed: dict[str, dict[str, Any]],
    seen: dict[str, dict[str, str]] | None = None,
    shorter: dict[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The pooled record of every statement test that holds an anytime chain: pooled when the inputs' seeds are its
    declared replication set, whole and in order (pytest_claims.merge.replication_set), each seed's chain at its
    longest saved length, else refused with the reason (a record with "refused"). `seen`: per test, the seeds that
    hold a chain of it outside the inputs (saved runs) -> where (None: none seen). `shorter`: per test, why a seed's
    chain among the inputs is shorter than one saved (pytest_claims.merge.replication_set.shorter_than_saved; None:
    none is). With one seed there is nothing to pool: only a refusal (seeds seen that the merge lacks) is
    returned."""
    by_test: dict[str, dict[str, dict[str, Any]]] = {}
    for seed, payload in per_seed.items():
        for claim in payload["claims"]:
            for record in claim["statements"]:
                by_test.setdefault(record["test"], {})[seed] = record
    out = {}
    for test, records in by_test.items():
        if not any(holds_chain(r.get("evidence")) for r in records.values()):
            continue
        others = {s: where for s, where in (seen or {}).get(test, {}).items() if s not in records}
        found = pool_test(records, others, (shorter or {}).get(test, ""))
        if found is not None:
            out[test] = found
    return out


def pool_test(
    records: dict[str, dict[str, Any]], others: dict[str, str] | None = None, shorter: str = ""
) -> dict[str, Any] | None:
    """The pooled record of one statement test from its record under each master seed (`records`: seed -> record):
    refused (a record with "refused") when the seeds are not its declared replication set, whole and in order
    (pytest_claims.merge.replication_set; `others`: seeds holding a chain of it outside the inputs -> where, None:
    none) or when `shorter` says why a seed's chain is shorter than one saved ("": none is); else `pool_chains`.
    Returns None where there is nothing to pool (one seed, and no refusal)."""
    others = others or {}
    if len(records) == 1 and not others:
        return None
    why = not_the_declared_set(list(records), others, _starts(records)) or shorter
    if why:
        outcomes = {s: {"outcome": r.get("outcome")} for s, r in records.items()}
        return {"seeds": outcomes, "outcome": None, "why": why, "refused": True}
    return pool_chains(records) if len(records) > 1 else None


def _starts(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """When each seed's chain was started (pytest_claims.merge.replication_set.started), for the seeds whose record
    holds one sound chain (the others are not pooled, for their own reason)."""
    starts = {}
    for seed, record in records.items():
        try:
            found = chain_of(record)
        except (ValueError, TypeError):
            continue
        if found is not None:
            starts[seed] = started(found[1])
    return starts


def refusals(merged: dict[str, Any]) -> list[str]:
    """One line per statement test a merged payload did not pool: its refused poolings (each a problem of its claim,
    `with_pooled`), then the others of `replication.pooled` (their seeds' own outcomes stand), once each."""
    found = [line for c in merged["claims"] for line in c.get("problems", []) if NOT_POOLED in line]
    pooled = merged.get("replication", {}).get("pooled", [])
    found += [f"{p['test']}{NOT_POOLED}{p['why']}" for p in pooled if p["outcome"] is None]
    return list(dict.fromkeys(found))


def pooled_replication(
    alone: dict[str, Any], merged_claims: list[dict[str, Any]], pooled: list[dict[str, Any]]
) -> dict[str, Any]:
    """`replication` of a merge that pooled: the seeds' verdicts and outcomes each decided alone (`alone`: as
    pytest_claims.merge.command.replication_set gives them before pooling), the pooled statements, and how many claims
    the pooled outcomes decide (`claims_decided_pooled`, only where some pooled outcome exists)."""
    out = dict(alone, pooled=pooled)
    if any(p["outcome"] is not None for p in pooled):
        out["claims_decided_pooled"] = sum(c["verdict"] in (Verdict.VERIFIED, Verdict.FALSIFIED) for c in merged_claims)
    return out


def pooled_list(per_seed: dict[str, dict[str, Any]], pooled: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """`replication.pooled`: each pooled statement test with its claim key and statement, in the payload's order (the
    seeds' `chains` only in the evidence's pooled record: once in the file)."""
    out: dict[str, dict[str, Any]] = {}
    for payload in per_seed.values():
        for claim in payload["claims"]:
            for s in claim["statements"]:
                if s["test"] in pooled and s["test"] not in out:
                    out[s["test"]] = {"test": s["test"], "claim": claim["key"], "statement": s["statement"]}
    return [dict(where, **{k: v for k, v in pooled[test].items() if k != "chains"}) for test, where in out.items()]


def with_pooled(payload: dict[str, Any], pooled: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A copy of one seed's merged payload whose pooled statement tests carry the pooled decision: its outcome, a
    reason saying so, and the pooled record beside the seed's own chain in the evidence; a refused pooling is a
    problem of the statement's claim (its seeds' own outcomes stand)."""
    out = copy.deepcopy(payload)
    for claim in out["claims"]:
        for record in claim["statements"]:
            found = pooled.get(record["test"])
            if found is not None and found.get("refused"):  # a cause of `broken`, kept by every later merge
                line = f"{record['test']}{NOT_POOLED}{found['why']}"
                claim["problems"] = [
                    *claim.get("problems", []),
                    *([line] if line not in claim.get("problems", []) else []),
                ]
            if found is None or found["outcome"] is None:
                continue
            record["outcome"], record["reason"] = found["outcome"], pooled_reason(found)
            record["evidence"][found["what"]] = dict(record["evidence"][found["what"]], pooled=found)
    return out
