"""The data model: the registry, evidence, the verdict rules, key numbers, and verdicts.json built, written and read."""
