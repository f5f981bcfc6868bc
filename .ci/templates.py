"""CI step helper: run the shard and merge commands of pytest-claims' job templates as written, locally.

Each template (pytest-claims/templates/: the GitHub Actions workflow and the Slurm array script) marks its one shard
command `# claims: shard` and its one merge command `# claims: merge`. This reads those lines out of the templates
(so CI runs what a user copies, and the two cannot drift), runs the shard command once per group of SPLITS in a
copy of the example project (each group's variables set as the scheduler would: `${{ matrix.group }}` and
`${{ env.SPLITS }}` for GitHub, SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_CPUS_PER_TASK for Slurm), then
the merge command, and prints the merged verdicts.json's path for the caller to compare with an unsharded run.

    python .ci/templates.py --work DIR [--splits 2]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "pytest-claims" / "templates"
EXAMPLE = ROOT / "pytest-claims" / "examples" / "means"
MARK = re.compile(r"^\s*(?P<command>[^\s#].*?)\s+# claims: (?P<kind>shard|merge)\s*$")
GITHUB_EXPRESSION = re.compile(r"\$\{\{\s*(\w+)\.(\w+)\s*\}\}")
# Where each template's merge leaves the merged run (its `-o` folder), relative to the project.
TEMPLATE_FILES = {"github-actions.yml": "github", "slurm-array.sh": "slurm"}


def commands(template: Path) -> dict[str, str]:
    """{"shard": ..., "merge": ...}: the marked lines, exactly one of each, or a one-line error naming the file."""
    found: dict[str, list[str]] = {"shard": [], "merge": []}
    for line in template.read_text(encoding="utf-8").splitlines():
        match = MARK.match(line)
        if match:
            found[match["kind"]].append(match["command"])
    for kind, lines in found.items():
        if len(lines) != 1:
            raise SystemExit(f"templates: {template} has {len(lines)} lines marked `# claims: {kind}`, needs one")
    return {kind: lines[0] for kind, lines in found.items()}


def as_shell(command: str) -> str:
    """A GitHub expression `${{ matrix.group }}` as the shell variable ${MATRIX_GROUP} (set in the environment)."""
    return GITHUB_EXPRESSION.sub(lambda m: "${" + f"{m[1]}_{m[2]}".upper() + "}", command)


def environment(kind: str, group: int, splits: int) -> dict[str, str]:
    if kind == "github":
        return {"MATRIX_GROUP": str(group), "ENV_SPLITS": str(splits)}
    return {"SLURM_ARRAY_TASK_ID": str(group), "SLURM_ARRAY_TASK_COUNT": str(splits), "SLURM_CPUS_PER_TASK": "1"}


def run(command: str, cwd: Path, env: dict[str, str], log: Path) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {command}   ({' '.join(f'{k}={v}' for k, v in env.items())})\n")
        out.flush()
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail; " + command],
            cwd=cwd,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        tail = "\n".join(log.read_text(encoding="utf-8").splitlines()[-30:])
        raise SystemExit(f"{tail}\ntemplates: `{command}` failed ({done.returncode}) in {cwd}; log {log}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--splits", type=int, default=2)
    args = parser.parse_args(argv)
    for name, kind in TEMPLATE_FILES.items():
        marked = commands(TEMPLATES / name)
        project = args.work.resolve() / kind
        shutil.rmtree(project, ignore_errors=True)
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("reports", ".pytest_cache"))
        log = args.work.resolve() / f"{kind}.log"
        log.unlink(missing_ok=True)
        for group in range(1, args.splits + 1):
            run(as_shell(marked["shard"]), project, environment(kind, group, args.splits), log)
        run(as_shell(marked["merge"]), project, environment(kind, 0, args.splits), log)
        merged = project / "merged" / "verdicts.json"
        if not merged.is_file():
            raise SystemExit(f"templates: {name}'s merge wrote no {merged}")
        print(f"{kind}: {merged}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
