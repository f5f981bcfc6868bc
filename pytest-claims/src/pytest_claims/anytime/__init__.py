"""Anytime-valid maths: e-values, confidence sequences, the safe t-test, betting and chains of batches (no pytest)."""
