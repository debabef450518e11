"""analysis.distributions against scipy.stats (the functions it stands in for), over grids of
arguments, plus hand computations of the binomial tails."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis import distributions as d

SMALL_N = list(range(1, 41))
LARGE_N = [99, 100, 101, 1000, 1001, 20_000]


def _ks(n: int) -> list[int]:
    """Every k for small n; for large n the edges, the middle (k = n/2 and its neighbours) and
    a spread in between."""
    if n <= 40:
        return list(range(n + 1))
    picks = {0, 1, 2, n - 2, n - 1, n, n // 2 - 1, n // 2, n // 2 + 1, (n + 1) // 2}
    picks |= {int(x) for x in np.linspace(0, n, 25)}
    return sorted(k for k in picks if 0 <= k <= n)


GRID = [(k, n) for n in SMALL_N + LARGE_N for k in _ks(n)]


@pytest.mark.parametrize("n", SMALL_N + LARGE_N)
def test_binomial_p_values_match_binomtest(n: int) -> None:
    for k in _ks(n):
        greater = stats.binomtest(k, n, 0.5, alternative="greater").pvalue
        two_sided = stats.binomtest(k, n, 0.5).pvalue
        assert d.binom_half_greater(k, n) == pytest.approx(greater, rel=1e-12, abs=1e-300)
        assert d.binom_half_two_sided(k, n) == pytest.approx(two_sided, rel=1e-12, abs=1e-300)


def test_binomial_tails_by_hand() -> None:
    # P(X >= k) = sum_{i >= k} C(n, i) / 2^n, exactly in integers.
    for n in (1, 2, 7, 10, 51):
        for k in range(n + 1):
            tail = sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n
            assert d.binom_half_greater(k, n) == pytest.approx(tail, rel=1e-13)
            low = min(k, n - k)
            both = (
                1.0
                if 2 * k == n
                else min(1.0, 2 * sum(math.comb(n, i) for i in range(low + 1)) / 2**n)
            )
            assert d.binom_half_two_sided(k, n) == pytest.approx(both, rel=1e-13)


def test_binomial_edge_cases() -> None:
    assert d.binom_half_greater(0, 1) == 1.0
    assert d.binom_half_greater(1, 1) == 0.5
    assert d.binom_half_two_sided(0, 1) == 1.0
    assert d.binom_half_two_sided(1, 1) == 1.0
    assert d.binom_half_two_sided(5, 10) == 1.0  # k = n/2
    for k, n in [(0, 0), (-1, 3), (4, 3)]:
        with pytest.raises(ValueError):
            d.binom_half_greater(k, n)
        with pytest.raises(ValueError):
            d.binom_half_two_sided(k, n)
        with pytest.raises(ValueError):
            d.clopper_pearson(k, n)
    with pytest.raises(ValueError):
        stats.binomtest(0, 0, 0.5)  # scipy has the same domain


@pytest.mark.parametrize("n", SMALL_N + LARGE_N)
def test_clopper_pearson_matches_proportion_ci(n: int) -> None:
    for k in _ks(n):
        ci = stats.binomtest(k, n, 0.5).proportion_ci(confidence_level=0.95, method="exact")
        lo, hi = d.clopper_pearson(k, n)
        # proportion_ci finds the bounds by root search to an absolute tolerance near 1e-12;
        # the beta quantiles below are the exact bounds it converges to.
        assert lo == pytest.approx(ci.low, abs=1e-11)
        assert hi == pytest.approx(ci.high, abs=1e-11)
        assert lo == (
            0.0 if k == 0 else pytest.approx(stats.beta.ppf(0.025, k, n - k + 1), rel=1e-12)
        )
        assert hi == (
            1.0 if k == n else pytest.approx(stats.beta.ppf(0.975, k + 1, n - k), rel=1e-12)
        )


def test_clopper_pearson_published_example() -> None:
    # Clopper-Pearson for 0 of 10 and 10 of 10: upper bound 1 - 0.025^(1/10) = 0.3085 (and mirror).
    assert d.clopper_pearson(0, 10) == (0.0, pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-12))
    assert d.clopper_pearson(10, 10) == (pytest.approx(0.025 ** (1 / 10), rel=1e-12), 1.0)


@pytest.mark.parametrize(
    ("k", "n", "published"),
    [
        # stests' ci_p_mid_p (after Berry and Armitage 1995), its documented examples
        (5, 20, (0.09786008, 0.47022380)),
        (10, 30, (0.1833232, 0.5141852)),
        (15, 40, (0.2361295, 0.5313959)),
    ],
)
def test_mid_p_interval_published_examples(k: int, n: int, published: tuple[float, float]) -> None:
    lo, hi = d.mid_p_interval(k, n)
    assert lo == pytest.approx(published[0], abs=5e-8)  # as printed, 7-8 decimals
    assert hi == pytest.approx(published[1], abs=5e-8)


def test_mid_p_interval_solves_its_equations_and_lies_inside_clopper_pearson() -> None:
    for n in (1, 2, 7, 40, 100, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            lo, hi = d.mid_p_interval(k, n)
            exact = d.clopper_pearson(k, n)
            assert exact[0] <= lo <= k / n <= hi <= exact[1]
            if k > 0:  # P(X > k) + P(X = k) / 2 = 0.025 at the lower bound
                tail = stats.binom.sf(k, n, lo) + 0.5 * stats.binom.pmf(k, n, lo)
                assert tail == pytest.approx(0.025, abs=1e-10)
            if k < n:
                tail = stats.binom.cdf(k - 1, n, hi) + 0.5 * stats.binom.pmf(k, n, hi)
                assert tail == pytest.approx(0.025, abs=1e-10)
    # At 0 or n in n only the observed outcome's half counts: 1 - 0.05^(1/n) and its mirror.
    assert d.mid_p_interval(0, 10) == (0.0, pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-12))
    assert d.mid_p_interval(10, 10) == (pytest.approx(0.05 ** (1 / 10), rel=1e-12), 1.0)
    for k, n in [(0, 0), (-1, 3), (4, 3)]:
        with pytest.raises(ValueError):
            d.mid_p_interval(k, n)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 10, 29, 30, 39, 100, 999, 99_999])
def test_t_matches_scipy(df: int) -> None:
    for q in (1e-10, 0.001, 0.025, 0.05, 0.1, 0.5, 0.9, 0.95, 0.975, 0.999):
        assert d.t_ppf(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-12, abs=1e-15)
    for x in (-40.0, -5.0, -1.96, -0.3, 0.0, 0.3, 1.0, 2.5, 8.0, 40.0):
        assert d.t_cdf(x, df) == pytest.approx(stats.t.cdf(x, df), rel=1e-12, abs=1e-300)
        assert d.t_sf(x, df) == pytest.approx(stats.t.sf(x, df), rel=1e-12, abs=1e-300)


def test_t_published_quantiles() -> None:
    # Student's t table: t_{0.975} with 1, 10 and 30 degrees of freedom.
    assert d.t_ppf(0.975, 1) == pytest.approx(12.706, abs=5e-4)
    assert d.t_ppf(0.975, 10) == pytest.approx(2.228, abs=5e-4)
    assert d.t_ppf(0.95, 30) == pytest.approx(1.697, abs=5e-4)


def test_normal_matches_scipy() -> None:
    for q in (1e-12, 0.001, 0.025, 0.3, 0.5, 0.7, 0.975, 0.999, 1 - 1e-12):
        assert d.norm_ppf(q) == pytest.approx(stats.norm.ppf(q), rel=1e-12, abs=1e-15)
    assert d.norm_ppf(0.975) == pytest.approx(1.959964, abs=1e-6)


def _tables():
    rng = np.random.default_rng(7)
    fixed = [
        [[3, 1], [1, 3]],  # Fisher's tea-tasting table: p = 17/35
        [[0, 0], [0, 0]],
        [[5, 0], [0, 5]],
        [[0, 4], [0, 6]],
        [[10, 10], [10, 10]],
        [[1, 9], [11, 3]],
        [[250, 240], [260, 250]],
        [[0, 1], [1, 0]],
    ]
    drawn = [rng.integers(0, 40, size=(2, 2)).tolist() for _ in range(300)]
    return fixed + drawn


@pytest.mark.parametrize("table", _tables())
def test_fisher_exact_matches_scipy(table):
    expected = stats.fisher_exact(table).pvalue
    assert d.fisher_exact_p(table) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_fisher_exact_on_the_tea_tasting_table_by_hand():
    # 8 cups, 4 with milk first, 3 guessed right: P = (1 + 16 + 1 + 16) / 70 of tables as or less likely
    assert d.fisher_exact_p([[3, 1], [1, 3]]) == pytest.approx(34 / 70, rel=1e-12)


def test_jeffreys_interval_matches_scipy_stats_beta():
    from scipy import stats

    from analysis.distributions import jeffreys_interval

    k = np.array([0.0, 3.5, 10.0, 49.2])
    n = np.array([10.0, 10.0, 10.0, 50.0])
    lo, hi = jeffreys_interval(k, n)
    assert np.allclose(lo, stats.beta.ppf(0.025, k + 0.5, n - k + 0.5))
    assert np.allclose(hi, stats.beta.ppf(0.975, k + 0.5, n - k + 0.5))
    assert np.isnan(jeffreys_interval(np.array([0.0]), np.array([0.0]))[0]).all()


@pytest.mark.parametrize(
    ("mean", "sd", "above"), [(3.0, 1.0, 4.5), (5.0, 0.5, 4.5), (0.0, 1.0, 6.0)]
)
def test_normal_tail_draws_follow_scipys_truncated_normal(mean, sd, above):
    rng = np.random.default_rng(0)
    draws = d.normal_tail_draw(np.full(20_000, mean), np.full(20_000, sd), above=above, rng=rng)
    assert (draws >= above).all()
    a = (above - mean) / sd
    truncated = stats.truncnorm(a, np.inf, loc=mean, scale=sd)
    assert stats.kstest(draws, truncated.cdf).pvalue > 0.01
    assert draws.mean() == pytest.approx(truncated.mean(), abs=4 * truncated.std() / 140)
