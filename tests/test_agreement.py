"""Agreement statistics, checked against published worked examples (tests/published_examples.py
has the data and the sources of the published numbers) and the krippendorff package."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.agreement import coefficients
from analysis.agreement.bootstrap import bca_interval, bootstrap_weights
from analysis.agreement.coefficients import (
    Estimate,
    alpha,
    fleiss_kappa,
    gwet_ac1,
    neutral_orientation,
    percent_agreement,
    value_counts,
)
from tests.published_examples import (
    ABSTRACTORS,
    DIST4CAT,
    EXAMPLE_A,
    EXAMPLE_B,
    EXAMPLE_C,
    FLEISS_WIKIPEDIA,
    RVARY2,
)
from tests.statistics_helpers import resampled_alpha, unit_patterns

LIKERT = [1, 2, 3, 4, 5]
PREFERENCES = ["chosen", "rejected", "tie"]


def long_table(raters_by_unit: dict[str, list]) -> pd.DataFrame:
    rows = [
        {"unit": u, "rater": rater, "value": v}
        for rater, values in raters_by_unit.items()
        for u, v in enumerate(values)
    ]
    return pd.DataFrame(rows)


def counts_of(raters: list[list], domain: list) -> np.ndarray:
    return value_counts(
        long_table({str(i): r for i, r in enumerate(raters)}),
        unit="unit",
        value="value",
        domain=domain,
    )


@pytest.fixture
def example_c() -> np.ndarray:
    return value_counts(long_table(EXAMPLE_C), unit="unit", value="value", domain=LIKERT)


def simulated_preferences(n_pairs: int, *, seed: int) -> np.ndarray:
    """Realistic A/B/tie labels: 3 annotators per pair, most pick chosen, some ties, some gaps."""
    rng = np.random.default_rng(seed)
    leaning = rng.choice(3, size=n_pairs, p=[0.7, 0.2, 0.1])
    counts = np.zeros((n_pairs, 3), dtype=int)
    for u, lean in enumerate(leaning):
        raters = rng.integers(1, 5)
        probs = np.full(3, 0.15)
        probs[lean] = 0.7
        for _ in range(raters):
            counts[u, rng.choice(3, p=probs)] += 1
    return counts


# --------------------------------------------------------------------------------------------
# Published examples


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_2011_example_c(example_c, level, published):
    result = alpha(example_c, level=level, domain=LIKERT)
    assert round(result.value, 3) == published
    assert result.note is None
    package = krippendorff.alpha(
        value_counts=example_c, value_domain=LIKERT, level_of_measurement=level
    )
    assert result.value == pytest.approx(package, abs=1e-12)


def test_krippendorff_2011_example_a_binary():
    result = alpha(counts_of(EXAMPLE_A, [0, 1]), level="nominal", domain=[0, 1])
    assert round(result.value, 3) == 0.095
    # The paper's closed form for binary data: 1 - (n - 1) o_01 / (n_0 n_1) = 1 - 19*4/(14*6).
    assert result.value == pytest.approx(1 - 19 * 4 / (14 * 6), abs=1e-12)


def test_krippendorff_2011_example_b_nominal():
    domain = list("abcde")
    result = alpha(counts_of(EXAMPLE_B, domain), level="nominal", domain=domain)
    assert round(result.value, 3) == 0.692
    package = krippendorff.alpha(reliability_data=EXAMPLE_B, level_of_measurement="nominal")
    assert result.value == pytest.approx(package, abs=1e-12)


def test_gwet_ac1_irrcac_cac_raw4raters(example_c):
    result = gwet_ac1(example_c)
    assert round(result.value, 5) == 0.77544

    # Independent hand calculation in exact fractions (Gwet 2008):
    # pa: 11 units have >= 2 ratings; units 2 and 8 agree in 3 of 6 rater pairs, unit 6 in
    # none, the other 8 fully.
    pa = Fraction(8 + Fraction(1, 2) + Fraction(1, 2) + 0, 11)
    # pi_k: mean over all 12 rated units of the share of the unit's ratings in category k.
    pi = [Fraction(3, 12), Fraction(13, 48), Fraction(7, 24), Fraction(5, 48), Fraction(1, 12)]
    assert sum(pi) == 1
    pe = sum(p * (1 - p) for p in pi) / (5 - 1)
    assert float(pa) == pytest.approx(0.8181818, abs=1e-7)
    assert float(pe) == pytest.approx(0.1903212, abs=1e-7)
    assert result.value == pytest.approx(float((pa - pe) / (1 - pe)), abs=1e-12)


def test_percent_agreement_cac_raw4raters(example_c):
    # irrCAC pa.coeff.raw(cac.raw4raters) = 0.8181818 (= 9/11, see the AC1 test).
    assert percent_agreement(example_c).value == pytest.approx(9 / 11, abs=1e-12)


def test_fleiss_kappa_wikipedia_example():
    assert round(fleiss_kappa(FLEISS_WIKIPEDIA).value, 3) == 0.210
    # Hand calculation of the intermediate values printed on the page.
    table = np.asarray(FLEISS_WIKIPEDIA)
    n, m = table.shape[0], 14
    p_bar = ((table * (table - 1)).sum(axis=1) / (m * (m - 1))).mean()
    p_e = ((table.sum(axis=0) / (n * m)) ** 2).sum()
    assert (round(p_bar, 3), round(p_e, 3)) == (0.378, 0.213)


def two_rater_counts(table: np.ndarray) -> np.ndarray:
    """One unit per subject of a two-rater contingency table: a count 1 in the row's category and
    1 in the column's (2 in the same one for agreement)."""
    table = np.asarray(table)
    eye = np.eye(table.shape[0], dtype=int)
    return np.array(
        [eye[i] + eye[j] for (i, j), n in np.ndenumerate(table) for _ in range(n)], dtype=int
    )


def test_irrcac_cont3x3abstractors():
    counts = two_rater_counts(ABSTRACTORS)
    assert counts.shape == (100, 3)
    assert round(gwet_ac1(counts).value, 7) == 0.8493305
    # For two raters and no missing data, irrCAC's krippen2.table is Krippendorff's alpha.
    assert round(alpha(counts, level="nominal", domain=PREFERENCES).value, 7) == 0.7972585
    assert percent_agreement(counts).value == pytest.approx(0.89, abs=1e-12)


def test_irrcac_cac_dist4cat_ac1():
    # gwet.ac1.dist takes Q from the columns: 3, all of them used.
    assert round(gwet_ac1(DIST4CAT).value, 7) == 0.3518903


def test_kappaetc_rvary2_missing_ratings():
    counts = counts_of([list(rater) for rater in zip(*RVARY2, strict=True)], [1, 2, 3])
    np.testing.assert_array_equal(counts.sum(axis=1), [4, 5, 5, 5, 5, 5, 5, 5, 3, 5])
    nominal = alpha(counts, level="nominal", domain=[1, 2, 3]).value
    assert round(nominal, 4) == 0.3897
    assert round(gwet_ac1(counts).value, 4) == 0.3829
    assert round(percent_agreement(counts).value, 4) == 0.5833
    package = krippendorff.alpha(
        value_counts=counts, value_domain=[1, 2, 3], level_of_measurement="nominal"
    )
    assert nominal == pytest.approx(package, abs=1e-12)
    # Relabelling the categories (here as preferences, in another order) changes nothing.
    relabelled = counts[:, [2, 0, 1]]
    assert alpha(relabelled, level="nominal", domain=PREFERENCES).value == pytest.approx(
        nominal, abs=1e-12
    )
    assert gwet_ac1(relabelled).value == pytest.approx(gwet_ac1(counts).value, abs=1e-12)


def test_fleiss_kappa_needs_equal_ratings_per_unit(example_c):
    result = fleiss_kappa(example_c)
    assert result.value is None
    assert "same number of ratings" in result.note


# --------------------------------------------------------------------------------------------
# Agreement with the krippendorff package


def test_ordinal_counts_unobserved_domain_values(example_c):
    # A value nobody used still occupies its place in the ordering (with n = 0).
    domain = [0, 1, 2, 3, 4, 5, 6]
    padded = np.hstack([np.zeros((12, 1), int), example_c, np.zeros((12, 1), int)])
    for level in ("ordinal", "interval", "nominal"):
        ours = alpha(padded, level=level, domain=domain).value
        package = krippendorff.alpha(
            value_counts=padded, value_domain=domain, level_of_measurement=level
        )
        assert ours == pytest.approx(package, abs=1e-12)
    assert alpha(padded, level="ordinal", domain=domain).value == pytest.approx(
        alpha(example_c, level="ordinal", domain=LIKERT).value, abs=1e-12
    )


@settings(max_examples=150, deadline=None)
@given(
    counts=st.integers(1, 12).flatmap(
        lambda units: st.lists(
            st.lists(st.integers(0, 4), min_size=4, max_size=4), min_size=units, max_size=units
        )
    ),
    level=st.sampled_from(["nominal", "ordinal", "interval"]),
)
def test_alpha_matches_package_wherever_defined(counts, level):
    counts = np.array(counts)
    domain = [1, 2, 4, 7]
    # The formula on any number of units; the report's minimum (MIN_UNITS) is tested apart.
    ours = alpha(counts, level=level, domain=domain, min_units=1)
    try:
        # The package returns NaN (with a warning) or raises where alpha is undefined.
        with np.errstate(invalid="ignore", divide="ignore"):
            package = krippendorff.alpha(
                value_counts=counts, value_domain=domain, level_of_measurement=level
            )
    except ValueError:
        package = math.nan
    if math.isfinite(package):
        assert ours.value == pytest.approx(package, abs=1e-9)
    else:
        assert ours.value is None
        assert ours.note


# --------------------------------------------------------------------------------------------
# value_counts


def test_value_counts_sorted_units_missing_ignored_and_float_ratings():
    labels = pd.DataFrame(
        {
            "pair": ["b", "a", "b", "a", "c"],
            "response": ["x", "x", "x", "y", "x"],
            "rating": [5.0, 1.0, np.nan, 3.0, np.nan],
        }
    )
    counts = value_counts(labels, unit=["pair", "response"], value="rating", domain=LIKERT)
    # Units in sorted order: (a, x), (a, y), (b, x), (c, x); (c, x) has only a missing rating.
    expected = [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]]
    np.testing.assert_array_equal(counts, expected)
    assert counts.dtype.kind == "i"


def test_value_counts_names_values_outside_domain():
    labels = pd.DataFrame({"pair": [1, 1, 2], "label": ["chosen", "A", "B"]})
    with pytest.raises(ValueError, match=r"'A', 'B'"):
        value_counts(labels, unit="pair", value="label", domain=PREFERENCES)


def test_value_counts_empty_table():
    empty = pd.DataFrame({"pair": [], "label": []})
    counts = value_counts(empty, unit="pair", value="label", domain=PREFERENCES)
    assert counts.shape == (0, 3)
    assert alpha(counts, level="nominal", domain=PREFERENCES).value is None


# --------------------------------------------------------------------------------------------
# Bootstrap


def test_bootstrap_ci_contains_point_and_is_reproducible():
    counts = simulated_preferences(400, seed=7)
    first = alpha(counts, level="nominal", domain=PREFERENCES, bootstrap=500, seed=3)
    again = alpha(counts, level="nominal", domain=PREFERENCES, bootstrap=500, seed=3)
    other = alpha(counts, level="nominal", domain=PREFERENCES, bootstrap=500, seed=4)
    lo, hi = first.ci95
    assert lo < first.value < hi
    assert first == again
    assert other.ci95 != first.ci95
    assert other.value == first.value


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_fast_bootstrap_equals_naive_recomputation(level):
    counts = simulated_preferences(150, seed=11)
    domain = [1, 2, 3]  # treat the three labels as an ordered scale to exercise every metric
    pairable = counts[counts.sum(axis=1) >= 2]
    patterns, frequencies = unit_patterns(pairable)
    weights = next(bootstrap_weights(frequencies, resamples=50, seed=5))
    assert weights.shape == (50, len(patterns))
    assert (weights.sum(axis=1) == len(pairable)).all()

    fast = resampled_alpha(patterns, weights, level=level, domain=domain)
    for w, value in zip(weights, fast, strict=True):
        resample = np.repeat(patterns, w, axis=0)
        naive = krippendorff.alpha(
            value_counts=resample, value_domain=domain, level_of_measurement=level
        )
        assert value == pytest.approx(naive, abs=1e-9)


def test_fast_bootstrap_per_unit_weights_equal_naive_loop():
    # The same product also works with one weight per unit (no grouping of equal rows).
    counts = simulated_preferences(80, seed=2)
    pairable = counts[counts.sum(axis=1) >= 2]
    rng = np.random.Generator(np.random.PCG64(9))
    weights = rng.multinomial(len(pairable), np.full(len(pairable), 1 / len(pairable)), size=50)
    fast = resampled_alpha(pairable, weights, level="nominal", domain=PREFERENCES)
    for w, value in zip(weights, fast, strict=True):
        naive = krippendorff.alpha(
            value_counts=np.repeat(pairable, w, axis=0),
            value_domain=PREFERENCES,
            level_of_measurement="nominal",
        )
        assert value == pytest.approx(naive, abs=1e-9)


def test_grouped_bootstrap_spread_matches_per_unit_resampling():
    # Grouping identical units is exact in distribution; with fixed seeds the two standard
    # errors must agree closely.
    counts = simulated_preferences(300, seed=21)
    pairable = counts[counts.sum(axis=1) >= 2]
    patterns, frequencies = unit_patterns(pairable)
    grouped = np.concatenate(
        [
            resampled_alpha(patterns, w, level="nominal", domain=PREFERENCES)
            for w in bootstrap_weights(frequencies, resamples=2000, seed=1)
        ]
    )
    rng = np.random.Generator(np.random.PCG64(2))
    per_unit = np.array(
        [
            krippendorff.alpha(
                value_counts=pairable[rng.integers(0, len(pairable), len(pairable))],
                value_domain=PREFERENCES,
                level_of_measurement="nominal",
            )
            for _ in range(2000)
        ]
    )
    assert np.std(grouped) == pytest.approx(np.std(per_unit), rel=0.1)
    assert np.mean(grouped) == pytest.approx(np.mean(per_unit), abs=0.01)


def test_bootstrap_chunking_does_not_change_the_result(monkeypatch):
    counts = simulated_preferences(300, seed=5)
    whole = alpha(counts, level="nominal", domain=PREFERENCES, bootstrap=300, seed=8)
    monkeypatch.setattr(coefficients, "_CHUNK_BYTES", 16 * 20 * 7)  # a few rows per chunk
    chunked = alpha(counts, level="nominal", domain=PREFERENCES, bootstrap=300, seed=8)
    assert chunked == whole


def test_ci_omitted_when_most_resamples_undefined():
    samples = np.array([0.1, np.nan, np.nan, 0.3, np.nan])
    # a flat jackknife over many units: no acceleration, and levels at 1.96 (the small-sample
    # expansion, analysis.agreement.bootstrap.expanded_z, is nil at a million units)
    flat = {"jackknife": np.zeros(2), "jackknife_weights": np.full(2, 500_000)}
    ci, note = bca_interval(samples, point=0.2, resamples=5, **flat)
    assert ci is None
    assert "3 of 5" in note
    # Half the resamples below the point and no acceleration: BCa is the percentile interval.
    ci, note = bca_interval(np.array([0.1, np.nan, 0.3]), point=0.2, resamples=3, **flat)
    assert ci == (pytest.approx(0.105), pytest.approx(0.295))  # linear interpolation
    assert "1 of 3" in note


def test_ac1_and_percent_agreement_bootstrap():
    counts = simulated_preferences(300, seed=13)
    ac1 = gwet_ac1(counts, bootstrap=400, seed=1)
    assert ac1.ci95[0] < ac1.value < ac1.ci95[1]
    assert gwet_ac1(counts, bootstrap=400, seed=1) == ac1
    pa = percent_agreement(counts, bootstrap=400, seed=1)
    assert pa.ci95[0] < pa.value < pa.ci95[1]


# --------------------------------------------------------------------------------------------
# Undefined cases: value None with a note, never an exception, never 0 or 1 by fiat

ONE_CODER = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
NO_VARIATION = np.array([[3, 0, 0], [2, 0, 0], [2, 0, 0], [1, 0, 0]])
EMPTY = np.zeros((0, 3), dtype=int)


@pytest.mark.parametrize("counts", [ONE_CODER, NO_VARIATION, EMPTY], ids=["one", "same", "empty"])
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_undefined(counts, level):
    result = alpha(counts, level=level, domain=[1, 2, 3], bootstrap=100)
    assert result.value is None
    assert result.ci95 is None
    assert result.note
    assert json.dumps(result.as_dict(), allow_nan=False)


@pytest.mark.parametrize("counts", [ONE_CODER, EMPTY], ids=["one", "empty"])
def test_other_coefficients_undefined_without_pairable_units(counts):
    for result in (percent_agreement(counts), gwet_ac1(counts), fleiss_kappa(counts)):
        assert result.value is None
        assert "two or more ratings" in result.note or "no rated unit" in result.note


def test_no_variation_ac1_is_one_and_fleiss_undefined():
    # AC1's chance agreement is 0 without variation, so AC1 = pa = 1 by its own formula;
    # Fleiss' kappa and alpha divide by zero there.
    assert gwet_ac1(NO_VARIATION).value == 1.0
    equal = np.array([[2, 0, 0], [2, 0, 0]])
    assert fleiss_kappa(equal).value is None
    assert "no variation" in fleiss_kappa(equal).note


def test_ac1_needs_two_categories():
    assert gwet_ac1(np.array([[2], [3]])).value is None


def test_percent_agreement_counts_tie_as_category():
    # Unit 1: chosen, chosen, tie -> 1 of 3 pairs agree; unit 2: tie, tie -> 1; unit 3: alone.
    counts = np.array([[2, 0, 1], [0, 0, 2], [1, 0, 0]])
    assert percent_agreement(counts, min_units=1).value == pytest.approx((1 / 3 + 1) / 2)


# --------------------------------------------------------------------------------------------
# Estimate


def test_estimate_as_dict_is_json_safe():
    assert Estimate(0.5).as_dict() == {"value": 0.5, "ci95": None}
    assert Estimate(np.float64(0.5), (np.float64(0.1), 0.9)).as_dict() == {
        "value": 0.5,
        "ci95": [0.1, 0.9],
    }
    undefined = Estimate(float("nan"), (float("nan"), 1.0), note="why").as_dict()
    assert undefined == {"value": None, "ci95": None, "note": "why"}
    assert type(Estimate(np.float64(0.5)).as_dict()["value"]) is float


# --------------------------------------------------------------------------------------------
# Neutral orientation


def test_neutral_orientation_maps_labels_consistently():
    ids = [f"pair-{i}" for i in range(200)]
    chosen = neutral_orientation(ids, ["chosen"] * 200)
    rejected = neutral_orientation(ids, ["rejected"] * 200)
    assert set(chosen) == {"first", "second"}
    assert all(c != r for c, r in zip(chosen, rejected, strict=True))
    assert 60 < chosen.count("first") < 140  # a fair coin, not a constant
    assert neutral_orientation(["x", "y"], ["tie", None]) == ["tie", None]


def test_neutral_orientation_is_stable_across_processes():
    ids = ["p1", "p2", "pair/ä", "42"]
    script = (
        "from analysis.agreement.coefficients import neutral_orientation as f;"
        f"print(f({ids!r}, ['chosen'] * {len(ids)}))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": "."},
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {str(neutral_orientation(ids, ["chosen"] * len(ids))) + "\n"}


def test_neutral_orientation_rejects_bad_input():
    with pytest.raises(ValueError, match="align"):
        neutral_orientation(["a"], ["chosen", "tie"])
    with pytest.raises(ValueError, match="'A'"):
        neutral_orientation(["a"], ["A"])
