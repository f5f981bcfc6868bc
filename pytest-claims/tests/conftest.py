"""The plugin's own tests: the `project` fixture (the toy project of toy_project.py, written into pytester's
folder), and NumPy and matplotlib imported once, before any in-process pytester run.

pytester restores sys.modules after each in-process run, dropping what the run imported; NumPy's C extension
cannot be imported a second time in one process ("cannot load module more than once per process"), so a test
file whose throwaway projects import NumPy (through matplotlib) would fail when run alone.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot  # noqa: E402,F401
import numpy  # noqa: E402,F401

import pytest  # noqa: E402

import toy_project  # noqa: E402


@pytest.fixture
def project(pytester: pytest.Pytester):
    """Writes the toy project (toy_project.py) into pytester's folder; parameters make its variants."""

    def make(
        mutants: str = '["off-by-one", "wrong-sign"]',
        triangle_tests: str = toy_project.TRIANGLE_TESTS,
        constant_tests: str = toy_project.CONSTANT_TESTS,
        refuted_mutants: str = '["squares"]',
    ):
        pytester.makefile(".ini", pytest=toy_project.INI)
        pytester.makefile(".toml", registry=toy_project.registry(mutants, refuted_mutants))
        pytester.makepyfile(
            toy_kernel=toy_project.KERNEL,
            toy_mutants=toy_project.MUTANTS,
            test_triangle=triangle_tests,
            test_constant=constant_tests,
        )
        pytester.syspathinsert()
        return pytester

    return make
