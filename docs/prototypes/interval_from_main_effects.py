"""PROTOTYPE, not the report's rule: the annotators' part read from the main effects through the
statistic, replayed against the rule as it is on the coverage benchmark's studies.

    python docs/prototypes/interval_from_main_effects.py --studies 1000 --cells 3,6,4,0,5,1

docs/intervals.md ("The annotators' part from the main effects through the statistic, with
the jackknife where it stands out") has what it does and the numbers of that run. It lives
here, outside `analysis/` and `benchmarks/`, because it is an experiment to start the next
attempt from: it re-implements each statistic's features in expectation (a second copy of
them), which the real rule must not do (one home per rule).

For every study of a cell (the same seeds and data as `benchmarks/bench_coverage.py`):

1. the report's own functions compute every interval; `annotator_component` and
   `combined_interval` are wrapped to record their inputs (the jackknife's `observed` and
   `floor`, the main effects `H / H0`, the point and the pairs' interval);
2. the annotators' lean covariance in share space: the mean over annotators of `e_i e_i^T`
   (`e_i` the annotator's mean residual label, `analysis.intervals.annotator_effects`) minus
   the same on the within-pair shuffles, times `m / (m - 1)` for the residuals' shrinkage;
3. `ME`: the variance, over 100 panels of leans drawn from that covariance, of the statistic at
   its exact expectation over the labels when each annotation's label probabilities are its
   pair's other annotations' mean plus its annotator's drawn lean (expected coincidences
   `(S S^T - Q) / (m - 1)` with `S = sum p_r`, `Q = sum p_r p_r^T`); `ME0` the same with the
   shuffles' chance-sized covariance;
4. the candidate annotators' part: `max(weight * g * softplus_s(ME), h * component)` with
   `s = (ME + ME0) sqrt(2 / (k - 1))`, the component of the rule as it is, and
   `h = 1 - exp(-max(observed - floor, 0) / (3 floor))`, the jackknife's own evidence: the
   main effects speak for statistics they move (alpha barely, percent agreement much), the
   jackknife where its excess stands far above its floor (quality alpha's finite-panel bias).
   label_confirmed keeps the rule as it is.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import bench_coverage as bc  # noqa: E402

import analysis.intervals as iv  # noqa: E402
from analysis.agreement import AC1, PERCENT_AGREEMENT, alpha_statistic  # noqa: E402

DRAWS = 100
STATS = {
    "percent": PERCENT_AGREEMENT,
    "alpha": alpha_statistic(level="nominal", domain=[0, 1, 2]),
    "alpha_neutral": alpha_statistic(level="nominal", domain=[0, 1, 2]),
    "ac1": AC1,
    "quality_alpha": alpha_statistic(level="ordinal", domain=bc.DOMAIN, parts=2),
}
RULES = ("as is", "ME x 2", "max, g 2", "max, g 2.5", "max, g 3")

_RECORDS: list[dict] = []
_component = iv.annotator_component
_combined = iv.combined_interval


def _record_component(**kw):
    value = _component(**kw)
    _RECORDS.append({"kw": kw, "component": value})
    return value


def _record_combined(point, pair_ci, *, annotator_variance, bounds):
    out = _combined(point, pair_ci, annotator_variance=annotator_variance, bounds=bounds)
    _RECORDS[-1].update(point=point, pair_ci=pair_ci, bounds=bounds, ci=out[0])
    return out


iv.annotator_component = _record_component
iv.combined_interval = _record_combined


def _sums(p, pair, n_units):
    c = p.shape[1]
    s = np.zeros((n_units, c))
    np.add.at(s, pair, p)
    q = np.zeros((n_units, c, c))
    np.add.at(q, pair, p[:, :, None] * p[:, None, :])
    return s, q, np.bincount(pair, minlength=n_units).astype(float)


def _coincidences(s, q, m):
    out = s[:, :, None] * s[:, None, :] - q
    ok = m >= 2
    out[~ok] = 0
    out[ok] /= (m[ok] - 1)[:, None, None]
    return out.reshape(len(m), -1)


def expected_value(name, p, pair, n_units, coin):
    """The statistic at its exact expectation over labels drawn from ``p`` (one row each)."""
    if name == "quality_alpha":
        features = sum(
            _coincidences(*_sums(p[:, 5 * g : 5 * g + 5], pair, n_units)) for g in (0, 1)
        )
        return float(STATS[name].finish(features.sum(0)[None])[0])
    if name == "alpha_neutral":
        p = np.where(coin[pair][:, None], p, p[:, [1, 0, 2]])
    s, q, m = _sums(p, pair, n_units)
    if name in ("alpha", "alpha_neutral"):
        return float(STATS[name].finish(_coincidences(s, q, m).sum(0)[None])[0])
    ok = m >= 2
    agreeing = (s**2).sum(1) - np.einsum("ucc->u", q)
    shares = np.where(ok, agreeing / np.where(ok, m * (m - 1), 1), 0.0)
    if name == "percent":
        return float(shares.sum() / ok.sum())
    rated = m >= 1
    classified = np.where(rated[:, None], s / np.maximum(m, 1)[:, None], 0)
    sums = np.column_stack([shares, ok, classified, rated]).sum(0)[None]
    return float(STATS["ac1"].finish(sums)[0])


def second_moment(effects, codes):
    """Mean over annotators of ``e_i e_i^T`` for the annotators' main effects under ``codes``."""
    e, _ = effects(codes)
    return e.T @ e / len(e)


def panels_variance(name, traits, groups, data, k, n_units, cov, rng):
    """ME: the statistic's variance over panels of leans drawn from ``cov``."""
    pair, annotator, coin = data
    sums = np.zeros((n_units, traits.shape[1]))
    np.add.at(sums, pair, traits)
    m = np.bincount(pair, minlength=n_units)[pair].astype(float)
    base = np.where(
        (m >= 2)[:, None], (sums[pair] - traits) / np.maximum(m - 1, 1)[:, None], traits
    )
    w, v = np.linalg.eigh(cov)
    root = v * np.sqrt(np.clip(w, 0, None))
    values = []
    for _ in range(DRAWS):
        lean = rng.standard_normal((k, len(w))) @ root.T
        p = np.clip(base + lean[annotator], 0, 1)
        for g0, g1 in groups:
            total = p[:, g0:g1].sum(1, keepdims=True)
            p[:, g0:g1] = np.where(
                total > 0, p[:, g0:g1] / np.where(total > 0, total, 1), base[:, g0:g1]
            )
        values.append(expected_value(name, p, pair, n_units, coin))
    values = np.array(values)
    values = values[np.isfinite(values)]
    return float(values.var()) if values.size > 2 else np.nan


def one_study(args):
    cell, bootstrap, seed, target = args
    _RECORDS.clear()
    _, _, data = bc.study_data(cell, seed)
    values = bc.statistics(data, n_pairs=cell.pairs, bootstrap=bootstrap, seed=seed)
    records = list(_RECORDS)
    pair, annotator, preference, ratings, coin = data
    panel = iv.Panel.of(pair, annotator, seed=seed)
    k, n = panel.n_annotators, cell.pairs
    labels = bc.one_hot(preference, 3).astype(float)
    rated = np.hstack([bc.one_hot(ratings[:, 0] - 1, 5), bc.one_hot(ratings[:, 1] - 1, 5)])
    m_bar = np.bincount(pair, minlength=n)[pair].mean()
    shrink = m_bar / (m_bar - 1)
    draws = np.random.default_rng([seed, 55])
    out = {"k": k}
    for traits, groups, names in (
        (labels, [(0, 3)], ("percent", "alpha", "alpha_neutral", "ac1")),
        (rated.astype(float), [(0, 5), (5, 10)], ("quality_alpha",)),
    ):
        effects = iv.annotator_effects(panel, traits)
        observed = second_moment(effects, panel.annotator)
        chance = np.mean([second_moment(effects, c) for c in panel.shuffled], axis=0)
        for name in names:
            args_ = (traits, groups, (pair, panel.annotator, coin), k, n)
            out[name] = {
                "me": panels_variance(name, *args_, (observed - chance) * shrink, draws),
                "me0": panels_variance(name, *args_, chance * shrink, draws),
            }
    for name, record in zip(bc.STATISTICS, records, strict=True):
        out.setdefault(name, {}).update(
            value=values[name]["value"], record=record, target=target[name]
        )
    return out


def _softplus(x, scale):
    return scale * np.logaddexp(0.0, x / scale) if scale > 0 else max(x, 0.0)


def component(rule, entry, k):
    kw = entry["record"]["kw"]
    if rule == "as is" or "me" not in entry or not np.isfinite(entry["me"]):
        return _component(**kw)
    observed, floor = kw["observed"], kw["floor"]
    weight = iv.main_effect_weight(kw["main_effects"])
    scale = (entry["me"] + entry["me0"]) * np.sqrt(2.0 / max(k - 1, 1))
    g = float(rule.split()[-1])
    from_main_effects = weight * g * _softplus(entry["me"], scale)
    if rule.startswith("ME"):
        return from_main_effects
    evidence = -np.expm1(-max(observed - floor, 0) / (3 * floor)) if floor > 0 else 1.0
    return max(from_main_effects, evidence * _component(**kw))


def report(results, name):
    values = np.array([r[name]["value"] for r in results if r[name]["value"] is not None])
    oracle = np.subtract(*np.quantile(values, [0.975, 0.025]))
    cells = []
    for rule in RULES:
        sides, widths = [], []
        for r in results:
            entry = r[name]
            record = entry["record"]
            if "pair_ci" not in record:
                continue
            part = component(rule, entry, r["k"])
            ci = _combined(
                record["point"], record["pair_ci"], annotator_variance=part, bounds=record["bounds"]
            )[0]
            truth = entry["target"]
            sides.append(-1 if truth < ci[0] else (1 if truth > ci[1] else 0))
            widths.append(ci[1] - ci[0])
        sides_ = np.array(sides)
        cells.append(
            f"{100 * np.mean(sides_ == 0):.1f} ({100 * np.mean(sides_ < 0):.1f} / "
            f"{100 * np.mean(sides_ > 0):.1f}) {np.mean(widths) / oracle:.2f}x"
        )
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=300)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--cells", default="3,6,4,0,5,1")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    print("coverage (below / above) mean width over the oracle's, per annotators' part rule\n")
    print("| cell | statistic | " + " | ".join(RULES) + " |")
    print("| --- | --- |" + " --- |" * len(RULES))
    with ProcessPoolExecutor(args.workers) as pool:
        for index in (int(c) for c in args.cells.split(",")):
            cell = bc.CELLS[index]
            target = bc.population(cell, seed=12345)
            jobs = [(cell, args.bootstrap, seed, target) for seed in range(args.studies)]
            results = list(pool.map(one_study, jobs, chunksize=4))
            for name in bc.STATISTICS:
                if name != "label_confirmed":
                    print(f"| {cell.label} | {name} | " + " | ".join(report(results, name)) + " |")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
