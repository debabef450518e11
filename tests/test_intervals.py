"""The interval machinery: BCa against scipy's, the annotator jackknife against recomputation
without each annotator, the annotator-aware interval's behaviour, and `annotate plan` against an
independent simulation of the label check."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from analysis.agreement.bootstrap import PairInterval
from analysis.agreement.coefficients import (
    AC1,
    PERCENT_AGREEMENT,
    alpha,
    alpha_statistic,
    percent_agreement,
)
from analysis.agreement.intervals import (
    MIN_EVIDENCE_PAIRS,
    annotator_bootstrap,
    annotator_component,
    annotator_draws,
    annotator_evidence,
    annotator_interval,
    combined_interval,
    spread_growth,
)
from analysis.agreement.lean_spread import lean_variances
from analysis.agreement.panel import Panel, annotator_effects, main_effect_ratio
from analysis.design.plan import Effects, power
from analysis.report.build import ReportOptions
from analysis.verdicts.validity import label_share, label_statistic


@pytest.mark.parametrize("n", [30, 150])
def test_bca_matches_scipy_on_a_mean_at_the_expanded_level(n):
    # Percent agreement with two raters per unit is the mean of 0/1 unit agreements: our BCa
    # over unit patterns and scipy's BCa over units must agree up to Monte Carlo error, at the
    # level of the small-sample expansion (Hesterberg 2015): z = sqrt(n / (n - 1)) t_{n-1},
    # 2.08 at 30 units (a 96.3% interval), 1.98 at 150. Without it ours was scipy's 95%
    # interval, which at 40 pairs covered nominal alpha 92.8% over 2,000 simulated studies.
    rng = np.random.default_rng(4)
    agree = rng.random(n) < 0.8
    counts = np.where(agree[:, None], [[2, 0]], [[1, 1]])
    ours = percent_agreement(counts, bootstrap=20_000, seed=1)
    z = np.sqrt(n / (n - 1)) * stats.t.ppf(0.975, n - 1)
    theirs = stats.bootstrap(
        (agree.astype(float),),
        np.mean,
        n_resamples=20_000,
        method="BCa",
        random_state=2,
        confidence_level=1 - 2 * stats.norm.sf(z),
    ).confidence_interval
    assert ours.value == pytest.approx(agree.mean())
    assert ours.ci95 == pytest.approx((theirs.low, theirs.high), abs=0.006)


def _study(rng, *, n_pairs=60, annotators=4, per_pair=3):
    pair = np.repeat(np.arange(n_pairs), per_pair)
    who = np.argsort(rng.random((n_pairs, annotators)), axis=1)[:, :per_pair].ravel()
    value = rng.choice(3, size=pair.size, p=[0.6, 0.3, 0.1])
    return pair, who, value


@pytest.mark.parametrize(
    "statistic",
    [
        alpha_statistic(level="nominal", domain=[0, 1, 2]),
        PERCENT_AGREEMENT,
        AC1,
        label_statistic(min_annotations=2, decided_only=False),
    ],
    ids=["alpha", "percent", "ac1", "label"],
)
def test_leaving_an_annotator_out_equals_recomputing_without_it(statistic):
    rng = np.random.default_rng(0)
    pair, who, value = _study(rng)
    counts = np.zeros((60, 3), dtype=np.int64)
    np.add.at(counts, (pair, value), 1)
    own = np.eye(3, dtype=np.int64)[value]
    panel = Panel.of(pair, who, seed=0)
    rows = counts[panel.unit]
    delta = statistic.features(rows) - statistic.features(rows - own)
    total = statistic.features(counts).sum(axis=0)
    fast = statistic.finish(total[None, :] - panel.group_sum(panel.annotator, delta))
    for annotator in range(4):
        keep = who != annotator
        without = np.zeros((60, 3), dtype=np.int64)
        np.add.at(without, (pair[keep], value[keep]), 1)
        assert fast[annotator] == pytest.approx(statistic.value(without), abs=1e-12)


def test_shuffles_keep_each_pairs_annotators_and_each_annotators_workload():
    rng = np.random.default_rng(1)
    pair, who, _ = _study(rng, n_pairs=30)
    panel = Panel.of(pair, who, seed=3)
    for codes in panel.shuffled:
        for p in range(30):
            assert sorted(codes[pair == p]) == sorted(who[pair == p])
        assert (np.bincount(codes) == np.bincount(who)).all()
    assert any((codes != panel.annotator).any() for codes in panel.shuffled)


def _labels(rng, *, lean, n_pairs=200):
    per_pair = len(lean)
    pair = np.repeat(np.arange(n_pairs), per_pair)
    who = np.tile(np.arange(per_pair), n_pairs)
    p = 1 / (1 + np.exp(-(1.0 + np.asarray(lean)[who])))
    value = np.where(rng.random(pair.size) < p, 0, 1)
    counts = np.zeros((n_pairs, 2), dtype=np.int64)
    np.add.at(counts, (pair, value), 1)
    return counts, np.eye(2, dtype=np.int64)[value], Panel.of(pair, who, seed=0)


def test_annotators_who_differ_widen_the_interval():
    rng = np.random.default_rng(7)
    alike, own, panel = _labels(rng, lean=[0, 0, 0, 0])
    differ, own_d, panel_d = _labels(rng, lean=[-2.0, -0.5, 0.5, 2.0])
    a = alpha(alike, level="nominal", domain=[0, 1], bootstrap=400, seed=1, panel=panel, own=own)
    d = alpha(
        differ, level="nominal", domain=[0, 1], bootstrap=400, seed=1, panel=panel_d, own=own_d
    )

    def width(ci):
        return ci[1] - ci[0]

    # Alike annotators widen the interval little (their main effects are at chance, so the
    # component's weight is near 0), annotators who differ by far more.
    assert width(d.ci95_annotators) > 1.5 * width(d.ci95)
    assert width(d.ci95_annotators) / width(d.ci95) > 2 * width(a.ci95_annotators) / width(a.ci95)
    assert a.ci95_annotators[0] <= a.ci95[0] and a.ci95[1] <= a.ci95_annotators[1]


def test_the_noise_floor_is_the_jackknifes_expected_value_for_alike_annotators():
    # Three annotators who do not differ: the jackknife variance over them is about a scaled
    # chi-square with two degrees of freedom, so it falls at or below its expected value (the
    # mean of the shuffled jackknife variances) with probability 1 - exp(-1) = 0.632. Against
    # the median of the shuffles (the old floor, 0.69 of the mean) it fell below in half of
    # the studies, and the annotators' component was positive on average for alike annotators.
    statistic = alpha_statistic(level="nominal", domain=[0, 1])
    pair = PairInterval(ci95=(0.0, 0.4), note=None)
    alike = []
    for seed in range(400):
        counts, own, panel = _labels(np.random.default_rng(seed), lean=[0, 0, 0], n_pairs=60)
        point = statistic.value(counts)
        _, note = annotator_interval(statistic, counts, own, panel=panel, point=point, pair=pair)
        alike.append(note is not None and "no more than" in note)
    # 1 - exp(-1) with 400 studies: standard error 0.024
    assert 0.632 - 0.075 < np.mean(alike) < 0.632 + 0.075


def test_annotator_component_known_answers():
    # Hand-worked: observed 0.004, floor 0.002, three annotators, main effects far above
    # chance (weight 1 - exp(-49), 1 to 1e-21): the smoothing scale is (0.002 + 0.004) *
    # sqrt(2 / 2) = 0.006 and the component 0.006 * ln(1 + exp(1/3)) = 0.00524183.
    def component(observed, floor=0.002, annotators=3, main_effects=50.0):
        return annotator_component(
            observed=observed, floor=floor, annotators=annotators, main_effects=main_effects
        )

    assert component(0.004) == pytest.approx(0.0052418334, rel=1e-6)
    # six annotators: scale 0.006 * sqrt(2 / 5) = 0.0037947, component 0.0037947 *
    # ln(1 + exp(0.002 / 0.0037947)) = 0.0037606 (closer to the plain difference 0.002)
    assert component(0.004, annotators=6) == pytest.approx(0.00376057, rel=1e-6)
    # main effects at twice chance: weight 1 - exp(-1) = 0.63212; at or below chance: 0
    assert component(0.004, main_effects=2.0) == pytest.approx(0.0052418334 * 0.6321206, rel=1e-6)
    assert component(0.004, main_effects=1.0) == 0.0
    assert component(0.004, main_effects=0.3) == 0.0
    # at the floor: scale * ln 2 with the scale 2 * floor; far below: almost 0
    assert component(0.002) == pytest.approx(0.004 * np.log(2))
    assert 0 < component(0.0) < 0.002 * 0.32
    # far above, the scale follows the observed value: with three annotators the component
    # tends to ln(1 + e) = 1.313 times it (two degrees of freedom), with many to the difference
    assert component(1.0) == pytest.approx(1.002 * np.log1p(np.exp(0.998 / 1.002)), rel=1e-12)
    assert component(1.0, annotators=200) == pytest.approx(0.998, rel=1e-3)
    # no pair noise at all: the scale is the observed value's own
    assert component(0.003, floor=0.0) == pytest.approx(0.003 * np.log1p(np.e))
    # unknown main effects count as differing (the cautious side)
    assert component(0.004, main_effects=np.nan) == pytest.approx(0.0052418334, rel=1e-6)
    # smooth and increasing: no jump anywhere around the floor or in the main effects
    grid = np.linspace(0.0, 0.006, 601)
    values = [component(o) for o in grid]
    assert np.max(np.abs(np.diff(values))) < 1.4e-5 and (np.diff(values) > 0).all()
    weights = [component(0.004, main_effects=m) for m in np.linspace(0.0, 4.0, 401)]
    assert np.max(np.abs(np.diff(weights))) < 0.0053 * 0.011 and (np.diff(weights) >= 0).all()


def test_a_majoritys_component_grows_with_the_main_effects_to_three_times_its_size():
    def component(main_effects, grows=True):
        return annotator_component(
            observed=0.004,
            floor=0.002,
            annotators=3,
            main_effects=main_effects,
            grows_with_spread=grows,
        )

    # Hand-worked from the known answer above (0.0052418334 with weight 1): S = 2.5 is 1.5
    # past chance, growth 1 + 2 * 1.5 / 3 = 2, weight (1 - exp(-1.5))^0.75 = 0.7768698^0.75
    assert component(2.5) == pytest.approx(0.0052418334 * 0.7768698**0.75 * 2.0, rel=1e-6)
    # from S = 4 on three times the component, its weight to the power 0.75; at or below
    # chance still 0; unknown: three times
    weight = 1 - np.exp(-3.0)
    assert component(4.0) == pytest.approx(
        3 * weight**0.75 / weight * component(4.0, grows=False), rel=1e-12
    )
    assert component(50.0) == pytest.approx(3 * 0.0052418334, rel=1e-6)
    assert component(1.0) == component(0.5) == 0.0
    assert component(np.nan) == pytest.approx(3 * 0.0052418334, rel=1e-6)
    assert spread_growth(1.0) == 1.0 and spread_growth(2.5) == 2.0 and spread_growth(9.0) == 3.0
    # continuous and increasing in the main effects (the weight's power rises steeply just
    # past chance: a step of 0.01 there moves it by at most 0.011^0.75)
    grown = [component(m) for m in np.linspace(0.0, 6.0, 601)]
    assert np.max(np.abs(np.diff(grown))) < 3 * 0.0053 * 0.011**0.75
    assert (np.diff(grown) >= 0).all()


def _slow_main_effect_ratio(pair, who, traits, shuffled):
    """main_effect_ratio by loops: residuals from each pair's mean, per annotator the squared
    sum of its residuals over its count, against the same for each shuffle."""
    traits = np.asarray(traits, dtype=float).reshape(len(pair), -1)

    def spread(codes):
        residual = {}
        for p in np.unique(pair):
            rows = np.flatnonzero(pair == p)
            if len(rows) < 2:
                continue
            mean = traits[rows].mean(axis=0)
            for r in rows:
                residual[r] = traits[r] - mean
        total = 0.0
        for a in np.unique(codes):
            mine = [residual[r] for r in np.flatnonzero(codes == a) if r in residual]
            if mine:
                total += (np.sum(mine, axis=0) ** 2).sum() / len(mine)
        return total

    return spread(who) / np.mean([spread(c) for c in shuffled])


def test_main_effect_ratio_known_answer():
    # Two pairs rated by annotators 0, 1, 2 with traits (1, 0, 0) and (1, 1, 0): residuals
    # (2/3, -1/3, -1/3) and (1/3, 1/3, -2/3), per annotator sums 1, 0, -1 over two pairs each:
    # H = (1 + 0 + 1) / 2 = 1. Shuffled within pairs an annotator's residual in a pair is any
    # of the pair's three, mean square 2/9, so E[H0] = 3 * (2/9 + 2/9) / 2 = 2/3: H / H0 = 1.5.
    pair = np.array([0, 0, 0, 1, 1, 1])
    who = np.array([0, 1, 2, 0, 1, 2])
    traits = np.array([1, 0, 0, 1, 1, 0])
    panel = Panel.of(pair, who, seed=0, shuffles=4000)
    assert main_effect_ratio(panel, traits) == pytest.approx(1.5, rel=0.03)
    # a pair with one annotation carries no residual; every pair unanimous: nothing to tell
    single = Panel.of(np.array([0, 0, 0, 1]), np.array([0, 1, 2, 0]), seed=0)
    assert main_effect_ratio(single, np.array([1, 1, 1, 0])) == 1.0


def test_main_effect_ratio_equals_a_slow_recomputation():
    rng = np.random.default_rng(5)
    pair, who, value = _study(rng, n_pairs=40)
    keep = rng.random(pair.size) > 0.15  # some pairs left with one or two annotations
    pair, who, value = pair[keep], who[keep], value[keep]
    traits = np.column_stack([np.eye(3)[value], rng.normal(size=pair.size)])
    panel = Panel.of(pair, who, seed=1)
    assert main_effect_ratio(panel, traits) == pytest.approx(
        _slow_main_effect_ratio(pair, who, traits, panel.shuffled), rel=1e-12
    )


def test_main_effects_tell_a_panel_that_leans_from_alike_annotators():
    # 100 pairs x 3: alike annotators give ratios about 1 (chance), a lean of -0.7, 0, 0.7
    # log-odds to the first label lifts it far above; the neutral coding (labels swapped in a
    # random half of the pairs) hides the lean from the statistic's own annotations, which is
    # why the report reads neutral alpha's main effects from the labels (Panel.with_traits).
    alike, leaning, hidden = [], [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        for lean, out in (([0, 0, 0], alike), ([-0.7, 0, 0.7], leaning)):
            _, own, panel = _labels(rng, lean=lean, n_pairs=100)
            out.append(main_effect_ratio(panel, own))
        # the leaning panel's labels, each pair's coded with its coin
        flip = (rng.random(100) < 0.5)[panel.unit]
        hidden.append(main_effect_ratio(panel, np.where(flip[:, None], own[:, ::-1], own)))
    assert 0.8 < np.mean(alike) < 1.2
    assert np.median(leaning) > 3
    assert np.median(hidden) < 1.5


def test_a_pairs_only_interval_says_why():
    # Alike annotators whose own labels lean no more than chance gives: the weight is 0, the
    # interval is the pairs' own, and the note says so (not that a part was kept for them).
    statistic = alpha_statistic(level="nominal", domain=[0, 1])
    for seed in range(50):
        counts, own, panel = _labels(np.random.default_rng(seed), lean=[0, 0, 0], n_pairs=60)
        if main_effect_ratio(panel, own) <= 1:
            break
    point = statistic.value(counts)
    pair = PairInterval(ci95=(point - 0.1, point + 0.15), note=None)
    ci, note = annotator_interval(statistic, counts, own, panel=panel, point=point, pair=pair)
    assert ci == pytest.approx(pair.ci95, abs=1e-12)
    assert "pairs' interval" in note and "keeps a part" not in note


def test_alike_annotators_keep_about_the_pairs_interval():
    # Three alike annotators at 100 pairs: the old rule (the jackknife's excess smoothed at its
    # null sd, never weighted down) made ci95_annotators 2.1x the pair interval on average
    # here (1.5-1.8x the oracle width at 99% coverage in bench_coverage); with the main-effect
    # weight it is the pair interval itself in most studies (median 1.0) and 1.29x on average.
    ratios = []
    for seed in range(40):
        counts, own, panel = _labels(np.random.default_rng(seed), lean=[0, 0, 0], n_pairs=100)
        a = alpha(
            counts, level="nominal", domain=[0, 1], bootstrap=200, seed=1, panel=panel, own=own
        )
        ratios.append(np.diff(a.ci95_annotators)[0] / np.diff(a.ci95)[0])
    assert np.min(ratios) >= 1.0 and np.median(ratios) < 1.05 and np.mean(ratios) < 1.45


def test_combined_interval_known_answer():
    # point 0.5, pair interval [0.4, 0.62], component 0.0026265 (above): each side is
    # z * sqrt((half / z)^2 + component): 0.5 - 1.96 * sqrt(0.0026032 + 0.0026265) = 0.35826
    # and 0.5 + 1.96 * sqrt(0.0037486 + 0.0026265) = 0.65649
    ci, note = combined_interval(
        0.5, (0.4, 0.62), annotator_variance=0.002626523375, bounds=(0.0, 1.0)
    )
    assert ci == pytest.approx((0.358261927, 0.656491793), abs=1e-8)
    assert note is None
    # cut to the statistic's range
    ci, _ = combined_interval(0.95, (0.9, 1.0), annotator_variance=0.01, bounds=(0.0, 1.0))
    assert ci[1] == 1.0


def test_annotator_interval_is_null_below_three_annotators():
    rng = np.random.default_rng(2)
    counts, own, panel = _labels(rng, lean=[0, 0])
    pair = PairInterval(ci95=(0.1, 0.3), note=None)
    ci, note = annotator_interval(
        alpha_statistic(level="nominal", domain=[0, 1]),
        counts,
        own,
        panel=panel,
        point=0.2,
        pair=pair,
    )
    assert ci is None and "needs at least 30" in note


def test_the_evidence_rule_counts_pairs_rated_by_three_not_names():
    # Pairs rated by three or more distinct annotators; a repeated annotator on a pair and an
    # annotation that contributes nothing to the statistic (an all-zero row) do not count.
    unit = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3])
    who = np.array([0, 1, 2, 0, 1, 1, 0, 1, 2, 3, 0, 1])
    panel = Panel.of(unit, who, seed=0)
    evidence = annotator_evidence(panel)
    assert (evidence.pairs, evidence.pairs_with_three, evidence.pairs_with_two) == (4, 2, 2)
    assert evidence.annotators == 4
    assert not evidence.sufficient and evidence.missing == MIN_EVIDENCE_PAIRS - 2
    own = np.ones((unit.size, 2), dtype=np.int64)
    own[2] = 0  # pair 0's third annotation left this statistic's item blank
    assert annotator_evidence(panel, own).pairs_with_three == 1
    note = annotator_evidence(panel).note()
    assert note is not None
    assert f"{MIN_EVIDENCE_PAIRS - 2} more pairs with three or more annotations" in note
    # the rule's count, reached
    unit = np.repeat(np.arange(MIN_EVIDENCE_PAIRS), 3)
    panel = Panel.of(unit, np.tile([0, 1, 2], MIN_EVIDENCE_PAIRS), seed=0)
    assert annotator_evidence(panel).sufficient and annotator_evidence(panel).note() is None


# --- annotate plan against a closed form ---------------------------------------------------


def independent_label_power(
    n_pairs: int, q: float, threshold: float, *, simulations: int, seed: int
) -> tuple[float, float]:
    """Power of the label check simulated without analysis.design.plan: three alike annotators rate
    every pair, each picks chosen with probability q; the check passes when the lower end of
    ``ci95_annotators`` of the confirmed share lies above the threshold. Also the power the
    pairs-only interval would have had (the old rule)."""
    rng = np.random.default_rng([seed, 99])
    pair = np.repeat(np.arange(n_pairs), 3)
    who = np.tile(np.arange(3), n_pairs)
    passed = pairs_only = 0
    for _ in range(simulations):
        picks = np.where(rng.random(pair.size) < q, 0, 1)
        counts = np.zeros((n_pairs, 3), dtype=np.int64)
        np.add.at(counts, (pair, picks), 1)
        share = label_share(
            counts,
            min_annotations=2,
            decided_only=False,
            panel=Panel.of(pair, who, seed=0),
            own=np.eye(3, dtype=np.int64)[picks],
        )
        passed += share["ci95_annotators"][0] > threshold
        pairs_only += share["ci95"][0] > threshold
    return passed / simulations, pairs_only / simulations


@pytest.mark.parametrize(("n_pairs", "chosen_rate"), [(80, 0.68)])
def test_plan_label_power_matches_an_independent_simulation(n_pairs, chosen_rate):
    # Three annotations per pair: the label check uses the annotator-aware interval, so the
    # plan's power is the power of that interval, as an independent simulation finds it.
    options = ReportOptions(min_rated_pairs=0, min_reasons=0)
    simulations = 300
    simulated = power(
        n_pairs=n_pairs,
        per_pair=3,
        effects=Effects(chosen_rate=chosen_rate),
        options=options,
        simulations=simulations,
        seed=5,
    )["label"]
    expected, pairs_only = independent_label_power(
        n_pairs, chosen_rate, options.label_threshold, simulations=simulations, seed=6
    )
    assert 0.15 < expected < 0.95  # a power where the comparison means something
    se = np.sqrt(2 * expected * (1 - expected) / simulations)
    assert abs(simulated - expected) < 3.5 * se
    # the power moved with the interval: the annotator-aware interval contains the pairs-only
    # one, so the old rule's power is an upper bound
    assert pairs_only >= expected


def test_plan_gives_no_label_power_with_two_annotators():
    options = ReportOptions(min_rated_pairs=0, min_reasons=0)
    effects = Effects(chosen_rate=0.95)
    result = power(n_pairs=80, per_pair=2, effects=effects, options=options, simulations=20, seed=1)
    assert result["label"] == 0.0 and result["all"] == 0.0


def test_plan_command_prints_the_power_table():
    done = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "plan", "--pairs", "40,80", "--per-pair", "3",
         "--simulations", "10", "--chosen-rate", "0.9"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "| design | pairs | per pair | annotations | verdict accuracy | label | quality | reason "
        "| all |" in done.stdout
    )
    assert "3 annotations per pair:" in done.stdout
    helped = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "plan", "--help"], capture_output=True, text=True
    )
    for option in ("--chosen-rate", "--quality-sd", "--power", "--label-threshold"):
        assert option in helped.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "plan", "--per-pair", "5", "--annotators", "3"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0
    assert "fewer than the 5 annotations per pair" in bad.stderr
    assert "Traceback" not in bad.stderr
    two = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "plan", "--pairs", "40", "--per-pair", "2",
         "--simulations", "2"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert two.returncode == 0, two.stderr
    assert "the label check needs at least 30 pairs rated by 3 or more annotators" in two.stdout
    assert "use --per-pair 3 or more" in two.stdout
    few = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "plan", "--pairs", "20", "--per-pair", "3",
         "--simulations", "2"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert few.returncode == 0, few.stderr
    assert "3 annotations per pair: the label check needs at least 30 pairs" in few.stdout
    assert "try --pairs 30 or more" in few.stdout


@pytest.mark.parametrize("width", [3, 10], ids=["few kinds", "many kinds"])
def test_annotator_interval_equals_a_slow_recomputation(width):
    """The interval from kinds counted per annotator equals one from recomputing the statistic
    without each annotator, for the real labels and for every within-pair shuffle."""
    rng = np.random.default_rng(11)
    n_pairs, annotators = 80, 5
    pair = np.repeat(np.arange(n_pairs), 4)
    who = np.argsort(rng.random((n_pairs, annotators)), axis=1)[:, :4].ravel()
    # Each annotator gives the pair's value or, often, a favourite of its own: lasting
    # differences between annotators.
    base = rng.integers(0, width, n_pairs)[pair]
    value = np.where(rng.random(pair.size) < 0.5, base, (3 * who) % width)
    counts = np.zeros((n_pairs, width), dtype=np.int64)
    np.add.at(counts, (pair, value), 1)
    own = np.eye(width, dtype=np.int64)[value]
    panel = Panel.of(pair, who, seed=2)
    statistic = alpha_statistic(level="nominal", domain=list(range(width)))
    point = statistic.value(counts)
    pair_ci = PairInterval(ci95=(point - 0.1, point + 0.08), note=None)
    ci, _ = annotator_interval(statistic, counts, own, panel=panel, point=point, pair=pair_ci)

    def slow_variance(codes):
        values = []
        for a in range(annotators):
            keep = codes != a
            without = np.zeros_like(counts)
            np.add.at(without, (pair[keep], value[keep]), 1)
            values.append(statistic.value(without))
        values = np.array(values)
        return (annotators - 1) / annotators * ((values - values.mean()) ** 2).sum()

    observed = slow_variance(panel.annotator)
    floor = np.mean([slow_variance(c) for c in panel.shuffled])
    assert observed > floor
    ratio = _slow_main_effect_ratio(pair, who, own, panel.shuffled)
    assert ratio > 1
    # the jackknife's part: the smooth positive part of observed - floor, at the scale
    # (floor + observed) * sqrt(2 / (k - 1)), weighted by 1 - exp(-(ratio - 1))
    scale = (floor + observed) * np.sqrt(2 / (annotators - 1))
    weight = 1 - np.exp(-(ratio - 1))
    jackknife_part = weight * scale * np.log1p(np.exp((observed - floor) / scale))
    # the main effects' part: 2.5 times the smooth positive part of the statistic's spread
    # over panels of leans, at the scale (spread + chance) * sqrt(2 / (k - 1)), same weight;
    # the jackknife's part counts as far as it stands above three floors, after dividing out
    # its count of the part that moves with the leans' spread, (k - 1) / (k - 2) times
    leans, chance_leans = lean_variances(
        statistic, own, panel=panel, effects=annotator_effects(panel, own)
    )
    spread, chance = leans.variance, chance_leans.variance
    lean_scale = (spread + chance) * np.sqrt(2 / (annotators - 1))
    from_leans = weight * 2.5 * lean_scale * np.log1p(np.exp(spread / lean_scale))
    evidence = 1 - np.exp(-(observed - floor) / (3 * floor))
    jackknife_part /= 1 + leans.even / (annotators - 2)
    component = max(from_leans, evidence * jackknife_part)

    def half(pair_half):
        # the pairs' variance plus the annotators' component, normal quantile
        z = stats.norm.ppf(0.975)
        return z * np.sqrt((pair_half / z) ** 2 + component)

    expected = (max(-1.0, point - half(0.1)), min(1.0, point + half(0.08)))
    assert ci == pytest.approx(expected, abs=1e-10)


def test_a_zero_width_interval_comes_with_a_note():
    # every pair's three annotators agree: every resample gives 1
    counts = np.tile([3, 0, 0], (20, 1))
    estimate = percent_agreement(counts, bootstrap=200, seed=0)
    assert estimate.ci95 == (1.0, 1.0)
    assert "zero-width" in estimate.note


def test_ac1_interval_stays_inside_its_range():
    # three annotators who mostly each pick a different label: AC1 near its minimum -1/2
    rng = np.random.default_rng(4)
    n_pairs = 30
    pair = np.repeat(np.arange(n_pairs), 3)
    who = np.tile(np.arange(3), n_pairs)
    value = np.where(rng.random(pair.size) < 0.9, (who + pair) % 3, rng.integers(0, 3, pair.size))
    counts = np.zeros((n_pairs, 3), dtype=np.int64)
    np.add.at(counts, (pair, value), 1)
    own = np.eye(3, dtype=np.int64)[value]
    estimate = ac1_of(counts, own, Panel.of(pair, who, seed=0))
    assert estimate.value < -0.3
    assert estimate.ci95_annotators[0] >= -0.5 and estimate.ci95[0] >= -0.5


def ac1_of(counts, own, panel):
    from analysis.agreement.coefficients import gwet_ac1

    return gwet_ac1(counts, bootstrap=300, seed=0, panel=panel, own=own)


# --- majority-type statistics: a bootstrap over annotators ---------------------------------


def test_bootstrap_over_annotators_known_answer():
    # Three annotators rate two pairs: A (chosen, chosen), B (chosen, rejected), C (rejected,
    # rejected); the majorities are chosen and rejected, confirmed share 1/2. Of the 27
    # ordered draws of stand-ins, the 6 orders of A, B, C give 1/2; the 7 with A at least
    # twice give A's answers (1), the 7 with B twice or more B's (1/2), the 7 with C C's (0):
    # mean 1/2, variance (7/4 + 7/4) / 27 = 7/54, times 3/2 = 7/36. (The jackknife, whose
    # majority of two is agreement of two, gives 0, 0 and 1/2 without A, B, C: 1/9.)
    unit = np.array([0, 0, 0, 1, 1, 1])
    codes = np.array([0, 1, 2, 0, 1, 2])
    value = np.array([0, 0, 1, 0, 1, 1])
    counts = np.zeros((2, 3), dtype=np.int64)
    np.add.at(counts, (unit, value), 1)
    statistic = label_statistic(min_annotations=2, decided_only=False)
    variance = annotator_bootstrap(
        statistic, counts, np.eye(3, dtype=np.int64)[value], unit=unit, draws=annotator_draws(3)
    )(codes)
    assert variance == pytest.approx(7 / 36, abs=1e-12)
    assert len(annotator_draws(3)) == 27 and len(annotator_draws(6)) == 200
    assert len(annotator_draws(40, share=0.125)) == 25 and len(annotator_draws(40, share=0)) == 20


def _panel_labels(rng, *, n_pairs, annotators, per_pair, missing):
    """Labels (0 chosen, 1 rejected, 2 tie) of annotators with lasting leans to chosen."""
    pair = np.repeat(np.arange(n_pairs), per_pair)
    who = np.argsort(rng.random((n_pairs, annotators)), axis=1)[:, :per_pair].ravel()
    keep = rng.random(pair.size) >= missing
    pair, who = pair[keep], who[keep]
    lean = np.linspace(-1.5, 1.5, annotators)[who]
    p_chosen = 0.9 / (1 + np.exp(-(rng.normal(1.0, 1.0, n_pairs)[pair] + lean)))
    draw = rng.random(pair.size)
    value = np.where(draw < p_chosen, 0, np.where(draw < 0.9, 1, 2))
    return pair, who, value


@pytest.mark.parametrize(
    ("annotators", "per_pair", "missing"),
    [(3, 3, 0.0), (3, 3, 0.1), (5, 3, 0.1)],
    ids=["panel of three", "panel of three, gaps", "pool of five, gaps"],
)
def test_label_interval_equals_a_slow_bootstrap_over_annotators(annotators, per_pair, missing):
    """label_share's ci95_annotators takes the annotators' part from a bootstrap over
    annotators: each annotation re-labelled with its stand-in's answer on the same pair (left
    out where the stand-in has none), every ordered draw with three annotators; where some
    stand-ins had no answer, the jackknife takes their share. Recomputed here annotation by
    annotation; main's rule was the jackknife alone."""
    rng = np.random.default_rng(annotators * 10 + int(missing * 10))
    n_pairs = 60
    pair, who, value = _panel_labels(
        rng, n_pairs=n_pairs, annotators=annotators, per_pair=per_pair, missing=missing
    )
    counts = np.zeros((n_pairs, 3), dtype=np.int64)
    np.add.at(counts, (pair, value), 1)
    own = np.eye(3, dtype=np.int64)[value]
    panel = Panel.of(pair, who, seed=3)
    share = label_share(counts, min_annotations=2, decided_only=False, panel=panel, own=own)
    statistic = label_statistic(min_annotations=2, decided_only=False)
    if annotators**annotators <= 300:
        draws = list(itertools.product(range(annotators), repeat=annotators))
    else:
        answered = np.mean([len(set(who[pair == p])) for p in pair]) / annotators
        draws = [tuple(d) for d in annotator_draws(annotators, share=answered)]

    def slow_variance(codes):
        answers = {(int(a), int(p)): int(v) for a, p, v in zip(codes, pair, value, strict=True)}
        values, found = [], 0
        for draw in draws:
            resampled = np.zeros_like(counts)
            for a, p in zip(codes, pair, strict=True):
                answer = answers.get((draw[a], int(p)))
                if answer is not None:
                    resampled[p, answer] += 1
                    found += 1
            values.append(statistic.value(resampled))
        boot = annotators / (annotators - 1) * np.var(values)
        # the jackknife takes the share of re-labellings whose stand-in had no answer (the
        # expected share; with every ordered draw, the share found)
        answered = np.mean([len(set(codes[pair == p])) for p in pair]) / annotators
        if len(draws) == annotators**annotators:
            assert answered == pytest.approx(found / (len(draws) * len(codes)), abs=1e-12)
        without = []
        for a in range(annotators):
            kept = np.zeros_like(counts)
            np.add.at(kept, (pair[codes != a], value[codes != a]), 1)
            without.append(statistic.value(kept))
        jackknife = (annotators - 1) * np.var(without)
        return answered * boot + (1 - answered) * jackknife

    observed = slow_variance(panel.annotator)
    floor = np.mean([slow_variance(c) for c in panel.shuffled])
    assert observed > floor
    ratio = _slow_main_effect_ratio(pair, who, own, panel.shuffled)
    component = annotator_component(
        observed=observed,
        floor=floor,
        annotators=annotators,
        main_effects=ratio,
        grows_with_spread=True,  # a majority
    )
    point = share["value"]
    expected, _ = combined_interval(
        point, tuple(share["ci95"]), annotator_variance=component, bounds=(0.0, 1.0)
    )
    assert share["ci95_annotators"] == pytest.approx(expected, abs=1e-10)
