"""95% intervals for statistics that are sums over pairs
(:class:`~analysis.agreement.panel.SumStatistic`): the pair
bootstrap (BCa) over unit patterns.

- a resample is a weight vector over units, its value ``finish(weights @ features)`` (one
  matrix product for all resamples);
- the pair jackknife for the BCa acceleration: leaving unit ``u`` out is
  ``total - features[u]``.

Why BCa and not the percentile interval: at 40 pairs x 5 annotators the percentile interval of
nominal alpha covered 91.9% (it misses on the side where alpha's sampling distribution is
lopsided); BCa corrects the bias and skew (Efron 1987). ``benchmarks/bench_coverage.py``
measures the coverage of both intervals; the README has its table.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import special

from analysis.agreement.panel import SumStatistic
from analysis.distributions import norm_ppf, t_ppf

Z975 = norm_ppf(0.975)
# Below this many pairable units a statistic is null with a note: with one or two units alpha
# is 0 or 1 by construction, whatever the annotators did.
MIN_UNITS = 3
# Below this many pairable units an interval is null with a note: a bootstrap of fewer units
# has too few distinct resamples to cover (and the published examples all have 10 or more).
MIN_INTERVAL_UNITS = 10

ZERO_WIDTH = (
    "zero-width interval: every resample gives the same value (for example every pair agrees), "
    "so these data show no sampling variation; that is not certainty"
)

# Upper bound for one chunk of bootstrap weights plus its float copy.
CHUNK_BYTES = 200 * 1024**2


def grouped_units(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct count rows, how many units have each one, and each unit's row index.

    Rows are small counts, so each is packed into one integer (mixed radix) when it fits and a
    1-D unique replaces a much slower row-wise one.
    """
    if counts.shape[0] == 0:
        return counts, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    base = int(counts.max(initial=0)) + 1
    if counts.shape[1] * np.log2(base) < 62:
        keys = counts.astype(np.int64) @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, inverse, frequencies = np.unique(
            keys, return_index=True, return_inverse=True, return_counts=True
        )
        return counts[first], frequencies, inverse.ravel()
    patterns, inverse, frequencies = np.unique(
        counts, axis=0, return_inverse=True, return_counts=True
    )
    return patterns, frequencies, inverse.ravel()


def bootstrap_weights(
    frequencies: np.ndarray, *, resamples: int, seed: int, chunk_bytes: int | None = None
) -> Iterator[np.ndarray]:
    """Chunks of resample weights: row b says how often each unit pattern is drawn.

    Drawing ``sum(frequencies)`` units with replacement and counting them per pattern is a
    multinomial with probabilities ``frequencies / sum(frequencies)``. Chunks keep the weight
    matrix under about 200 MB whatever the number of patterns.
    """
    frequencies = np.asarray(frequencies, dtype=np.int64)
    total = int(frequencies.sum())
    rng = np.random.Generator(np.random.PCG64(seed))
    pvals = frequencies / total
    rows = max(1, (chunk_bytes or CHUNK_BYTES) // (16 * len(frequencies)))
    for start in range(0, resamples, rows):
        yield rng.multinomial(total, pvals, size=min(rows, resamples - start))


# Up to this many patterns a multinomial over patterns is always the cheaper draw; above, it
# is while a pattern's binomial (about 75 ns) costs less than the units it stands for (about
# 6 ns each to draw and count): patterns x _UNITS_PER_PATTERN <= units. Measured on 100,000
# annotations: quality alpha's 1,100 patterns over 33,333 pairs took 0.07 s by multinomial and
# 0.20 s by drawing units; 3,450 patterns over 20,000 pairs 0.17 s and 0.13 s.
_MULTINOMIAL_PATTERNS = 512
_UNITS_PER_PATTERN = 12
# Weights held at once (8 bytes each) by the unit-drawing path (and by the bootstrap over
# annotators, analysis.agreement.intervals).
BATCH_CELLS = 4_000_000


def drawn_weights(
    inverse: np.ndarray, n_patterns: int, *, resamples: int, seed: int
) -> Iterator[np.ndarray]:
    """Batches of B x n_patterns weights, each row from len(inverse) units drawn with
    replacement and counted per pattern (one resample at a time, which keeps the draws in
    cache); the same distribution as :func:`bootstrap_weights`."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n = len(inverse)
    index_type = np.int32 if n < 2**31 else np.int64
    inverse = inverse.astype(index_type)
    rows = max(1, BATCH_CELLS // n_patterns)
    for start in range(0, resamples, rows):
        weights = np.empty((min(rows, resamples - start), n_patterns))
        for row in weights:
            row[:] = np.bincount(
                np.take(inverse, rng.integers(0, n, size=n, dtype=index_type)),
                minlength=n_patterns,
            )
        yield weights


def resample_weights(
    frequencies: np.ndarray,
    inverse: np.ndarray,
    *,
    resamples: int,
    seed: int,
    chunk_bytes: int | None = None,
) -> Iterator[np.ndarray]:
    """The cheaper of the two equivalent ways to draw pair-bootstrap weights over patterns
    (the same distribution; tests/test_report.py checks the two agree)."""
    n_patterns = len(frequencies)
    if n_patterns <= _MULTINOMIAL_PATTERNS or n_patterns * _UNITS_PER_PATTERN <= len(inverse):
        return bootstrap_weights(
            frequencies, resamples=resamples, seed=seed, chunk_bytes=chunk_bytes
        )
    return drawn_weights(inverse, len(frequencies), resamples=resamples, seed=seed)


@dataclass(frozen=True)
class PairInterval:
    """The interval for these annotators, which the annotator-aware one widens."""

    ci95: tuple[float, float] | None
    note: str | None


def defined_resamples(
    samples: np.ndarray, *, resamples: int
) -> tuple[np.ndarray, str | None, str | None]:
    """The defined bootstrap values, why the interval is omitted (more than half undefined) or
    None, and a note on the dropped ones or None: the rule every bootstrap interval here keeps."""
    defined = samples[np.isfinite(samples)]
    dropped = resamples - defined.size
    if defined.size * 2 < resamples:
        return (
            defined,
            (
                f"bootstrap interval omitted: the statistic is undefined in {dropped} of "
                f"{resamples} resamples"
            ),
            None,
        )
    note = f"{dropped} of {resamples} bootstrap resamples were undefined and dropped"
    return defined, None, note if dropped else None


def expanded_z(units: int) -> float:
    """The normal quantile a 95% bootstrap interval over ``units`` resampled units uses:
    ``sqrt(n / (n - 1)) * t_{n-1, 0.975}`` (Hesterberg 2015, "What teachers should know about
    the bootstrap", the expanded percentile interval), 1.96 below two units. Why: a bootstrap
    distribution has the plug-in spread, narrower than the sampling distribution by
    ``sqrt((n - 1) / n)``, and its quantiles stand where a t interval's stand only for large
    n. BCa corrects bias and skew, not that: at 40 pairs nominal alpha's 95% BCa interval
    covered 92.8% over 2,000 simulated studies (benchmarks/bench_coverage.py). 2.08 at 30
    units (a 96.3% normal interval), 2.05 at 40, 1.99 at 100, 1.97 at 500."""
    if units < 2:
        return Z975
    n = float(units)
    return float(np.sqrt(n / (n - 1)) * t_ppf(0.975, n - 1))


def bca_interval(
    samples: np.ndarray,
    *,
    point: float,
    jackknife: np.ndarray,
    jackknife_weights: np.ndarray,
    resamples: int,
) -> tuple[tuple[float, float] | None, str | None]:
    """95% bias-corrected and accelerated interval (Efron 1987; Efron & Tibshirani 1993, 14.3),
    its levels at :func:`expanded_z` of the number of resampled units instead of 1.96.

    ``jackknife[k]`` is the statistic without one unit of kind ``k``, of which there are
    ``jackknife_weights[k]`` (so they sum to the number of units). Undefined resamples are
    dropped and counted in the note; the interval is omitted when more than half are
    undefined. An undefined jackknife value leaves the acceleration at 0 (bias correction
    only), with a note.
    """
    defined, omitted, dropped_note = defined_resamples(samples, resamples=resamples)
    if omitted:
        return None, omitted
    notes = [dropped_note] if dropped_note else []
    n = defined.size
    below = (np.count_nonzero(defined < point) + 0.5 * np.count_nonzero(defined == point)) / n
    z0 = float(special.ndtri(np.clip(below, 1 / (n + 1), n / (n + 1))))
    used = jackknife_weights > 0
    theta, weights = jackknife[used], jackknife_weights[used].astype(np.float64)
    acceleration = 0.0
    if not np.isfinite(theta).all():
        notes.append("acceleration omitted: the statistic is undefined without some unit")
    else:
        deviation = (theta * weights).sum() / weights.sum() - theta
        spread = (weights * deviation**2).sum()
        if spread > 0:
            acceleration = float((weights * deviation**3).sum() / (6 * spread**1.5))
    levels = []
    z_level = expanded_z(int(jackknife_weights.sum()))
    for z in (-z_level, z_level):
        shifted = z0 + z
        levels.append(float(special.ndtr(z0 + shifted / (1 - acceleration * shifted))))
    lo, hi = np.quantile(defined, levels)
    if lo == hi:
        notes.append(ZERO_WIDTH)
    return (float(lo), float(hi)), "; ".join(notes) or None


def pair_bootstrap(
    statistic: SumStatistic,
    patterns: np.ndarray,
    frequencies: np.ndarray,
    *,
    point: float,
    resamples: int,
    weights: Iterator[np.ndarray],
) -> PairInterval:
    """BCa interval of ``statistic`` over unit patterns resampled with ``weights``."""
    features = statistic.features(patterns)
    # copy=False: drawn weights are float64 already, and copying 1000 rows per batch cost 0.4 s
    samples = np.concatenate(
        [statistic.finish(w.astype(np.float64, copy=False) @ features) for w in weights]
    )
    total = frequencies.astype(np.float64) @ features
    jackknife = statistic.finish(total[None, :] - features)
    ci, note = bca_interval(
        samples,
        point=point,
        jackknife=jackknife,
        jackknife_weights=frequencies,
        resamples=resamples,
    )
    return PairInterval(ci95=ci, note=note)
