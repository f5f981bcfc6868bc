"""The suite's own pytest plugin, loaded by conftest.py: its command-line options and the `options` fixture
(options.py), L6's options (l6_options.py), the smoke tier's xdist schedule (schedule.py) and one BLAS/torch
thread for a run without workers (serial_threads.py). The verdict plugin, pytest_claims, loads by its entry
point; this one holds only what is particular to this suite."""
