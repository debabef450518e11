"""The shapes every agreement interval here shares: a statistic that is a sum over pairs, who gave
which annotation, and the annotators' lasting main effects.

A :class:`SumStatistic` is any statistic of the form ``finish(sum over units of
features(unit counts))``: Krippendorff's alpha (features = the unit's coincidences), percent
agreement, Gwet's AC1 and label agreement all are. The pair bootstrap
(:mod:`analysis.agreement.bootstrap`) and the interval that also treats the annotators as a
sample (:mod:`analysis.agreement.intervals`, :mod:`analysis.agreement.lean_spread`) are built
on that one shape. A :class:`Panel` says who gave which annotation, with the within-pair
shuffles of the annotators' codes that measure what chance gives; :class:`MainEffects` are the
annotators' lasting leans read from it (:func:`main_effect_ratio`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy import sparse

# Shuffles of the annotators' labels within pairs that measure the jackknife's noise floor: a
# shuffled jackknife variance has about annotators - 1 degrees of freedom, so fewer shuffles
# give the same precision with more annotators (20 with three, 10 with five, 8 from six on:
# the floor's relative standard error stays at or below about 0.2).
SHUFFLES = 20


def shuffles_for(annotators: int) -> int:
    return int(min(SHUFFLES, max(8, np.ceil(40 / max(annotators - 1, 1)))))


@dataclass(frozen=True)
class SumStatistic:
    """``finish(sum_u features(counts[u]))``; ``finish`` maps B x F sums to B values, NaN where
    the statistic is undefined. ``features`` must give a zero row for a unit that carries no
    information (for example one with a single rating), so that any unit may be passed."""

    features: Callable[[np.ndarray], np.ndarray]
    finish: Callable[[np.ndarray], np.ndarray]
    # A majority-type statistic (a unit's features depend on how many annotations it has, not
    # only on their shares): leaving an annotator out changes the functional (a majority of
    # three becomes agreement of two), so its annotators' part comes from a bootstrap over
    # annotators (:func:`annotator_bootstrap`) instead of the jackknife.
    majority: bool = False
    # How many units a counts row holds side by side (quality: a pair's chosen and rejected
    # response), each with its own labels: the expected features over labels
    # (analysis.agreement.lean_spread) draw a label in each part.
    parts: int = 1

    def value(self, counts: np.ndarray) -> float:
        return float(self.finish(self.features(counts).sum(axis=0)[None, :])[0])


@dataclass(frozen=True)
class Panel:
    """Who gave which annotation: per annotation its unit (pair) and annotator code, plus the
    annotator codes shuffled within each pair (the same shuffles for every statistic).

    ``traits`` (optional, annotations x d): what an annotator's lasting main effects show in,
    when a statistic's own coding hides them (neutral alpha's orientation flips a lean to
    chosen into noise); None: each statistic's own annotations (:func:`main_effect_ratio`)."""

    unit: np.ndarray
    annotator: np.ndarray
    n_annotators: int
    shuffled: tuple[np.ndarray, ...]
    traits: np.ndarray | None = None
    # columns[r, c]: the traits column that a statistic's column c shows for annotation r
    # (neutral alpha shows chosen as "first" or "second" by a coin per pair); None: the same.
    columns: np.ndarray | None = None
    seed: int = 0
    # What was derived from this panel for one statistic and is asked for again by another
    # (the preference statistics share their labels' main effects and re-labellings), under
    # (what it is, content_key of the arrays it came from): :func:`remembered`. with_traits'
    # copy keeps it, as it keeps the annotators and shuffles everything here depends on.
    memo: dict[tuple[str, bytes], Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls, unit: np.ndarray, annotator: np.ndarray, *, seed: int, shuffles: int | None = None
    ) -> Panel:
        unit = np.asarray(unit, dtype=np.int64)
        # codes in sorted name order, as np.unique numbers them (hashing: 15 times faster)
        annotator, codes = pd.factorize(np.asarray(annotator), sort=True)
        if shuffles is None:
            shuffles = shuffles_for(len(codes))
        rng = np.random.Generator(np.random.PCG64([seed, 1]))
        annotator = annotator.astype(np.int64)
        by_unit = np.argsort(unit, kind="stable")
        shuffled = []
        for _ in range(shuffles):
            # Sorting unit + a uniform draw in [0, 1) orders the units and shuffles within them.
            order = np.argsort(unit + rng.random(unit.size))
            codes_k = np.empty_like(annotator)
            codes_k[order] = annotator[by_unit]
            shuffled.append(codes_k)
        return cls(unit, annotator, len(codes), tuple(shuffled), seed=seed)

    def with_traits(self, traits: np.ndarray, *, columns: np.ndarray | None = None) -> Panel:
        """The same panel and shuffles, main effects read from ``traits`` (one row per
        annotation, in this panel's order); ``columns[r, c]`` is the traits column that the
        statistic's column ``c`` shows for annotation ``r`` (None: the same columns)."""
        return replace(
            self,
            traits=np.asarray(traits, dtype=np.float64),
            columns=None if columns is None else np.asarray(columns, dtype=np.int64),
        )

    def traits_for(self, own: np.ndarray) -> np.ndarray:
        """What the main effects are read from for a statistic whose annotations are ``own``:
        this panel's traits where it has them, else ``own``."""
        return self.traits if self.traits is not None else own

    def group_sum(self, codes: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per annotator sums of ``values`` rows, annotators given by ``codes`` per row: the
        annotators x rows indicator matrix times ``values``. In CSC form that matrix is its
        codes as they are (one entry per column), so building it costs nothing."""
        n = codes.size
        indicator = sparse.csc_matrix(
            (np.ones(n), codes, np.arange(n + 1)), shape=(self.n_annotators, n)
        )
        return np.asarray(indicator @ values)


T = TypeVar("T")


def content_key(*arrays: np.ndarray) -> bytes:
    """A digest of the arrays' types, shapes and contents: the key of what a panel derived
    from them (:func:`remembered`)."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape};".encode())
        digest.update(array.data)
    return digest.digest()


def remembered(
    memo: dict[tuple[str, bytes], Any], key: tuple[str, bytes], compute: Callable[[], T]
) -> T:
    """``memo[key]``, computed once."""
    if key not in memo:
        memo[key] = compute()
    value: T = memo[key]
    return value


def main_effect_ratio(panel: Panel, traits: np.ndarray) -> float:
    """How far the annotators' lasting main effects exceed what chance gives: ``H / H0``.

    ``traits`` has one row per annotation (for example its one-hot label, or its ratings).
    Each annotation's residual is its row minus its pair's mean (pairs with two or more
    annotations); an annotator's effect is the mean of its residuals, and ``H`` is the sum
    over annotators of ``n_i * |effect_i|^2`` (the between-annotator sum of squares of a
    one-way ANOVA on residuals). ``H0`` is the same with the annotators' codes shuffled within
    pairs (the panel's shuffles, their mean): its value when annotators do not differ. So
    ``H / H0 - 1`` is the method-of-moments estimate of the annotators' main-effect variance
    over its sampling noise. Why main effects: a lasting lean or rating offset moves an
    annotator's own marginal by far more than its standard error over ~100 pairs, while the
    jackknife of an agreement statistic over three annotators hardly tells such a panel from
    alike annotators (module docstring). 1.0 when no pair shows any spread (nothing to tell).
    """
    effects = annotator_effects(panel, traits)
    return 1.0 if effects is None else effects.ratio()


@dataclass(frozen=True)
class MainEffects:
    """Each annotator's main effect, annotators x d mean residuals, and the number of
    annotations behind each (0 for an annotator without any; its mean is 0): for the panel's
    own annotator codes and for each of its within-pair shuffles (chance)."""

    observed: tuple[np.ndarray, np.ndarray]
    shuffled: tuple[tuple[np.ndarray, np.ndarray], ...]

    def ratio(self) -> float:
        """``H / H0`` (:func:`main_effect_ratio`); 1.0 when the shuffles show no spread."""

        def spread(effects: tuple[np.ndarray, np.ndarray]) -> float:
            mean, n = effects
            return float((n[:, None] * mean**2).sum())

        chance = float(np.mean([spread(effects) for effects in self.shuffled]))
        return spread(self.observed) / chance if chance > 0 else 1.0


def annotator_effects(panel: Panel, traits: np.ndarray) -> MainEffects | None:
    """The annotators' main effects (:class:`MainEffects`) read from ``traits``, one row per
    annotation. Residual: an annotation's row minus its pair's mean, over pairs with two or
    more annotations; an annotator's effect is the mean of its residuals. None when no pair
    has two (nothing to compare). Computed once per panel and traits (:func:`remembered`):
    the preference statistics read the same labels."""
    traits = np.asarray(traits, dtype=np.float64).reshape(len(panel.unit), -1)
    return remembered(
        panel.memo, ("effects", content_key(traits)), lambda: _annotator_effects(panel, traits)
    )


def _annotator_effects(panel: Panel, traits: np.ndarray) -> MainEffects | None:
    n_units = int(panel.unit.max(initial=-1)) + 1
    size = np.bincount(panel.unit, minlength=n_units)
    used = size[panel.unit] >= 2
    if not used.any():
        return None
    unit = panel.unit[used]
    sums = np.stack(
        [np.bincount(unit, weights=column, minlength=n_units) for column in traits[used].T],
        axis=1,
    )
    residual = traits[used] - sums[unit] / size[unit][:, None]

    def effects(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        codes = codes[used]
        per_annotator = panel.group_sum(codes, residual)
        n = np.bincount(codes, minlength=panel.n_annotators)
        return per_annotator / np.maximum(n, 1)[:, None], n

    return MainEffects(
        observed=effects(panel.annotator),
        shuffled=tuple(effects(codes) for codes in panel.shuffled),
    )
