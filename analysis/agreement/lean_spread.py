"""How much a statistic moves with the annotators' lasting leans: its variance over panels of
leans the size of the observed main effects, with the statistic at its exact expectation over
the labels (no pair noise). :func:`analysis.agreement.intervals.annotator_interval` reads the
annotators' part of ``ci95_annotators`` from it.

Why: with three annotators the jackknife over annotators cannot tell which statistic the
leans move. Alpha and percent agreement see the same labels, the same main effects and an
equally noisy jackknife, while their annotators' parts differ fivefold against their pairs'
variance (0.19 and 0.94 times it with the coverage benchmark's panel of three at 100 pairs:
alpha, agreement beyond what the pooled labels make likely, moves little with a lean every
pair shares). The main effects are measured far more precisely than the jackknife (an
annotator's own marginal over ~100 pairs), and passing leans of their size through the
statistic says how much this statistic moves with them (docs/intervals.md).

The world the leans act on: each annotation's label distribution is its unit's other
annotations' labels shrunk towards the labels' overall mean, by as much as makes the
statistic at no lean equal its observed value (:func:`calibrated`), and a lean moves it in
log-odds (:func:`statistic_at_leans`), so that a unit whose labels are near certain moves
little. Leans added to the other annotations' raw labels and cut to [0, 1] read the
statistic's annotators' part in proportions that differ by statistic (given the true spread
of leans, 0.53-0.63 of it for percent agreement, AC1 and neutral alpha, 1.01 for alpha and
0.28 for quality alpha with the benchmark's panel of three); this world reads them within
0.65-1.39 (docs/intervals.md).

The one rule for what a statistic is stays its ``SumStatistic.features``:
:func:`expected_features` takes the exact expectation of those features over independent
labels from its second-order form (every non-majority statistic here has features that are
quadratic in a unit's counts at a fixed number of annotations), checked against enumerating
every labelling in ``tests/test_lean_spread.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from analysis.agreement.panel import MainEffects, Panel, SumStatistic
from analysis.rows import across

# Panels of leans drawn for one variance: its relative standard error is about sqrt(2 / draws),
# 0.14 at 100, well under the spread of the jackknife it stands next to.
LEAN_DRAWS = 100
# Above this many units the panels of leans use a random sample of them (LeanLayout.of). The
# coverage benchmark's studies have at most 100, so its table does not depend on it.
MAX_LEAN_UNITS = 200
# Counts are rounded to this dyadic grid so that a unit's number of annotations in a part (a
# row sum, which a statistic's features compare with 1 and 2) stays exact.
_GRID = 2.0**30
# Unit rows (units x parts, over the panels of a batch) handled at once: memory is about this
# times (V - 1)^2 + the number of features floats.
_BATCH_ROWS = 200_000


def _on_grid(values: NDArray[np.float64], totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """``values`` (... x V) rounded to the dyadic grid with each row summing exactly to
    ``totals`` (...): the rounding's remainder goes to the row's largest entry."""
    rounded = np.round(values * _GRID) / _GRID
    largest = np.abs(rounded).argmax(axis=-1)[..., None]
    remainder = totals - rounded.sum(axis=-1)
    np.put_along_axis(
        rounded, largest, np.take_along_axis(rounded, largest, -1) + remainder[..., None], -1
    )
    return rounded


def expected_features(
    statistic: SumStatistic,
    probabilities: NDArray[np.float64],
    *,
    unit: NDArray[np.int64],
    n_units: int,
    parts: int,
) -> NDArray[np.float64]:
    """Each unit's features in expectation over labels drawn independently, annotation ``r``'s
    from ``probabilities[r]`` (annotations x parts*V: in each part a distribution, or zeros
    where the annotation gave no label there).

    A unit's counts ``n`` in a part have mean ``S = sum_r p_r`` and covariance ``diag(S) -
    sum_r p_r p_r^T`` (independent parts). Features quadratic in ``n`` at fixed part totals
    have a constant Hessian ``H`` there, so ``E f(n) = f(S) + tr(H Cov) / 2`` exactly. The
    covariance's rows sum to 0, so ``tr(H Cov) = sum_ab G_ab C_ab`` over the first V - 1
    columns, ``C`` the covariance there and ``G_ab = d_a^T H d_b`` the Hessian along ``d_a =
    e_a - e_V``, which keeps the part's total (:func:`_hessians`).
    """
    indicator = _unit_indicator(unit, n_units)
    return np.asarray(
        _expected_features(statistic, probabilities[..., None], indicator=indicator, parts=parts)[0]
    )


def _unit_indicator(unit: NDArray[np.int64], n_units: int) -> sparse.csr_matrix:
    """units x annotations, 1 where the annotation belongs to the unit."""
    n = len(unit)
    return sparse.csr_matrix((np.ones(n), (unit, np.arange(n))), shape=(n_units, n))


# The step of the second differences that read a Hessian: small enough that every evaluated
# count stays positive (a part's counts start at total / V each), dyadic so that part totals
# stay exact.
_STEP = 2.0**-8


def _hessians(
    statistic: SumStatistic, totals: NDArray[np.float64], *, width: int
) -> NDArray[np.float64]:
    """K x parts x (V-1) x (V-1) x F: for each row of part totals, ``G_ab = d_a^T H d_b`` in
    each part, read by second differences (exact for a quadratic) around counts of
    ``total / V`` in every column."""
    k, parts = totals.shape
    centre = _on_grid(np.repeat(totals[:, :, None] / width, width, axis=2), totals)
    directions = np.zeros((width - 1, width))
    directions[:, : width - 1] = np.eye(width - 1)
    directions[:, -1] = -1.0
    directions *= _STEP
    # per part: the centre, then +-d_a, then the four corners of every pair (a, b), a < b
    steps = [np.zeros(width)]
    for a in range(width - 1):
        steps += [directions[a], -directions[a]]
    pairs = list(itertools.combinations(range(width - 1), 2))
    for a, b in pairs:
        for sa, sb in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            steps.append(sa * directions[a] + sb * directions[b])
    # K x the part moved x steps x parts x V
    moved = np.broadcast_to(centre[:, None, None], (k, parts, len(steps), parts, width)).copy()
    for part in range(parts):
        moved[:, part, :, part] += np.asarray(steps)
    values = statistic.features(moved.reshape(-1, parts * width))
    values = values.reshape(k, parts, len(steps), -1)
    at_centre = values[:, :, 0]
    out = np.zeros((k, parts, width - 1, width - 1, values.shape[-1]))
    for a in range(width - 1):
        plus, minus = values[:, :, 1 + 2 * a], values[:, :, 2 + 2 * a]
        out[:, :, a, a] = (plus + minus - 2 * at_centre) / _STEP**2
    first = 1 + 2 * (width - 1)
    for index, (a, b) in enumerate(pairs):
        pp, pm, mp, mm = (values[:, :, first + 4 * index + j] for j in range(4))
        out[:, :, a, b] = out[:, :, b, a] = (pp - pm - mp + mm) / (4 * _STEP**2)
    return out


def _upper(width: int) -> list[tuple[int, int]]:
    """The pairs a <= b of a part's first V - 1 columns: the covariance there is symmetric."""
    return [(a, b) for a in range(width - 1) for b in range(a, width - 1)]


def _upper_hessians(
    statistic: SumStatistic, totals: NDArray[np.float64], *, width: int
) -> NDArray[np.float64]:
    """K x (parts * pairs) x F: :func:`_hessians` at the pairs of :func:`_upper`, an
    off-diagonal one twice (it stands for ``G_ab C_ab + G_ba C_ba``)."""
    hessians = _hessians(statistic, totals, width=width)
    upper = np.stack(
        [hessians[:, :, a, b] * (1.0 if a == b else 2.0) for a, b in _upper(width)], axis=2
    )
    return upper.reshape(len(totals), -1, hessians.shape[-1])


def _expected_features(
    statistic: SumStatistic,
    probabilities: NDArray[np.float64],
    *,
    indicator: sparse.csr_matrix,
    parts: int,
) -> NDArray[np.float64]:
    """:func:`expected_features` for a batch of B panels, laid out annotations x parts*V x B
    (panels last: each operation on a part's few label values then runs over long
    contiguous rows, ten times faster than over a short last axis); the result B x units x
    F."""
    n, d, batch = probabilities.shape
    width = d // parts
    n_units = indicator.shape[0]
    p = probabilities.reshape(n, parts, width, batch)
    mean = (indicator @ p.reshape(n, -1)).reshape(n_units, parts, width, batch)
    pairs = _upper(width)
    squares = np.empty((n, parts, len(pairs), batch))
    for k, (a, b) in enumerate(pairs):
        np.multiply(p[:, :, a], p[:, :, b], out=squares[:, :, k])
    # units x parts x pairs x B: diag(S) - sum_r p_r p_r^T at the pairs
    covariance = -(indicator @ squares.reshape(n, -1)).reshape(n_units, parts, len(pairs), batch)
    for k, (a, b) in enumerate(pairs):
        if a == b:
            covariance[:, :, k] += mean[:, :, a]
    rows = np.moveaxis(mean, 3, 1)  # units x B x parts x V
    totals = np.round(across(np.add, rows))
    at_mean = statistic.features(_on_grid(rows, totals).reshape(-1, d))
    at_mean = at_mean.reshape(n_units, batch, -1)
    # the part totals are the same in every batch row: one Hessian per distinct row of them
    kinds, kind = np.unique(totals[:, 0], axis=0, return_inverse=True)
    hessians = _upper_hessians(statistic, kinds, width=width)[kind.ravel()]
    curvature = np.moveaxis(covariance.reshape(n_units, -1, batch), 2, 1) @ hessians
    return np.moveaxis(at_mean + curvature / 2, 0, 1)


def lean_covariances(
    effects: MainEffects, *, unit: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The annotators' lean covariance beyond chance and the chance-sized one (d x d, in the
    traits' columns): the mean over annotators of ``e_i e_i^T`` (``e_i`` an annotator's main
    effect, :class:`analysis.agreement.panel.MainEffects`) minus its mean over the within-pair
    shuffles, and that mean; both times ``m / (m - 1)`` (``m`` the number of annotations on an
    annotation's unit, averaged over the annotations on units with two or more; ``unit``: each
    annotation's), because residuals from a unit's mean shrink a lean by ``(m - 1) / m``."""

    def moment(mean: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(mean.T @ mean / len(mean))

    size = np.bincount(unit)[unit].astype(np.float64)
    m = float(size[size >= 2].mean())
    shrink = m / (m - 1)
    chance = np.mean([moment(mean) for mean, _ in effects.shuffled], axis=0)
    return (moment(effects.observed[0]) - chance) * shrink, chance * shrink


@dataclass(frozen=True)
class LeanLayout:
    """What every panel of leans starts from, prepared once per statistic: each annotation's
    unit (numbered 0..units-1 over the units kept) and annotator, whether it gave a label in
    each part, ``columns[r, c]`` (the trait column that the statistic's column ``c`` shows for
    ``r``), the traits its unit's other annotations gave (summed, and how many), the traits'
    mean over every answered annotation, and the kept units' counts in the statistic's
    columns, and the shrinkage of the bases (1 from :meth:`of`, another from :meth:`shrunk`).
    Derived from them: ``base``, each annotation's label distribution before any lean
    (traits' columns, :func:`shrunk_bases`), and ``to_logit``, which maps a lean in
    probability space to the log-odds lean with that effect on average over the annotations
    (:func:`logit_map`)."""

    unit: NDArray[np.int64]
    annotator: NDArray[np.int64]
    n_annotators: int
    answered: NDArray[np.bool_]
    columns: NDArray[np.int64]
    parts: int
    others_sum: NDArray[np.float64]
    others: NDArray[np.float64]
    grand: NDArray[np.float64]
    counts: NDArray[np.int64]
    shrink: float = 1.0

    @classmethod
    def of(
        cls,
        *,
        panel: Panel,
        traits: NDArray[np.float64],
        own: NDArray[np.int64],
        columns: NDArray[np.int64],
        parts: int,
        rng: np.random.Generator,
    ) -> LeanLayout:
        """The layout at a shrinkage of 1 (:func:`shrunk_bases`). Above MAX_LEAN_UNITS units, a
        random MAX_LEAN_UNITS of them (with all their annotations): how much a statistic
        moves with leans every unit shares does not depend on the number of units (on 200 of
        600 units it was within the Monte Carlo noise of all 600, tests/test_lean_spread.py),
        while each panel costs time in proportion to its annotations (a report of 100,000
        annotations: 4.3x the CPU time of a bare script without the lean spread, 5.4x with it
        on 400 units, 4.5-4.8x on 200, in one session: benchmarks/bench_report.py)."""
        n_units = int(panel.unit.max(initial=-1)) + 1
        kept = np.ones(len(panel.unit), dtype=bool)
        if n_units > MAX_LEAN_UNITS:
            chosen = np.zeros(n_units, dtype=bool)
            chosen[rng.choice(n_units, size=MAX_LEAN_UNITS, replace=False)] = True
            kept = chosen[panel.unit]
        _, unit = np.unique(panel.unit[kept], return_inverse=True)
        unit = unit.ravel()
        n, d = int(kept.sum()), traits.shape[1]
        width = d // parts
        own = np.asarray(own)[kept]
        answered = own.reshape(n, parts, -1).sum(axis=-1) > 0
        grouped = traits[kept].reshape(n, parts, width) * answered[..., None]
        n_kept = int(unit.max(initial=-1)) + 1
        indicator = _unit_indicator(unit, n_kept)
        sums = (indicator @ grouped.reshape(n, d)).reshape(n_kept, parts, width)
        others_sum = sums[unit] - grouped
        others = (indicator @ answered.astype(np.float64))[unit] - answered
        grand = grouped.sum(axis=0) / np.maximum(answered.sum(axis=0), 1)[:, None]
        return cls(
            unit=unit,
            annotator=panel.annotator[kept],
            n_annotators=panel.n_annotators,
            answered=answered,
            columns=columns[kept],
            parts=parts,
            others_sum=others_sum,
            others=others,
            grand=grand,
            counts=np.asarray(indicator @ own, dtype=np.int64),
        )

    @cached_property
    def base(self) -> NDArray[np.float64]:
        """annotations x (parts * V): each annotation's base at this layout's shrinkage."""
        return self.bases(self.shrink).reshape(len(self.unit), -1)

    @cached_property
    def log_base(self) -> NDArray[np.float64]:
        """annotations x parts x V: the log of ``base`` (:func:`leaned_distributions`), once
        for every panel of leans."""
        return _log_base(self.base.reshape(len(self.unit), self.parts, -1))

    @cached_property
    def to_logit(self) -> NDArray[np.float64]:
        """parts x V x V (:func:`logit_map`) at this layout's shrinkage."""
        return logit_map(self.bases(self.shrink), answered=self.answered)

    @cached_property
    def gathers(self) -> bool:
        """Whether ``columns`` reorders any annotation's columns (for most statistics it is the
        identity, and gathering by it cost about 25 ms a statistic in a report of 100,000
        annotations)."""
        return not np.array_equal(
            self.columns, np.broadcast_to(np.arange(self.columns.shape[1]), self.columns.shape)
        )

    def bases(self, shrink: float) -> NDArray[np.float64]:
        """Each annotation's base at ``shrink`` (:func:`shrunk_bases`)."""
        return shrunk_bases(self.others_sum, self.others, self.grand, shrink=shrink)

    def shrunk(self, shrink: float) -> LeanLayout:
        """The layout with the bases at ``shrink``."""
        return replace(self, shrink=shrink)


def shrunk_bases(
    others_sum: NDArray[np.float64],
    others: NDArray[np.float64],
    grand: NDArray[np.float64],
    *,
    shrink: float,
) -> NDArray[np.float64]:
    """Each annotation's base (annotations x parts x V): its unit's other annotations' mean
    traits shrunk towards their mean over all annotations, ``(others' sum + shrink * mean) /
    (others + shrink)`` (the mean where it is alone on its unit)."""
    return np.asarray((others_sum + shrink * grand) / (others[..., None] + shrink))


def logit_map(base: NDArray[np.float64], *, answered: NDArray[np.bool_]) -> NDArray[np.float64]:
    """parts x V x V: per part, the pseudo-inverse of the softmax's Jacobian ``diag(b) - b
    b^T`` averaged over the answered annotations' bases ``b`` (``base``: annotations x parts x
    V). A lean ``L`` in log-odds moves annotation ``r``'s distribution by about ``J_r L``, so
    the main effects (a lean in probability space, averaged over the annotations) are ``mean
    J`` times it."""
    parts, width = base.shape[1], base.shape[2]
    out = np.zeros((parts, width, width))
    for part in range(parts):
        rows = base[answered[:, part], part]
        if not len(rows):
            continue
        jacobian = np.diag(rows.mean(axis=0)) - rows.T @ rows / len(rows)
        out[part] = np.linalg.pinv(jacobian, rcond=1e-10, hermitian=True)
    return out


def lean_root(covariance: NDArray[np.float64]) -> NDArray[np.float64]:
    """A square root of ``covariance`` (its negative eigenvalues, round-off, taken as 0):
    standard normal draws times its transpose are leans of that covariance."""
    eigenvalues, eigenvectors = np.linalg.eigh((covariance + covariance.T) / 2)
    return np.asarray(eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None)))


def leaned_distributions(
    base: NDArray[np.float64], lean: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``softmax(log base + lean)`` in each part (... x parts x V): a column the base gives no
    weight keeps none."""
    return _softmax(_log_base(base) + lean, axis=-1)


def _log_base(base: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of the bases, -inf where a base gives a column no weight (it keeps none)."""
    positive = base > 0
    return np.where(positive, np.log(np.where(positive, base, 1.0)), -np.inf)


def _softmax(logits: NDArray[np.float64], *, axis: int) -> NDArray[np.float64]:
    """Over ``axis`` (a part's few label values), reduced column by column."""
    values = np.moveaxis(logits, axis, -1)
    weights = np.exp(values - across(np.maximum, values)[..., None])
    return np.moveaxis(weights / across(np.add, weights)[..., None], -1, axis)


def statistic_at_leans(
    statistic: SumStatistic,
    layout: LeanLayout,
    lean: NDArray[np.float64],
    *,
    indicator: sparse.csr_matrix,
) -> NDArray[np.float64]:
    """The statistic at its expectation over the labels for each panel of leans (``lean``:
    panels x annotators x d, in probability space in the traits' columns): annotation ``r``'s
    label distribution is its base moved by its annotator's lean in log-odds
    (``layout.to_logit``, :func:`leaned_distributions`), zeros where it gave no label, put in
    the statistic's columns. ``indicator``: units x annotations."""
    size = lean.shape[0]
    d = layout.base.shape[1]
    parts = layout.parts
    width = d // parts
    # annotators x parts x V x panels (panels last, as _expected_features takes them)
    logit = np.einsum("gvw,sagw->agvs", layout.to_logit, lean.reshape(size, -1, parts, width))
    leaned = _softmax(layout.log_base[..., None] + logit[layout.annotator], axis=2)
    return _statistic_at(statistic, layout, leaned, indicator=indicator)


def _statistic_at(
    statistic: SumStatistic,
    layout: LeanLayout,
    distributions: NDArray[np.float64],
    *,
    indicator: sparse.csr_matrix,
) -> NDArray[np.float64]:
    """The statistic at its expectation over labels drawn from ``distributions``
    (annotations x parts x V x panels, in the traits' columns), zeros where an annotation gave
    no label, put in the statistic's columns."""
    n, size = distributions.shape[0], distributions.shape[-1]
    p = (distributions * layout.answered[..., None, None]).reshape(n, -1, size)
    if layout.gathers:
        p = np.take_along_axis(p, np.broadcast_to(layout.columns[..., None], p.shape), axis=1)
    features = _expected_features(statistic, p, indicator=indicator, parts=layout.parts)
    return np.asarray(statistic.finish(features.sum(axis=1)))


# The shrinkage is read off the statistic at these log2 values, in one batch, and
# interpolated between the two around the observed value.
_SHRINK_GRID = np.linspace(-8.0, 8.0, 33)


def calibrated(statistic: SumStatistic, layout: LeanLayout) -> LeanLayout:
    """The layout whose bases give the statistic its observed value (on the kept units) at no
    lean. Why: the other annotations' labels themselves (no shrinkage) are a world of
    near-certain labels where agreement is far higher than observed (nominal alpha 0.33
    against 0.11 with the coverage benchmark's panel of three), and their mean for every
    annotation is one where every pair is alike (agreement at chance); how much a lean moves
    a statistic depends on where between the two the world is, differently by statistic
    (docs/intervals.md). The value falls as the shrinkage grows: it is taken at every point
    of a grid of shrinkages at once and the shrinkage interpolated (in its log) where it
    crosses the observed value; the grid's end where it does not."""
    n_units = int(layout.unit.max(initial=-1)) + 1
    indicator = _unit_indicator(layout.unit, n_units)
    target = float(statistic.finish(statistic.features(layout.counts).sum(axis=0)[None])[0])
    if not np.isfinite(target):
        return layout
    bases = np.stack([layout.bases(2.0**g) for g in _SHRINK_GRID], axis=-1)
    values = _statistic_at(statistic, layout, bases, indicator=indicator)
    if not np.isfinite(values).all():
        return layout
    above = np.flatnonzero(values > target)
    if above.size == 0:
        return layout.shrunk(2.0 ** _SHRINK_GRID[0])
    last = int(above[-1])
    if last == len(_SHRINK_GRID) - 1:
        return layout.shrunk(2.0 ** _SHRINK_GRID[-1])
    # values[last] > target >= values[last + 1]
    share = (values[last] - target) / (values[last] - values[last + 1])
    log_shrink = _SHRINK_GRID[last] + share * (_SHRINK_GRID[last + 1] - _SHRINK_GRID[last])
    return layout.shrunk(2.0**log_shrink)


@dataclass(frozen=True)
class LeanSpread:
    """A statistic's variance over panels of leans (``variance``) and the share of it that
    moves with the leans' spread rather than their direction (``even``: the part of ``f(L) +
    f(-L)``, the rest that of ``f(L) - f(-L)``)."""

    variance: float
    even: float


def spread_over_leans(
    statistic: SumStatistic,
    layout: LeanLayout,
    *,
    covariance: NDArray[np.float64],
    rng: np.random.Generator,
) -> LeanSpread:
    """The statistic's variance over LEAN_DRAWS panels of leans drawn from ``covariance``
    (every annotator a normal lean in the traits' columns; :func:`statistic_at_leans`), half
    of them the negatives of the other half, which splits it exactly into the variance of
    ``(f(L) + f(-L)) / 2`` and the mean square of ``(f(L) - f(-L)) / 2``. NaN when the
    statistic is undefined in most panels.
    """
    d = layout.base.shape[1]
    n_units = int(layout.unit.max(initial=-1)) + 1
    root = lean_root(covariance)
    indicator = _unit_indicator(layout.unit, n_units)
    pairs = LEAN_DRAWS // 2
    # leans at a time: about _BATCH_ROWS unit rows, with their negatives
    batch = max(1, min(pairs, _BATCH_ROWS // max(2 * n_units * layout.parts, 1)))
    values = []
    for start in range(0, pairs, batch):
        size = min(batch, pairs - start)
        lean = rng.standard_normal((size, layout.n_annotators, d)) @ root.T
        both = statistic_at_leans(
            statistic, layout, np.concatenate([lean, -lean]), indicator=indicator
        )
        values.append(both.reshape(2, size).T)
    drawn = np.concatenate(values)
    defined = drawn[np.isfinite(drawn).all(axis=1)]
    if 2 * len(defined) < pairs:
        return LeanSpread(float("nan"), float("nan"))
    even = float(defined.mean(axis=1).var())
    odd = float(np.mean(np.square((defined[:, 0] - defined[:, 1]) / 2)))
    total = even + odd
    return LeanSpread(total, even / total if total > 0 else 0.0)


def lean_variances(
    statistic: SumStatistic,
    own: NDArray[np.int64],
    *,
    panel: Panel,
    effects: MainEffects | None,
) -> tuple[LeanSpread, LeanSpread]:
    """``(spread, chance)``: how the statistic moves over panels of leans the size of the
    annotators' main effects beyond chance (:func:`lean_covariances`), and over panels of
    chance-sized leans (what the same measurement gives annotators who do not differ).
    ``effects`` are the main effects read from ``panel.traits_for(own)``, whose columns the
    statistic's show through ``panel.columns``. NaN when there are none (no unit with two
    annotations)."""
    traits = np.asarray(panel.traits_for(own), dtype=np.float64)
    n, d = traits.shape
    if own.shape[1] != d:
        raise ValueError(f"traits have {d} columns but the statistic's rows have {own.shape[1]}")
    if effects is None:
        return LeanSpread(float("nan"), float("nan")), LeanSpread(float("nan"), float("nan"))
    covariances = lean_covariances(effects, unit=panel.unit)
    parts = statistic.parts
    columns = panel.columns if panel.columns is not None else np.broadcast_to(np.arange(d), (n, d))
    rng = np.random.Generator(np.random.PCG64([panel.seed, 3]))
    layout = calibrated(
        statistic,
        LeanLayout.of(panel=panel, traits=traits, own=own, columns=columns, parts=parts, rng=rng),
    )
    spread, chance = (
        spread_over_leans(statistic, layout, covariance=covariance, rng=rng)
        for covariance in covariances
    )
    return spread, chance
