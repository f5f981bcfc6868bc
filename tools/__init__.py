"""The suite's command-line tools, run with `python -m tools.<name>`: L6's paper-scale evidence runner
(l6_evidence: status, check, run, recompute), its continuation on fresh seeds (l6_continuation) and the
continued statements' registered chains they and the claim tests read (l6_chains, pure)."""
