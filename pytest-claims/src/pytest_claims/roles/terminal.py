"""The terminal summary: one function per section, dispatched by `Terminal.pytest_terminal_summary`."""

from __future__ import annotations

from typing import Any

from pytest_claims.statements.families import family_lines
from pytest_claims.roles.mutants import mutant_of
from pytest_claims.model.verdicts import verbose_word
from pytest_claims.stats.shown_numbers import counted
from pytest_claims.roles.state import State
from pytest_claims.model.verdicts import mutant_label


def changes_section(writer: Any, payload: dict[str, Any]) -> None:
    found = payload.get("changes")
    if found is None:
        return
    writer.write_sep("=", "changed since the previous run")
    conditions = found.get("conditions") or []
    if conditions:
        writer.write_line(
            "the runs differ in " + ", ".join(f"{c['name']} {c['before']} -> {c['after']}" for c in conditions)
        )
    selection = found.get("selection") or []
    if not found["claims"] and not found["statements"]:
        writer.write_line("nothing" + (" among the claims both runs selected" if selection else ""))
    for c in found["claims"]:
        writer.write_line(f"{c['key']:>4}  {c['before']} -> {c['after']}  {c['id']}")
    for s in found["statements"]:
        writer.write_line(f"      {s['claim']} / {s['statement']}: {s['before']} -> {s['after']}  ({s['test']})")
    if selection:
        writer.write_line(f"selected by only one of the two runs, not compared ({len(selection)}):")
    for c in selection:
        writer.write_line(f"{c['key']:>4}  {c['before']} -> {c['after']}  {c['id']}")


def kinds_text(strength: dict[str, Any]) -> str:
    """How the mutants ended, beside the count, each as it reads beside the registered outcome: ": refuted
    (registered holds): killed 4, held (registered refuted): killed 1 (1 expected)" (by kind in a verdicts.json
    written before the labels)."""
    kinds = strength.get("labels") or strength.get("kinds") or {}
    parts = [f"{kind} {count}" for kind, count in kinds.items() if count]
    if strength.get("expected"):
        parts.append(f"{strength['expected']} errored or undecided as the registry expects")
    return ": " + ", ".join(parts) if parts else ""


def verdicts_section(writer: Any, payload: dict[str, Any]) -> None:
    writer.write_sep("=", "claim verdicts")
    for record in payload["claims"]:
        strength = record.get("power")
        power = f"  [mutants killed {strength['killed']}/{strength['of']}{kinds_text(strength)}]" if strength else ""
        expected = str(record.get("expected", ""))
        if expected and not (expected == record["verdict"] or expected.startswith(record["verdict"] + " ")):
            power += f"  [registered expected: {expected}]"
        writer.write_line(f"{record['key']:>4}  {record['verdict']:<14} {record['id']}{power}  ({record['reason']})")


def families_section(writer: Any, payload: dict[str, Any]) -> None:
    """The families decided in the run, each member's adjusted decision (pytest_claims.statements.families)."""
    lines = family_lines(payload)
    if lines:
        writer.write_sep("-", "families (one false-alarm budget each)")
    for line in lines:
        writer.write_line(line)


def false_alarm_section(writer: Any, payload: dict[str, Any]) -> None:
    table = payload.get("false_alarm", {})
    if table.get("tiers"):
        sums = ", ".join(
            f"{tier} {found['sum']:.3g} over {counted(len(found['statements']), 'statement')}"
            for tier, found in table["tiers"].items()
        )
        writer.write_line(f"false-alarm probability (registered, summed per tier; budget {table['budget']:g}): {sums}")
    chances = [
        (s["inconclusive_chance"], f"{c['key']} {s['statement']} [{s['tier']}]")
        for c in payload["claims"]
        for s in c["statements"]
        if s.get("inconclusive_chance") is not None
    ]
    if chances:
        chance, where = max(chances)
        writer.write_line(
            f"chance of an inconclusive end at the run's sample sizes: largest {chance:.3g} ({where}; "
            f"{len(chances)} statement(s) computed)"
        )


def store_section(writer: Any, payload: dict[str, Any], store_mode: str) -> None:
    events = [e for found in payload["timings"]["store"].values() for e in found]
    hits = sum(1 for e in events if e["status"] == "from store")
    writer.write_line(f"result store: {store_mode}; {hits} results read from it")
    for note in sorted({e["note"] for e in events if e.get("note")}):
        writer.write_line(f"result store: {note}")


def evidence_section(writer: Any, payload: dict[str, Any], evidence_root: Any) -> None:
    """Where the run's anytime ledgers are (evidence: a cache reset does not touch them), when a statement kept one."""
    ledgers = sum(
        1
        for claim in payload["claims"]
        for statement in claim["statements"]
        for value in (statement.get("evidence") or {}).values()
        if isinstance(value, dict) and isinstance(value.get("anytime"), dict)
    )
    if ledgers and evidence_root is not None:
        writer.write_line(
            f"anytime ledgers: {evidence_root} ({counted(ledgers, 'statement')} this run; evidence, not cache: "
            "commit it, or keep it with the project's data)"
        )


def report_section(writer: Any, state: State) -> None:
    config = state.config
    if getattr(config.option, "htmlpath", None):
        where = "and the html report"
    elif config.pluginmanager.hasplugin("html"):
        where = "(no HTML: give --html=PATH)"
    else:
        where = "(no HTML: it needs pytest-html, pip install 'pytest-claims[html]')"
    for note in state.reports.notes:  # a failed write or a deferred signal, one line each
        writer.write_line(note)
    if state.reports.written:
        writer.write_line(f"report: {state.report_dir / 'verdicts.json'} {where}")
    if state.reports.saved_run is not None:
        writer.write_line(
            f"saved as run {state.reports.saved_run.parent.name} (compare two runs: pytest-claims-compare A B)"
        )


def mutants_progress_line(test: str, results: list[dict[str, Any]]) -> str:
    """A statement test's mutants once all have ended: how many were killed, and how."""
    first = results[0]
    ends: dict[str, int] = {}
    for r in results:
        end = mutant_label(r, r.get("registered", "?")) + (" (expected)" if r["expected"] and not r["killed"] else "")
        ends[end] = ends.get(end, 0) + 1
    killed = sum(1 for r in results if r["killed"])
    how = ", ".join(f"{end} {count}" for end, count in ends.items())
    return f"mutants of {first['claim']}:{first['statement']} killed {killed}/{first['of']} ({how})  [{test}]"


def mutant_end_line(found: dict[str, Any]) -> str:
    """One mutant's end and what its test said (the run a mutant's reproduce line starts names one mutant)."""
    return (
        f"mutant {found['mutant']} of {found['claim']}:{found['statement']}: {verbose_word(found)}: {found['detail']}"
    )


class Terminal:
    """Writes the summary of the run's verdicts.json (registered beside the session, on the controller), and a
    line per statement test as its mutants finish (--mutants)."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.mutants_seen: dict[str, list[dict[str, Any]]] = {}
        self.payload: dict[str, Any] = {}  # the verdicts, once published (pytest_claims_payload)

    def pytest_runtest_logreport(self, report: Any) -> None:
        found = mutant_of(report) if report.when == "call" else None
        if found is None:
            return
        results = self.mutants_seen.setdefault(found["test"], [])
        results.append(found)
        writer = self.state.config.pluginmanager.get_plugin("terminalreporter")
        if writer is None or writer.verbosity < 0:
            return
        if self.state.settings.only_mutants:  # a mutant's reproduce line: say how it ended
            writer.write_line(mutant_end_line(found))
        elif len(results) == found["of"]:
            writer.write_line(mutants_progress_line(found["test"], results))

    def pytest_claims_payload(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        payload = self.payload
        if not payload:
            return
        changes_section(terminalreporter, payload)
        verdicts_section(terminalreporter, payload)
        families_section(terminalreporter, payload)
        false_alarm_section(terminalreporter, payload)
        store_section(terminalreporter, payload, self.state.store.mode)
        evidence_section(terminalreporter, payload, self.state.store.evidence_root)
        report_section(terminalreporter, self.state)
