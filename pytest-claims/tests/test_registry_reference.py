"""docs/reference/registry.md against the registry's one definition (registry.Claim, Statement and Family): each
field the code knows has a row, with its TOML type and whether it is required, and no row names a field the code
does not know; the claim's `expected` lists the verdicts a registry may expect."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_claims.model.registry import CLAIM_EXPECTED, Claim, Family, Statement, required_fields, toml_types

PAGE = Path(__file__).parent.parent / "docs" / "reference" / "registry.md"
# How the page names a TOML type, read as the types the registry's check accepts.
TYPE_WORDS = {
    "string": (str,),
    "boolean": (bool,),
    "array of strings": (list,),
    "table": (dict,),
    "number": (int, float),
    "number, or table": (int, float, dict),
    "string, or table": (str, dict),
}


def tables(text: str) -> dict[str, dict[str, tuple[str, str, str]]]:
    """{section heading: {field: (type, default, meaning)}} of the page's field tables."""
    found: dict[str, dict[str, tuple[str, str, str]]] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        match = re.match(r"\| `(\w+)` \| (.*?) \| (.*?) \| (.*) \|$", line)
        if match:
            found.setdefault(section, {})[match[1]] = (match[2], match[3], match[4])
    return found


def disagreements(text: str) -> list[str]:
    """One line per difference between the page's tables and the dataclasses."""
    out = []
    sections = tables(text)
    for heading, cls in (
        ("`[[claim]]`", Claim),
        ("`[[claim.statement]]` (inside a claim)", Statement),
        ("`[[claim.family]]` (inside a claim)", Family),
    ):
        rows = sections.get(heading, {})
        types = {
            name: t for name, t in toml_types(cls).items() if not (cls is Claim and name in ("statement", "family"))
        }
        required = required_fields(cls)
        if set(rows) != set(types):
            out.append(
                f"{heading}: rows {sorted(set(rows) - set(types))} unknown, {sorted(set(types) - set(rows))} lack one"
            )
        for name in set(rows) & set(types):
            kind, default, _ = rows[name]
            word = next((w for w in sorted(TYPE_WORDS, key=len, reverse=True) if kind.startswith(w)), None)
            if word is None or TYPE_WORDS[word] != types[name]:
                out.append(f"{heading} {name}: the page says {kind!r}, the registry takes {types[name]}")
            if (default == "required") != (name in required):
                out.append(
                    f"{heading} {name}: the page's default {default!r}, required in the registry: {name in required}"
                )
    expected = sections.get("`[[claim]]`", {}).get("expected", ("", "", ""))[2]
    listed = re.findall(r"`([a-z ]+)`", expected.split("optionally")[0])
    if sorted(listed) != sorted(CLAIM_EXPECTED):
        out.append(f"claim expected: the page lists {listed}, the registry takes {list(CLAIM_EXPECTED)}")
    return out


@pytest.mark.smoke
def test_the_registry_reference_describes_the_registrys_fields():
    problems = disagreements(PAGE.read_text(encoding="utf-8"))
    assert not problems, "docs/reference/registry.md disagrees with registry.py:\n" + "\n".join(problems)


@pytest.mark.smoke
def test_the_reference_check_finds_each_kind_of_difference():
    page = PAGE.read_text(encoding="utf-8")
    assert disagreements(page) == []
    assert "lack one" in "\n".join(disagreements(page.replace("| `scale_free` |", "| `scale_free_` |")))
    assert "the page says" in "\n".join(
        disagreements(page.replace("| `required` | boolean |", "| `required` | string |"))
    )
    assert "default" in "\n".join(
        disagreements(page.replace('| `tests` | string | `""` |', "| `tests` | string | required |"))
    )
    assert "claim expected" in "\n".join(disagreements(page.replace("`reduced scale`, ", "")))
