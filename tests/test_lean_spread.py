"""The annotators' part read from the main effects through the statistic (analysis.agreement.lean_spread):
expected features against enumerating every labelling, the spread over panels of leans against
a slow recomputation, and the rule that combines it with the jackknife (known answers)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from analysis.agreement import lean_spread
from analysis.agreement.coefficients import (
    AC1,
    PERCENT_AGREEMENT,
    alpha,
    alpha_statistic,
    neutral_coding,
    percent_agreement,
)
from analysis.agreement.intervals import JACKKNIFE_EVIDENCE, LEAN_GAIN, annotator_part
from analysis.agreement.lean_spread import (
    LeanLayout,
    calibrated,
    expected_features,
    lean_covariances,
    lean_variances,
    spread_over_leans,
)
from analysis.agreement.panel import Panel, annotator_effects


def _variances(statistic, own, *, panel):
    """lean_variances with the main effects read as annotator_interval reads them."""
    effects = annotator_effects(panel, panel.traits_for(own))
    return lean_variances(statistic, own, panel=panel, effects=effects)


STATISTICS = {
    "percent agreement": (PERCENT_AGREEMENT, 1, 3),
    "AC1": (AC1, 1, 3),
    "nominal alpha": (alpha_statistic(level="nominal", domain=[0, 1, 2]), 1, 3),
    "ordinal alpha, two parts": (alpha_statistic(level="ordinal", domain=[1, 2, 3, 4], parts=2), 2, 4),
}  # fmt: skip


def _enumerated(statistic, p, unit, n_units, parts):
    """Each unit's features averaged over every labelling of its annotations, each labelling
    weighted by its probability (a part with zero probabilities gets no label)."""
    width = p.shape[1] // parts
    out = []
    for u in range(n_units):
        rows = np.flatnonzero(unit == u)
        choices = []
        for r in rows:
            for part in range(parts):
                probabilities = p[r, part * width : (part + 1) * width]
                if probabilities.sum() == 0:
                    choices.append([(None, 1.0)])
                else:
                    choices.append([(part * width + c, q) for c, q in enumerate(probabilities)])
        expected = 0.0
        for labelling in itertools.product(*choices):
            counts = np.zeros(parts * width, dtype=np.int64)
            for column, _ in labelling:
                if column is not None:
                    counts[column] += 1
            weight = np.prod([q for _, q in labelling])
            expected = expected + weight * statistic.features(counts[None, :])[0]
        out.append(expected)
    return np.array(out)


@pytest.mark.parametrize("name", STATISTICS)
def test_expected_features_equal_enumerating_every_labelling(name):
    statistic, parts, width = STATISTICS[name]
    rng = np.random.default_rng(5)
    # units of 1, 2, 3 and 4 annotations
    unit = np.array([0, 1, 1, 2, 2, 2, 3, 3, 3, 3])
    p = rng.dirichlet(np.ones(width), size=(len(unit), parts)).reshape(len(unit), -1)
    p[4, :width] = [1.0] + [0.0] * (width - 1)  # a certain label
    if parts == 2:
        p[5, width:] = 0.0  # an annotation without a label in the second part
    ours = expected_features(statistic, p, unit=unit, n_units=4, parts=parts)
    # exact but for the dyadic grid (2^-30) the counts are rounded to
    assert ours == pytest.approx(_enumerated(statistic, p, unit, 4, parts), abs=1e-8)


def test_expected_features_of_one_hot_rows_are_the_features_of_the_counts():
    statistic = alpha_statistic(level="nominal", domain=[0, 1, 2])
    unit = np.array([0, 0, 0, 1, 1])
    labels = np.array([0, 0, 2, 1, 1])
    p = np.eye(3)[labels]
    counts = np.zeros((2, 3), dtype=np.int64)
    np.add.at(counts, (unit, labels), 1)
    ours = expected_features(statistic, p, unit=unit, n_units=2, parts=1)
    assert ours == pytest.approx(statistic.features(counts), abs=1e-12)


def _panel(rng, *, n_pairs, annotators, lean):
    """Every annotator rates every pair; annotator i picks label 0 on pair j with probability
    q[j] + lean[i], q uniform on [0.2, 0.8] (else 1 or 2 evenly)."""
    pair = np.repeat(np.arange(n_pairs), annotators)
    who = np.tile(np.arange(annotators), n_pairs)
    first = np.clip(rng.uniform(0.2, 0.8, n_pairs)[pair] + np.asarray(lean)[who], 0.02, 0.98)
    draw = rng.random(pair.size)
    labels = np.where(draw < first, 0, np.where(draw < first + (1 - first) / 2, 1, 2))
    return pair, who, np.eye(3, dtype=np.int64)[labels]


def _slow_spread(statistic, layout, covariance, rng):
    """spread_over_leans by a loop over panels, the expectation by enumeration: leans and
    their negatives, each moving an annotation's base in log-odds by the pseudo-inverse of
    the softmax's mean Jacobian times the lean."""
    n, d = layout.base.shape
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    root = eigenvectors * np.sqrt(np.clip(eigenvalues, 0, None))
    n_units = int(layout.unit.max()) + 1
    jacobian = np.mean([np.diag(b) - np.outer(b, b) for b in layout.base], axis=0)
    to_logit = np.linalg.pinv(jacobian)
    leans = rng.standard_normal((lean_spread.LEAN_DRAWS // 2, layout.n_annotators, d)) @ root.T
    values = []
    for lean in np.concatenate([leans, -leans]):
        p = np.empty((n, d))
        for r in range(n):
            weights = layout.base[r] * np.exp(to_logit @ lean[layout.annotator[r]])
            p[r] = weights / weights.sum()
        p = p[np.arange(n)[:, None], layout.columns]
        features = _enumerated(statistic, p, layout.unit, n_units, 1).sum(axis=0)
        values.append(statistic.finish(features[None, :])[0])
    values = np.array(values).reshape(2, -1)
    even = np.var(values.mean(axis=0))
    odd = np.mean(np.square((values[0] - values[1]) / 2))
    return np.var(values), even / (even + odd)


def _layout(pair, who, own, columns=None):
    """The layout of one-hot labels read in their own columns (or in ``columns``), every
    annotation labelled."""
    return LeanLayout.of(
        panel=Panel.of(pair, who, seed=1),
        traits=own.astype(float),
        own=own,
        columns=np.broadcast_to(np.arange(3), own.shape) if columns is None else columns,
        parts=1,
        rng=np.random.default_rng(0),
    )


@pytest.mark.parametrize("reordered", [False, True], ids=["own columns", "reordered"])
def test_spread_over_leans_equals_a_slow_recomputation(reordered):
    rng = np.random.default_rng(3)
    pair, who, own = _panel(rng, n_pairs=12, annotators=3, lean=[0.2, -0.1, 0.0])
    # reordered: each annotation's statistic columns show its trait columns in its own order
    # (as the neutral coding's do), which the fast path gathers and the identity skips
    columns = np.argsort(rng.random(own.shape), axis=1) if reordered else None
    layout = _layout(pair, who, own, columns)
    assert layout.gathers == reordered
    # the base: each annotation's pair's other two annotations' labels plus once the mean
    # label over all annotations, over three
    assert layout.base[0] == pytest.approx((own[[1, 2]].sum(axis=0) + own.mean(axis=0)) / 3)
    covariance = np.array([[0.02, -0.01, -0.01], [-0.01, 0.01, 0.0], [-0.01, 0.0, 0.01]])
    statistic = alpha_statistic(level="nominal", domain=[0, 1, 2])
    ours = spread_over_leans(statistic, layout, covariance=covariance, rng=np.random.default_rng(9))
    slow, even = _slow_spread(statistic, layout, covariance, np.random.default_rng(9))
    assert ours.variance == pytest.approx(slow, rel=1e-6)
    assert ours.even == pytest.approx(even, rel=1e-6)
    assert ours.variance > 0


def test_the_calibrated_base_gives_the_observed_value():
    """No lean: the statistic at its expectation over labels drawn from the calibrated bases
    is the value the labels themselves give, for every statistic; the other annotations'
    labels alone (the layout before calibration) give more agreement than there is."""
    rng = np.random.default_rng(4)
    pair, who, own = _panel(rng, n_pairs=60, annotators=3, lean=[0.2, 0.0, -0.2])
    layout = _layout(pair, who, own)
    indicator = lean_spread._unit_indicator(layout.unit, 60)
    zero = np.zeros((1, 3, 3))
    counts = np.zeros((60, 3), dtype=np.int64)
    np.add.at(counts, (pair, own.argmax(axis=1)), 1)
    for name in ("percent agreement", "AC1", "nominal alpha"):
        statistic = STATISTICS[name][0]
        observed = statistic.finish(statistic.features(counts).sum(axis=0)[None])[0]
        raw = lean_spread.statistic_at_leans(statistic, layout, zero, indicator=indicator)[0]
        fitted = calibrated(statistic, layout)
        at = lean_spread.statistic_at_leans(statistic, fitted, zero, indicator=indicator)[0]
        assert at == pytest.approx(observed, abs=1e-3)
        assert raw > observed + 0.01


def test_no_leans_give_no_spread():
    rng = np.random.default_rng(3)
    pair, who, own = _panel(rng, n_pairs=30, annotators=3, lean=[0.0, 0.0, 0.0])
    layout = _layout(pair, who, own)
    spread = spread_over_leans(
        PERCENT_AGREEMENT, layout, covariance=np.zeros((3, 3)), rng=np.random.default_rng(1)
    )
    assert spread.variance == pytest.approx(0.0, abs=1e-20)


def test_lean_covariance_known_answer():
    # Two pairs, annotators 0, 1, 2, one trait column: values (1, 0, 0) and (1, 1, 0).
    # Residuals from the pair's mean: (2/3, -1/3, -1/3) and (1/3, 1/3, -2/3); each annotator's
    # mean residual: 1/2, 0, -1/2; mean of e^2 over annotators: 1/6. Three per pair: times 3/2.
    pair = np.array([0, 0, 0, 1, 1, 1])
    who = np.array([0, 1, 2, 0, 1, 2])
    traits = np.array([[1.0], [0.0], [0.0], [1.0], [1.0], [0.0]])
    panel = Panel.of(pair, who, seed=0)
    observed, chance = lean_covariances(annotator_effects(panel, traits), unit=pair)
    shuffled = []
    for codes in panel.shuffled:
        residual = traits[:, 0] - np.repeat([1 / 3, 2 / 3], 3)
        effects = [residual[codes == a].mean() for a in range(3)]
        shuffled.append(np.mean(np.square(effects)))
    assert chance[0, 0] == pytest.approx(1.5 * np.mean(shuffled))
    assert observed[0, 0] == pytest.approx(1.5 * (1 / 6) - chance[0, 0])


def test_leans_move_alpha_less_than_percent_agreement_for_their_pairs_variance():
    """The fact the rule rests on (docs/intervals.md): leans every pair shares move percent
    agreement (how often annotators pick the same label) more, against its pair-to-pair
    variance, than alpha (agreement beyond what the pooled labels make likely), though the
    jackknife over three annotators cannot tell the two apart."""
    rng = np.random.default_rng(8)
    pair, who, own = _panel(rng, n_pairs=150, annotators=3, lean=[0.3, 0.0, -0.3])
    counts = np.zeros((150, 3), dtype=np.int64)
    np.add.at(counts, (pair, own.argmax(axis=1)), 1)
    panel = Panel.of(pair, who, seed=2)
    shares, evens = {}, {}
    for statistic, estimate in (
        (
            alpha_statistic(level="nominal", domain=[0, 1, 2]),
            alpha(counts, level="nominal", domain=[0, 1, 2], bootstrap=1000, seed=1),
        ),
        (PERCENT_AGREEMENT, percent_agreement(counts, bootstrap=1000, seed=1)),
    ):
        spread, chance = _variances(statistic, own, panel=panel)
        assert spread.variance > 10 * chance.variance
        pairs_variance = ((estimate.ci95[1] - estimate.ci95[0]) / 2 / 1.96) ** 2
        shares[statistic is PERCENT_AGREEMENT] = spread.variance / pairs_variance
        evens[statistic is PERCENT_AGREEMENT] = spread.even
    assert shares[False] < 0.8 * shares[True]
    # and alpha moves with the leans' spread, percent agreement with their direction
    assert evens[False] > 0.5 > evens[True]


def test_the_neutral_coding_reads_leans_in_the_labels_columns():
    rng = np.random.default_rng(2)
    pair, who, own = _panel(rng, n_pairs=40, annotators=3, lean=[0.3, 0.0, -0.3])
    counts = np.zeros((40, 3), dtype=np.int64)
    np.add.at(counts, (pair, own.argmax(axis=1)), 1)
    keep = rng.random(40) < 0.5
    neutral, neutral_own, columns = neutral_coding(counts, own, keep=keep, pair=pair)
    # each neutral column shows the label column `columns` names, and the counts add up
    assert (neutral_own == own[np.arange(len(pair))[:, None], columns]).all()
    summed = np.zeros_like(neutral)
    np.add.at(summed, pair, neutral_own)
    assert (summed == neutral).all()
    assert (neutral[keep] == counts[keep]).all()
    assert (neutral[~keep] == counts[~keep][:, [1, 0, 2]]).all()
    # read in the labels' columns the lean to label 0 stays; in the neutral coding's own
    # columns it is split between "first" and "second" at random
    statistic = alpha_statistic(level="nominal", domain=[0, 1, 2])
    panel = Panel.of(pair, who, seed=2)
    with_labels, _ = _variances(
        statistic, neutral_own, panel=panel.with_traits(own, columns=columns)
    )
    hidden, _ = _variances(statistic, neutral_own, panel=panel)
    assert with_labels.variance > 3 * hidden.variance


def test_many_units_use_a_sample_of_them(monkeypatch):
    rng = np.random.default_rng(6)
    pair, who, own = _panel(rng, n_pairs=600, annotators=3, lean=[0.25, 0.0, -0.25])
    panel = Panel.of(pair, who, seed=4)
    # 200 of the 600 units, each with all three of its annotations
    layout = _layout(pair, who, own)
    assert lean_spread.MAX_LEAN_UNITS == 200
    assert len(np.unique(layout.unit)) == 200 and len(layout.unit) == 600
    sampled, _ = _variances(PERCENT_AGREEMENT, own, panel=panel)
    monkeypatch.setattr(lean_spread, "MAX_LEAN_UNITS", 10_000)
    everything, _ = _variances(PERCENT_AGREEMENT, own, panel=panel)
    # the same leans move the statistic alike on 200 of the 600 units
    assert sampled.variance == pytest.approx(everything.variance, rel=0.3)


def test_traits_of_another_width_are_refused():
    pair = np.repeat(np.arange(5), 3)
    who = np.tile(np.arange(3), 5)
    own = np.eye(3, dtype=np.int64)[np.zeros(15, dtype=int)]
    panel = Panel.of(pair, who, seed=0).with_traits(np.ones((15, 2)))
    with pytest.raises(ValueError, match="traits have 2 columns"):
        _variances(PERCENT_AGREEMENT, own, panel=panel)


def _softplus(x, scale):
    return scale * np.log1p(np.exp(x / scale))


def test_annotator_part_known_answers():
    common = {"annotators": 3, "main_effects": 2.0, "even_share": 0.0}
    weight = 1 - np.exp(-1.0)
    # the jackknife at its floor: the main effects' part, LEAN_GAIN times the smooth positive
    # part of the spread at the scale (spread + chance) * sqrt(2 / (k - 1))
    part = annotator_part(
        0.5, observed=1.0, floor=1.0, lean_spread=0.2, chance_spread=0.1, **common
    )
    assert part == pytest.approx(weight * LEAN_GAIN * _softplus(0.2, 0.3))
    # the jackknife far above its floor: its own part, times 1 - exp(-excess / (3 floor))
    part = annotator_part(
        5.0, observed=31.0, floor=1.0, lean_spread=0.2, chance_spread=0.1, **common
    )
    assert JACKKNIFE_EVIDENCE == 3.0
    assert part == pytest.approx(5.0 * (1 - np.exp(-10.0)))
    # no spread to read (no unit with two annotations): the jackknife's part as it is
    part = annotator_part(
        0.5, observed=1.0, floor=1.0, lean_spread=np.nan, chance_spread=np.nan, **common
    )
    assert part == 0.5
    # no main effects beyond chance: no main effects' part
    part = annotator_part(
        0.5,
        observed=1.0,
        floor=1.0,
        annotators=3,
        main_effects=0.8,
        lean_spread=0.2,
        chance_spread=0.1,
        even_share=0.0,
    )
    assert part == 0.0


@pytest.mark.parametrize(
    ("annotators", "even_share", "divisor"),
    [(3, 0.0, 1.0), (3, 0.5, 1.5), (3, 1.0, 2.0), (5, 1.0, 4 / 3), (6, 0.5, 1.125)],
)
def test_the_jackknifes_count_of_the_leans_spread_is_divided_out(annotators, even_share, divisor):
    """The jackknife far above its floor: its part divided by 1 + even share / (k - 2), the
    leave-one-out jackknife's count (k - 1) / (k - 2) of the part that moves with the leans'
    spread (2, 4/3 and 5/4 for k = 3, 5, 6), the part that moves with their direction once."""
    part = annotator_part(
        5.0,
        observed=31.0,
        floor=1.0,
        annotators=annotators,
        main_effects=2.0,
        lean_spread=0.2,
        chance_spread=0.1,
        even_share=even_share,
    )
    assert part == pytest.approx(5.0 * (1 - np.exp(-10.0)) / divisor)


def test_annotator_part_is_continuous_in_the_jackknife():
    values = [
        annotator_part(
            1.0,
            observed=observed,
            floor=1.0,
            annotators=3,
            main_effects=2.0,
            lean_spread=0.01,
            chance_spread=0.01,
            even_share=0.3,
        )
        for observed in np.linspace(0.5, 4.0, 200)
    ]
    assert np.abs(np.diff(values)).max() < 0.05
