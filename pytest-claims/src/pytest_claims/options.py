"""The plugin's command-line options: each under a `--claims-` name, with its short form as an alias where free.

Every option is spelt `--claims-NAME` (as pytest-benchmark's `--benchmark-*`, hypothesis's `--hypothesis-*`), so it
cannot clash with another plugin's. The short forms of earlier releases (`--seed`, `--mutants`, `--no-store`,
`--store-dir`, `--previous-verdicts`) stay as aliases where no plugin registered before this one took the name;
where one did, the alias is left out and the prefixed name works alone. The destinations keep their old names, so
`config.getoption("seed")` still reads the master seed.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

# (prefixed name, short alias or "", dest, argparse attributes)
OPTIONS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "--claims-seed",
        "--seed",
        "seed",
        dict(
            default=None,
            metavar="N",
            help="master seed, a non-negative integer (overrides the ini key claims_seed; default 0)",
        ),
    ),
    (
        "--claims-mutants",
        "--mutants",
        "claims_mutants",
        dict(
            action="store_true",
            help="rerun each statement's tests under each mutant it lists; a surviving mutant breaks the claim",
        ),
    ),
    (
        "--claims-mutant",
        "",
        "claims_only_mutant",
        dict(
            action="append",
            default=None,
            metavar="NAME",
            help="with --claims-mutants: only this mutant (repeat for several; the reproduce line of a mutant run)",
        ),
    ),
    (
        "--claims-store-dir",
        "--store-dir",
        "claims_store_dir",
        dict(default=None, metavar="DIR", help="result store directory (overrides the ini key claims_store_dir)"),
    ),
    (
        "--claims-no-store",
        "--no-store",
        "claims_no_store",
        dict(action="store_true", help="compute every stored result fresh and write nothing to the store"),
    ),
    (
        "--claims-previous-verdicts",
        "--previous-verdicts",
        "claims_previous",
        dict(default=None, metavar="PATH", help="a previous verdicts.json: report what changed since"),
    ),
    (
        "--claims-strict",
        "",
        "claims_strict",
        dict(
            action="store_true",
            default=None,
            help="exit with status 6 when a selected claim's verdict is not the registered one (inconclusive "
            "included; overrides the ini key claims_strict)",
        ),
    ),
    (
        "--claims-no-thread-limit",
        "",
        "claims_no_thread_limit",
        dict(
            action="store_true",
            help="under pytest-xdist, leave each worker's BLAS/OpenMP/torch threads as they are "
            "(default: each worker gets its share of the cores; ini claims_thread_limit = false)",
        ),
    ),
    (
        "--claims-continue",
        "",
        "claims_continue",
        dict(
            action="store_true",
            help="add a fresh batch to each anytime statement whose ledger is inconclusive, and decide on all its "
            "batches (default: replay the ledger's last batch; docs/how-to/continue.md)",
        ),
    ),
    (
        "--claims-export",
        "",
        "claims_export",
        dict(
            default=None,
            metavar="FORMAT",
            help="also write the claim table as FORMAT (csv, markdown, latex; comma-separated for several) "
            "beside verdicts.json",
        ),
    ),
]

# What a user who gives an option without an ini file was told to write (the long names).
PATH_OPTIONS = [("--claims-previous-verdicts", "claims_previous"), ("--claims-store-dir", "claims_store_dir")]


def _taken(parser: pytest.Parser) -> set[str]:
    """Option strings already registered (by pytest and the plugins loaded before this one)."""
    return {name for group in getattr(parser, "_groups", []) for option in group.options for name in option.names()}


def add_options(group: Any, parser: pytest.Parser) -> list[str]:
    """Register every option; return the short aliases left out because another plugin has them."""
    taken = _taken(parser)
    left_out = []
    for name, alias, dest, attrs in OPTIONS:
        names = [name] + ([alias] if alias and alias not in taken else [])
        if alias and alias in taken:
            left_out.append(alias)
        try:
            group.addoption(*names, dest=dest, **attrs)
        except (ValueError, argparse.ArgumentError):  # the alias clashes after all (pytest 9 checks at once)
            group.addoption(name, dest=dest, **attrs)
            left_out.append(alias)
    return left_out


def add_ini(parser: pytest.Parser) -> None:
    parser.addini(
        "claims_strict",
        "exit with status 6 when a selected claim's verdict is not the registered one (as --claims-strict)",
        type="bool",
        default=False,
    )
    parser.addini(
        "claims_thread_limit",
        "under pytest-xdist, give each worker's BLAS/OpenMP/torch thread pools its share of the cores",
        type="bool",
        default=True,
    )
    parser.addini(
        "claims_export",
        "formats of the claim table written beside verdicts.json on every run (csv markdown latex)",
        type="args",
        default=[],
    )


def strict(config: pytest.Config) -> bool:
    given = config.getoption("claims_strict", None)
    return bool(given) if given is not None else ini_flag(config, "claims_strict")


FLAG_KEYS = ("claims_strict", "claims_thread_limit", "claims_save_runs")


def ini_flag(config: pytest.Config, key: str) -> bool:
    """A true/false ini key's value, or one UsageError naming the key and its value (pytest's own ValueError names
    neither)."""
    try:
        return bool(config.getini(key))
    except (ValueError, pytest.UsageError) as error:  # pytest 9: UsageError("invalid truth value ..."), no key named
        raise pytest.UsageError(
            f"ini key {key} in {config.inipath}: {error}; it takes true or false (yes/no, on/off, 1/0)"
        ) from None


def check_flags(config: pytest.Config) -> None:
    """Every true/false ini key of the plugin read once where the run starts, so a bad value stops it in one line."""
    for key in FLAG_KEYS:
        ini_flag(config, key)
