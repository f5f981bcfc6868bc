"""The helpers a statement test calls (`statement_*`, `decide_*`) and the ledger an anytime statement continues."""
