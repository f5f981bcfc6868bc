"""What a statement test records as its evidence: plain built-in values and figures."""

from __future__ import annotations

import ast
import hashlib
import io
import math
import re
import sys
from pathlib import Path
from typing import Any

from pytest_claims.store.atomic import atomic_write


def plain(value: Any) -> Any:
    """Evidence as plain JSON types (so it survives pytest-xdist and diffs cleanly)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    np = sys.modules.get("numpy")  # not imported: no value can be a NumPy one
    if np is not None and isinstance(value, np.ndarray):
        return plain(value.tolist())
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else repr(value)
    if value is None:
        return value
    if isinstance(value, str):  # str itself: a subclass (torch.__version__ is one) cannot cross to the controller
        return str(value)
    return repr(value)


# Names the evidence dict uses itself: a value recorded under one would be lost or would break the report.
RESERVED_NAMES = {"headline": "the list of headline names"}


def reserved_name_problem(name: str) -> str:
    return f"evidence name {name!r} is the report's own key ({RESERVED_NAMES[name]}); record it under another name"


def reserved_names_used(source: str) -> list[tuple[int, str]]:
    """(line, name) of each reserved name a test module passes to `.record(...)` or `.headline(...)` by keyword
    (or in a literal `**{...}`): found when the module is collected, before any test runs."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("record", "headline"):
            continue
        for keyword in node.keywords:
            names = [keyword.arg] if keyword.arg is not None else []
            if keyword.arg is None and isinstance(keyword.value, ast.Dict):
                names = [
                    k.value for k in keyword.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                ]
            found.extend((node.lineno, name) for name in names if name in RESERVED_NAMES)
    return found


def slug(test_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", test_id).strip("_")


class Evidence:
    """Recorder handed to a statement test by the `evidence` fixture. The plugin makes it: `report_dir` (where
    figures go), `test_id` (the test's node id, naming its figures) and `draw_figures` (False where figures are not
    drawn, as under a mutant) are its business, not a test's."""

    def __init__(self, report_dir: Path, test_id: str, *, draw_figures: bool = True) -> None:
        self.values: dict[str, Any] = {}
        self.headline_names: list[str] = []
        self.figures: list[dict[str, str]] = []  # {"title", "path"} with path relative to the report dir
        self._report_dir = report_dir
        self._slug = slug(test_id)
        self._draw = draw_figures  # off while a mutant is applied: only the outcome matters there

    def record(self, **values: Any) -> None:
        """Record supporting numbers (counts, bounds, p-values, counterexamples)."""
        clash = sorted(set(values) & set(RESERVED_NAMES))
        if clash:  # names built at run time, which collection could not see
            raise ValueError(reserved_name_problem(clash[0]))
        self.values.update({k: plain(v) for k, v in values.items()})

    def headline(self, **values: Any) -> None:
        """Record the numbers a reader looks at first (shown at the top of the statement's details)."""
        self.record(**values)
        self.headline_names.extend(k for k in values if k not in self.headline_names)

    def example(self, score: Any = None, *, worst: str = "max", **inputs: Any) -> None:
        """One example of a property (a hypothesis `@given` test calls it once per example): counts them
        (`examples`), keeps the worst `score` (`worst="max"`: the largest; `"min"`: the smallest) with its inputs
        (`worst_case`), and the last example's inputs (`last_example`; on a failure the plugin names it
        `shrunk_example`: hypothesis replays the shrunk example last)."""
        if worst not in ("max", "min"):
            raise ValueError(f"evidence.example(worst=...) is 'max' or 'min', not {worst!r}")
        self.values["examples"] = int(self.values.get("examples", 0)) + 1
        shown = plain(inputs)
        self.values["last_example"] = shown
        if score is None:
            return
        value = plain(score)
        best = self.values.get("worst_case")
        if (
            best is None
            or not isinstance(best.get("score"), (int, float))
            or (value > best["score"] if worst == "max" else value < best["score"])
        ):
            self.values["worst_case"] = {"score": value, "example": shown, "worst": worst}

    def figure(self, title: str, fig: Any) -> None:
        """Save a matplotlib figure as PNG (deterministic metadata) beside the report, atomically; one that cannot be
        written (a full disk) is left out and named in the evidence (`figures_not_written`): never the outcome."""
        import matplotlib.pyplot as plt

        if not self._draw:
            plt.close(fig)
            return
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
        plt.close(fig)
        data = buffer.getvalue()
        # named by content too: two runs writing into one report directory never overwrite each other's
        relative = f"figures/{self._slug}__{len(self.figures)}-{hashlib.sha256(data).hexdigest()[:10]}.png"
        try:
            atomic_write(self._report_dir / relative, data, sync=False)
        except OSError as error:  # a full disk: infrastructure, never the statement's outcome; the evidence says so
            unwritten = self.values.setdefault("figures_not_written", [])
            unwritten.append(f"{title!r}: {relative} cannot be written ({error.strerror or error}): left out")
            return
        self.figures.append({"title": title, "path": relative})

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.values)
        if self.headline_names:
            out["headline"] = list(self.headline_names)
        return out
