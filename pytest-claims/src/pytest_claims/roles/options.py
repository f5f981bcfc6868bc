"""The plugin's command-line options: each under a `--claims-` name; short aliases only where a project asks.

Every option is spelt `--claims-NAME` (as pytest-benchmark's `--benchmark-*`, hypothesis's `--hypothesis-*`) and
stored under a `claims_` destination, so neither name nor destination can clash with another plugin's or a
project's own `--seed`. The short forms of earlier releases (`--seed`, `--mutants`, `--no-store`, `--store-dir`,
`--previous-verdicts`) are registered only where the ini key `claims_short_options` is true, after the project's
initial conftests added theirs, and each only where no one has taken it.
"""

from __future__ import annotations

from typing import Any

import pytest

# (prefixed name, short alias or "", dest, argparse attributes)
OPTIONS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "--claims-seed",
        "--seed",
        "claims_seed",
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
        "--claims-evidence-dir",
        "",
        "claims_evidence_dir",
        dict(
            default=None,
            metavar="DIR",
            help="evidence directory for the anytime ledgers (overrides the ini key claims_evidence_dir; default "
            "claims-evidence in the rootdir, never pytest's cache)",
        ),
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
        "--claims-continue-until",
        "",
        "claims_continue_until",
        dict(
            choices=["decided"],
            default=None,
            help="add batches to each inconclusive anytime statement, calling its test once per batch, until it "
            "decides or the budget (--claims-budget) is spent (docs/how-to/continue.md)",
        ),
    ),
    (
        "--claims-budget",
        "",
        "claims_budget",
        dict(
            default=None,
            metavar="BUDGET",
            help="with --claims-continue-until=decided, what each statement test may spend in this run: batches:N, "
            "trials:N, time:D (90s, 10m, 2h), comma-separated (overrides the ini key claims_budget)",
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
PATH_OPTIONS = [
    ("--claims-previous-verdicts", "claims_previous"),
    ("--claims-store-dir", "claims_store_dir"),
    ("--claims-evidence-dir", "claims_evidence_dir"),
]


SHORT_INI = "claims_short_options"
ALIASES = pytest.StashKey[tuple[str, ...]]()  # the short aliases this run registered


def _taken(parser: pytest.Parser) -> set[str]:
    """Option strings already registered (by pytest, the plugins and the project's conftests), in the named groups and
    in the anonymous one that `parser.addoption` fills (pytest 8 keeps it apart from the named ones)."""
    groups = [*getattr(parser, "_groups", []), getattr(parser, "_anonymous", None)]
    return {name for group in groups if group is not None for option in group.options for name in option.names()}


def add_options(group: Any) -> None:
    """Register every option under its `--claims-` name (pytest_addoption: before the project's conftests)."""
    for name, _alias, dest, attrs in OPTIONS:
        group.addoption(name, dest=dest, **attrs)


def add_aliases(config: pytest.Config, parser: pytest.Parser) -> list[str]:
    """With the ini key claims_short_options: register each short alias nobody has taken, on the destination of its
    `--claims-` name; return the aliases left out because another plugin or a conftest has them."""
    added: list[str] = []
    left_out: list[str] = []
    if config.getini(SHORT_INI):
        group = parser.getgroup("claims")
        taken = _taken(parser)
        for name, alias, dest, attrs in OPTIONS:
            if not alias:
                continue
            if alias in taken:
                left_out.append(alias)
                continue
            group.addoption(alias, dest=dest, **dict(attrs, help=f"{name}, as the ini key {SHORT_INI} asks"))
            added.append(alias)
    config.stash[ALIASES] = tuple(added)
    return left_out


def left_out_line(left_out: list[str]) -> str:
    named = ", ".join(f"{alias} (use {name})" for name, alias, _d, _attrs in OPTIONS if alias in left_out)
    return f"{SHORT_INI}: another plugin or a conftest has {named}; those short aliases are not the plugin's"


def registered(config: pytest.Config, name: str) -> list[str]:
    """The option strings that set `--claims-NAME`'s destination in this run: the prefixed one and its alias where
    registered (so a project's own `--seed` is never read as the plugin's)."""
    alias = next(a for n, a, _d, _attrs in OPTIONS if n == name)
    return [name] + ([alias] if alias and alias in config.stash.get(ALIASES, ()) else [])


def add_ini(parser: pytest.Parser) -> None:
    parser.addini(
        SHORT_INI,
        "also register the short aliases --seed, --mutants, --store-dir, --no-store, --previous-verdicts",
        type="bool",
        default=False,
    )
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
        "claims_budget",
        "the budget of --claims-continue-until=decided when --claims-budget gives none (batches:N, trials:N, time:D)",
        default="",
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
