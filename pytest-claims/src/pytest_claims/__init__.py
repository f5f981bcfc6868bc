"""pytest-claims: research claims as executable specifications.

A registry of claims and their statements (TOML), one test per statement, statement outcomes and
claim verdicts, evidence on the test reports, a keyed resumable result store, mutants that show each
statement's power, merged runs, and an HTML verdict report.

Everything a statement test uses is importable from here (the documentation's API reference,
docs/reference/api.md, lists it).
"""

from pytest_claims.statements.anytime_batches import decide_safe_t, decide_two_proportions
from pytest_claims.statements.anytime_means import decide_mean, decide_mean_difference, decide_signs
from pytest_claims.statements.assertions import (
    statement_allclose,
    statement_ge,
    statement_holds,
    statement_in_interval,
    statement_le,
    statement_none,
)
from pytest_claims.context import current_evidence, current_store, registered_false_alarm
from pytest_claims.statements.decide import (
    decide_interval,
    decide_rate,
    decide_test,
    statement_inconclusive,
    trials_for_chance,
    trials_to_decide,
)
from pytest_claims.model.evidence import Evidence
from pytest_claims.statements.families import FamilyDecision, decide_family
from pytest_claims.statements.means_fixed import (
    FixedMeanDecision,
    MeanBounds,
    RelativeErrorDecision,
    decide_mean_fixed,
    decide_relative_error,
    mean_bounds,
    mean_log_evalues,
    relative_error_bounds,
)
from pytest_claims.outcomes import ClaimRefuted, StatementInconclusive
from pytest_claims.stats.binomial import rate_lower_bound, rate_upper_bound
from pytest_claims.roles.seeding import keyed_rng, master_seed, seed_sequence
from pytest_claims.roles.state import declared_tier

__all__ = [
    "ClaimRefuted",
    "Evidence",
    "FamilyDecision",
    "FixedMeanDecision",
    "MeanBounds",
    "RelativeErrorDecision",
    "StatementInconclusive",
    "current_evidence",
    "current_store",
    "decide_family",
    "decide_interval",
    "decide_mean",
    "decide_mean_difference",
    "decide_mean_fixed",
    "decide_rate",
    "decide_relative_error",
    "decide_safe_t",
    "decide_signs",
    "decide_test",
    "decide_two_proportions",
    "declared_tier",
    "keyed_rng",
    "master_seed",
    "mean_bounds",
    "mean_log_evalues",
    "rate_lower_bound",
    "rate_upper_bound",
    "registered_false_alarm",
    "relative_error_bounds",
    "seed_sequence",
    "statement_allclose",
    "statement_ge",
    "statement_holds",
    "statement_in_interval",
    "statement_le",
    "statement_none",
    "statement_inconclusive",
    "trials_for_chance",
    "trials_to_decide",
]
