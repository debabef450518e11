"""The few distribution functions the analysis uses, on ``scipy.special``.

``scipy.stats`` costs about a second of import, more than the report's own arithmetic on
100,000 annotations; ``scipy.special`` holds the same functions (``scipy.stats`` calls them).
``tests/test_distributions.py`` checks each against ``scipy.stats`` over a grid of arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import SupportsInt

import numpy as np
from numpy.typing import NDArray
from scipy import special


def norm_ppf(q: float) -> float:
    return float(special.ndtri(q))


def t_cdf(x: float, df: float) -> float:
    return float(special.stdtr(df, x))


def t_sf(x: float, df: float) -> float:
    # The t distribution is symmetric: P(T > x) = P(T < -x), without 1 - cdf's cancellation.
    return float(special.stdtr(df, -x))


def t_ppf(q: float, df: float) -> float:
    return float(special.stdtrit(df, q))


def normal_tail_draw(
    mean: NDArray[np.float64],
    sd: NDArray[np.float64],
    *,
    above: float,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Draws of X given X > above, for X normal of this mean and sd (by the inverse of the
    tail's distribution function, from the upper side so that far tails keep their
    precision)."""
    upper = special.ndtr(-(above - mean) / sd)  # P(X > above)
    u = rng.random(np.shape(mean))
    tail = np.clip(u * upper, 1e-300, 1.0)
    result: NDArray[np.float64] = np.maximum(mean - sd * special.ndtri(tail), above)
    return result


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """Two-sided 95% exact (Clopper-Pearson) interval of k successes in n trials, from its
    beta-quantile form (what ``binomtest(k, n).proportion_ci(method="exact")`` finds by root
    search, 20x slower)."""
    _check(k, n)
    lo = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, 0.025))
    hi = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 0.975))
    return lo, hi


def jeffreys_interval(
    k: NDArray[np.float64], n: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two-sided 95% Jeffreys intervals of k successes in n trials (k may be fractional, an
    expected count): the 2.5% and 97.5% quantiles of Beta(k + 1/2, n - k + 1/2); NaN where
    n is 0."""
    with np.errstate(invalid="ignore"):
        a, b = k + 0.5, n - k + 0.5
        lo: NDArray[np.float64] = np.where(n > 0, special.betaincinv(a, b, 0.025), np.nan)
        hi: NDArray[np.float64] = np.where(n > 0, special.betaincinv(a, b, 0.975), np.nan)
    return lo, hi


def mid_p_interval(k: float, n: float) -> tuple[float, float]:
    """Two-sided 95% mid-p interval of k successes in n trials (Lancaster 1961; Berry and
    Armitage 1995): the bounds where ``P(X > k) + P(X = k) / 2`` is 0.025 and 0.975.

    Clopper-Pearson counts the whole ``P(X = k)`` in each tail, so it covers at least 95% at
    every true share and more on average; mid-p counts half of it and covers about 95% on
    average. Through the incomplete beta function (``P(X >= k) = I_p(k, n - k + 1)``), so
    fractional ``k`` and ``n`` are accepted (a prototype reads the binomial at an effective
    sample size); each bound is found between the two beta quantiles that bracket it
    (``scipy.optimize`` would add more than half a second of import)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need n > 0 and 0 <= k <= n, got k={k}, n={n}")

    def tail(p: float) -> float:  # P(X > k) + P(X = k) / 2, increasing in p
        at_least = 1.0 if k <= 0 else float(special.betainc(k, n - k + 1, p))
        above = 0.0 if n - k <= 0 else float(special.betainc(k + 1, n - k, p))
        return 0.5 * (at_least + above)

    def bound(q: float) -> float:
        # tail(p) lies between its two terms, which reach q at these two quantiles; regula
        # falsi with the Illinois step from there takes about ten evaluations, bisection fifty.
        lo = 0.0 if k <= 0 else float(special.betaincinv(k, n - k + 1, q))
        hi = 1.0 if n - k <= 0 else float(special.betaincinv(k + 1, n - k, q))
        f_lo, f_hi = tail(lo) - q, tail(hi) - q
        side = 0
        for _ in range(100):
            if f_hi == f_lo or hi - lo <= 1e-15:
                break
            middle = min(max(hi - f_hi * (hi - lo) / (f_hi - f_lo), lo), hi)
            f_middle = tail(middle) - q
            if f_middle == 0:
                return middle
            if (f_middle < 0) == (f_lo < 0):
                lo, f_lo = middle, f_middle
                if side == -1:
                    f_hi /= 2
                side = -1
            else:
                hi, f_hi = middle, f_middle
                if side == 1:
                    f_lo /= 2
                side = 1
        return lo if abs(f_lo) < abs(f_hi) else hi

    return (0.0 if k <= 0 else bound(0.025)), (1.0 if k >= n else bound(0.975))


def binom_half_greater(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2): ``binomtest(k, n, 0.5, alternative="greater")``."""
    _check(k, n)
    # P(X >= k) = I_{1/2}(k, n - k + 1), the regularised incomplete beta function (boost's, as
    # scipy.stats.binom uses; cephes' bdtrc is off by ~1e-12 relative in the far tail).
    return 1.0 if k == 0 else float(special.betainc(k, n - k + 1, 0.5))


def binom_half_two_sided(k: int, n: int) -> float:
    """``binomtest(k, n, 0.5).pvalue``: at p = 1/2 the outcomes at least as unlikely as k are
    the two tails beyond min(k, n - k), which have equal mass."""
    _check(k, n)
    if 2 * k == n:
        return 1.0
    low = min(k, n - k)
    # P(X <= low) = I_{1/2}(n - low, low + 1).
    return min(1.0, 2.0 * float(special.betainc(n - low, low + 1, 0.5)))


def _check(k: int, n: int) -> None:
    # Same domain as scipy.stats.binomtest: at least one trial, 0 <= k <= n.
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need n >= 1 and 0 <= k <= n, got k={k}, n={n}")


def fisher_exact_p(table: Iterable[Iterable[SupportsInt]]) -> float:
    """Two-sided p-value of Fisher's exact test on a 2x2 table [[a, b], [c, d]]: the probability,
    under the hypergeometric law with the table's margins, of every table no more likely than the
    one seen (``scipy.stats.fisher_exact``'s rule, with its relative tolerance of 1e-7)."""
    (a, b), (c, d) = ((int(x) for x in row) for row in table)
    if min(a, b, c, d) < 0:
        raise ValueError("a 2x2 table of counts cannot hold a negative number")
    row, col, n = a + b, a + c, a + b + c + d
    if row in (0, n) or col in (0, n):
        return 1.0  # a margin of zero: every table with these margins is the one seen
    low, high = max(0, row + col - n), min(row, col)
    ks = np.arange(low, high + 1)

    def log_comb(total: int, chosen: int | NDArray[np.int64]) -> np.float64 | NDArray[np.float64]:
        return (
            special.gammaln(total + 1)
            - special.gammaln(chosen + 1)
            - special.gammaln(total - chosen + 1)
        )

    log_pmf = log_comb(col, ks) + log_comb(n - col, row - ks) - log_comb(n, row)
    pmf = np.exp(log_pmf)
    seen = pmf[a - low]
    return float(min(1.0, pmf[pmf <= seen * (1 + 1e-7)].sum()))
