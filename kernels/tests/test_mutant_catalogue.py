"""The suite's mutant catalogue still applies to the kernels (a reformatted line that held a snippet
would otherwise surface only in a `--mutants` run)."""

from __future__ import annotations

import pytest

from pytest_claims.roles.mutants import catalogue, stale_mutants

CATALOGUE = "claims.mutants"


@pytest.mark.smoke
def test_every_mutant_of_the_catalogue_applies():
    assert len(catalogue(CATALOGUE)) > 0
    problems = stale_mutants(CATALOGUE)
    assert not problems, "\n".join(problems)
