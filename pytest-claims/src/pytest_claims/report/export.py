"""The claim table of a verdicts.json as CSV, Markdown or LaTeX (booktabs), for a paper or its supplement.

One row per claim in the registry's order: its key, id, where the paper states it, its text, the registered
verdict, the verdict earned, the mutants killed, and its key numbers. `pytest-claims export --format latex
reports/verdicts.json` prints it (or writes it with `-o`); `--claims-export=latex` (ini `claims_export`) writes
`claims.tex` (`claims.csv`, `claims.md`) beside verdicts.json at the end of every run.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from pytest_claims.store.atomic import atomic_write
from pytest_claims.stats.shown_numbers import significant

FORMATS = {"csv": "claims.csv", "markdown": "claims.md", "latex": "claims.tex"}
ALIASES = {"md": "markdown", "tex": "latex"}
HEADER = ["Key", "Claim", "Where", "Statement", "Expected", "Verdict", "Mutants killed", "Key numbers"]


def parse_formats(raw: str | list[str]) -> list[str]:
    """Formats from an option ("csv,latex") or an ini list; ValueError naming an unknown one."""
    words = raw if isinstance(raw, list) else [raw]
    found = []
    for word in (w.strip().lower() for part in words for w in str(part).split(",")):
        if not word:
            continue
        word = ALIASES.get(word, word)
        if word not in FORMATS:
            raise ValueError(f"unknown export format {word!r} (one of {', '.join(FORMATS)})")
        if word not in found:
            found.append(word)
    return found


def number_text(value: Any) -> str:
    """A number as the table shows it (pytest_claims.stats.shown_numbers: 4 digits, more where 4 would read 0 or 1)."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    return significant(value)


def value_text(value: Any) -> str:
    if isinstance(value, dict):  # a record: its fields
        return ", ".join(f"{k} = {value_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return number_text(value)


def labelled(value: dict[str, Any], several: bool) -> str:
    """One value of a key number; beside others, with the label of the run it came from (`seed 1: 0.1238` in a
    replication set, `pooled: ...` for the seeds pooled, `full: ...` for a parametrisation), which tells them apart."""
    text = value_text(value["value"])
    return f"{value['run']}: {text}" if several and value.get("run") else text


def seeds_text(seed: Any) -> str:
    """The master seed of a run ("master seed 29589"), or the seeds of a replication set ("master seeds 1, 2, 3")."""
    if isinstance(seed, list):
        return "master seeds " + ", ".join(str(s) for s in seed)
    return f"master seed {seed}"


def rows(payload: dict[str, Any]) -> list[list[str]]:
    """The table's rows (strings), in the order verdicts.json lists the claims (the registry's)."""
    out = []
    for record in payload["claims"]:
        power = record.get("power")
        killed = f"{power['killed']}/{power['of']}" if power else ""
        numbers = []
        for entry in record.get("key_numbers", []):
            values = entry.get("values") or []
            shown = "; ".join(labelled(v, len(values) > 1) for v in values) if values else "--"
            numbers.append(f"{entry['label']} = {shown}")
        out.append(
            [
                str(record.get("key", "")),
                str(record["id"]),
                str(record.get("where", "")),
                str(record.get("statement", "")),
                str(record.get("expected", "")),
                str(record["verdict"]) + _pooled(record),
                killed,
                "; ".join(numbers),
            ]
        )
    return out


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...), @SUM(...)); OWASP's advice on
# CSV injection: such a cell is written after a single quote, which the spreadsheet shows as text and hides.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_CONTROL = {code: " " for code in [*range(32), 127]}


def csv_cell(text: str) -> str:
    """A cell as CSV carries it: a would-be formula neutralised (FORMULA_STARTS)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _pooled(record: dict[str, Any]) -> str:
    """ " (pooled over seeds ...)" when a statement of the claim carries a pooled outcome (a merge's replication set,
    pytest_claims.merge.pool.with_pooled): the verdict is not one seed's alone."""
    seeds: list[str] = []
    for statement in record.get("statements", []):
        for value in (statement.get("evidence") or {}).values():
            pooled = value.get("pooled") if isinstance(value, dict) else None
            if isinstance(pooled, dict) and pooled.get("outcome") is not None:
                seeds += [str(s) for s in pooled.get("seeds", {}) if str(s) not in seeds]
    return f" (pooled over seeds {', '.join(seeds)})" if seeds else ""


def as_csv(payload: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows([csv_cell(cell) for cell in row] for row in rows(payload))
    return buffer.getvalue()


def _md_cell(text: str) -> str:
    """A Markdown table cell: control bytes (CR, LF, ESC, ...) made spaces, the table's bars and backslashes escaped,
    and HTML's <, > and & written as entities, so that no raw HTML from a verdicts.json reaches a rendered page."""
    text = text.translate(_CONTROL).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|")


def as_markdown(payload: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_md_cell(cell) for cell in row) + " |" for row in rows(payload)]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def latex_escape(text: str) -> str:
    """`text` as LaTeX prints it: its specials escaped, and its control bytes made spaces (a blank line would end
    the paragraph inside a table cell or the caption, which LaTeX stops on)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text.translate(_CONTROL))


# Claim (key, id, where), Statement, Verdict, Mutants, Key numbers: the wrapped columns' widths (tabularx \hsize
# factors, summing to their count) sized so that a default `article` page takes the table at \linewidth.
_LATEX_COLUMNS = (
    r"@{}"
    + "".join(
        rf">{{\raggedright\arraybackslash\hsize={w}\hsize}}X" if w else spec
        for spec, w in (("", 0.85), ("", 1.4), ("", 0.75), ("r", 0), ("", 1.0))
    )
    + "@{}"
)
LATEX_HEADER = ["Claim", "Statement", "Verdict", "Mutants", "Key numbers"]


def _breakable(text: str, marks: tuple[str, ...]) -> str:
    """Escaped text that may break after each of `marks` (ids and evidence names are long words with no spaces)."""
    out = latex_escape(text)
    for mark in marks:
        out = out.replace(mark, mark + r"\allowbreak{}")
    return out


ID_BREAKS, NUMBER_BREAKS = ("/", "-"), (r"\_", "=")  # never inside a number such as 4.051e-40


def as_latex(payload: dict[str, Any]) -> str:
    """A `table` with a booktabs `tabularx` at \\linewidth (needs \\usepackage{booktabs,tabularx}): long texts
    wrap; the claim cell holds its key, id and place in the paper; the verdict names the registered one where they
    differ."""
    body = []
    for key, cid, where, statement, expected, verdict, killed, numbers in rows(payload):
        claim = rf"\textbf{{{latex_escape(key)}}} {_breakable(cid, ID_BREAKS)}" + (
            rf"\newline {latex_escape(where)}" if where else ""
        )
        shown = verdict if verdict == expected else f"{verdict} (registered: {expected})"
        cells = [
            claim,
            latex_escape(statement),
            latex_escape(shown),
            latex_escape(killed),
            _breakable(numbers, NUMBER_BREAKS),
        ]
        body.append(" & ".join(cells) + r" \\")
    suite = latex_escape(str(payload.get("suite", "Claims")))
    caption = (
        f"{suite} ({latex_escape(seeds_text(payload.get('seed')))}). Verdict: the one the evidence earned, "
        "with the registered one where they differ; Mutants: killed of tried."
    )
    return "\n".join(
        [
            r"\begin{table}[t]",
            r"\centering\footnotesize\setlength{\tabcolsep}{4pt}",
            rf"\caption{{{caption}}}\label{{tab:claims}}\smallskip",
            rf"\begin{{tabularx}}{{\linewidth}}{{{_LATEX_COLUMNS}}}",
            r"\toprule",
            " & ".join(rf"\textbf{{{h}}}" for h in LATEX_HEADER) + r" \\",
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabularx}",
            r"\end{table}",
            "",
        ]
    )


RENDERERS = {"csv": as_csv, "markdown": as_markdown, "latex": as_latex}


def render(payload: dict[str, Any], fmt: str) -> str:
    return RENDERERS[fmt](payload)


def write_exports(payload: dict[str, Any], directory: Path, formats: list[str]) -> list[Path]:
    """Each format's table as its file (FORMATS) in `directory`; the paths written."""
    written = []
    for fmt in formats:
        path = Path(directory) / FORMATS[fmt]
        atomic_write(path, render(payload, fmt).encode("utf-8"))  # a reader never sees half a table
        written.append(path)
    return written


class Exporter:
    """Registered on the controller with `--claims-export` / ini `claims_export`: writes the tables after the
    verdicts are made, and names them in the summary."""

    def __init__(self, state: Any, formats: list[str]) -> None:
        self.state = state
        self.formats = formats
        self.written: list[Path] = []
        self.failed = ""
        self.payload: dict[str, Any] = {}  # the verdicts, once published (pytest_claims_payload)

    def pytest_claims_payload(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def pytest_sessionfinish(self) -> None:
        if not self.payload:
            return
        try:
            self.written = write_exports(self.payload, self.state.report_dir, self.formats)
        except OSError as error:  # the run's verdicts stand; the export says why it is missing
            self.failed = f"claim table export failed: {error}"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.failed:
            terminalreporter.write_line(self.failed)
        if self.written:
            terminalreporter.write_line("claim table: " + ", ".join(str(p) for p in self.written))
