"""Conveniences the statistics tests use that the report itself does not: one pair's stopping
state, unit patterns without their index, the bootstrap means of a judge's picks, and alpha on
given resample weights."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from analysis.agreement.bootstrap import grouped_units
from analysis.agreement.coefficients import Domain, Level, alpha_statistic
from analysis.design.stopping import stopping_states
from analysis.judges.accuracy import resampled_sums
from analysis.vocabulary import PREFERENCES


def stopping_state(
    preferences: Sequence[str], *, minimum: int, maximum: int, ties: bool = True
) -> str:
    """The state of one pair from its answers' preferences (chosen, rejected, tie)."""
    unknown = set(preferences) - set(PREFERENCES)
    if unknown:
        raise ValueError(f"unknown preference(s): {sorted(unknown)}")
    counts = np.array([[list(preferences).count(p) for p in PREFERENCES]])
    return str(stopping_states(counts, minimum=minimum, maximum=maximum, ties=ties)[0])


def unit_patterns(counts: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Distinct count rows and how many units have each one."""
    patterns, frequencies, _ = grouped_units(counts)
    return patterns, frequencies


def resampled_means(values: ArrayLike, *, resamples: int, seed: int) -> NDArray[np.float64]:
    """Means of each row of ``values`` (k x n) over bootstrap samples of its n columns."""
    rows = np.atleast_2d(np.asarray(values, dtype=np.float64))
    means: NDArray[np.float64] = resampled_sums(rows, resamples=resamples, seed=seed) / max(
        rows.shape[1], 1
    )
    return means


def resampled_alpha(
    counts: ArrayLike, weights: ArrayLike, *, level: Level, domain: Domain
) -> NDArray[np.float64]:
    """Alpha of each resample, where ``weights[b, u]`` counts the copies of unit row ``u``: the
    report's path (the sum statistic's features, one matrix product, its finish)."""
    statistic = alpha_statistic(level=level, domain=domain)
    features = statistic.features(np.asarray(counts, dtype=np.int64))
    return statistic.finish(np.asarray(weights, dtype=np.float64) @ features)
