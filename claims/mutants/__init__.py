"""The project's mutant catalogue: every module of this package lists MUTANTS (pytest_claims.roles.mutants.Mutant)
for the kernels of one area; registry statements name the mutants they must kill."""

from __future__ import annotations

import importlib
import pkgutil

MUTANTS = []
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
    MUTANTS.extend(importlib.import_module(f"{__name__}.{_info.name}").MUTANTS)
