"""`pytest-claims-merge`: runs from many machines or seeds merged, a replication set checked, chains pooled."""
