"""What a statement test records as its evidence: plain built-in values and figures."""
from __future__ import annotations

import base64
import io
import math
import re
from pathlib import Path
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """Evidence as plain JSON types (so it survives pytest-xdist and diffs cleanly)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else repr(value)
    if value is None or isinstance(value, str):
        return value
    return repr(value)


class Evidence:
    """Recorder handed to a statement test by the `evidence` fixture."""

    def __init__(self, figure_dir: Path, test_id: str) -> None:
        self.values: dict[str, Any] = {}
        self.headline_names: list[str] = []
        self.figures: list[tuple[str, str, str]] = []  # (title, path, base64 png)
        self._figure_dir = figure_dir
        self._slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_id).strip("_")

    def record(self, **values: Any) -> None:
        """Record supporting numbers (counts, bounds, p-values, counterexamples)."""
        self.values.update({k: plain(v) for k, v in values.items()})

    def headline(self, **values: Any) -> None:
        """Record the two or three numbers the claim table shows."""
        self.record(**values)
        self.headline_names.extend(k for k in values if k not in self.headline_names)

    def figure(self, title: str, fig: Any) -> None:
        """Save a matplotlib figure (PNG, deterministic metadata) and embed it in the report."""
        import matplotlib.pyplot as plt

        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
        plt.close(fig)
        data = buffer.getvalue()
        name = f"{self._slug}__{len(self.figures)}.png"
        self._figure_dir.mkdir(parents=True, exist_ok=True)
        (self._figure_dir / name).write_bytes(data)
        self.figures.append((title, f"figures/{name}", base64.b64encode(data).decode("ascii")))

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.values)
        if self.headline_names:
            out["headline"] = list(self.headline_names)
        return out
