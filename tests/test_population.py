"""Benchmark-wide estimates (analysis/population/estimates.py) against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.population.estimates import (
    Z95,
    population_section,
    population_sentence,
    ppi_mean_ci,
    stratified_share,
)


def test_stratified_design_estimate_by_hand():
    # stratum A: 4 pairs, all labelled (a census): 1 valid of 4
    # stratum B: 10 pairs, 4 labelled: 3 valid of 4, s^2 = 0.25
    y = np.array([1, 0, 0, 0, 1, 1, 0, 1], dtype=float)
    strata = np.array(["A"] * 4 + ["B"] * 4)
    got = stratified_share(y, strata, {"A": 4, "B": 10})
    share = 4 / 14 * 0.25 + 10 / 14 * 0.75  # = 8.5 / 14
    variance = (10 / 14) ** 2 * (1 - 4 / 10) * 0.25 / 4  # stratum A has no sampling error
    assert got["share"] == pytest.approx(8.5 / 14) == pytest.approx(share)
    assert got["variance"] == pytest.approx(variance) == pytest.approx(0.019132653)
    half = Z95 * math.sqrt(variance)
    assert got["ci95"] == pytest.approx([share - half, share + half])
    assert got["ci95"] == pytest.approx([0.336039, 0.878247], abs=1e-6)


def test_a_stratum_without_labelled_pairs_makes_the_share_undefined_with_a_note():
    got = stratified_share(np.array([1.0]), np.array(["A"]), {"A": 3, "B": 5})
    assert got["share"] is None and got["ci95"] is None
    assert "stratum 'B': no labelled pair" in got["note"]


def test_ppi_plus_plus_mean_by_the_papers_formulas():
    # PPI++ (Angelopoulos, Duchi, Zrnic 2023) as ppi-python 0.2.3's ppi_mean_ci computes it:
    # lambda = cov_n(y, f) / ((1 + n/N) var_{n+N-1}(f and u pooled)), clipped to [0, 1]
    y, f, u = [1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1]
    cov = ((0.25 * 0.5) + (-0.75 * -0.5) + (0.25 * -0.5) + (0.25 * 0.5)) / 4  # 0.125
    pooled_var = 10 * 0.6 * 0.4 / 9  # 6 ones of 10
    lam = cov / ((1 + 4 / 6) * pooled_var)
    assert lam == pytest.approx(0.28125)
    estimate = lam * 4 / 6 + np.mean(np.array(y) - lam * np.array(f))
    assert estimate == pytest.approx(0.796875)
    se = math.sqrt(lam**2 * (4 / 6) * (2 / 6) / 6 + np.var(np.array(y) - lam * np.array(f)) / 4)
    got, ci, got_lam = ppi_mean_ci(y, f, u)
    assert got_lam == pytest.approx(lam)
    assert got == pytest.approx(estimate)
    assert ci == pytest.approx([estimate - Z95 * se, estimate + Z95 * se])
    # lambda = 1: plain PPI (the 2023 Science paper), mean(u) + mean(y - f)
    plain, _, _ = ppi_mean_ci(y, f, u, lam=1.0)
    assert plain == pytest.approx(4 / 6 + 0.25)
    # lambda = 0: the labelled mean, the classical interval
    classical, ci0, _ = ppi_mean_ci(y, f, u, lam=0.0)
    assert classical == pytest.approx(0.75)
    assert ci0[1] - ci0[0] == pytest.approx(2 * Z95 * math.sqrt(0.75 * 0.25 / 4))


def test_finite_population_ppi_is_the_power_tuned_difference_estimator_by_hand():
    # one stratum of 10 pairs, 5 labelled; the judge's value is known on all 10
    y = np.array([1, 1, 0, 1, 0], dtype=float)
    f = np.array([1, 1, 0, 1, 1], dtype=float)
    f_all_mean = 0.7
    lam = np.cov(y, f)[0, 1] / np.var(f, ddof=1)  # 0.15 / 0.2 = 0.75
    assert lam == pytest.approx(0.75)
    residual = y - lam * f
    share = residual.mean() + lam * f_all_mean
    variance = (1 - 5 / 10) * np.var(residual, ddof=1) / 5
    got = stratified_share(y, np.array(["all"] * 5), {"all": 10}, f=f, f_means={"all": 0.7})
    assert got["lambda"] == {"all": pytest.approx(0.75)}
    assert got["share"] == pytest.approx(share)
    assert got["variance"] == pytest.approx(variance)
    human = stratified_share(y, np.array(["all"] * 5), {"all": 10})
    assert got["variance"] < human["variance"]


def _units(n_flagged=4, n_rest=10, labelled_rest=(1, 1, 0, 1)):
    rows = []
    for i in range(n_flagged):
        rows.append((f"f{i}", True, 1.0, "flagged", "valid" if i == 0 else "preference_flip"))
    for i in range(n_rest):
        verdict = None
        if i < len(labelled_rest):
            verdict = "valid" if labelled_rest[i] else "quality_confound"
        rows.append((f"r{i}", i < len(labelled_rest), 0.4, "rest", verdict))
    return pd.DataFrame(
        rows, columns=["pair_id", "sampled", "inclusion_probability", "stratum", "verdict"]
    )


def test_population_section_counts_bad_found_and_estimates_bad_left():
    section = population_section(_units())
    assert section["pairs_total"] == 14 and section["pairs_sampled"] == 8
    assert section["pairs_labelled"] == 8
    valid = section["estimates"]["valid"]
    assert valid["share"] == pytest.approx(8.5 / 14)
    assert valid["share_human_only"] == valid["share"]
    assert valid["ci95"] == valid["ci95_human_only"]
    assert valid["method"] == "design-based"
    assert section["estimates"]["preference_flip"]["share"] == pytest.approx(3 / 14)
    assert section["bad_found"] == 4  # 3 flips, 1 confound
    # not valid in the population: 14 * (1 - 8.5/14) = 5.5, of which 4 were found
    assert section["bad_left"]["value"] == pytest.approx(1.5)
    lo, hi = valid["ci95"]
    # cut to [0, the 6 unchecked pairs]
    assert section["bad_left"]["ci95"] == pytest.approx(
        [max(0.0, 14 * (1 - hi) - 4), 14 * (1 - lo) - 4]
    )
    assert section["bad_left"]["share_of_cleaned"] == pytest.approx(1.5 / 10)
    assert section["pairs"][0] == {
        "pair_id": "f0",
        "sampled": True,
        "inclusion_probability": 1.0,
        "stratum": "flagged",
    }
    assert "an estimated 60.7% of all pairs are valid" in population_sentence(section)


def test_unlabelled_sampled_pairs_are_left_out_with_a_note():
    units = _units()
    units.loc[units["pair_id"] == "r3", "verdict"] = "insufficient_annotations"
    section = population_section(units)
    assert section["pairs_labelled"] == 7
    assert "1 sampled pairs have too few annotations" in section["note"]
    assert section["estimates"]["valid"]["share"] == pytest.approx(4 / 14 * 0.25 + 10 / 14 * 2 / 3)


def test_judge_estimate_is_reported_beside_the_human_only_one():
    units = _units(labelled_rest=(1, 1, 0, 1, 0, 1))
    judge = np.array([0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1], dtype=float)
    section = population_section(units, judge=judge, judge_name="gpt")
    valid = section["estimates"]["valid"]
    assert valid["method"] == "ppi++ with judge 'gpt'"
    # the judge agrees with the humans on every labelled rest pair: lambda = 1
    assert valid["lambda"]["rest"] == pytest.approx(1.0)
    assert valid["share"] == pytest.approx(4 / 14 * 0.25 + 10 / 14 * 0.7)
    assert valid["ci95"][1] - valid["ci95"][0] < (
        valid["ci95_human_only"][1] - valid["ci95_human_only"][0]
    )


def test_a_stratum_whose_labelled_pairs_are_all_alike_still_has_an_interval():
    # 5 of 20 labelled, all valid: p = (5 + 1/2) / 6, variance (1 - 5/20) p (1 - p) / 5
    got = stratified_share(np.ones(5), np.array(["all"] * 5), {"all": 20})
    p = 5.5 / 6
    assert got["share"] == 1.0
    assert got["variance"] == pytest.approx(0.75 * p * (1 - p) / 5)
    assert got["ci95"][0] == pytest.approx(1 - Z95 * math.sqrt(0.75 * p * (1 - p) / 5))


# Outputs of ppi-python 0.2.3 (`ppi_py.ppi_mean_ci(y, yhat, yhat_unlabelled, alpha=0.05)` and
# `ppi_mean_pointestimate`), computed once in a separate environment: the package pulls in
# numba, scikit-learn and statsmodels, too much to install for one known answer.
PPI_PYTHON_CASES = [
    # (y, yhat, unlabelled yhat, lam, estimate, ci95)
    ([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1], None, 0.796875, [0.41900121, 1.17474879]),
    ([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1], 1.0, 11 / 12, [0.34891264, 1.48442069]),
    ([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1], 0.0, 0.75, [0.32565535, 1.17434465]),
    (
        [int(c) for c in "1001101001111111001011111110111111111101"],
        [int(c) for c in "1100101000111111100011111110011101100001"],
        [1] * 129 + [0] * 71,
        None,
        0.76615957,
        [0.6451272, 0.88719194],
    ),
]


@pytest.mark.parametrize("y, f, u, lam, estimate, ci", PPI_PYTHON_CASES)
def test_ppi_mean_matches_ppi_python_on_the_same_inputs(y, f, u, lam, estimate, ci):
    got, got_ci, _ = ppi_mean_ci(y, f, u, lam=lam)
    assert got == pytest.approx(estimate, abs=1e-8)
    assert got_ci == pytest.approx(ci, abs=1e-8)
