"""Record what every annotator-aware interval of ``benchmarks/bench_coverage.py`` was built
from, then replay other rules for the annotators' part on the records in seconds.

A research tool, not part of the report (docs/intervals.md, "Open, and what was tried"): it
swaps functions of ``analysis.intervals`` and ``analysis.lean_spread`` for recording copies at
run time, so it follows them only as long as their signatures stay.

    python docs/prototypes/replay_annotator_part.py record --cells 3 --studies 600
    python docs/prototypes/replay_annotator_part.py record --cells 3 --studies 600 --uncut
    python docs/prototypes/replay_annotator_part.py replay

``record`` runs the bench's studies (1,000 resamples each) and keeps, for each interval, the
point, the pairs' interval, the range and :func:`analysis.intervals.annotator_part`'s inputs,
with each lean spread also split into its odd and even parts (the statistic at leans ``L`` and
``-L``: ``(f(L) - f(-L)) / 2`` moves with the leans' direction, ``(f(L) + f(-L)) / 2`` with
their spread; both over the same draws, so the total is the variance of all 2 x LEAN_DRAWS
values). ``--uncut`` adds the leans to the base probabilities without cutting them to [0, 1]
(the expected features are a polynomial in the probabilities, so they stay defined).
``replay`` prints coverage of the population value for the rule as recorded and for the
variants in ``VARIANTS``.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_coverage as bench

import analysis.intervals as intervals
import analysis.lean_spread as lean_spread
from analysis.intervals import (
    combined_interval,
    main_effect_weight,
    smooth_positive,
)

RECORDS = Path("/tmp/replay_annotator_part")
_original_part = intervals.annotator_part
_original_combined = intervals.combined_interval
_pending: dict = {}
_records: list[dict] = []
_splits: list[tuple[float, float, float]] = []
_uncut = False


def _spread_over_leans(statistic, layout, *, covariance, rng):
    """:func:`analysis.lean_spread.spread_over_leans` at ``L`` and ``-L``; records the odd
    and even parts' variances and returns the total's."""
    n, d = layout.base.shape
    parts, width = layout.parts, d // layout.parts
    draws = lean_spread.LEAN_DRAWS
    n_units = int(layout.unit.max(initial=-1)) + 1
    eigenvalues, eigenvectors = np.linalg.eigh((covariance + covariance.T) / 2)
    root = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
    indicator = lean_spread._unit_indicator(layout.unit, n_units)
    fallback = layout.base.reshape(n, parts, width)
    lean = rng.standard_normal((draws, layout.n_annotators, d)) @ root.T
    values = []
    for sign in (1.0, -1.0):
        p = layout.base + sign * lean[:, layout.annotator]
        p = p.reshape(draws, n, parts, width)
        if _uncut:
            # leans sum to 0 in each part, so p keeps summing to 1 where it was a distribution
            p = np.where(np.abs(p.sum(axis=-1, keepdims=True) - 1) < 1e-9, p, fallback)
        else:
            p = np.clip(p, 0.0, 1.0)
            total = p.sum(axis=-1, keepdims=True)
            p = np.where(total > 0, p / np.where(total > 0, total, 1.0), fallback)
        p = (p * layout.answered[..., None]).reshape(draws, n, d)
        p = np.take_along_axis(p, np.broadcast_to(layout.columns[None], p.shape), axis=2)
        features = lean_spread._expected_features(statistic, p, indicator=indicator, parts=parts)
        values.append(statistic.finish(features.sum(axis=1)))
    plus, minus = values
    defined = np.isfinite(plus) & np.isfinite(minus)
    if defined.sum() * 2 < draws:
        _splits.append((np.nan, np.nan, np.nan))
        return float("nan")
    odd = (plus[defined] - minus[defined]) / 2
    even = (plus[defined] + minus[defined]) / 2
    total = float(np.concatenate([plus[defined], minus[defined]]).var())
    _splits.append((float(np.mean(odd**2)), float(even.var()), total))
    return total


def _annotator_part(jackknife_part, **inputs):
    out = _original_part(jackknife_part, **inputs)
    _pending.update(inputs, jackknife_part=jackknife_part, result=out, split=list(_splits))
    _splits.clear()
    return out


def _combined_interval(point, pair_ci, *, annotator_variance, bounds):
    part = dict(_pending) if _pending else None
    _records.append(
        dict(point=point, pair_ci=pair_ci, variance=annotator_variance, bounds=bounds, part=part)
    )
    _pending.clear()
    return _original_combined(point, pair_ci, annotator_variance=annotator_variance, bounds=bounds)


def _study(args) -> dict:
    _records.clear()
    out = bench.one_study(args)
    return dict(seed=args[2], out=out, records=list(_records))


def record(cells: list[int], *, studies: int, first_seed: int, uncut: bool) -> None:
    global _uncut
    _uncut = uncut
    lean_spread.spread_over_leans = _spread_over_leans
    intervals.annotator_part = _annotator_part
    intervals.combined_interval = _combined_interval
    RECORDS.mkdir(exist_ok=True)
    started = time.perf_counter()
    # the workers are forked after the swap, so they record too
    with ProcessPoolExecutor(2) as pool:
        for index in cells:
            cell = bench.CELLS[index]
            target = bench.population(cell, seed=12345)
            jobs = [(cell, 1000, seed, target) for seed in range(first_seed, first_seed + studies)]
            results = list(pool.map(_study, jobs, chunksize=4))
            name = f"{'uncut' if uncut else 'cut'}-cell{index}-{first_seed}-{studies}.pkl"
            with open(RECORDS / name, "wb") as f:
                pickle.dump(dict(cell=index, target=target, results=results), f)
            print(f"cell {index}: {studies} studies, {time.perf_counter() - started:.0f} s")


def as_recorded(name: str, part: dict) -> float:
    return part["result"]


def split_gains(*, odd: float, even: float, evidence_scale: float = 3.0):
    """The annotators' part with ``odd`` times the odd part of the lean spread plus ``even``
    times the even part in place of LEAN_GAIN times the whole (the same smoothing, weight and
    jackknife's evidence as :func:`analysis.intervals.annotator_part`)."""

    def rule(name: str, part: dict) -> float:
        (o, e, total), (chance_o, chance_e, _) = part["split"]
        if not np.isfinite(total):
            return part["jackknife_part"]
        spread, chance = odd * o + even * e, odd * chance_o + even * chance_e
        from_leans = main_effect_weight(part["main_effects"]) * smooth_positive(
            spread, variance=spread + max(chance, 0.0), annotators=part["annotators"]
        )
        floor, observed = part["floor"], part["observed"]
        evidence = 1.0
        if floor > 0 and np.isfinite(floor):
            evidence = float(-np.expm1(-max(observed - floor, 0.0) / (evidence_scale * floor)))
        return max(from_leans, evidence * part["jackknife_part"])

    return rule


VARIANTS = {
    "recorded": as_recorded,
    "2.5 / 2.5": split_gains(odd=2.5, even=2.5),
    "3.5 / 1": split_gains(odd=3.5, even=1.0),
    "2 / 2.5": split_gains(odd=2.0, even=2.5),
}


def replay(pattern: str) -> None:
    data: dict[tuple[str, int], dict] = {}
    for path in sorted(RECORDS.glob(pattern)):
        with open(path, "rb") as f:
            stored = pickle.load(f)
        key = (path.name.split("-")[0], stored["cell"])
        data.setdefault(key, dict(target=stored["target"], results=[]))
        data[key]["results"] += stored["results"]
    print("| leans | cell | statistic | studies | " + " | ".join(VARIANTS) + " |")
    for (kind, index), stored in sorted(data.items()):
        for position, name in enumerate(bench.STATISTICS):
            truth = stored["target"][name]
            row = []
            for rule in VARIANTS.values():
                covered = []
                for result in stored["results"]:
                    entry = result["records"][position]
                    part = entry["part"]
                    variance = entry["variance"] if part is None else rule(name, part)
                    lo, hi = combined_interval(
                        entry["point"],
                        entry["pair_ci"],
                        annotator_variance=variance,
                        bounds=entry["bounds"],
                    )[0]
                    covered.append(lo <= truth <= hi)
                row.append(f"{100 * np.mean(covered):.1f}")
            studies = len(stored["results"])
            print(f"| {kind} | {index} | {name} | {studies} | " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("record")
    run.add_argument("--cells", default="3")
    run.add_argument("--studies", type=int, default=600)
    run.add_argument("--first-seed", type=int, default=0)
    run.add_argument("--uncut", action="store_true", help="leans not cut to [0, 1]")
    again = commands.add_parser("replay")
    again.add_argument("--pattern", default="*.pkl")
    args = parser.parse_args()
    if args.command == "record":
        cells = [int(c) for c in args.cells.split(",")]
        record(cells, studies=args.studies, first_seed=args.first_seed, uncut=args.uncut)
    else:
        replay(args.pattern)


if __name__ == "__main__":
    main()
