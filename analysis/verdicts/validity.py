"""Validity of the constructed pairs: agreement with the label, position bias, equal quality.

Every function returns a JSON-ready dict. A statistic that cannot be computed on the data is
``None`` with a sibling ``"note"``; these functions never raise on data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from analysis.agreement.bootstrap import PairInterval
from analysis.agreement.intervals import annotator_interval
from analysis.agreement.panel import Panel, SumStatistic
from analysis.distributions import (
    binom_half_greater,
    binom_half_two_sided,
    clopper_pearson,
    mid_p_interval,
    norm_ppf,
    t_cdf,
    t_ppf,
    t_sf,
)
from analysis.report.shape import Section

_Z95 = norm_ppf(0.975)


def _exact_ci(k: int, n: int) -> list[float]:
    """Two-sided 95% Clopper-Pearson interval, as a JSON list."""
    return list(clopper_pearson(k, n))


def _checked_counts(k: int, n: int) -> tuple[int, int]:
    """Plain ints (numpy integers are not JSON-serialisable), with 0 <= k <= n."""
    k, n = int(k), int(n)
    if not (0 <= k <= n):
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    return k, n


def label_agreement(majorities: Sequence[str]) -> Section:
    """Share of decided pairs whose annotator majority is ``chosen``, tested against 0.5.

    The unit is the pair (annotations of one pair are not independent). Anything other than
    ``chosen``/``rejected`` (tie, no consensus, missing) is excluded. ``p_value`` is the exact
    one-sided binomial test of H1: p > 0.5; ``ci95`` the exact Clopper-Pearson interval.
    """
    k = sum(1 for m in majorities if m == "chosen")
    n = k + sum(1 for m in majorities if m == "rejected")
    if n == 0:
        return {
            "value": None,
            "ci95": None,
            "p_value": None,
            "n": 0,
            "k": 0,
            "note": "undefined: no pair has a chosen or rejected majority",
        }
    p_value = binom_half_greater(k, n)
    return {"value": k / n, "ci95": _exact_ci(k, n), "p_value": float(p_value), "n": n, "k": k}


def label_statistic(*, min_annotations: int, decided_only: bool) -> SumStatistic:
    """Share of pairs whose strict majority is ``chosen``, as a sum over pairs of
    (chosen majority, counted) from each pair's chosen/rejected/tie counts.

    Counted are the pairs with at least ``min_annotations`` annotations (and at least one);
    with ``decided_only`` only those whose strict majority is chosen or rejected, otherwise
    all of them, so that a pair without consensus counts as not confirming the label.
    """

    def features(counts: NDArray[np.int64]) -> NDArray[np.float64]:
        n = counts.sum(axis=1)
        eligible = n >= max(min_annotations, 1)
        chosen = eligible & (2 * counts[:, 0] > n)
        counted = eligible & (chosen | (2 * counts[:, 1] > n)) if decided_only else eligible
        return np.column_stack([chosen, counted]).astype(np.float64)

    def finish(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore"):
            share: NDArray[np.float64] = sums[:, 0] / sums[:, 1]
        share[~(sums[:, 1] > 0)] = np.nan
        return share

    return SumStatistic(features=features, finish=finish, majority=True)


def label_share(
    counts: NDArray[np.int64],
    *,
    min_annotations: int,
    decided_only: bool,
    panel: Panel | None = None,
    own: NDArray[np.int64] | None = None,
) -> Section:
    """Label agreement from pairs x (chosen, rejected, tie) counts (see :func:`label_statistic`).

    ``ci95`` is the binomial mid-p interval (pairs independent, these annotators); ``p_value``
    the exact one-sided binomial test of H1: share > 1/2. With ``panel``, ``ci95_annotators``
    also treats the annotators as a sample (``analysis.agreement.intervals``), around the same mid-p
    interval. Why mid-p and not Clopper-Pearson: Clopper-Pearson covers at least 95% at every
    true share and so 96-97% on average at the shares of real studies; with the annotators'
    part added on top, alike annotators' interval covered 97.2% where 93-97% is the goal.
    Mid-p covers about 95% on average (docs/intervals.md, "Label agreement on the mid-p
    interval"), which leaves the annotators' part room to cover a panel that differs.
    """
    statistic = label_statistic(min_annotations=min_annotations, decided_only=decided_only)
    k, n = (int(x) for x in statistic.features(counts).sum(axis=0))
    what = "a chosen or rejected majority" if decided_only else "enough annotations"
    out: Section
    if n == 0:
        out = {
            "value": None,
            "ci95": None,
            "p_value": None,
            "n": 0,
            "k": 0,
            "note": f"undefined: no pair has {what}",
        }
        if panel is not None:
            out["ci95_annotators"] = None
        return out
    p_value = binom_half_greater(k, n)
    out = {
        "value": k / n,
        "ci95": list(mid_p_interval(k, n)),
        "p_value": float(p_value),
        "n": n,
        "k": k,
    }
    if panel is not None:
        if own is None:
            raise ValueError("own (each annotation's row of counts) comes with panel")
        low, high = out["ci95"]
        pair = PairInterval(ci95=(low, high), note=None)
        ci, note = annotator_interval(
            statistic, counts, own, panel=panel, point=k / n, pair=pair, bounds=(0.0, 1.0)
        )
        out["ci95_annotators"] = list(ci) if ci is not None else None
        if note:
            out["ci95_annotators_note"] = note
    return out


def position_bias(*, first_slot_picks: int, n: int) -> Section:
    """Share of decisive annotations that picked the first slot, two-sided exact test vs 0.5."""
    first_slot_picks, n = _checked_counts(first_slot_picks, n)
    if n == 0:
        return {
            "first_slot_rate": None,
            "p_value": None,
            "n": 0,
            "ci95": None,
            "note": "undefined: no decisive annotation with a known slot",
        }
    p_value = binom_half_two_sided(first_slot_picks, n)
    return {
        "first_slot_rate": first_slot_picks / n,
        "p_value": float(p_value),
        "n": n,
        "ci95": _exact_ci(first_slot_picks, n),
    }


def wilson_interval(k: int, n: int, *, z: float = _Z95) -> tuple[float, float]:
    """Wilson score interval without continuity correction (Newcombe 1998, method 3)."""
    k, n = _checked_counts(k, n)
    if n == 0:
        raise ValueError("the Wilson interval needs n > 0")
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    # At k = 0 and k = n the bounds are exactly 0 and 1; avoid round-off like 1e-17.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def exact_proportion(k: int, n: int, *, undefined: str) -> Section:
    """k out of n with the exact (Clopper-Pearson) 95% interval; ``undefined`` is the note
    when n is 0."""
    k, n = _checked_counts(k, n)
    if n == 0:
        return {"value": None, "ci95": None, "n": 0, "k": 0, "note": f"undefined: {undefined}"}
    return {"value": k / n, "ci95": _exact_ci(k, n), "n": n, "k": k}


def proportion(k: int, n: int) -> Section:
    """k out of n with a 95% Wilson interval."""
    k, n = _checked_counts(k, n)
    if n == 0:
        return {"value": None, "ci95": None, "n": 0, "k": 0, "note": "undefined: n is 0"}
    return {"value": k / n, "ci95": list(wilson_interval(k, n)), "n": n, "k": k}


def tost_paired(
    differences: Sequence[float] | NDArray[np.float64],
    *,
    margin: float,
    alpha: float = 0.05,
    min_sd: float = 0.0,
) -> Section:
    """Equivalence of the per-pair differences (chosen minus rejected) to zero within ``margin``.

    Two one-sided one-sample t-tests (Schuirmann 1987; Lakens 2017) of H0: mu <= -margin and
    H0: mu >= +margin; ``tost_p`` is the larger p-value and ``equivalent`` is ``tost_p < alpha``,
    which is the same as the (1 - 2 alpha) confidence interval ``ci90`` lying inside
    (-margin, +margin). NaN differences are dropped.

    ``min_sd``: the smallest standard deviation the differences are taken to have. Means of
    ratings on an integer scale are known only to the scale's resolution, so a spread below
    what rounding alone produces is not evidence of a smaller one; with the floor the test is
    continuous in the data (40 pairs all rated 5 and the same with one rating 4 come out
    alike) and ``zero_spread`` pairs get an ordinary p-value, with a note. Above the floor this
    is the textbook TOST.

    Zero variance without a floor (``min_sd`` 0, every difference identical, n >= 2): the t
    statistics are +-infinity, so the p-values are their limits: ``tost_p`` is 0 (equivalent)
    when |mean| < margin and 1 otherwise, with a note saying so.
    """
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    values = np.asarray(differences, dtype=np.float64)
    values = values[~np.isnan(values)]
    n = int(values.size)
    if n < 2:
        return _tost_undefined(n, "undefined: fewer than two pairs with a difference")

    mean = float(values.mean())
    sd = float(values.std(ddof=1))
    # Check the values too: a constant 0.1 has a round-off sd of ~1e-17 and a mean of
    # 0.10000000000000002; tiny distinct values can underflow to sd 0.
    zero_spread = bool(np.ptp(values) == 0 or sd == 0.0)
    if zero_spread:
        mean, sd = float(values[0]) if np.ptp(values) == 0 else mean, 0.0
        if min_sd <= 0:
            return _tost_zero_variance(mean, n, margin=margin, alpha=alpha)
    floored = sd < min_sd
    sd = max(sd, min_sd)

    df = n - 1
    se = sd / math.sqrt(n)
    p_lower = t_sf((mean + margin) / se, df)  # H0: mu <= -margin
    p_upper = t_cdf((mean - margin) / se, df)  # H0: mu >= +margin
    tost_p = float(max(p_lower, p_upper))
    half_width = t_ppf(1 - alpha, df) * se
    half_95 = t_ppf(0.975, df) * se
    out = {
        "mean_diff": mean,
        "tost_p": tost_p,
        "equivalent": tost_p < alpha,
        "n": n,
        "ci90": [mean - half_width, mean + half_width],
        "ci95": [mean - half_95, mean + half_95],
        "zero_spread": zero_spread,
    }
    if floored:
        out["sd_floor"] = min_sd
        out["note"] = (
            f"the {n} differences vary less than the ratings' resolution allows (sd "
            f"{float(values.std(ddof=1)):.3g}); the test takes sd {min_sd:.3g}, the spread "
            "rounding onto the scale alone gives"
        )
    return out


def _tost_undefined(n: int, note: str) -> Section:
    return {
        "mean_diff": None,
        "tost_p": None,
        "equivalent": None,
        "n": n,
        "ci90": None,
        "ci95": None,
        "zero_spread": None,
        "note": note,
    }


def _tost_zero_variance(mean: float, n: int, *, margin: float, alpha: float) -> Section:
    inside = abs(mean) < margin
    tost_p = 0.0 if inside else 1.0
    return {
        "mean_diff": mean,
        "tost_p": tost_p,
        "equivalent": tost_p < alpha,
        "n": n,
        "ci90": [mean, mean],
        "ci95": [mean, mean],
        "zero_spread": True,
        "note": (
            f"all {n} differences equal {mean:g} (zero variance); tost_p is the limit of the "
            "t-tests, " + ("0: inside the margin" if inside else "1: not inside the margin")
        ),
    }
