"""The 8 master seeds CI replicates the smoke tier under, chosen afresh for each commit from its hash (printed by
.ci/run, so a failure can be rerun with the same seeds): `python3 .ci/replication_seeds.py COMMIT`."""

import hashlib
import sys

digest = hashlib.sha256(sys.argv[1].encode()).digest()
print(" ".join(str(int.from_bytes(digest[4 * i : 4 * i + 4], "big") % 1000000 + 1) for i in range(8)))
