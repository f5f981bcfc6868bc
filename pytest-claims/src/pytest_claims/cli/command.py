"""The `pytest-claims` command: `init` writes a working skeleton project, `export` prints a run's claim table.

    pytest-claims init [DIR] [--force]
    pytest-claims export --format {csv,markdown,latex} reports/verdicts.json [-o FILE]

Exit status 0 on success, 2 on bad input (one line naming the file or the argument).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from pytest_claims.cli import skeleton
from pytest_claims.report import export
from pytest_claims.store.atomic import atomic_write
from pytest_claims.model.verdicts_json import PayloadError, read_any


def _init(args: argparse.Namespace) -> int:
    try:
        written = skeleton.write_skeleton(Path(args.directory), force=args.force)
    except (FileExistsError, OSError) as error:
        sys.stderr.write(f"pytest-claims init: {error}\n")
        return 2
    where = Path(args.directory)
    sys.stdout.write(f"wrote {', '.join(p.name for p in written)} in {where}\n")
    shadowed = skeleton.pytest_configs(where)
    if shadowed:  # --force was given: say what pytest now reads instead
        sys.stdout.write(f"note: pytest now reads the new pytest.ini there, not {', '.join(shadowed)}\n")
    go = "" if where.resolve() == Path.cwd().resolve() else f"cd {shlex.quote(str(where))} && "
    sys.stdout.write(f"next: {go}pytest && pytest --claims-mutants\n")
    return 0


def _claims_checked(payload: dict, path: str) -> None:
    """The fields the table reads: each claim a table with a string id and verdict."""
    for index, record in enumerate(payload["claims"]):
        if not isinstance(record, dict):
            raise PayloadError(f"{path}: claims[{index}] is not a table")
        for field in ("id", "verdict"):
            if not isinstance(record.get(field), str):
                raise PayloadError(f"{path}: claims[{index}].{field} is missing or not a string")
        for field in ("key_numbers",):
            if not isinstance(record.get(field, []), list):
                raise PayloadError(f"{path}: claims[{index}].{field} is not a list")


def _table(payload: dict, fmt: str, path: str) -> str:
    """The table in `fmt`; PayloadError naming `path` where a field it reads beyond _claims_checked's (a key number,
    a statement's evidence, the mutants' power) has the wrong type or is nested deeper than it is read."""
    try:
        return export.render(payload, fmt)
    except RecursionError:
        raise PayloadError(f"{path}: a value the claim table shows is nested too deeply") from None
    except KeyError as error:
        raise PayloadError(f"{path}: a field the claim table reads lacks {error}") from None
    except (TypeError, AttributeError) as error:
        raise PayloadError(f"{path}: a field the claim table reads has the wrong type ({error})") from None


def _same_file(output: str, source: str) -> bool:
    """Whether writing `output` would replace `source` (the same file, by any path or link to it)."""
    try:
        return os.path.samefile(output, source)
    except FileNotFoundError:
        return False


def _export(args: argparse.Namespace) -> int:
    try:
        (fmt,) = export.parse_formats(args.format)
        payload = read_any(args.verdicts)
        _claims_checked(payload, args.verdicts)
        text = _table(payload, fmt, args.verdicts)
    except (ValueError, PayloadError) as error:
        sys.stderr.write(f"pytest-claims export: {error}\n")
        return 2
    if args.output:
        try:
            if _same_file(args.output, args.verdicts):
                sys.stderr.write(
                    f"pytest-claims export: -o {args.output} is the input verdicts.json: not overwritten\n"
                )
                return 2
            atomic_write(Path(args.output), text.encode("utf-8"), sync=False)
        except OSError as error:
            sys.stderr.write(f"pytest-claims export: cannot write {args.output} ({error.strerror or error})\n")
            return 2
    else:
        sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-claims", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init", help="write a working skeleton project (two claims, tests, mutants)")
    init.add_argument("directory", nargs="?", default=".", help="where to write it (default: here)")
    init.add_argument("--force", action="store_true", help="overwrite the skeleton's files where present")
    init.set_defaults(run=_init)
    exp = commands.add_parser("export", help="the claim table of a verdicts.json as CSV, Markdown or LaTeX")
    exp.add_argument("verdicts", help="a verdicts.json (a run's, a saved run's or a merge's)")
    exp.add_argument("--format", "-f", required=True, help=f"one of {', '.join(export.FORMATS)}")
    exp.add_argument("--output", "-o", default=None, help="write to FILE instead of printing")
    exp.set_defaults(run=_export)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
