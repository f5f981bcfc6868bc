"""Join the verdicts.json of several runs into one verdicts.json and one HTML report.

    python -m pytest_claims.merge.command RUN.json [RUN.json ...] -o DIR [--previous PREVIOUS.json]

A smoke run, CPU full-tier shards (pytest-split groups) and a GPU night each write verdicts.json; the
merge takes the union of their statement runs and recomputes every claim verdict by the rules of a
single run, so each statement counts at the tier that decides it. Each input is kept as provenance
(tier, host, device, commit, date). A test whose outcome differs between runs, or a claim whose
registry record differs, makes the claim broken.

Runs under different master seeds are a replication set: the runs of each seed are merged as above,
and the report shows, per claim and statement test, the outcome under each seed and "replicated on k
of K master seeds", claims whose verdict differs between seeds first. A claim whose verdict differs
between seeds is broken in the merged verdicts (a verdict must not depend on the seed). An anytime statement's
chains are pooled first (pytest_claims.merge.pool): runs of one seed keep the longest of their chain's prefixes (a
seed's chain shorter than one of its saved runs beside the inputs is not pooled: the line names the longer run), and
the seeds' independent chains become one decision, listed under `replication.pooled`; only held under one seed and
refuted under another makes such a statement differ.
Shards of one tier merge into exactly the verdicts of the unsharded run (apart from `runs` and
`timings`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import errno
import json
import os
import secrets
import shutil
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_claims.model import verdicts_json
from pytest_claims.model.inputs import checked_run, file_within, refuse_output_holding_inputs
from pytest_claims.outcomes import BROKEN, ERROR, FAILED, HELD, SKIPPED, Verdict
from pytest_claims.model.registry_families import families_of
from pytest_claims.model.verdicts_json import PayloadError, claim_from, claims_from
from pytest_claims.merge.pool import (
    chain_contradiction,
    longest_chain,
    pool_seeds,
    pooled_list,
    pooled_replication,
    refusals,
    with_pooled,
)
from pytest_claims.model.registry import Claim, Registry
from pytest_claims.merge.replication_set import SavedChains, held_chains, seeds_seen, shorter_than_saved
from pytest_claims.report.html_report import standalone_html
from pytest_claims.statements.families import decided_families
from pytest_claims.report.files import REPORT_ID, ReportDirectoryBusy, failed_write_line, new_report_id, write_merged
from pytest_claims.report.replication import replication_line
from pytest_claims.model.verdicts import RUN_KEYS, ClaimInputs, StatementRun, changes

WORST_FIRST = (ERROR, FAILED, HELD, SKIPPED)
# what "replicated on every seed" counts, each seed alike: a verdict its statements earned (reduced scale included: the
# statements that ran decided it, at a scale short of the decisive one); not broken, interrupted, inconclusive, or
# nothing run, exercised or selected
DECIDED_VERDICTS = (Verdict.VERIFIED, Verdict.FALSIFIED, Verdict.REDUCED_SCALE)


class MergeError(PayloadError):
    """Inputs that cannot be merged (unreadable, another schema, different seeds)."""


class FiguresNotCopied(Exception):
    """A figure could not be copied into -o (the line names the path); the previous pair there is kept."""


def load(path: Path) -> dict[str, Any]:
    """A merge input (pytest_claims.model.verdicts_json.read: the one reader of verdicts.json), its fields checked as
    data, each statement run naming one of its claim's registered statements, and each claim's family records
    (pytest_claims.model.registry_families) checked as the registry's are, and each anytime statement run's recorded
    outcome its own chain's (pytest_claims.merge.pool.chain_contradiction; in a merged replication set, the pooled
    decision its seeds' chains make, pooled again: pytest_claims.merge.pool.pooled_contradiction): PayloadError names
    the file, the claim and the family, or the statement test and the two outcomes, otherwise."""
    payload = checked_run(verdicts_json.read(path), path)
    for index, record in enumerate(payload["claims"]):
        for number, run in enumerate(record["statements"]):
            if run["statement"] not in record["registry"]["statements"]:
                raise PayloadError(
                    f"{path}: field claims[{index}].statements[{number}].statement {run['statement']!r} is not a "
                    f"statement of claim {record['id']}'s registry record"
                )
            contradiction = chain_contradiction(run, merged_seeds=isinstance(payload.get("seed"), list))
            if contradiction:  # an outcome edited apart from its chain(s) would stand alone: it is pooled again here
                raise PayloadError(f"{path}: claim {record['id']}: statement test {run['test']} {contradiction}")
        _, problem = families_of(record["registry"].get("families", []), claim_from(record).statements)
        if problem:
            raise PayloadError(f"{path}: claim {record['id']}: {problem}")
    return payload


def _run_identity(payload: dict[str, Any]) -> str:
    fields = ("run", "host", "date", "commit", "tier", "tests", "seed")  # "run": the report id (files since 2026-12)
    runs = [{k: run.get(k) for k in fields} for run in payload["runs"]]
    return json.dumps([payload.get("seed"), runs], sort_keys=True)


def _report_ids(payload: dict[str, Any]) -> set[str]:
    """The report ids of the runs a payload describes (a merged file's runs keep their own)."""
    ids = {run.get("run") for run in payload["runs"] if isinstance(run, dict)}
    return {i for i in ids if isinstance(i, str) and i}


def refuse_repeats(paths: list[Path], payloads: list[dict[str, Any]]) -> None:
    """One run given twice (the same file, or a copy of it) would count its outcomes twice; so would one run whose
    seed was relabelled in a copy (its report id is the run's, whatever seed the file says): a replication that
    is not one."""
    seen: dict[str, Path] = {}
    for path, payload in zip(paths, payloads):
        for key in (f"file:{Path(path).resolve()}", f"run:{_run_identity(payload)}"):
            if key in seen:
                raise MergeError(f"{path}: the same run as {seen[key]} (given twice)")
            seen[key] = path
        for report in sorted(_report_ids(payload)):
            if f"report:{report}" in seen:
                raise MergeError(
                    f"{path}: holds run {report}, as {seen[f'report:{report}']} does (one run, its seed or fields "
                    "relabelled: not a replication)"
                )
        seen.update({f"report:{report}": path for report in _report_ids(payload)})


def _common_environment(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    first = payloads[0]["environment"]
    return {
        k: (v if all(p["environment"].get(k) == v for p in payloads) else "varies between runs (see runs)")
        for k, v in first.items()
    }


def merge(payloads: list[dict[str, Any]], sources: list[str], seen: SavedChains | None = None) -> dict[str, Any]:
    """One seed: the union of the runs. Several: a replication set (see the module's docstring). `seen`: the anytime
    chains held outside the inputs (pytest_claims.merge.replication_set.seeds_seen; None: none), so that an incomplete
    replication set, or a seed's chain shorter than one saved, is not pooled."""
    if not payloads:
        raise MergeError("nothing to merge")
    seeds = list(dict.fromkeys(str(p.get("seed")) for p in payloads))
    per_seed = {}
    for seed in seeds:
        chosen = [i for i, p in enumerate(payloads) if str(p.get("seed")) == seed]
        per_seed[seed] = merge_one_seed([payloads[i] for i in chosen], [sources[i] for i in chosen])
    shorter = shorter_than_saved(held_chains(payloads, sources), seen.longest) if seen is not None else {}
    alone, pooled = per_seed, pool_seeds(per_seed, seen.seeds if seen is not None else None, shorter)
    if pooled:  # each seed decided again with the pooled outcomes (a refusal: with the claim's problem)
        per_seed = {seed: merge_one_seed([with_pooled(p, pooled)], [f"seed {seed}"]) for seed, p in per_seed.items()}
    if len(seeds) == 1:
        return per_seed[seeds[0]]
    merged = replication_set(per_seed)
    if pooled:  # "replicated on every seed" counts the seeds decided alone, not the pooled outcomes
        merged["replication"] = pooled_replication(
            replication_set(alone)["replication"], merged["claims"], pooled_list(per_seed, pooled)
        )
    return merged


def _most_common(values: list[str]) -> tuple[str, int]:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    best = max(counts.values())
    return next(v for v in values if counts[v] == best), best


def replicated_alike(row: dict[str, Any]) -> bool:
    """Whether a claim's row of `replication.claims` counts as replicated on every seed: every seed gave the same
    verdict (`replicated` == `of`), one its statements earned (DECIDED_VERDICTS)."""
    return row["replicated"] == row["of"] and all(v in DECIDED_VERDICTS for v in row["verdicts"].values())


def replication_set(per_seed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The merged payload of the first seed, its claims broken where their verdict differs between seeds,
    with a `replication` record: per claim and per statement test, the outcome under every seed."""
    seeds = list(per_seed)
    first = per_seed[seeds[0]]
    claims, statements = [], []
    for record in first["claims"]:
        verdicts = {
            seed: next((c["verdict"] for c in per_seed[seed]["claims"] if c["id"] == record["id"]), "absent")
            for seed in seeds
        }
        _, agree = _most_common(list(verdicts.values()))
        claims.append(
            {"id": record["id"], "key": record["key"], "verdicts": verdicts, "replicated": agree, "of": len(seeds)}
        )
    tests: dict[str, dict[str, Any]] = {}
    for seed in seeds:
        for c in per_seed[seed]["claims"]:
            for s in c["statements"]:
                entry = tests.setdefault(
                    s["test"], {"test": s["test"], "claim": c["key"], "statement": s["statement"], "outcomes": {}}
                )
                entry["outcomes"][seed] = s["outcome"]
    for entry in tests.values():
        outcomes = [entry["outcomes"].get(seed, "absent") for seed in seeds]
        entry["replicated"] = _most_common(outcomes)[1]
        entry["of"] = len(seeds)
        statements.append(entry)
    order = {c["id"]: (c["replicated"] == c["of"], i) for i, c in enumerate(claims)}
    claims.sort(key=lambda c: order[c["id"]])
    statements.sort(key=lambda s: (s["replicated"] == s["of"], s["test"]))
    merged = dict(first)
    merged["claims"] = []
    for record in first["claims"]:
        found = next(c for c in claims if c["id"] == record["id"])
        if found["replicated"] != found["of"]:
            shown = ", ".join(f"{v} under seed {s}" for s, v in found["verdicts"].items())
            # among the problems: the file keeps the first seed's records only, from which a merge of it decides anew
            problems = _once([*record.get("problems", []), f"the verdict differs between master seeds: {shown}"])
            record = dict(record, verdict=BROKEN, reason="; ".join(problems), problems=problems)
        merged["claims"].append(dict(record, key_numbers=_key_numbers_by_seed(record, per_seed)))
    merged["seed"] = [per_seed[seed].get("seed") for seed in seeds]  # as the runs wrote them (integers)
    merged["environment"] = _common_environment(list(per_seed.values()))  # not the first seed's master_seed alone
    merged["runs"] = [dict(run, seed=per_seed[seed].get("seed")) for seed in seeds for run in per_seed[seed]["runs"]]
    merged["replication"] = {
        "seeds": seeds,
        "claims": claims,
        "claims_replicated": sum(map(replicated_alike, claims)),
        "statements": statements,
    }
    return merged


def _key_numbers_by_seed(record: dict[str, Any], per_seed: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A claim's key numbers with every seed's values, each labelled with its seed (the first seed's alone
    would stand for the set)."""
    out = []
    for index, entry in enumerate(record.get("key_numbers", [])):
        values = []
        for seed, payload in per_seed.items():
            found = next((c for c in payload["claims"] if c["id"] == record["id"]), None)
            if found is None or index >= len(found.get("key_numbers", [])):
                continue
            seed_values = found["key_numbers"][index]["values"]
            for value in seed_values:  # a run's own label only where the seed has several values
                several = len(seed_values) > 1 and value.get("run")
                values.append(dict(value, run=f"seed {seed}" + (f", {value['run']}" if several else "")))
        values += _pooled_values(record, entry["label"])
        out.append({"label": entry["label"], "values": values})
    return out


def _pooled_values(record: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """A key number's value over the seeds pooled, labelled "pooled": for `<what> counts` (or one of its fields) of
    a rate decision the merge pooled, the pooled counts; none for any other key number (no pooled counterpart)."""
    statement, _, name = (part.strip() for part in label.partition(":"))
    out, runs = [], [run for run in record.get("statements", []) if run.get("statement") == statement]
    for run in runs:
        for what, found in run.get("evidence", {}).items():
            pooled = found.get("pooled") if isinstance(found, dict) else None
            if not isinstance(pooled, dict) or pooled.get("outcome") is None or not pooled.get("trials"):
                continue
            counts = {
                "successes": pooled["successes"],
                "trials": pooled["trials"],
                "rate": pooled["successes"] / pooled["trials"],
            }
            field = name.removeprefix(what + " counts.") if name.startswith(what + " counts.") else None
            value = counts if name == what + " counts" else counts.get(field) if field else None
            if value is not None:  # the test's name only where the statement has several
                test = f", {run['test'].rsplit('::', 1)[-1]}" if len(runs) > 1 else ""
                out.append({"run": "pooled" + test, "tier": run["tier"], "value": value})
    return out


def _once(items: list[str]) -> list[str]:
    """Each item once, in the order first given (a merge of merged files does not repeat a problem)."""
    return list(dict.fromkeys(items))


def merge_one_seed(payloads: list[dict[str, Any]], sources: list[str]) -> dict[str, Any]:
    """The union of the runs of one seed, built by the run's own builder from the inputs read back from each file
    (so every cause of `broken` in an input stays in the merge) plus what only a merge can find: conflicting
    outcomes between runs and a claim whose registry record differs between them."""
    claims: dict[str, Claim] = {}
    inputs: dict[str, ClaimInputs] = {}
    by_test: dict[str, list[tuple[int, StatementRun]]] = {}
    drifted: set[str] = set()
    variants: dict[str, list[Claim]] = {}
    unrecorded: dict[str, list[str]] = {}  # claim -> the inputs whose registry record has no `families` key
    for index, payload in enumerate(payloads):
        for (claim, found), record in zip(claims_from(payload), payload["claims"]):
            variants.setdefault(claim.id, []).append(claim)
            if "families" not in record["registry"]:
                unrecorded.setdefault(claim.id, []).append(sources[index])
            if claim.id not in claims:
                claims[claim.id] = claim
                inputs[claim.id] = ClaimInputs()
            elif claims[claim.id] != claim:
                drifted.add(claim.id)
            into = inputs[claim.id]
            into.exercised |= found.exercised
            into.selected |= found.selected
            into.has_tests |= found.has_tests
            into.problems = _once(into.problems + found.problems)
            if found.not_reached:  # a run cut off: its unreached tests, unless another run has them
                into.not_reached |= found.not_reached
                into.interrupted_by = into.interrupted_by or found.interrupted_by
            for run in found.runs:
                by_test.setdefault(run.test, []).append((index, run))
    for test, pairs in sorted(by_test.items()):
        decided = [(i, r) for i, r in pairs if r.outcome != SKIPPED]
        outcomes = sorted({r.outcome for _, r in decided})
        one_chain = longest_chain([{"evidence": r.evidence} for _, r in decided]) if len(decided) > 1 else None
        if one_chain is not None:  # one seed's anytime chain at several lengths: the longest holds the others
            decided = [decided[one_chain]]
        elif len(outcomes) > 1:
            where = ", ".join(
                f"{r.outcome} in run {i + 1} ({payloads[i]['runs'][0].get('tier', '?')})" for i, r in decided
            )
            problem = f"conflicting outcomes for {test}: {where}"
            claim_inputs = inputs[pairs[0][1].claim]
            claim_inputs.problems = _once(claim_inputs.problems + [problem])
        keep = decided[0][1] if decided else pairs[0][1]
        listed = list(claims[keep.claim].statements[keep.statement].mutants)
        keep.mutants = sorted(  # in the registry's order, as a run lists them (a merge of one run reproduces it)
            _unique([m for _, r in pairs for m in r.mutants]),
            key=lambda m: listed.index(m["mutant"]) if m["mutant"] in listed else len(listed),
        )
        inputs[keep.claim].runs.append(keep)
    for into in inputs.values():
        into.not_reached -= set(by_test)
    for cid in drifted:
        problem = _drift_line(variants[cid], unrecorded.get(cid, []))
        inputs[cid].problems = _once(inputs[cid].problems + [problem])
    papers: dict[str, Any] = {}
    for payload in payloads:
        papers.update(payload["papers"])
    reference: dict[str, str] = {}
    for payload in payloads:
        for entry in payload["reference_tests"]:
            old = reference.get(entry["test"])
            if old is None or WORST_FIRST.index(entry["outcome"]) < WORST_FIRST.index(old):
                reference[entry["test"]] = entry["outcome"]
    runs = []
    for payload, source in zip(payloads, sources):
        for run in payload.get("runs", []):
            runs.append(dict(run, source=source if run.get("source") == "this run" else run.get("source", source)))
    return verdicts_json.build(
        Registry(papers=papers, claims=claims, tiers=()),
        inputs,
        suite=payloads[0].get("suite", "claim verification suite"),
        tier="+".join(sorted({p["tier"] for p in payloads})),
        seed=payloads[0].get("seed"),
        mutants_run=any(p.get("mutants_run") for p in payloads),
        environment=_common_environment(payloads),
        false_alarm=_false_alarm_tiers(payloads),
        reference=reference,
        collection_errors=_unique([e for p in payloads for e in p.get("collection_errors", [])]),
        runs=runs,
        timings={
            "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "store": _store_events(payloads),
            "tests": dict(
                sorted({t: d for p in payloads for t, d in p.get("timings", {}).get("tests", {}).items()}.items())
            ),
            "indivisible": dict(
                sorted({t: w for p in payloads for t, w in p.get("timings", {}).get("indivisible", {}).items()}.items())
            ),
        },
    )


def _drift_line(variants: list[Claim], unrecorded: list[str]) -> str:
    """The problem of a claim whose registry record differs between the merged runs; where it differs only in its
    families and some inputs record none (`unrecorded`: written before registry records carried `families`), it names
    them: such a file cannot say whether the statements it decided were in a family, so it is rerun, not merged."""
    bare = [dataclasses.replace(claim, families={}) for claim in variants]  # a Claim holds dicts: not hashable
    if unrecorded and all(claim == bare[0] for claim in bare):
        return (
            f"registry record differs between the merged runs: {', '.join(dict.fromkeys(unrecorded))} records no "
            "families (written by an older pytest-claims, before registry records carried them): rerun it"
        )
    return "registry record differs between the merged runs"


def _false_alarm_tiers(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """The false-alarm tables of every tier the runs selected."""
    tiers: dict[str, Any] = {}
    for payload in payloads:
        tiers.update(payload.get("false_alarm", {}).get("tiers", {}))
    budget = next((p["false_alarm"]["budget"] for p in payloads if p.get("false_alarm", {}).get("tiers")), None)
    return {"budget": budget, "tiers": dict(sorted(tiers.items()))} if tiers else {}


def _unique(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Distinct records in a fixed order (the same runs merged in any order give the same file)."""
    return [json.loads(text) for text in sorted({json.dumps(r, sort_keys=True) for r in records})]


def _store_events(payloads: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    events: dict[str, list[dict[str, Any]]] = {}
    for payload in payloads:
        for test, found in payload.get("timings", {}).get("store", {}).items():
            events.setdefault(test, []).extend(found)
    return dict(sorted(events.items()))


def copy_figures(payload: dict[str, Any], sources: list[Path], out: Path) -> list[str]:
    """Copy every figure the merged payload names from the input runs' report directories (only files inside them)
    into `out` (only there: a link in `out` is replaced, never written through; a folder that leads out of it is
    OSError); return those found in none of them (a saved run under runs/ keeps only its verdicts.json) or naming the
    merge's own files (its pair, a dot file: its lock, temporaries), which are never copied over."""
    wanted = {f["path"] for c in payload["claims"] for s in c["statements"] for f in s["figures"]}
    root, missing = out.resolve(), []
    for path in sorted(wanted):
        top = PurePosixPath(path).parts[0]
        own = top in ("verdicts.json", "verdict.html") or top.startswith(".")
        for source in [] if own else sources:  # never the merge's own pair, lock or temporaries
            file = file_within(source.parent, path)
            if file is not None:
                target = out / path
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.parent.resolve().is_relative_to(root):
                    raise OSError(errno.EXDEV, "a symbolic link leads out of the output directory", str(target))
                if file != target.resolve():  # copied beside it, then renamed over it (a link there is replaced)
                    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
                    try:
                        shutil.copyfile(file, temporary)
                        os.replace(temporary, target)
                    finally:
                        temporary.unlink(missing_ok=True)
                break
        else:
            missing.append(path)
    return missing


def comparable(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload without what describes the run rather than its verdicts (for run-to-run comparisons)."""
    return {k: v for k, v in payload.items() if k not in RUN_KEYS}


def _title(given: str | None, merged: dict[str, Any]) -> str:
    """The merged page's title: the one given, else the suite's; a replication set says so, with its seeds."""
    seeds = merged.get("replication", {}).get("seeds")
    what = f"replication over seeds {', '.join(map(str, seeds))}" if seeds else "merged runs"
    return f"{given or merged.get('suite') or 'claim verification suite'}: {what} ({merged['tier']})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_claims.merge.command", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="verdicts.json files of the runs to merge")
    parser.add_argument(
        "-o", "--out", type=Path, required=True, help="directory for the merged verdicts.json and verdict.html"
    )
    parser.add_argument("--previous", type=Path, help="a previous verdicts.json: put what changed since at the top")
    parser.add_argument("--title", help="the page's title (default: the suite's title, from the runs)")
    args = parser.parse_args(argv)
    try:
        refuse_output_holding_inputs(args.out, [*args.runs, *([args.previous] if args.previous else [])])
        payloads = [load(p) for p in args.runs]
        refuse_repeats(args.runs, payloads)
        seen = seeds_seen(args.runs)
        merged = merge(payloads, [str(p) for p in args.runs], seen)
        if args.previous:
            merged["changes"] = changes(load(args.previous), merged)
    except PayloadError as error:
        print(f"merge: {error}", file=sys.stderr)
        return 2
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"merge: -o {args.out}: not a directory that can be written ({error.strerror or error})", file=sys.stderr)
        return 2
    merged[REPORT_ID] = new_report_id()
    missing: list[str] = []

    def page() -> str:  # under the lock of -o: the figures the page shows copied into it, then the page rendered
        try:
            missing.extend(copy_figures(merged, [p.resolve() for p in args.runs], args.out))
        except OSError as error:
            named = getattr(error, "filename2", None) or error.filename  # os.replace: the figure, not its temporary
            raise FiguresNotCopied(f"{named or args.out}: the figures were not copied ({error.strerror or error})")
        return standalone_html(merged, args.out, _title(args.title, merged), decided_families(merged))

    try:  # the pair as one unit, under the lock of -o; a failure keeps the previous pair
        write_merged(args.out, merged, page)
    except (OSError, ReportDirectoryBusy, FiguresNotCopied) as error:
        pair = [args.out / "verdicts.json", args.out / "verdict.html"]
        print(f"merge: {failed_write_line(error, pair) if isinstance(error, OSError) else error}", file=sys.stderr)
        return 2
    if missing:  # the page shows them as absent; say which, and why that happens
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        print(
            f"merge: {len(missing)} figure(s) the runs name are not beside their verdicts.json and are left out of the "
            f"page: {shown} (a saved run under runs/ keeps only verdicts.json: merge the report directories' files "
            "for the figures)",
            file=sys.stderr,
        )
    counts: dict[str, int] = {}
    for record in merged["claims"]:
        counts[record["verdict"]] = counts.get(record["verdict"], 0) + 1
    for line in [*seen.passed_over, *(f"merge: {line}" for line in refusals(merged))]:
        print(line, file=sys.stderr)
    replicated = f"; {replication_line(merged['replication'])}" if "replication" in merged else ""
    print(f"merged {len(payloads)} runs (tiers {merged['tier']}) into {args.out}: {counts}{replicated}")
    return 1 if counts.get(BROKEN) else 0


if __name__ == "__main__":
    sys.exit(main())
