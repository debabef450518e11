"""Quality agreement and equal-quality checks per dimension.

Units of the ordinal alpha are (pair, response). The bootstrap still resamples pairs, as every
interval of the report does: both responses of a drawn pair come along, since the ratings of
one pair's two responses by the same annotators are not independent.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from analysis.agreement import Estimate, percentile_ci, resampled_alpha
from analysis.frames import Coded
from analysis.validity import proportion, tost_paired


def response_counts(coded: Coded, dimension: str, domain: list[int]) -> np.ndarray:
    """(2 * pairs) x len(domain) counts; row 2p is pair p's chosen response, 2p+1 its rejected."""
    lo = domain[0]
    parts = []
    for side in (0, 1):
        column = f"{dimension}_{'chosen' if side == 0 else 'rejected'}"
        values = coded.rating(column)
        codes = np.where(np.isnan(values), -1, values - lo).astype(np.int64)
        parts.append(coded.per_pair(codes, len(domain)))
    return np.stack(parts, axis=1).reshape(2 * coded.n_pairs, len(domain))


_NO_UNIT = "undefined: no unit has two or more ratings"
_NO_VARIATION = "undefined: every rating has the same value (no variation)"
# Weights held at once (8 bytes each): bounds memory whatever the number of pairs.
_BATCH_CELLS = 4_000_000


def pair_patterns(by_pair: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows, how often each occurs, and each row's pattern index.

    Rows are small counts, so each is packed into one integer (mixed radix) and a 1-D unique
    replaces a much slower row-wise one.
    """
    base = int(by_pair.max(initial=0)) + 1
    if by_pair.shape[1] * np.log2(base) < 62:
        keys = by_pair @ (base ** np.arange(by_pair.shape[1], dtype=np.int64))
        _, first, inverse, frequencies = np.unique(
            keys, return_index=True, return_inverse=True, return_counts=True
        )
        return by_pair[first], frequencies, inverse
    patterns, inverse, frequencies = np.unique(
        by_pair, axis=0, return_inverse=True, return_counts=True
    )
    return patterns, frequencies, inverse.ravel()


def unit_bootstrap_weights(
    inverse: np.ndarray, n_patterns: int, *, resamples: int, seed: int
) -> Iterator[np.ndarray]:
    """Batches of B x (2 * n_patterns) float weights for the response units of pair patterns.

    Each resample draws len(inverse) pairs with replacement and counts the draws per pattern;
    a pattern's two response units (columns 2p and 2p+1) get its count. Rows are filled one
    resample at a time, which keeps the draws in cache; a batch holds about _BATCH_CELLS values.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    n = len(inverse)
    index_type = np.int32 if n < 2**31 else np.int64
    inverse = inverse.astype(index_type)
    rows = max(1, _BATCH_CELLS // (2 * n_patterns))
    for start in range(0, resamples, rows):
        weights = np.empty((min(rows, resamples - start), 2 * n_patterns))
        for row in weights:
            drawn = np.bincount(
                inverse[rng.integers(0, n, size=n, dtype=index_type)], minlength=n_patterns
            )
            row[0::2] = drawn
            row[1::2] = drawn
        yield weights


def quality_alpha(counts: np.ndarray, *, domain: list[int], bootstrap: int, seed: int) -> dict:
    """Ordinal alpha over (pair, response) units; the bootstrap resamples whole pairs."""
    n_values = counts.shape[1]
    by_pair = counts.reshape(-1, 2 * n_values)
    pairable = (counts.sum(axis=1) >= 2).reshape(-1, 2).any(axis=1)
    if not pairable.any():
        return Estimate(value=None, note=_NO_UNIT).as_dict()
    patterns, frequencies, inverse = pair_patterns(by_pair[pairable])
    units = patterns.reshape(-1, n_values)  # rows 2p, 2p+1: pattern p's chosen, rejected

    def alphas(unit_weights: np.ndarray) -> np.ndarray:
        return resampled_alpha(units, unit_weights, level="ordinal", domain=domain)

    point = alphas(np.repeat(frequencies, 2)[None, :].astype(np.float64))[0]
    if not np.isfinite(point):
        return Estimate(value=None, note=_NO_VARIATION).as_dict()
    if bootstrap <= 0:
        return Estimate(value=float(point)).as_dict()
    weights = unit_bootstrap_weights(inverse, len(frequencies), resamples=bootstrap, seed=seed)
    samples = np.concatenate([alphas(w) for w in weights])
    ci, note = percentile_ci(samples, resamples=bootstrap)
    return Estimate(value=float(point), ci95=ci, note=note).as_dict()


def dimension_summary(
    chosen_means: np.ndarray,
    rejected_means: np.ndarray,
    *,
    margin: float,
    threshold: float,
) -> dict:
    """Mean quality of each side, the paired difference and its TOST, both-high share.

    Over the pairs where both responses have at least one rating on this dimension; each pair
    enters once with its annotators' mean ratings.
    """
    both = ~np.isnan(chosen_means) & ~np.isnan(rejected_means)
    chosen, rejected = chosen_means[both], rejected_means[both]
    n = int(both.sum())
    tost = tost_paired(chosen - rejected, margin=margin)
    high = proportion(int(((chosen >= threshold) & (rejected >= threshold)).sum()), n)
    out = {
        "n_pairs": n,
        "mean_chosen": float(chosen.mean()) if n else None,
        "mean_rejected": float(rejected.mean()) if n else None,
        "mean_diff": tost["mean_diff"],
        "diff_ci90": tost["ci90"],
        "tost_p": tost["tost_p"],
        "equivalent": tost["equivalent"],
        "margin": margin,
        "both_high_share": high["value"],
        "both_high_ci95": high["ci95"],
        "both_high_k": high["k"],
    }
    notes = []
    if n == 0:
        notes.append("no pair has ratings of both responses on this dimension")
    elif "note" in tost:
        notes.append(f"equivalence test: {tost['note']}")
    if notes:
        out["note"] = "; ".join(notes)
    return out
