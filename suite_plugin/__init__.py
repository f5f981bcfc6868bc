"""The suite's own pytest plugin, loaded by conftest.py: its command-line options and the `options` fixture
(options.py), L6's options (l6_options.py) and the smoke tier's xdist schedule (schedule.py); one BLAS/torch thread
for a run without workers is the verdict plugin's (pytest.ini's claims_serial_threads). The verdict plugin,
pytest_claims, loads by its entry point; this one holds only what is particular to this suite."""
