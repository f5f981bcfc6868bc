"""Wrong versions of the kernels that the statements must catch (ini key claims_mutants)."""

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant(
        "gm-root-off-by-one",
        "means_kernels:geometric_mean",
        "/ len(xs))",
        "/ max(len(xs) - 1, 1))",
        # max(.., 1): as written without it, the mutant divides by zero on the one-value vectors the statement
        # includes, and errors (not a kill) before the mathematics is tried
        "the n-th root taken as an (n-1)-th root (for two values or more)",
    ),
    Mutant(
        "am-divides-by-n-plus-1",
        "means_kernels:arithmetic_mean",
        "/ len(xs)",
        "/ (len(xs) + 1)",
        "the sum divided by n + 1",
    ),
    Mutant(
        "shuffle-never-stays",
        "means_kernels:random_permutation",
        "rng.randrange(i + 1)",
        "rng.randrange(i)",
        "Sattolo's shuffle: one n-cycle, never a fixed point",
    ),
    Mutant(
        "fixed-point-needs-all",
        "means_kernels:has_fixed_point",
        "any(",
        "all(",
        "asks for every point fixed instead of one",
    ),
]
