"""The settings registry: every option and ini key registered in one table, and the docs' tables checked against it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pytest_claims.roles import options

CONFIGURATION = Path(__file__).resolve().parents[1] / "docs" / "reference" / "configuration.md"


def _table_names(section: str) -> set[str]:
    """The first-column names (`claims_x`, `--claims-x`, without `=VALUE` or ` N`) of the table under `## section`."""
    text = CONFIGURATION.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in body.splitlines():
        cell = re.match(r"^\| `([^`]+)` \|", line)
        if cell:
            names.add(re.split(r"[= ]", cell.group(1))[0])
    return names


def test_the_ini_table_of_the_docs_is_the_registered_one():
    registered = {key.name for key in options.INI_KEYS}
    documented = _table_names("ini keys")
    assert documented == registered, (
        f"documented only: {sorted(documented - registered)}; registered only: {sorted(registered - documented)}"
    )


def test_the_option_table_of_the_docs_is_the_registered_one():
    registered = {name for name, _alias, _dest, _attrs in options.OPTIONS}
    documented = _table_names("Command line")
    assert documented == registered, (
        f"documented only: {sorted(documented - registered)}; registered only: {sorted(registered - documented)}"
    )


def test_the_documented_aliases_are_the_registered_ones():
    text = CONFIGURATION.read_text(encoding="utf-8")
    for name, alias, _dest, _attrs in options.OPTIONS:
        row = next(line for line in text.splitlines() if re.match(rf"^\| `{name}[= `]", line))
        assert (f"`{alias}`" in row.split("|")[2]) if alias else not row.split("|")[2].strip(), row


def test_every_ini_key_is_registered_by_the_one_table_only():
    """No module of the plugin calls `addini` but `options.add_ini` (one registry)."""
    source = Path(options.__file__).resolve().parents[1]
    callers = sorted(
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if re.search(r"\.addini\(", path.read_text(encoding="utf-8"))
    )
    assert callers == ["roles/options.py"], callers


def test_settings_are_frozen():
    fields = {f.name: None for f in dataclasses.fields(options.Settings)}
    settings = options.Settings(**fields)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.title = "changed"  # type: ignore[misc]


def test_settings_are_read_once_from_the_run(pytester):
    pytester.makeini("[pytest]\nclaims_title = My suite\nclaims_report_dir = out\n")
    config = pytester.parseconfig("--claims-store-dir=somewhere", "--claims-export=csv")
    settings = options.read_settings(config)
    assert (settings.title, settings.report_dir.name, settings.store_dir, settings.export) == (
        "My suite",
        "out",
        "somewhere",
        ("csv",),
    )
    assert options.settings_of(config) is options.settings_of(config)
