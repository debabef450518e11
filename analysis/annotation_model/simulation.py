"""Studies with a known truth, for checking the model of annotation (tests and
benchmarks/bench_annotation_model.py).

A study of ``pairs`` pairs, each answered by ``per_pair`` annotators of a pool of ``pool``:

- the truth: ``flip_share`` of the pairs are truly preferred the other way; ``confound_share``
  have chosen better than rejected by a gap drawn from ``CONFOUND_GAPS`` on every dimension
  (or on one), at a base level anywhere on the upper half of the scale; ``low_share`` have one
  response below the threshold on one dimension or all; the rest are alike, up to small
  natural differences;
- the annotators differ: each answers the true preference with an accuracy drawn from
  ``accuracy``, has an offset per dimension and a noise level of their own; annotator 0 is near
  random (accuracy 0.5, noisy ratings) when ``near_random`` is set;
- a rating is the level plus the annotator's offset plus noise (half shared by the
  annotation's dimensions), rounded and cut to the 1-5 scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.vocabulary import DIMENSIONS

CLIP_LO, CLIP_HI = 1, 5
CONFOUND_GAPS = (0.5, 1.0, 1.5, 2.0, 2.5)


@dataclass(frozen=True)
class SimulatedStudy:
    annotations: pd.DataFrame  # the annotations table
    truth: pd.DataFrame  # pair_id, preferred, low, confound, valid
    annotators: pd.DataFrame | None = None  # annotator, accuracy, noise (the truth about them)


def simulate_study(
    *,
    pairs: int = 400,
    per_pair: int = 3,
    pool: int = 12,
    flip_share: float = 0.2,
    confound_share: float = 0.15,
    low_share: float = 0.1,
    accuracy: tuple[float, float] = (0.65, 0.95),
    near_random: bool = True,
    threshold: float = 3.0,
    pair_gap: float = 1.0,
    levels_from: str = "kinds",
    seed: int = 0,
) -> SimulatedStudy:
    """``levels_from``: "kinds" (the module docstring's alike, confounded and low pairs) or
    "normal" (every pair's six levels from one correlated normal distribution, the family the
    model of annotation's quality prior belongs to, so low and confounded pairs arise by
    chance)."""
    rng = np.random.default_rng(seed)
    d = len(DIMENSIONS)
    if levels_from == "normal":
        levels = _normal_levels(rng, pairs, d)
    else:
        levels = _kinds_levels(rng, pairs, d, confound_share=confound_share, low_share=low_share)
    return _answered(
        rng,
        np.clip(levels, 1.0, 5.0),
        pairs=pairs,
        per_pair=per_pair,
        pool=pool,
        flip_share=flip_share,
        accuracy=accuracy,
        near_random=near_random,
        threshold=threshold,
        pair_gap=pair_gap,
    )


def _kinds_levels(
    rng: np.random.Generator, pairs: int, d: int, *, confound_share: float, low_share: float
) -> np.ndarray:
    """Levels (pairs x 2 x d) of alike, confounded and low pairs (the module docstring)."""
    base = np.clip(rng.normal(3.9, 0.45, pairs), 1.5, 5.0)
    levels = np.empty((pairs, 2, d))
    levels[:] = base[:, None, None] + rng.normal(0, 0.15, (pairs, 2, d))
    kind = rng.choice(3, size=pairs, p=[confound_share, low_share, 1 - confound_share - low_share])
    for i in np.flatnonzero(kind == 0):
        gap = rng.choice(CONFOUND_GAPS)
        dims: slice | int = slice(None) if rng.random() < 0.6 else int(rng.integers(d))
        levels[i, 0, dims] = base[i] + gap / 2
        levels[i, 1, dims] = base[i] - gap / 2
    for i in np.flatnonzero(kind == 1):
        low_side = int(rng.integers(2))
        dims = slice(None) if rng.random() < 0.5 else int(rng.integers(d))
        levels[i, low_side, dims] = rng.uniform(1.8, 3.2)
    return levels


def _normal_levels(rng: np.random.Generator, pairs: int, d: int) -> np.ndarray:
    """Levels (pairs x 2 x d) from one normal distribution: mean 3.9, sd 0.6, correlation 0.8
    between one response's dimensions, 0.6 between the two responses on one dimension, 0.45
    otherwise."""
    j = 2 * d
    covariance = np.empty((j, j))
    for a in range(j):
        for b in range(j):
            same_side, same_dim = a // d == b // d, a % d == b % d
            corr = 1.0 if a == b else 0.8 if same_side else 0.6 if same_dim else 0.45
            covariance[a, b] = 0.36 * corr
    draws = rng.multivariate_normal(np.full(j, 3.9), covariance, size=pairs)
    return draws.reshape(pairs, 2, d)


def _answered(
    rng: np.random.Generator,
    levels: np.ndarray,
    *,
    pairs: int,
    per_pair: int,
    pool: int,
    flip_share: float,
    accuracy: tuple[float, float],
    near_random: bool,
    threshold: float,
    pair_gap: float,
) -> SimulatedStudy:
    """The annotators' answers to pairs of these true levels, and the truth."""
    d = levels.shape[2]
    flipped = rng.random(pairs) < flip_share

    acc = rng.uniform(*accuracy, pool)
    offsets = rng.normal(0, 0.3, (pool, d))
    noise = rng.uniform(0.5, 0.9, pool)
    if near_random:
        acc[0], noise[0] = 0.5, 1.5
    rows = []
    for pair in range(pairs):
        for w in rng.choice(pool, per_pair, replace=False):
            right = rng.random() < acc[w]
            prefers_chosen = right != flipped[pair]
            shared = rng.normal()
            error = noise[w] * (np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.normal(size=(2, d)))
            rating = np.clip(np.rint(levels[pair] + offsets[w][None, :] + error), CLIP_LO, CLIP_HI)
            row: dict[str, object] = {
                "pair_id": f"p{pair:05d}",
                "annotator": f"a{w:03d}",
                "preference": "chosen" if prefers_chosen else "rejected",
                "chosen_position": "A" if rng.random() < 0.5 else "B",
                "main_reason": "personal_fit",
            }
            for s, side in enumerate(("chosen", "rejected")):
                for j, dim in enumerate(DIMENSIONS):
                    row[f"{dim}_{side}"] = int(rating[s, j])
            rows.append(row)
    low = (levels < threshold).any(axis=(1, 2))
    confound = ((levels[:, 0, :] - levels[:, 1, :]) > pair_gap).any(axis=1)
    truth = pd.DataFrame(
        {
            "pair_id": [f"p{i:05d}" for i in range(pairs)],
            "preferred": np.where(flipped, "rejected", "chosen"),
            "low": low,
            "confound": confound,
            "valid": ~flipped & ~low & ~confound,
        }
    )
    annotators = pd.DataFrame(
        {"annotator": [f"a{w:03d}" for w in range(pool)], "accuracy": acc, "noise": noise}
    )
    return SimulatedStudy(pd.DataFrame(rows), truth, annotators)
