"""What an anytime statement's chain holds, by kind: each batch's own data, and what follows from it along the chain.

A continuation ledger (pytest_claims.statements.ledger) and a merge's pooled chain (pytest_claims.merge.pool) are lists
of batches. Each batch keeps the data it drew (its `data` fields) and what the chain derives from them: the log e-values
for and against the statement after it, and running totals. One function per kind derives them (`derive`), and
everything that builds, checks or joins a chain calls it, so a ledger read back is recomputed from its data, never
trusted.

- "rate" (decide_rate): the counts (successes, trials); the beta-mixture e-process of the cumulative counts, so a
  joined chain is the mixture of all the counts so far (the prior's cost paid once). A ledger with no "kind" is one.
- "two-proportions" (decide_two_proportions): the counts (k_a, n_a, k_b, n_b) of 'p_A > p_B'; each batch's
  conditional e-value given its margins, for and against (the arms swapped), multiplied along the chain.
- "safe-t" (decide_safe_t): a batch's t statistic and its size(s) (t, n, n2; n2 0 for one sample); the safe t-test's
  e-value of the batch alone, for (effect +delta) and against (-delta), multiplied along the chain.
- "betting" (decide_mean, decide_mean_difference): a batch's observations (values, in [lo, hi]) in the order drawn;
  the two one-sided capital processes of betting on them (pytest_claims.anytime.betting), continued from the state
  the batch before left (the count, the plug-in's two sums, the two log capitals): valid for any distribution of
  data inside the bounds.
- "sign" (decide_signs): a batch's counts of pairs above, below and tied (above, below, ties); the beta mixture of
  the cumulative counts against the rate 1/2, ties counted against both sides.
- "spent-p" (decide_test under a registered anytime decision): a round's two one-sided p-values (p_for, p_against;
  None where a test gave none), each tested at the alpha spent on round k (anytime.round_alpha: 6 alpha / (pi^2
  k^2), summing to alpha over all rounds), by the union bound when each round tests its own new batch alone (the
  only use decide_test allows: round_data="batch").
  Its rounds are levels, not e-values: a chain of them is decided by its own rule and never pooled in a merge.

Every chain is decided at its first crossing (`decide_chain`). A product of batch e-values is an e-process along the
chain because each batch is drawn from a fresh stream, independent of the batches before it, and its e-value has
mean at most 1 under the null whatever came before.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_claims.anytime.evalues import (
    AnytimeDecision,
    BetaPrior,
    decide_log_evalues,
    rate_log_evalues_for,
    round_alpha,
    two_proportions_log_evalue,
)
from pytest_claims.anytime.betting import BettingState, betting_path, sign_log_evalues
from pytest_claims.anytime.safe_t import safe_t_log_evalue
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED

LOG_E_FLOOR = -1e6  # log e-values below it are kept as it (JSON has no -inf; no decision reads below 0)
RATE = "rate"
TWO_PROPORTIONS = "two-proportions"
SAFE_T = "safe-t"
SPENT_P = "spent-p"
BETTING = "betting"
SIGN = "sign"


class ChainInvalid(ValueError):
    """A chain's statement or batch that is not one the plugin wrote (the message says what is wrong)."""


def floored(log_evalue: float) -> float:
    return max(float(log_evalue), LOG_E_FLOOR)


# A count above this is no batch's (and past any float: sums of such counts would raise OverflowError, not refuse)
MAX_COUNT = 2**53


def _whole(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise ChainInvalid(f"has {name} = {value!r:.40}, not a whole number >= 0 (at most 2**53)")
    return value


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ChainInvalid(f"has {name} = {value!r:.40}, not a number")
    try:
        return float(value)
    except OverflowError:  # an integer past any float
        raise ChainInvalid(f"has {name} = {value!r:.40}, not a number a float holds") from None


@dataclass(frozen=True)
class ChainKind:
    """One kind of chain: its statement's parameter names, a batch's data fields, and the derivation of what a
    chain records after each batch from the record after the batch before (None at the first) and the batch's data.
    `totals` names the derived fields a pooled chain reports as its whole (the counts of a rate)."""

    name: str
    parameters: tuple[str, ...]
    data: tuple[str, ...]
    check_data: Callable[[dict[str, Any]], None]
    derive: Callable[[dict[str, Any] | None, dict[str, Any], dict[str, Any]], dict[str, Any]]
    totals: tuple[str, ...] = ()
    evalues: bool = True  # its chain's log_e_for / log_e_against are e-values (decided at 1 / level; poolable)
    sizes: tuple[str, ...] = ()  # the data fields a batch's trials are counted from (none: rounds of p-values)


# ------------------------------------------------------------------------------------------------
# Rates: the beta mixture of the cumulative counts


def _rate_data(data: dict[str, Any]) -> None:
    successes, trials = _whole("successes", data["successes"]), _whole("trials", data["trials"])
    if successes > trials:
        raise ChainInvalid(f"has successes {successes} > trials {trials}")


def _rate_derive(before: dict[str, Any] | None, data: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(statement["at_least"], bool):
        raise TypeError(f"at_least must be a boolean, got {statement['at_least']!r}")
    cum_s = data["successes"] + (before["cum_successes"] if before else 0)
    cum_n = data["trials"] + (before["cum_trials"] if before else 0)
    log_for, log_against = rate_log_evalues_for(
        cum_s, cum_n, statement["threshold"], at_least=statement["at_least"], prior=BetaPrior(**statement["prior"])
    )
    return {
        "cum_successes": cum_s,
        "cum_trials": cum_n,
        "log_e_for": floored(log_for),
        "log_e_against": floored(log_against),
    }


# ------------------------------------------------------------------------------------------------
# Products of batch e-values


def _product(batch_for: float, batch_against: float, before: dict[str, Any] | None) -> dict[str, Any]:
    """The chain's record after a batch whose e-values are these: the batch's own and the running products."""
    batch_for, batch_against = floored(batch_for), floored(batch_against)
    return {
        "batch_log_e_for": batch_for,
        "batch_log_e_against": batch_against,
        "log_e_for": floored(batch_for + (before["log_e_for"] if before else 0.0)),
        "log_e_against": floored(batch_against + (before["log_e_against"] if before else 0.0)),
    }


def _proportions_data(data: dict[str, Any]) -> None:
    for name, value in data.items():
        _whole(name, value)


def _proportions_derive(before, data: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    a, b, w_inf = (data["k_a"], data["n_a"]), (data["k_b"], data["n_b"]), statement["w_inf"]
    return _product(
        two_proportions_log_evalue(*a, *b, w_inf=w_inf), two_proportions_log_evalue(*b, *a, w_inf=w_inf), before
    )


def _safe_t_data(data: dict[str, Any]) -> None:
    _number("t", data["t"]), _whole("n", data["n"]), _whole("n2", data["n2"])  # sizes and finiteness: derive's


def _safe_t_derive(before, data: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    n2 = data["n2"] or None
    t, n, delta = data["t"], data["n"], statement["delta"]
    return _product(safe_t_log_evalue(t, n, delta, n2=n2), safe_t_log_evalue(-t, n, delta, n2=n2), before)


# ------------------------------------------------------------------------------------------------
# Means of bounded data by betting, and signs of pairs

MAX_BATCH_VALUES = 100_000  # observations a betting batch keeps in the ledger (a larger batch: split it in several)


def _betting_data(data: dict[str, Any]) -> None:
    values = data["values"]
    if not isinstance(values, list) or not values or len(values) > MAX_BATCH_VALUES:
        raise ChainInvalid(f"has values that are not a list of 1 to {MAX_BATCH_VALUES} observations")
    for value in values:
        _number("an observation", value)


def _stake_level(level: float) -> float:
    """The level a side's bet is tuned to; a level of 0 decides nothing, and its side bets as at 1e-300."""
    return max(float(level), 1e-300)


def _betting_derive(before, data: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(statement["at_least"], bool):
        raise TypeError(f"at_least must be a boolean, got {statement['at_least']!r}")
    at_least = statement["at_least"]
    held, refute = _stake_level(statement["held_alpha"]), _stake_level(statement["alpha"])
    state = BettingState()
    if before is not None:
        state = BettingState(
            before["cum_n"], before["sum_y"], before["sum_sq"], before["log_capital_above"], before["log_capital_below"]
        )
    # The 'above' capital bets against 'mean <= threshold': it is the statement's when at_least, at held_alpha.
    above_level, below_level = (held, refute) if at_least else (refute, held)
    lo, hi, threshold = statement["lo"], statement["hi"], statement["threshold"]
    last = betting_path(data["values"], lo, hi, threshold, held_alpha=above_level, alpha=below_level, state=state)[-1]
    log_for, log_against = (last.log_for, last.log_against) if at_least else (last.log_against, last.log_for)
    return {
        "cum_n": last.n,
        "sum_y": last.sum_y,
        "sum_sq": last.sum_sq,
        "log_capital_above": last.log_for,
        "log_capital_below": last.log_against,
        "log_e_for": floored(log_for),
        "log_e_against": floored(log_against),
    }


def _sign_derive(before, data: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    cum = {f"cum_{name}": data[name] + (before[f"cum_{name}"] if before else 0) for name in ("above", "below", "ties")}
    log_for, log_against = sign_log_evalues(cum["cum_above"], cum["cum_below"], cum["cum_ties"])
    return {**cum, "log_e_for": floored(log_for), "log_e_against": floored(log_against)}


# ------------------------------------------------------------------------------------------------
# Alpha spent over rounds of p-values


def _p_value(name: str, value: Any) -> None:
    if value is not None and not (0.0 <= _number(name, value) <= 1.0):
        raise ChainInvalid(f"has {name} = {value!r}, not a p-value in [0, 1] (or None)")


def _spent_data(data: dict[str, Any]) -> None:
    _p_value("p_for", data["p_for"])
    _p_value("p_against", data["p_against"])


def _spent_derive(before, data: dict[str, Any], statement: dict[str, Any]) -> dict[str, Any]:
    k = before["round"] + 1 if before else 1
    return {
        "round": k,
        "held_level": round_alpha(statement["held_alpha"], k) if statement["held_alpha"] > 0 else 0.0,
        "refute_level": round_alpha(statement["alpha"], k) if statement["alpha"] > 0 else 0.0,
    }


def _rejects(p: float | None, level: float) -> bool:
    return p is not None and p < level


def decide_chain(statement: dict[str, Any], batches: list[dict[str, Any]]) -> AnytimeDecision:
    """The chain's decision at its first crossing: for e-values, the first look where the one for the statement
    reaches 1 / held_alpha (held) or the one against it 1 / alpha (refuted); for spent alpha, the first round whose
    p_for is below its held level (held) or whose p_against is below its refuting level (refuted; p-values have no
    log e-values: those fields are 0)."""
    if kind_of(statement).evalues:
        return decide_log_evalues(
            [b["log_e_for"] for b in batches],
            [b["log_e_against"] for b in batches],
            alpha=statement["alpha"],
            held_alpha=statement["held_alpha"],
        )
    for look, b in enumerate(batches, start=1):
        held = _rejects(b["p_for"], b["held_level"])
        if held or _rejects(b["p_against"], b["refute_level"]):
            return AnytimeDecision(HELD if held else REFUTED, look, 0.0, 0.0, 0.0, 0.0)
    return AnytimeDecision(INCONCLUSIVE, None, 0.0, 0.0, 0.0, 0.0)


_LEVELS = ("what", "alpha", "held_alpha")
KINDS = {
    RATE: ChainKind(
        RATE,
        (*_LEVELS, "threshold", "at_least", "prior"),
        ("successes", "trials"),
        _rate_data,
        _rate_derive,
        totals=("cum_successes", "cum_trials"),
        sizes=("trials",),
    ),
    TWO_PROPORTIONS: ChainKind(
        TWO_PROPORTIONS,
        (*_LEVELS, "kind", "w_inf"),
        ("k_a", "n_a", "k_b", "n_b"),
        _proportions_data,
        _proportions_derive,
        sizes=("n_a", "n_b"),
    ),
    SAFE_T: ChainKind(
        SAFE_T, (*_LEVELS, "kind", "delta"), ("t", "n", "n2"), _safe_t_data, _safe_t_derive, sizes=("n", "n2")
    ),
    BETTING: ChainKind(
        BETTING,
        (*_LEVELS, "kind", "lo", "hi", "threshold", "at_least"),
        ("values",),
        _betting_data,
        _betting_derive,
        totals=("cum_n",),
        sizes=("values",),
    ),
    SIGN: ChainKind(
        SIGN,
        (*_LEVELS, "kind"),
        ("above", "below", "ties"),
        _proportions_data,
        _sign_derive,
        totals=("cum_above", "cum_below", "cum_ties"),
        sizes=("above", "below", "ties"),
    ),
    SPENT_P: ChainKind(SPENT_P, (*_LEVELS, "kind"), ("p_for", "p_against"), _spent_data, _spent_derive, evalues=False),
}


def kind_of(statement: Any) -> ChainKind:
    """The kind a chain's statement parameters name ("kind"; none: a rate, as every ledger before the field), with
    the parameters every kind shares checked; the others are checked where they are used (derive_chain)."""
    name = statement.get("kind", RATE) if isinstance(statement, dict) else None
    if not isinstance(name, str) or name not in KINDS:
        raise ChainInvalid(f"has statement parameters of no known kind ({name!r}; known: {', '.join(KINDS)})")
    kind = KINDS[name]
    if sorted(statement) != sorted(kind.parameters):
        raise ChainInvalid(f"has statement parameters {sorted(statement)}, not {sorted(kind.parameters)}")
    if not isinstance(statement["what"], str):
        raise ChainInvalid("has statement parameters of the wrong types (what: a string)")
    for name in ("alpha", "held_alpha"):
        _number(name, statement[name])
    return kind


def batch_size(statement: dict[str, Any], entry: dict[str, Any]) -> int | None:
    """The trials (observations, pairs) of one ledger batch `entry` of the chain `statement` decides: the sum of
    its kind's `sizes` fields (a list of observations counts its length); None for rounds of p-values."""
    kind = kind_of(statement)
    if not kind.sizes:
        return None
    return sum(len(entry[name]) if isinstance(entry[name], list) else int(entry[name]) for name in kind.sizes)


def data_of(kind: ChainKind, entry: dict[str, Any], index: int) -> dict[str, Any]:
    """A batch's own data (the types checked), as its stream drew it."""
    try:
        data = {name: entry[name] for name in kind.data}
        kind.check_data(data)
    except KeyError as missing:
        raise ChainInvalid(f"lacks the field {missing} at batch {index}") from None
    except ChainInvalid as error:
        raise ChainInvalid(f"{error} at batch {index}") from None
    return data


def derive_chain(statement: Any, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the chain records after each of `batches` (their data read and checked), in order; `statement`: its
    parameters as read (kind_of checks them: ChainInvalid if they are not a known kind's)."""
    kind, before, out = kind_of(statement), None, []
    for index, entry in enumerate(batches):
        data = data_of(kind, entry, index)
        try:
            before = kind.derive(before, data, statement)
        except (TypeError, ValueError) as error:  # the e-value functions' own checks of the data and parameters
            raise ChainInvalid(
                f"has data or statement parameters that are not valid at batch {index} ({error})"
            ) from None
        out.append(before)
    return out
