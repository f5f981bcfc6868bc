"""The suite's pytest.ini, read where a module needs a value of it at import time (collection parametrises tests
before any test can ask pytest's config): the tier names (claims_tiers) and the registry files (claims_registry),
each read from the one place it is declared. A test checks the values against pytest's own reading of the ini."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path
from typing import Any

from iniconfig import IniConfig

ROOT = Path(__file__).resolve().parent.parent
INI = ROOT / "pytest.ini"


def ini_args(key: str) -> list[str]:
    """An `args` value of pytest.ini's [pytest] section, split as pytest splits it (shlex)."""
    return shlex.split(IniConfig(INI)["pytest"][key])


def registry_claims() -> list[dict[str, Any]]:
    """The claim records of the registry files claims_registry names (relative to the rootdir), as written."""
    claims: list[dict[str, Any]] = []
    for path in ini_args("claims_registry"):
        with (ROOT / path).open("rb") as registry:
            claims.extend(tomllib.load(registry).get("claim", []))
    return claims
