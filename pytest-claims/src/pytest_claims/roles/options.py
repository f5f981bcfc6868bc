"""The plugin's command-line options: each under a `--claims-` name; short aliases only where a project asks.

Every option is spelt `--claims-NAME` (as pytest-benchmark's `--benchmark-*`, hypothesis's `--hypothesis-*`) and
stored under a `claims_` destination, so neither name nor destination can clash with another plugin's or a
project's own `--seed`. The short forms of earlier releases (`--seed`, `--mutants`, `--no-store`, `--store-dir`,
`--previous-verdicts`) are registered only where the ini key `claims_short_options` is true, after the project's
initial conftests added theirs, and each only where no one has taken it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

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


class IniKey(NamedTuple):
    """One ini key of the plugin: its name, `pytest --help` line, pytest type ("string", "args", "bool") and default
    (None: pytest's, an empty string)."""

    name: str
    help: str
    type: str = "string"
    default: Any = None


# Every ini key of the plugin, registered here only (docs/reference/configuration.md is checked against this table).
INI_KEYS: list[IniKey] = [
    IniKey(
        "claims_registry",
        "claim registry TOML file(s), relative to the rootdir (the plugin is inactive without one)",
        "args",
        [],
    ),
    # the one place the plugin names tiers: its default; everything else reads the settings
    IniKey("claims_tiers", "scale markers, one per test, smallest first", "args", ["smoke", "full", "gpu"]),
    IniKey(
        "claims_min_mutants",
        "least number of mutants a holds statement lists (or it says why in mutants_waived)",
        "string",
        "0",
    ),
    IniKey(
        "claims_report_dir", "directory of verdicts.json and the figures, relative to the rootdir", "string", "reports"
    ),
    IniKey(
        "claims_mutants", "importable module with the MUTANTS list (pytest_claims.roles.mutants.Mutant)", "string", ""
    ),
    IniKey("claims_store_dir", "result store directory (default: the pytest cache's d/claims-store)", "string", ""),
    IniKey(
        "claims_evidence_dir",
        "evidence directory for the anytime ledgers, relative to the rootdir (default claims-evidence, never the "
        "pytest cache)",
        "string",
        "",
    ),
    IniKey("claims_title", "title of the verdict report", "string", "Claim verification suite"),
    IniKey(
        "claims_false_alarm_budget",
        "the most a tier's registered false-alarm probabilities may sum to",
        "string",
        "1e-3",
    ),
    IniKey("claims_seed", "master seed of the run's random draws, a non-negative integer (default 0)"),
    IniKey(
        "claims_save_runs",
        "keep each run's verdicts.json as <claims_report_dir>/runs/NNNN_<date>_seed<seed>/verdicts.json "
        "(the last one is the default --previous-verdicts)",
        "bool",
        True,
    ),
    IniKey(
        "claims_mutant_time_factor",
        "a --mutants run stops a mutant after this many times its real test's time",
        "string",
        "10.0",
    ),
    IniKey("claims_mutant_time_grace", "... plus this many seconds (then the mutant ends `timeout`)", "string", "30.0"),
    IniKey(
        "claims_progress_seconds",
        "seconds between progress lines with the time left (0: none; none under -q)",
        "string",
        "60.0",
    ),
    IniKey(
        SHORT_INI,
        "also register the short aliases --seed, --mutants, --store-dir, --no-store, --previous-verdicts",
        "bool",
        False,
    ),
    IniKey(
        "claims_strict",
        "exit with status 6 when a selected claim's verdict is not the registered one (as --claims-strict)",
        "bool",
        False,
    ),
    IniKey(
        "claims_thread_limit",
        "under pytest-xdist, give each worker's BLAS/OpenMP/torch thread pools its share of the cores",
        "bool",
        True,
    ),
    IniKey(
        "claims_serial_threads",
        "in a run without xdist workers, limit BLAS and torch to this many threads once collected (0: leave them)",
        "string",
        "0",
    ),
    IniKey(
        "claims_budget",
        "the budget of --claims-continue-until=decided when --claims-budget gives none (batches:N, trials:N, time:D)",
        "string",
        "",
    ),
    IniKey(
        "claims_export",
        "formats of the claim table written beside verdicts.json on every run (csv markdown latex)",
        "args",
        [],
    ),
]


def add_ini(parser: pytest.Parser) -> None:
    """Register every ini key of `INI_KEYS` (pytest_addoption)."""
    for key in INI_KEYS:
        if key.default is None:
            parser.addini(key.name, key.help, type=key.type)  # type: ignore[arg-type]
        else:
            parser.addini(key.name, key.help, type=key.type, default=key.default)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Settings:
    """The plugin's options and ini keys, read once where an active run is configured (pytest_configure); the
    roles read these fields, never the option or key by its string. Values a role checks itself (a budget, a
    progress interval, a mutant time limit) are kept as given, so the check names the key as before."""

    registry: tuple[str, ...]
    tiers: tuple[str, ...]
    report_dir: Path
    title: str
    false_alarm_budget: str
    mutants_module: str
    min_mutants: str
    save_runs: bool
    strict: bool
    export: tuple[str, ...]
    budget: str
    progress_seconds: str
    mutant_time_factor: str
    mutant_time_grace: str
    run_mutants: bool
    only_mutants: tuple[str, ...]
    budget_option: str | None  # --claims-budget (the ini key's value is `budget`)
    no_store: bool
    store_dir: str  # --claims-store-dir, else the ini key ("": the pytest cache's)
    evidence_dir: str  # the anytime ledgers: --claims-evidence-dir, else the ini key, else claims-evidence
    previous: str | None
    continue_batch: bool
    continue_until: str | None
    serial_threads: int  # claims_serial_threads (0: leave the libraries' thread pools as they are)


def read_settings(config: pytest.Config) -> Settings:
    """The run's settings from `config` (every true/false key checked first: a bad one is one UsageError line)."""
    check_flags(config)
    option = config.getoption
    export = option("claims_export")
    return Settings(
        registry=tuple(config.getini("claims_registry")),
        tiers=tuple(config.getini("claims_tiers")),
        report_dir=Path(config.rootpath) / config.getini("claims_report_dir"),
        title=str(config.getini("claims_title")),
        false_alarm_budget=str(config.getini("claims_false_alarm_budget")),
        mutants_module=str(config.getini("claims_mutants")),
        min_mutants=str(config.getini("claims_min_mutants")),
        save_runs=ini_flag(config, "claims_save_runs"),
        strict=strict(config),
        export=(export,) if export else tuple(config.getini("claims_export")),
        budget=str(config.getini("claims_budget")),
        progress_seconds=str(config.getini("claims_progress_seconds")),
        mutant_time_factor=str(config.getini("claims_mutant_time_factor")),
        mutant_time_grace=str(config.getini("claims_mutant_time_grace")),
        run_mutants=bool(option("claims_mutants")),
        only_mutants=tuple(option("claims_only_mutant", None) or ()),
        budget_option=option("claims_budget", None),
        no_store=bool(option("claims_no_store", False)),
        store_dir=option("claims_store_dir") or str(config.getini("claims_store_dir")),
        evidence_dir=option("claims_evidence_dir") or str(config.getini("claims_evidence_dir")) or EVIDENCE_DIR,
        previous=option("claims_previous", None),
        continue_batch=bool(option("claims_continue", False)),
        continue_until=option("claims_continue_until", None),
        serial_threads=serial_threads(config),
    )


EVIDENCE_DIR = "claims-evidence"  # the default evidence directory, in the rootdir (never the pytest cache)
SETTINGS = pytest.StashKey[Settings]()


def settings_of(config: pytest.Config) -> Settings:
    """The run's settings, read on the first call and kept in the config's stash."""
    if SETTINGS not in config.stash:
        config.stash[SETTINGS] = read_settings(config)
    return config.stash[SETTINGS]


def strict(config: pytest.Config) -> bool:
    given = config.getoption("claims_strict", None)
    return bool(given) if given is not None else ini_flag(config, "claims_strict")


def serial_threads(config: pytest.Config) -> int:
    """The ini key claims_serial_threads as a count (0: off), or one UsageError naming the key and its value."""
    given = str(config.getini("claims_serial_threads")).strip() or "0"
    try:
        count = int(given)
    except ValueError:
        count = -1
    if count < 0:
        raise pytest.UsageError(
            f"ini key claims_serial_threads in {config.inipath}: {given!r}; it takes a whole number of threads "
            "(0 leaves the libraries' own)"
        )
    return count


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
