"""The 95% interval that treats both the pairs and the annotators as samples: the pair
bootstrap's interval (:mod:`analysis.agreement.bootstrap`) widened by the annotators' variance
component.

The annotator jackknife is cheap on a :class:`~analysis.agreement.panel.SumStatistic`: leaving
annotator ``i`` out changes only the units it rated, by ``features(counts[u]) -
features(counts[u] - own ratings)``, summed over its rows.

Why not a two-way bootstrap for the annotators: an annotator drawn twice agrees perfectly with
its copy, which inflates every agreement statistic. Instead the interval for annotators in
general adds two variance components (a two-way random-effects view, as in generalizability
theory: pairs, annotators, and their interaction with the noise of single annotations). The
pairs' part comes from the pair bootstrap interval, each side's half-width over z. The
annotators' part (:func:`annotator_part`) is the larger of two estimates. The main effects'
part: how much the statistic moves over panels of leans the size of the annotators' lasting
leans in their own labels or ratings beyond chance, the statistic taken at its expectation over
the labels (:mod:`analysis.agreement.lean_spread`). It tells statistics apart that the jackknife cannot:
against its pair-to-pair variance, alpha moves with leans every pair shares far less than
percent agreement does. The jackknife's part: the jackknife over annotators minus its expected
pair-noise part, measured by the same jackknife after the annotators' labels are shuffled
within each pair (which keeps who rated how many pairs but removes any lasting difference
between annotators; the mean over shuffles), counted as far as it stands above that floor,
because with three annotators it is mostly noise near it and speaks where it stands far above
(quality alpha's bias with a few annotators who differ, which leans do not show). Both go
through a smooth positive part and are weighted by how far the annotators' main effects
(:func:`main_effect_ratio`) exceed what the same shuffles give (:func:`annotator_component`). A
majority (label agreement, ``SumStatistic.majority``) is the exception: leaving one of three
annotators out turns a majority of three into agreement of two, so its annotators' part is a
bootstrap over annotators that re-labels each pair with stand-ins' answers
(:func:`annotator_bootstrap`), minus the same on the shuffles, its weight rises sooner past
chance and its component grows with the main effects up to three times its size
(:func:`spread_growth`); its pairs' part is the mid-p interval, not the bootstrap
(:func:`analysis.verdicts.validity.label_share`). Why the weight: with three
annotators the jackknife of an agreement statistic has two degrees of freedom and tells a panel
that differs from alike annotators poorly, while an annotator's own marginal over ~100 pairs
shows a lasting lean far above its standard error. Each side is z times the square root of the
sum; there is no test that switches between a narrow and a wide interval, and every interval is
cut to the statistic's range (AC1's -1/(Q-1) to 1, alpha's -1 to 1, shares' 0 to 1).
``benchmarks/bench_coverage.py`` measures coverage and width against an oracle; the README has
the table and says which cells three annotators still miss; docs/intervals.md why each choice
was made and what was tried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.agreement.bootstrap import (
    BATCH_CELLS,
    Z975,
    ZERO_WIDTH,
    PairInterval,
    grouped_units,
)
from analysis.agreement.lean_spread import lean_variances
from analysis.agreement.panel import (
    Panel,
    SumStatistic,
    annotator_effects,
    content_key,
    remembered,
)

# The evidence rule (:func:`annotator_evidence`): the annotator-aware interval needs at least
# MIN_EVIDENCE_PAIRS pairs that MIN_ANNOTATORS or more annotators rated. Why pairs and not
# names: two annotators on every pair and a third on a few make three names, but the
# annotators' variance then rests on the few pairs where three overlap. benchmarks/
# bench_coverage.py's topped-up cells (a panel of three who differ, two on all 100 pairs, the
# third on 3 to 100): with a third on 3, label_confirmed's ci95_annotators covered 92.2% with
# 5.8% of studies missing on the side that passes a lower-bound check (2.5 nominal) and was 2-4
# times the oracle width; from 30 no statistic covered less than the full panel's lowest (93.0).
# docs/methods.md, "How much evidence the interval for annotators in general needs". 30 is also
# the count the conclusion asks of rated pairs and stated reasons. A jackknife over two
# annotators has one degree of freedom, so pairs with fewer than three never count.
MIN_ANNOTATORS = 3
MIN_EVIDENCE_PAIRS = 30

# A majority's annotators' part (:func:`annotator_component`): it keeps growing for
# SPREAD_GROWTH_SPAN past chance (H / H0 - 1), to MAJORITY_GROWTH times its size
# (:func:`spread_growth`), and its weight is main_effect_weight to MAJORITY_WEIGHT_POWER
# (below 1: it rises sooner past chance). The last two chosen on 18,000 studies a cell
# and checked on 6,000 others (docs/intervals.md).
SPREAD_GROWTH_SPAN = 3.0
MAJORITY_GROWTH = 3.0
MAJORITY_WEIGHT_POWER = 0.75
# The main effects' part of the annotators' variance (:func:`annotator_part`) is this many times
# the statistic's variance over panels of leans; and the jackknife's part counts as far as its
# excess stands above this many floors. Both chosen on benchmarks/bench_coverage.py's cells
# (docs/intervals.md), as the other constants here were.
LEAN_GAIN = 2.5
JACKKNIFE_EVIDENCE = 3.0


@dataclass(frozen=True)
class AnnotatorEvidence:
    """How much the data say about annotators in general: the pairs that MIN_ANNOTATORS or
    more annotators rated (each counted once however many rated it), of ``pairs`` rated by
    anyone, and the annotators behind the statistic."""

    pairs: int
    pairs_with_three: int
    pairs_with_two: int
    annotators: int

    @property
    def sufficient(self) -> bool:
        return self.pairs_with_three >= MIN_EVIDENCE_PAIRS

    @property
    def missing(self) -> int:
        """Pairs with three or more annotations still needed (0 when sufficient)."""
        return max(MIN_EVIDENCE_PAIRS - self.pairs_with_three, 0)

    def note(self) -> str | None:
        """Why there is no annotator-aware interval and what would suffice; None when there is
        enough evidence."""
        if self.sufficient:
            return None
        need = self.missing
        what = (
            f"{need} more pair{'s' if need != 1 else ''} with a third annotation"
            if self.pairs_with_two >= need
            else f"{need} more pair{'s' if need != 1 else ''} with three or more annotations"
        )
        return (
            f"undefined: {self.pairs_with_three} pair{'s' if self.pairs_with_three != 1 else ''}"
            f" with three or more annotations ({self.annotators} annotator"
            f"{'s' if self.annotators != 1 else ''}); an interval that treats the annotators as "
            f"a sample needs at least {MIN_EVIDENCE_PAIRS}: {what} would suffice"
        )


def annotator_evidence(panel: Panel, own: np.ndarray | None = None) -> AnnotatorEvidence:
    """The evidence rule's count for a statistic whose annotations are ``own`` (one row per
    annotation of ``panel``; an all-zero row, such as a rating left out, does not count; None:
    every annotation counts): pairs rated by at least MIN_ANNOTATORS distinct annotators. The
    one place the rule is applied: :func:`annotator_interval` for every statistic, and through it
    the conclusion's label check."""
    counted = (
        np.ones(panel.unit.size, dtype=bool)
        if own is None
        else np.asarray(own).reshape(panel.unit.size, -1).any(axis=1)
    )
    width = max(panel.n_annotators, 1)
    # (unit, annotator) keys sorted, each distinct one counted once (a sort: np.unique's hashing
    # took 15 times as long on 100,000 annotations)
    key = np.sort(panel.unit[counted] * width + panel.annotator[counted])
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    per_unit = np.bincount(key[first] // width, minlength=int(panel.unit.max(initial=-1)) + 1)
    return AnnotatorEvidence(
        pairs=int((per_unit > 0).sum()),
        pairs_with_three=int((per_unit >= MIN_ANNOTATORS).sum()),
        pairs_with_two=int((per_unit == MIN_ANNOTATORS - 1).sum()),
        annotators=int(np.count_nonzero(np.bincount(key[first] % width, minlength=width))),
    )


def _jackknife_variance(values: np.ndarray) -> float:
    k = values.size
    return float((k - 1) / k * ((values - values.mean()) ** 2).sum())


def annotator_interval(
    statistic: SumStatistic,
    counts: np.ndarray,
    own: np.ndarray,
    *,
    panel: Panel,
    point: float | None,
    pair: PairInterval,
    bounds: tuple[float | None, float | None] = (-1.0, 1.0),
) -> tuple[tuple[float, float] | None, str | None]:
    """95% interval treating both pairs and annotators as samples (see the module docstring).

    ``counts`` is the units x C count matrix the statistic is computed on, ``own[r]`` the
    part of ``counts[panel.unit[r]]`` that annotation ``r`` contributed. ``bounds`` are the
    statistic's smallest and largest possible values (None: unbounded), which cap the interval.
    """
    evidence = annotator_evidence(panel, own)
    if not evidence.sufficient:
        return None, evidence.note()
    if point is None or pair.ci95 is None:
        return None, "undefined: no pair bootstrap interval to widen"
    # An annotation's effect depends only on its unit's counts and its own: compute it once per
    # distinct (unit pattern, own counts) kind, then count the kinds per annotator.
    _, _, unit_kind = grouped_units(counts)
    own = np.asarray(own, dtype=np.int64)
    base = int(own.max(initial=0)) + 1
    own_code = own @ (base ** np.arange(own.shape[1], dtype=np.int64))
    key = unit_kind[panel.unit] * int(own_code.max(initial=0) + 1) + own_code
    _, first, kind = np.unique(key, return_index=True, return_inverse=True)
    kind = kind.ravel()
    rows = counts[panel.unit[first]]
    delta = statistic.features(rows) - statistic.features(rows - own[first])
    total = statistic.features(counts).sum(axis=0)
    n_kinds = len(first)
    removed = (
        _removed_by_kind(panel, kind, delta)
        if n_kinds * panel.n_annotators <= kind.size
        else _removed_by_row(panel, delta[kind])
    )

    answered = (
        answered_share(panel.n_annotators, unit=panel.unit, codes=panel.annotator)
        if statistic.majority
        else 0.0
    )
    draws = annotator_draws(panel.n_annotators, share=answered) if answered > 0 else None
    bootstrap = (
        annotator_bootstrap(statistic, counts, own, unit=panel.unit, draws=draws, memo=panel.memo)
        if draws is not None
        else None
    )

    def jackknife(codes: np.ndarray) -> float:
        left_out = statistic.finish(total[None, :] - removed(codes))
        return _jackknife_variance(left_out) if np.isfinite(left_out).all() else np.nan

    def variance(codes: np.ndarray) -> float:
        boot = bootstrap(codes) if bootstrap is not None else np.nan
        if not np.isfinite(boot):
            return jackknife(codes)
        if answered == 1:
            return boot
        # Where stand-ins rarely answered the same pairs (a large pool, few annotators a
        # pair) the bootstrap leaves most annotations out and says little: the jackknife
        # takes the share of re-labellings that found no answer.
        return answered * boot + (1 - answered) * jackknife(codes)

    observed = variance(panel.annotator)
    if not np.isfinite(observed):
        return None, "undefined: the statistic is undefined without some annotator"
    # The floor is the MEAN of the shuffled jackknife variances: the jackknife's expected
    # pair-noise part (the EMS step of a two-way random-effects ANOVA, E[MS_a] = sigma_e^2 +
    # n sigma_a^2, where MS_e is subtracted). The median used before sat at 0.69 of the mean
    # with three annotators, so "observed - floor" came out positive on average even for
    # annotators who do not differ (percent agreement, alike 100 x 3: +0.65e-3, half the
    # pairs' variance).
    floor = float(np.nanmean([variance(codes) for codes in panel.shuffled]))
    effects = annotator_effects(panel, panel.traits_for(own))
    main_effects = 1.0 if effects is None else effects.ratio()
    component = annotator_component(
        observed=observed,
        floor=floor,
        annotators=panel.n_annotators,
        main_effects=main_effects,
        grows_with_spread=statistic.majority,
    )
    if not statistic.majority:
        spread, chance = lean_variances(statistic, own, panel=panel, effects=effects)
        component = annotator_part(
            component,
            observed=observed,
            floor=floor,
            annotators=panel.n_annotators,
            main_effects=main_effects,
            lean_spread=spread.variance,
            chance_spread=chance.variance,
            even_share=spread.even,
        )
    ci, note = combined_interval(point, pair.ci95, annotator_variance=component, bounds=bounds)
    if note is None:
        note = _component_note(below_floor=observed <= floor, leaning=main_effects > 1)
    return ci, note


def _removed_by_kind(
    panel: Panel, kind: np.ndarray, delta: np.ndarray
) -> Callable[[np.ndarray], np.ndarray]:
    """Each annotator's summed feature change from leaving it out, when annotations fall into
    few kinds: count each annotator's kinds, then one small product."""
    n_kinds = len(delta)

    def removed(codes: np.ndarray) -> np.ndarray:
        per_annotator = np.bincount(
            codes * n_kinds + kind, minlength=panel.n_annotators * n_kinds
        ).reshape(panel.n_annotators, n_kinds)
        return np.asarray(per_annotator @ delta)

    return removed


def _removed_by_row(panel: Panel, rows: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The same from one row of feature change per annotation (many kinds)."""
    return lambda codes: panel.group_sum(codes, rows)


# Up to this many ordered draws of K annotators from K (K^K: 27 with three, 256 with four)
# the bootstrap over annotators enumerates them all (exact); above, RANDOM_DRAWS at random,
# fewer when the bootstrap gets a small share (annotator_draws); the floor averages the same
# draws over the shuffles.
EXACT_DRAWS = 300
RANDOM_DRAWS = 200
MIN_DRAWS = 20
# Up to this many possible count rows of a unit the bootstrap over annotators computes each
# row's features once (a table) instead of once per unit and draw.
MAX_PATTERNS = 2**16


def annotator_draws(annotators: int, *, share: float = 1.0) -> np.ndarray:
    """Draws x K: which annotator stands in for each annotator in each bootstrap draw (with
    replacement); every ordered draw when there are at most EXACT_DRAWS, otherwise random
    ones (seeded by K, so the same for every statistic and shuffle): RANDOM_DRAWS times
    ``share``, the weight the bootstrap gets (:func:`answered_share`), and at least
    MIN_DRAWS. Why fewer with a small share: its Monte Carlo noise enters the blend times
    the share squared, while each draw costs time (a report of 100,000 annotations from a
    pool of 40 took 10.9 s with 200 draws in a first version, 3.0 s with the jackknife)."""
    k = annotators
    if k**k <= EXACT_DRAWS:
        grid = np.meshgrid(*[np.arange(k)] * k, indexing="ij")
        return np.stack(grid).reshape(k, -1).T
    rng = np.random.Generator(np.random.PCG64([k, 2]))
    count = max(MIN_DRAWS, int(np.ceil(RANDOM_DRAWS * share)))
    return rng.integers(0, k, size=(RANDOM_DRAWS, k))[:count]


def annotator_bootstrap(
    statistic: SumStatistic,
    counts: np.ndarray,
    own: np.ndarray,
    *,
    unit: np.ndarray,
    draws: np.ndarray,
    memo: dict[tuple[str, bytes], Any] | None = None,
) -> Callable[[np.ndarray], float]:
    """Bootstrap variance over annotators of a majority-type statistic, times K / (K - 1).

    A draw names, for each of the K annotators, the annotator whose answers take its place
    (with replacement); every annotation is re-labelled with its stand-in's answer on the
    same unit, so a unit keeps its number of annotations and a majority of three stays a
    majority of three (with a panel of three who all rate every pair, the 27 ordered
    draws are enumerated). Where the stand-in did not answer that unit, the annotation is left
    out, as the jackknife leaves an annotator out. K / (K - 1) is the usual bias correction of
    a bootstrap variance over K. An annotator drawn twice agrees with its copy, which moves
    such draws towards a single annotator's answers; with the labels shuffled within pairs
    the same happens, so the noise floor (this bootstrap on the panel's shuffles) takes that
    shift out. The returned function takes each annotation's annotator (the panel's or a
    shuffle's codes; what does not depend on them is prepared once); one answer per annotator
    and unit is assumed (an annotator with two counts both when it stands in). With ``memo``
    (a panel's, :func:`analysis.agreement.panel.remembered`) the re-labelled units are kept
    for the next majority statistic on the same answers (label agreement and label confirmed
    share them).

    Against the annotators' variance over panels (docs/intervals.md), its excess over the
    floor was 1.14 of it for the benchmark's panel of three at 100 pairs (the jackknife's
    0.62) and, blended with the jackknife where stand-ins had no answer, 0.82 with a pool of
    six (0.73); it measures more (1.46) where few pairs split, because a draw with a
    duplicate moves with that annotator's answers on every pair, a majority of three only on
    the pairs whose other two answers split: it errs wide where the jackknife errs narrow.
    """
    k = draws.shape[1]
    n_units, width = counts.shape
    vote = np.asarray(own).argmax(axis=1)
    # A unit's re-labelled counts as one mixed-radix code (digit c: answers c), built by
    # adding base**answer per re-labelled annotation.
    sizes = np.bincount(unit, minlength=n_units)
    base = int(sizes.max(initial=0)) + 1
    n_codes = base**width
    table = n_codes <= MAX_PATTERNS
    pattern_features = np.zeros((0, 0))
    if table:
        patterns = (np.arange(n_codes)[:, None] // base ** np.arange(width)) % base
        pattern_features = statistic.features(patterns).astype(np.float64)
    # Every ordered pair (r, s) of annotations on one unit: when s's annotator stands in for
    # r's, s's answer is r's re-labelled answer. Grouped by (r's annotator, s's annotator), a
    # draw needs K groups, so its work is the annotations that find an answer, not all of them.
    order = np.argsort(unit, kind="stable")
    group_size = sizes[unit[order]]
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    left = np.repeat(order, group_size)
    within = np.arange(left.size) - np.repeat(np.cumsum(group_size) - group_size, group_size)
    right = order[first[unit[left]] + within]
    pair_unit = unit[left]
    pair_digit = float(base) ** vote[right]
    per_draw = max(left.size // max(k, 1), n_units, 1)
    rows = max(1, BATCH_CELLS // per_draw)
    group_type = np.uint16 if k * k < 2**16 else np.int64

    def relabelled(codes: np.ndarray) -> list[np.ndarray]:
        """Per chunk of draws, each unit's re-labelled counts (a mixed-radix code, chunk x
        units), or with the table how many units have each code (chunk x codes)."""
        group = (codes[left] * k + codes[right]).astype(group_type)
        by_group = np.argsort(group, kind="stable")
        entry_unit, entry_digit = pair_unit[by_group], pair_digit[by_group]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=k * k))])
        out = []
        for start in range(0, len(draws), rows):
            chunk = draws[start : start + rows]
            keys = (np.arange(k)[None, :] * k + chunk).ravel()
            lengths = bounds[keys + 1] - bounds[keys]
            skip = np.repeat(bounds[keys] - (np.cumsum(lengths) - lengths), lengths)
            take = np.arange(int(lengths.sum())) + skip
            draw_of = np.repeat(np.arange(len(chunk)), lengths.reshape(len(chunk), k).sum(axis=1))
            code = np.bincount(
                draw_of * n_units + entry_unit[take],
                weights=entry_digit[take],
                minlength=len(chunk) * n_units,
            ).astype(np.int64)
            if table:
                which = np.arange(len(chunk)).repeat(n_units) * n_codes + code
                out.append(
                    np.bincount(which, minlength=len(chunk) * n_codes).reshape(len(chunk), n_codes)
                )
            else:
                out.append(code.reshape(len(chunk), n_units))
        return out

    # What the re-labellings depend on besides the codes. With the table they are small
    # histograms that no statistic enters, remembered for the next one on the same answers.
    relabel_key = content_key(unit, vote, draws) if table and memo is not None else None

    def variance(codes: np.ndarray) -> float:
        if relabel_key is not None and memo is not None:
            key = ("relabelled", relabel_key + content_key(codes))
            chunks = remembered(memo, key, lambda: relabelled(codes))
        else:
            chunks = relabelled(codes)
        values = []
        for chunk in chunks:
            if table:
                sums = chunk @ pattern_features
            else:
                resampled = (chunk.reshape(-1, 1) // base ** np.arange(width)) % base
                sums = statistic.features(resampled).reshape(len(chunk), n_units, -1).sum(axis=1)
            values.append(statistic.finish(sums))
        value = np.concatenate(values)
        if not np.isfinite(value).all():
            return np.nan
        return float(k / (k - 1) * value.var())

    return variance


def answered_share(annotators: int, *, unit: np.ndarray, codes: np.ndarray) -> float:
    """Expected share of the bootstrap's re-labellings whose stand-in answered the same unit:
    an annotation's stand-in is any of the K annotators, so it is the mean over annotations of
    (annotators who rated its unit) / K. 1 when every annotator rated every unit, about
    (annotations a unit) / K in a large pool; the same for every within-pair shuffle."""
    n_units = int(unit.max(initial=-1)) + 1
    rated = np.zeros((annotators, n_units), dtype=bool)
    rated[codes, unit] = True
    raters = rated.sum(axis=0)
    return float(raters[unit].mean() / annotators) if unit.size else 0.0


def _component_note(*, below_floor: bool, leaning: bool) -> str | None:
    """Why the annotators' part is small, when it is (None when it is not)."""
    if below_floor and leaning:
        return (
            "annotators differ no more than pair-to-pair noise explains; their own annotations "
            "show a lean beyond chance, so the interval keeps a part for them"
        )
    if below_floor:
        return (
            "annotators differ no more than pair-to-pair noise explains, nor do their own "
            "annotations show a lean beyond chance: this is the pairs' interval"
        )
    if not leaning:
        return (
            "the annotators' own annotations show no lean beyond chance: this is the pairs' "
            "interval"
        )
    return None


def main_effect_weight(main_effects: float) -> float:
    """``1 - exp(-max(0, H / H0 - 1))``: 0 at or below chance, rising smoothly to 1 (1 when
    unknown); the weight of :func:`annotator_component`."""
    if not np.isfinite(main_effects):
        return 1.0
    return float(-np.expm1(-max(main_effects - 1.0, 0.0)))


def annotator_component(
    *,
    observed: float,
    floor: float,
    annotators: int,
    main_effects: float,
    grows_with_spread: bool = False,
) -> float:
    """The annotators' variance component: the jackknife's excess ``observed - floor`` through
    a smooth positive part, weighted by the evidence that the annotators differ at all.

    ``observed`` is the jackknife variance over annotators, ``floor`` its expected value when
    annotators do not differ (the mean over within-pair shuffles). ``observed - floor`` is the
    unbiased estimate (two-way random-effects ANOVA, generalizability theory's ``(MS_a -
    MS_e) / n``), but with three annotators it has two degrees of freedom: its positive part
    is 0 in about 63% of studies of annotators who differ not at all and still in about half
    of those of a panel that does (sd 0.7), so it cannot tell the two apart.

    ``main_effects`` (:func:`main_effect_ratio`, ``H / H0``) can: ``snr = max(0, H / H0 - 1)``
    is the annotators' main-effect variance over its own sampling noise (median 0 for alike
    annotators; for the benchmark's panel of three at 100 pairs about 3 in the labels and 8 in
    the ratings), and the weight ``1 - exp(-snr)`` rises smoothly from 0 (no sign of lasting
    differences) to 1. The jackknife excess is smoothed at ``s = (floor + observed) * sqrt(2 /
    (annotators - 1))``, the standard deviation of a chi-square variance with annotators - 1
    degrees of freedom, taken at the noise floor plus the observed value:
    ``s * log(1 + exp((observed - floor) / s))``. At the floor that is ``s * log 2``; far above
    it the scale follows ``observed``, so the component tends to ``ln(1 + e) = 1.31`` times
    the excess with three annotators (1.12 with six, 1 with many): a few-degrees-of-freedom
    allowance, like a t quantile, that keeps a panel that differs covered when its jackknife
    happens to fall low. The component is ``weight * that``: no test, no switch, and alike
    annotators keep about the pairs' own interval. The two choices (the weight's unit scale and
    the scale's ``floor + observed``) were made on ``benchmarks/bench_coverage.py``
    (docs/intervals.md): ``floor`` alone as the scale left the panel's AC1 and neutral alpha at
    91-93%. A non-finite floor leaves ``weight * observed``.

    ``grows_with_spread`` (majorities, whose part is the bootstrap over annotators) takes the
    weight to ``MAJORITY_WEIGHT_POWER`` and multiplies it by :func:`spread_growth`.
    """
    weight = main_effect_weight(main_effects)
    if grows_with_spread:
        weight = weight**MAJORITY_WEIGHT_POWER * spread_growth(main_effects)
    if not np.isfinite(floor):
        return weight * observed
    return weight * smooth_positive(
        observed - floor, variance=floor + observed, annotators=annotators
    )


def smooth_positive(excess: float, *, variance: float, annotators: int) -> float:
    """``s log(1 + exp(excess / s))`` with ``s = variance * sqrt(2 / (annotators - 1))``, the
    standard deviation of a chi-square variance estimate with annotators - 1 degrees of
    freedom; ``max(excess, 0)`` when ``s`` is 0. The smooth positive part both annotators'
    parts go through (:func:`annotator_component`, :func:`annotator_part`)."""
    scale = variance * np.sqrt(2.0 / max(annotators - 1, 1))
    if scale <= 0:
        return max(excess, 0.0)
    return float(scale * np.logaddexp(0.0, excess / scale))


def annotator_part(
    jackknife_part: float,
    *,
    observed: float,
    floor: float,
    annotators: int,
    main_effects: float,
    lean_spread: float,
    chance_spread: float,
    even_share: float,
) -> float:
    """The annotators' variance component of a statistic that is not a majority: the larger
    of the part the main effects imply through the statistic and the jackknife's part where
    the jackknife itself stands far above its floor.

    ``lean_spread`` is the statistic's variance over panels of leans the size of the
    annotators' main effects beyond chance, ``chance_spread`` the same with chance-sized
    leans (:func:`analysis.agreement.lean_spread.lean_variances`). The main effects' part is
    ``weight * LEAN_GAIN * s * log(1 + exp(lean_spread / s))`` with ``s = (lean_spread +
    chance_spread) * sqrt(2 / (annotators - 1))``: the same smooth positive part and weight
    as :func:`annotator_component`, and LEAN_GAIN because a few annotators' leans are a small
    sample of leans in general (with three, a chi-square of two degrees of freedom). The
    jackknife's part (``jackknife_part``, :func:`annotator_component`) counts times ``1 -
    exp(-excess / (JACKKNIFE_EVIDENCE * floor))``: where a statistic's annotators' part comes
    from something main effects do not show (quality alpha with a few annotators who differ
    lies below its population value, a bias only the jackknife's excess sees), the jackknife
    stands many floors above its floor; near it, it is noise (sd 3.8 times the pairs'
    variance for alpha with a panel of three at 100 pairs, docs/intervals.md). The
    jackknife's part is first divided by ``1 + even_share / (k - 2)`` for ``k`` annotators:
    the part of a statistic that moves with the spread of the leans (``even_share`` of the
    lean spread, :class:`analysis.agreement.lean_spread.LeanSpread`) behaves like the leans' sample
    variance, whose leave-one-out jackknife over k values is ``(k - 1) / (k - 2)`` times its
    variance (its pairwise part, 1/k of it, counted ``2 (k - 1) / (k - 2)`` times: the
    Efron-Stein bias; 2.00, 1.32 and 1.25 simulated for k = 3, 5, 6), while the part that
    moves with their direction is counted once. Not finite ``lean_spread`` (no unit with two
    annotations, or the statistic undefined in most panels): the jackknife's part as it is.
    """
    if not np.isfinite(lean_spread):
        return jackknife_part
    if annotators > 2 and np.isfinite(even_share):
        jackknife_part /= 1 + even_share / (annotators - 2)
    from_leans = (
        main_effect_weight(main_effects)
        * LEAN_GAIN
        * smooth_positive(
            lean_spread, variance=lean_spread + max(chance_spread, 0.0), annotators=annotators
        )
    )
    if floor > 0 and np.isfinite(floor):
        evidence = float(-np.expm1(-max(observed - floor, 0.0) / (JACKKNIFE_EVIDENCE * floor)))
    else:
        evidence = 1.0
    return float(max(from_leans, evidence * jackknife_part))


def spread_growth(main_effects: float) -> float:
    """``1 + (MAJORITY_GROWTH - 1) * min(max(S - 1, 0), SPREAD_GROWTH_SPAN) /
    SPREAD_GROWTH_SPAN`` for ``S = H / H0``: 1 up to chance, rising linearly to
    ``MAJORITY_GROWTH`` (3) at ``S = 1 + SPREAD_GROWTH_SPAN`` (unknown: 3).

    Why: with three annotators a majority's annotators' part (the bootstrap over annotators)
    rests on two degrees of freedom, and a panel whose three leans lie far apart shows it in
    its main effects. The best rule the stylized bound finds (``benchmarks/coverage_bound.py``,
    docs/intervals.md) gives no annotators' part near chance and a width that rises steeply
    with ``S``; this is that shape, cut at three times the component (twice before label
    agreement's pairs' part became the shorter mid-p interval). Only for majorities, because on
    the cells that is where it helps without pushing another row out of the band; the numbers
    for both are in docs/intervals.md and the README's coverage table.
    """
    if not np.isfinite(main_effects):
        return MAJORITY_GROWTH
    rise = min(max(main_effects - 1.0, 0.0), SPREAD_GROWTH_SPAN) / SPREAD_GROWTH_SPAN
    return 1.0 + (MAJORITY_GROWTH - 1.0) * rise


def combined_interval(
    point: float,
    pair_ci: tuple[float, float],
    *,
    annotator_variance: float,
    bounds: tuple[float | None, float | None],
) -> tuple[tuple[float, float], str | None]:
    """The pair interval widened by the annotators' variance component (module docstring).

    Each side of the pair interval gives the pairs' variance on that side, ``(half / z)^2``
    (a lopsided BCa interval stays lopsided); the annotators' component is added to it and the
    side is ``z * sqrt(sum)``. Why z and not a t quantile with Welch-Satterthwaite degrees of
    freedom: the smoothed component already carries the annotators' uncertainty (it never
    falls to 0), and on the benchmark's cells a Satterthwaite t on top made the interval with
    alike annotators 1.3-2.5x the oracle width at 99-100% coverage while lifting no panel of
    three who differ but quality alpha's (92.7 to 94.0%).
    """
    sides = []
    for bound, sign in ((pair_ci[0], -1.0), (pair_ci[1], 1.0)):
        pairs_variance = ((point - bound) / Z975) ** 2
        sides.append(point + sign * Z975 * np.sqrt(pairs_variance + annotator_variance))
    # the pairs' interval stays inside, also against round-off when the component is 0
    lo, hi = min(sides[0], pair_ci[0]), max(sides[1], pair_ci[1])
    # the point itself stays inside (alpha of a handful of units can dip just below -1)
    if bounds[0] is not None:
        lo = max(lo, min(bounds[0], point))
    if bounds[1] is not None:
        hi = min(hi, max(bounds[1], point))
    return (float(lo), float(hi)), (ZERO_WIDTH if lo == hi else None)
