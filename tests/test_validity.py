"""Validity statistics against textbook values, closed forms and independent scipy calls.

Published intervals: Newcombe, R. G. (1998). Two-sided confidence intervals for the single
proportion: comparison of seven methods. Statistics in Medicine 17, 857-872, Table I, which
gives for 81/263, 15/148, 0/20 and 1/29 the Wilson score interval (no continuity correction)
and the exact Clopper-Pearson interval to four decimals.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.distributions import mid_p_interval
from analysis.verdicts.validity import (
    label_agreement,
    label_share,
    position_bias,
    proportion,
    tost_paired,
    wilson_interval,
)

# (k, n): (Wilson lower, upper), (Clopper-Pearson lower, upper), Newcombe (1998) Table I.
NEWCOMBE_1998 = {
    (81, 263): ((0.2553, 0.3662), (0.2527, 0.3676)),
    (15, 148): ((0.0624, 0.1605), (0.0578, 0.1617)),
    (0, 20): ((0.0000, 0.1611), (0.0000, 0.1684)),
    (1, 29): ((0.0061, 0.1718), (0.0009, 0.1776)),
}


def rounded(pair) -> tuple[float, float]:
    return tuple(round(x, 4) for x in pair)


# --------------------------------------------------------------------------------------------
# Wilson interval and proportion


@pytest.mark.parametrize(("k", "n"), NEWCOMBE_1998)
def test_wilson_interval_newcombe_1998(k, n):
    published, _ = NEWCOMBE_1998[(k, n)]
    assert rounded(wilson_interval(k, n)) == published
    assert rounded(proportion(k, n)["ci95"]) == published


def test_wilson_interval_matches_scipy_and_closed_forms():
    ci = stats.binomtest(81, 263).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(81, 263) == pytest.approx((ci.low, ci.high), abs=1e-12)
    z2 = stats.norm.ppf(0.975) ** 2
    # k = 0: the upper bound is z^2 / (n + z^2); k = n mirrors it.
    assert wilson_interval(0, 20) == (0.0, pytest.approx(z2 / (20 + z2), abs=1e-12))
    assert wilson_interval(20, 20) == (pytest.approx(20 / (20 + z2), abs=1e-12), 1.0)


def test_proportion_dict_and_empty():
    assert proportion(3, 4) == {
        "value": 0.75,
        "ci95": list(wilson_interval(3, 4)),
        "n": 4,
        "k": 3,
    }
    empty = proportion(0, 0)
    assert empty["value"] is None and empty["ci95"] is None and empty["note"]
    with pytest.raises(ValueError):
        proportion(5, 4)


# --------------------------------------------------------------------------------------------
# Agreement with the constructed label


@pytest.mark.parametrize(("k", "n"), NEWCOMBE_1998)
def test_label_agreement_exact_interval_newcombe_1998(k, n):
    _, published = NEWCOMBE_1998[(k, n)]
    result = label_agreement(["chosen"] * k + ["rejected"] * (n - k))
    assert rounded(result["ci95"]) == published


def test_label_agreement_against_scipy_and_beta_quantiles():
    majorities = ["chosen"] * 14 + ["rejected"] * 4 + ["tie", "no_consensus", None]
    result = label_agreement(majorities)
    assert (result["n"], result["k"]) == (18, 14)
    assert result["value"] == pytest.approx(14 / 18)
    # One-sided exact test, H1: p > 0.5: P(X >= 14 | n = 18, p = 0.5).
    tail = sum(math.comb(18, i) for i in range(14, 19)) / 2**18
    assert result["p_value"] == pytest.approx(tail, abs=1e-12)
    assert result["p_value"] == pytest.approx(
        stats.binomtest(14, 18, alternative="greater").pvalue, abs=1e-12
    )
    # Two-sided Clopper-Pearson from beta quantiles, not the one-sided interval of the test.
    assert result["ci95"] == pytest.approx(
        [stats.beta.ppf(0.025, 14, 5), stats.beta.ppf(0.975, 15, 4)], abs=1e-9
    )
    assert result["ci95"][1] < 1.0


def test_label_share_interval_is_the_published_mid_p_interval():
    # 15 of 40 pairs confirm (the rest split between rejected majorities and ties):
    # stests' ci_p_mid_p(15, 40) documents [0.2361295, 0.5313959].
    counts = np.array([[3, 0, 0]] * 15 + [[0, 3, 0]] * 20 + [[1, 1, 1]] * 5, dtype=np.int64)
    share = label_share(counts, min_annotations=2, decided_only=False)
    assert (share["k"], share["n"]) == (15, 40)
    assert share["ci95"] == pytest.approx([0.2361295, 0.5313959], abs=5e-8)
    # inside the Clopper-Pearson interval of the same counts, which covers more than 95%
    exact = stats.binomtest(15, 40).proportion_ci(method="exact")
    assert exact.low < share["ci95"][0] and share["ci95"][1] < exact.high
    decided = label_share(counts, min_annotations=2, decided_only=True)
    assert (decided["k"], decided["n"]) == (15, 35)
    assert decided["ci95"] == pytest.approx(list(mid_p_interval(15, 35)), abs=1e-12)


def test_label_agreement_all_chosen_closed_form():
    result = label_agreement(["chosen"] * 10)
    assert result["p_value"] == pytest.approx(0.5**10)
    assert result["ci95"] == pytest.approx([0.025 ** (1 / 10), 1.0])


def test_label_agreement_no_decided_pairs():
    result = label_agreement(["tie", "no_consensus"])
    assert result["value"] is None and result["ci95"] is None and result["p_value"] is None
    assert result["n"] == 0 and result["note"]
    assert json.dumps(result, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Position bias


def test_position_bias_two_sided_exact():
    result = position_bias(first_slot_picks=60, n=100)
    assert result["first_slot_rate"] == 0.6
    assert result["n"] == 100
    assert result["p_value"] == pytest.approx(stats.binomtest(60, 100).pvalue, abs=1e-12)
    # Symmetric null: the two-sided p is twice the upper tail.
    upper = sum(math.comb(100, i) for i in range(60, 101)) / 2**100
    assert result["p_value"] == pytest.approx(2 * upper, abs=1e-12)
    assert result["ci95"][0] < 0.6 < result["ci95"][1]


def test_position_bias_empty_and_invalid():
    empty = position_bias(first_slot_picks=0, n=0)
    assert empty["first_slot_rate"] is None and empty["p_value"] is None and empty["note"]
    with pytest.raises(ValueError):
        position_bias(first_slot_picks=3, n=2)


# --------------------------------------------------------------------------------------------
# TOST


def test_tost_hand_calculation_df2():
    """d = [0, 1, 2]: mean 1, sd 1, se 1/sqrt(3), df 2, margin 2.

    For df = 2 the t distribution has closed forms: F(t) = 1/2 + t / (2 sqrt(2 + t^2)) and
    F^-1(p) = (2p - 1) / sqrt(2 p (1 - p)).
    t_upper = (1 - 2) sqrt(3) = -sqrt(3): p_upper = 1/2 - sqrt(3) / (2 sqrt(5)) = 0.1127
    t_lower = (1 + 2) sqrt(3) = 3 sqrt(3): p_lower = 1/2 - 3 sqrt(3) / (2 sqrt(29)) = 0.0175
    90% interval: 1 +- F^-1(0.95) / sqrt(3) = 1 +- 2.92 / sqrt(3).
    """
    result = tost_paired([0.0, 1.0, 2.0], margin=2.0)
    p_upper = 0.5 - math.sqrt(3) / (2 * math.sqrt(5))
    assert result["tost_p"] == pytest.approx(p_upper, abs=1e-12)
    assert round(result["tost_p"], 4) == 0.1127
    assert result["equivalent"] is False
    t95 = 0.9 / math.sqrt(2 * 0.95 * 0.05)
    assert result["ci90"] == pytest.approx([1 - t95 / math.sqrt(3), 1 + t95 / math.sqrt(3)])
    assert (result["mean_diff"], result["n"]) == (1.0, 3)


def test_tost_equals_two_scipy_one_sided_tests():
    rng = np.random.default_rng(0)
    differences = rng.normal(0.1, 0.6, size=80)
    margin = 0.5
    result = tost_paired(differences, margin=margin)
    lower = stats.ttest_1samp(differences, -margin, alternative="greater").pvalue
    upper = stats.ttest_1samp(differences, margin, alternative="less").pvalue
    assert result["tost_p"] == pytest.approx(max(lower, upper), abs=1e-12)
    ci = stats.ttest_1samp(differences, 0.0).confidence_interval(confidence_level=0.90)
    assert result["ci90"] == pytest.approx([ci.low, ci.high], abs=1e-12)
    assert result["equivalent"] is True


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-3, 3, allow_nan=False), min_size=2, max_size=40),
    st.floats(0.05, 2.0),
)
def test_tost_decision_is_interval_inclusion(differences, margin):
    result = tost_paired(differences, margin=margin)
    if "note" in result:  # zero variance
        return
    lo, hi = result["ci90"]
    inside = -margin < lo and hi < margin
    # Away from the boundary, p < alpha exactly when the 90% interval lies within the margin.
    if min(abs(lo + margin), abs(hi - margin)) > 1e-9:
        assert result["equivalent"] == inside


def test_tost_drops_nans():
    with_nan = tost_paired([0.0, float("nan"), 1.0, 2.0], margin=2.0)
    assert with_nan == tost_paired([0.0, 1.0, 2.0], margin=2.0)


@pytest.mark.parametrize("differences", [[], [0.3], [float("nan"), 0.2]])
def test_tost_too_few(differences):
    result = tost_paired(differences, margin=0.5)
    assert result["tost_p"] is None and result["equivalent"] is None and result["note"]
    assert json.dumps(result, allow_nan=False)


def test_tost_zero_variance_uses_the_limit_and_says_so():
    inside = tost_paired([0.0, 0.0, 0.0], margin=0.5)
    assert inside["tost_p"] == 0.0 and inside["equivalent"] is True
    assert "zero variance" in inside["note"]
    outside = tost_paired([1.0, 1.0], margin=0.5)
    assert outside["tost_p"] == 1.0 and outside["equivalent"] is False
    on_margin = tost_paired([0.5, 0.5], margin=0.5)
    assert on_margin["equivalent"] is False
    assert tost_paired([0.1] * 3, margin=0.5)["ci90"] == [0.1, 0.1]


def test_tost_rejects_bad_parameters():
    with pytest.raises(ValueError):
        tost_paired([0.0, 1.0], margin=0.0)
    with pytest.raises(ValueError):
        tost_paired([0.0, 1.0], margin=0.5, alpha=0.5)


def test_numpy_counts_give_json_ready_dicts():
    for result in (
        proportion(np.int64(3), np.int64(4)),
        position_bias(first_slot_picks=np.int64(3), n=np.int64(4)),
    ):
        assert json.dumps(result, allow_nan=False)
