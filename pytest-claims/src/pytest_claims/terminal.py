"""The terminal summary: one function per section, dispatched by `Terminal.pytest_terminal_summary`."""

from __future__ import annotations

from typing import Any

from pytest_claims.state import State


def changes_section(writer: Any, payload: dict[str, Any]) -> None:
    found = payload.get("changes")
    if found is None:
        return
    writer.write_sep("=", "changed since the previous run")
    if not found["claims"] and not found["statements"]:
        writer.write_line("nothing")
    for c in found["claims"]:
        writer.write_line(f"{c['key']:>4}  {c['before']} -> {c['after']}  {c['id']}")
    for s in found["statements"]:
        writer.write_line(f"      {s['claim']} / {s['statement']}: {s['before']} -> {s['after']}  ({s['test']})")


def verdicts_section(writer: Any, payload: dict[str, Any]) -> None:
    writer.write_sep("=", "claim verdicts")
    for record in payload["claims"]:
        strength = record.get("power")
        power = f"  [mutants killed {strength['killed']}/{strength['of']}]" if strength else ""
        expected = str(record.get("expected", ""))
        if expected and not (expected == record["verdict"] or expected.startswith(record["verdict"] + " ")):
            power += f"  [registered expected: {expected}]"
        writer.write_line(f"{record['key']:>4}  {record['verdict']:<14} {record['id']}{power}  ({record['reason']})")


def false_alarm_section(writer: Any, payload: dict[str, Any]) -> None:
    table = payload.get("false_alarm", {})
    if table.get("tiers"):
        sums = ", ".join(
            f"{tier} {found['sum']:.3g} over {len(found['statements'])} statements"
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


def report_section(writer: Any, state: State) -> None:
    config = state.config
    if getattr(config.option, "htmlpath", None):
        where = "and the html report"
    elif config.pluginmanager.hasplugin("html"):
        where = "(no HTML: give --html=PATH)"
    else:
        where = "(no HTML: it needs pytest-html, pip install 'pytest-claims[html]')"
    for note in state.report_notes:  # a failed write or a deferred signal, one line each
        writer.write_line(note)
    if state.reports_written:
        writer.write_line(f"report: {state.report_dir / 'verdicts.json'} {where}")
    if state.saved_run is not None:
        writer.write_line(f"saved as run {state.saved_run.parent.name} (compare two runs: pytest-claims-compare A B)")


class Terminal:
    """Writes the summary of the run's verdicts.json (registered beside the session, on the controller)."""

    def __init__(self, state: State) -> None:
        self.state = state

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        payload = self.state.payload
        if not payload:
            return
        changes_section(terminalreporter, payload)
        verdicts_section(terminalreporter, payload)
        false_alarm_section(terminalreporter, payload)
        store_section(terminalreporter, payload, self.state.store.mode)
        report_section(terminalreporter, self.state)
