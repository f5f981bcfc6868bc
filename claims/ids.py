"""Each claim's id, by its key (K1, L5, B3, ...): read from the registry, the one place an id is declared. The
statement tests and the workloads that key their results by a claim take the id from here, never as a literal
(test_suite_facts.py checks that no other module of the suite writes one; workloads/uot_dro.py's L6 is the one
exception: its value keys L6's committed paper-scale units, so it stays as written and is checked equal)."""

from __future__ import annotations

from claims.configuration import registry_claims

CLAIM_IDS = {claim["key"]: claim["id"] for claim in registry_claims()}

K1, K2, K3 = CLAIM_IDS["K1"], CLAIM_IDS["K2"], CLAIM_IDS["K3"]
L1, L1b, L2, L3 = CLAIM_IDS["L1"], CLAIM_IDS["L1b"], CLAIM_IDS["L2"], CLAIM_IDS["L3"]
L4, L5, L6 = CLAIM_IDS["L4"], CLAIM_IDS["L5"], CLAIM_IDS["L6"]
B1, B2, B3, B4, B5 = CLAIM_IDS["B1"], CLAIM_IDS["B2"], CLAIM_IDS["B3"], CLAIM_IDS["B4"], CLAIM_IDS["B5"]
