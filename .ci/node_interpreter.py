"""Stand-in for a CUDA node's interpreter in CI: makes this venv's torch (and the distributions torch
requires) importable by another interpreter through a user site of links, as a node has its CUDA torch
installed and nothing else. `.ci/gpu-nightly` then sets the node up from a folder of wheels alone.

    .venv/bin/python .ci/node_interpreter.py USER_SITE   (USER_SITE: `python3 -m site --user-site` under
                                                         the PYTHONUSERBASE the node run will use)
"""

from __future__ import annotations

import importlib.metadata as md
import pathlib
import re
import sys


def main(site: pathlib.Path) -> None:
    site.mkdir(parents=True, exist_ok=True)
    todo, seen = ["torch"], set()
    while todo:
        dist = md.distribution(todo.pop())
        name = dist.metadata["Name"].lower()
        if name in seen:
            continue
        seen.add(name)
        todo += [re.split(r"[<>=!~ ;\[(]", r, maxsplit=1)[0] for r in dist.requires or [] if "extra ==" not in r]
        base = pathlib.Path(dist.locate_file(""))
        # each top-level entry the distribution installed (its packages and its .dist-info, so pip sees it)
        for top in {pathlib.PurePath(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            if not (site / top).exists():
                (site / top).symlink_to(base / top)
    print(f"node interpreter: torch {md.version('torch')} and {len(seen) - 1} distributions it requires, linked")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
