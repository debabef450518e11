"""Quality agreement and equal-quality checks per dimension.

Units of the ordinal alpha are (pair, response). The bootstrap still resamples pairs, as every
interval of the report does: both responses of a drawn pair come along, since the ratings of
one pair's two responses by the same annotators are not independent.
"""

from __future__ import annotations

import numpy as np

from analysis.agreement import (
    Estimate,
    alpha,
    bootstrap_weights,
    resampled_alpha,
    unit_patterns,
)
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


def quality_alpha(counts: np.ndarray, *, domain: list[int], bootstrap: int, seed: int) -> dict:
    point = alpha(counts, level="ordinal", domain=domain)
    if point.value is None or bootstrap <= 0:
        return point.as_dict()
    by_pair = counts.reshape(-1, 2 * counts.shape[1])
    pairable = (counts.sum(axis=1) >= 2).reshape(-1, 2).any(axis=1)
    patterns, frequencies = unit_patterns(by_pair[pairable])
    units = patterns.reshape(-1, counts.shape[1])
    samples = [
        resampled_alpha(
            units, np.repeat(w.astype(np.float64), 2, axis=1), level="ordinal", domain=domain
        )
        for w in bootstrap_weights(frequencies, resamples=bootstrap, seed=seed)
    ]
    ci, note = percentile_ci(np.concatenate(samples), resamples=bootstrap)
    return Estimate(value=point.value, ci95=ci, note=note).as_dict()


def percentile_ci(samples: np.ndarray, *, resamples: int):
    """95% percentile interval over the defined resamples; omitted when most are undefined."""
    defined = samples[np.isfinite(samples)]
    dropped = resamples - defined.size
    if defined.size * 2 < resamples:
        return None, (
            f"bootstrap interval omitted: undefined in {dropped} of {resamples} resamples"
        )
    lo, hi = np.percentile(defined, (2.5, 97.5))
    note = f"{dropped} of {resamples} resamples were undefined and dropped" if dropped else None
    return (float(lo), float(hi)), note


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
