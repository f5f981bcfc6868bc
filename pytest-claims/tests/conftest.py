"""The plugin's own tests: NumPy and matplotlib imported once, before any in-process pytester run.

pytester restores sys.modules after each in-process run, dropping what the run imported; NumPy's C extension
cannot be imported a second time in one process ("cannot load module more than once per process"), so a test
file whose throwaway projects import NumPy (through matplotlib) would fail when run alone.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot  # noqa: E402,F401
import numpy  # noqa: E402,F401
