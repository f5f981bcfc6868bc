"""Fail unless pytest-claims installed alone brings at most 8 distributions, neither torch nor NumPy (run with
the interpreter of the venv that holds only its wheel, from outside the checkout).

    (cd ELSEWHERE && VENV/bin/python .../.ci/plugin_alone.py)
"""

import importlib.metadata as md

names = sorted({d.metadata["Name"].lower() for d in md.distributions()} - {"pip", "setuptools", "wheel"})
print(f"pytest-claims alone: {len(names)} distributions ({', '.join(names)})")
assert len(names) <= 8 and not {"torch", "numpy"} & set(names), f"pytest-claims alone pulls in {names}"
