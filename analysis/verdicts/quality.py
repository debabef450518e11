"""Quality agreement and equal-quality checks per dimension.

Units of the ordinal alpha are (pair, response). The bootstrap still resamples pairs, as every
interval of the report does: both responses of a drawn pair come along, since the ratings of
one pair's two responses by the same annotators are not independent.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from analysis.agreement.coefficients import EstimateJSON, alpha_statistic, estimate
from analysis.agreement.panel import Panel
from analysis.frames import Coded
from analysis.report.shape import Section
from analysis.verdicts.validity import proportion, tost_paired


def response_counts(coded: Coded, dimension: str, domain: list[int]) -> NDArray[np.int64]:
    """(2 * pairs) x len(domain) counts; row 2p is pair p's chosen response, 2p+1 its rejected."""
    lo = domain[0]
    parts = []
    for side in (0, 1):
        column = f"{dimension}_{'chosen' if side == 0 else 'rejected'}"
        values = coded.rating(column)
        codes = np.where(np.isnan(values), -1, values - lo).astype(np.int64)
        parts.append(coded.per_pair(codes, len(domain)))
    return np.stack(parts, axis=1).reshape(2 * coded.n_pairs, len(domain))


def quality_alpha(
    counts: NDArray[np.int64],
    *,
    domain: list[int],
    bootstrap: int,
    seed: int,
    panel: Panel | None = None,
    own: NDArray[np.int64] | None = None,
) -> EstimateJSON:
    """Ordinal alpha over (pair, response) units; the bootstrap resamples whole pairs.

    ``counts`` is (2 * pairs) x len(domain) as :func:`response_counts` builds it. Internally a
    pair is one row of 2 * len(domain) counts (chosen, then rejected), so that a drawn pair
    brings both responses and leaving an annotator out removes both of its ratings. ``own``
    (with ``panel``) is each annotation's row in that pair layout.
    """
    n_values = counts.shape[1]
    by_pair = counts.reshape(-1, 2 * n_values)
    pairable = (counts.sum(axis=1) >= 2).reshape(-1, 2)
    return estimate(
        alpha_statistic(level="ordinal", domain=domain, parts=2),
        by_pair,
        resampled=pairable.any(axis=1),
        pairable=pairable.any(axis=1),
        undefined_note="undefined: every rating has the same value (no variation)",
        bootstrap=bootstrap,
        seed=seed,
        panel=panel,
        own=own,
    ).as_dict()


def dimension_summary(
    chosen_means: NDArray[np.float64],
    rejected_means: NDArray[np.float64],
    *,
    margin: float,
    threshold: float,
    chosen_counts: NDArray[np.int64] | None = None,
    rejected_counts: NDArray[np.int64] | None = None,
) -> Section:
    """Mean quality of each side, the paired difference and its TOST, both-high share.

    Over the pairs where both responses have at least one rating on this dimension; each pair
    enters once with its annotators' mean ratings. With the number of ratings behind each
    mean (``*_counts``) the TOST's spread is floored at the resolution of such means: a mean
    of k integer ratings carries rounding variance 1/(12 k), so the difference of the pair's
    two means at least 1/12 (1/k_chosen + 1/k_rejected), averaged over the pairs.
    """
    both = ~np.isnan(chosen_means) & ~np.isnan(rejected_means)
    chosen, rejected = chosen_means[both], rejected_means[both]
    n = int(both.sum())
    min_sd = 0.0
    if chosen_counts is not None and rejected_counts is not None and n:
        resolution = (1 / chosen_counts[both] + 1 / rejected_counts[both]) / 12
        min_sd = float(np.sqrt(resolution.mean()))
    tost = tost_paired(chosen - rejected, margin=margin, min_sd=min_sd)
    high = proportion(int(((chosen >= threshold) & (rejected >= threshold)).sum()), n)
    out = {
        "n_pairs": n,
        "mean_chosen": float(chosen.mean()) if n else None,
        "mean_rejected": float(rejected.mean()) if n else None,
        "mean_diff": tost["mean_diff"],
        "diff_ci90": tost["ci90"],
        "diff_ci95": tost["ci95"],
        "zero_spread": tost["zero_spread"],
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
