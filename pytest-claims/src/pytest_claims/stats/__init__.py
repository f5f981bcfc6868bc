"""Pure arithmetic: exact binomial tails and bounds, and how a number is shown (imports nothing of the package)."""
