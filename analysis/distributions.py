"""The few distribution functions the analysis uses, on ``scipy.special``.

``scipy.stats`` costs about a second of import, more than the report's own arithmetic on
100,000 annotations; ``scipy.special`` holds the same functions (``scipy.stats`` calls them).
``tests/test_distributions.py`` checks each against ``scipy.stats`` over a grid of arguments.
"""

from __future__ import annotations

from scipy import special


def norm_cdf(x: float) -> float:
    return float(special.ndtr(x))


def norm_ppf(q: float) -> float:
    return float(special.ndtri(q))


def t_cdf(x: float, df: float) -> float:
    return float(special.stdtr(df, x))


def t_sf(x: float, df: float) -> float:
    # The t distribution is symmetric: P(T > x) = P(T < -x), without 1 - cdf's cancellation.
    return float(special.stdtr(df, -x))


def t_ppf(q: float, df: float) -> float:
    return float(special.stdtrit(df, q))


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """Two-sided 95% exact (Clopper-Pearson) interval of k successes in n trials, from its
    beta-quantile form (what ``binomtest(k, n).proportion_ci(method="exact")`` finds by root
    search, 20x slower)."""
    _check(k, n)
    lo = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, 0.025))
    hi = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 0.975))
    return lo, hi


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
