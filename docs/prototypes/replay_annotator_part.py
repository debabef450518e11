"""Record what every annotator-aware interval of ``benchmarks/bench_coverage.py`` was built
from, then replay other rules for the annotators' part on the records in seconds.

A research tool, not part of the report (docs/intervals.md, "Open, and what was tried"): it
swaps functions of ``analysis.agreement.intervals`` and ``analysis.agreement.lean_spread`` for recording copies at
run time, so it follows them only as long as their signatures stay.

    python docs/prototypes/replay_annotator_part.py record --cells 3 --studies 600
    python docs/prototypes/replay_annotator_part.py replay [--earlier]
    python docs/prototypes/replay_annotator_part.py panels --cell 3

``record`` runs the bench's studies (1,000 resamples each) and keeps, for each interval, the
point, the pairs' interval, the range and :func:`analysis.agreement.intervals.annotator_part`'s inputs,
with each lean spread also split into its odd and even parts (the statistic at leans ``L`` and
``-L``: ``(f(L) - f(-L)) / 2`` moves with the leans' direction, ``(f(L) + f(-L)) / 2`` with
their spread), on ``main``'s own draws (LEAN_DRAWS / 2 leans and their negatives), so the
recorded intervals are ``main``'s. Each record also keeps the statistic at no lean,
``f(0)``, and every draw, for rules with a part per side. ``replay`` prints coverage of the
population value (in brackets the share of studies whose population value lies above the
interval, then the mean width) for the rule as it is, recomputed from the recorded inputs (it
gives the recorded intervals back), and for the variants in ``VARIANTS`` (the jackknife's count
of the leans' spread and the gain), each through :func:`analysis.agreement.intervals.annotator_part`
itself; ``--earlier`` adds the rule families tried before the leans moved to log-odds on a
calibrated base (docs/intervals.md, "Five more rule families": a part per side, :func:`shifted`
and :func:`sided`; a Welch-Satterthwaite t, :func:`satterthwaite`; gains by part,
:func:`split_gains` and :func:`even_by_share`). Their documented numbers came from records of
that earlier model, including leans not cut to [0, 1] and a ``hybrid`` of cut and uncut
records, which no longer exist: the leans now move the base in log-odds and never leave it.
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

import analysis.agreement.intervals as intervals
import analysis.agreement.lean_spread as lean_spread
from analysis.agreement.bootstrap import Z975

RECORDS = Path("/tmp/replay_annotator_part")
_original_part = intervals.annotator_part
_original_combined = intervals.combined_interval
_original_spread = lean_spread.spread_over_leans
_original_at = lean_spread.statistic_at_leans
_pending: dict = {}
_records: list[dict] = []
# per lean spread: (odd, even variance, total, f(0), f(L) draws, f(-L) draws)
_splits: list[tuple] = []


def _spread_over_leans(statistic, layout, *, covariance, rng):
    """:func:`analysis.agreement.lean_spread.spread_over_leans` itself, keeping its draws (``f(L)`` and
    ``f(-L)``, which it evaluates together) and the statistic at no lean for the records."""
    drawn = []

    def keep(statistic, layout, lean, *, indicator):
        values = _original_at(statistic, layout, lean, indicator=indicator)
        drawn.append(values.reshape(2, -1))
        return values

    lean_spread.statistic_at_leans = keep
    try:
        spread = _original_spread(statistic, layout, covariance=covariance, rng=rng)
    finally:
        lean_spread.statistic_at_leans = _original_at
    plus, minus = np.concatenate(drawn, axis=1) if drawn else (np.array([]), np.array([]))
    n_units = int(layout.unit.max(initial=-1)) + 1
    zero = _original_at(
        statistic,
        layout,
        np.zeros((1, layout.n_annotators, layout.base.shape[1])),
        indicator=lean_spread._unit_indicator(layout.unit, n_units),
    )
    even = spread.variance * spread.even
    _splits.append((spread.variance - even, even, spread.variance, float(zero[0]), plus, minus))
    return spread


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


def record(cells: list[int], *, studies: int, first_seed: int) -> None:
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
            name = f"cell{index}-{first_seed}-{studies}.pkl"
            with open(RECORDS / name, "wb") as f:
                pickle.dump(dict(cell=index, target=target, results=results), f)
            print(f"cell {index}: {studies} studies, {time.perf_counter() - started:.0f} s")


_NOT_INPUTS = (
    "jackknife_part",
    "result",
    "split",
    "point",
    "pair_ci",
    "pairs_variance",
)


def _inputs(part: dict) -> dict:
    """What :func:`analysis.agreement.intervals.annotator_part` was given, as keyword arguments."""
    return {k: v for k, v in part.items() if k not in _NOT_INPUTS}


def _part_at(
    part: dict,
    *,
    lean: float,
    chance: float,
    jackknife: float | None = None,
    even_share: float | None = None,
) -> float:
    """:func:`analysis.agreement.intervals.annotator_part` on the recorded inputs with the lean and
    chance spreads replaced by ``lean`` and ``chance``, already times their gain (its
    smoothing is homogeneous, so dividing both by LEAN_GAIN is the same as a gain of 1), and
    the jackknife's part and the even share where given."""
    gain = intervals.LEAN_GAIN
    inputs = {**_inputs(part), "lean_spread": lean / gain, "chance_spread": chance / gain}
    if even_share is not None:
        inputs["even_share"] = even_share
    return _original_part(part["jackknife_part"] if jackknife is None else jackknife, **inputs)


def as_recorded(name: str, part: dict) -> float:
    """The rule as it is, recomputed from the recorded inputs."""
    return _original_part(part["jackknife_part"], **_inputs(part))


def split_gains(*, odd: float, even: float):
    """``odd`` times the odd part of the lean spread plus ``even`` times the even part in
    place of LEAN_GAIN times the whole."""

    def rule(name: str, part: dict) -> float:
        (o, e, *_), (chance_o, chance_e, *_) = part["split"]
        return _part_at(part, lean=odd * o + even * e, chance=odd * chance_o + even * chance_e)

    return rule


def _semi(entry) -> tuple[float, float]:
    """Twice the downside and upside second moments of the statistic over the lean draws
    (``L`` and ``-L``) about ``f(0)``."""
    _, _, _, zero, plus, minus = entry
    values = np.concatenate([plus, minus])
    values = values[np.isfinite(values)]
    if values.size == 0 or not np.isfinite(zero):
        return np.nan, np.nan
    d = values - zero
    return 2 * float(np.mean(d**2 * (d < 0))), 2 * float(np.mean(d**2 * (d > 0)))


def sided(name: str, part: dict) -> tuple[float, float]:
    """The annotators' part per side at LEAN_GAIN: the lower side from the draws below
    ``f(0)``, the upper from those above."""
    (lean_lo, lean_hi), (chance_lo, chance_hi) = (_semi(entry) for entry in part["split"][:2])
    gain = intervals.LEAN_GAIN
    return (
        _part_at(part, lean=gain * lean_lo, chance=gain * chance_lo),
        _part_at(part, lean=gain * lean_hi, chance=gain * chance_hi),
    )


def _pieces(entry) -> tuple[float, float, float]:
    """``(odd, even variance, even shift)`` of the draws: ``mean(o^2)``, ``var(e)`` and
    ``mean(e)`` for ``o = (f(L) - f(-L)) / 2`` and ``e = (f(L) + f(-L)) / 2 - f(0)``."""
    _, _, _, zero, plus, minus = entry
    ok = np.isfinite(plus) & np.isfinite(minus)
    if ok.sum() == 0 or not np.isfinite(zero):
        return np.nan, np.nan, np.nan
    o = (plus[ok] - minus[ok]) / 2
    e = (plus[ok] + minus[ok]) / 2 - zero
    return float(np.mean(o**2)), float(e.var()), float(e.mean())


def shifted(*, odd: float, even: float, shift: float, other: float):
    """Per side, ``odd`` x the odd part; ``even`` x the even variance and ``shift`` x its
    squared mean on the side the mean points to, ``other`` x the even variance on the other."""

    def on(side: float, pieces: tuple[float, float, float]) -> float:
        o, v, m = pieces
        return odd * o + (even * v + shift * m * m if np.sign(m) == side else other * v)

    def rule(name: str, part: dict) -> tuple[float, float]:
        lean, chance = (_pieces(entry) for entry in part["split"][:2])
        lower, upper = (
            _part_at(part, lean=on(side, lean), chance=on(side, chance)) for side in (-1.0, 1.0)
        )
        return lower, upper

    return rule


def _at_t(point, pair_ci, variance, df) -> tuple[float, float]:
    """Per side, the annotators' part that makes :func:`analysis.agreement.intervals.combined_interval`'s
    ``z * sqrt(pairs + part)`` equal to ``t(nu) * sqrt(pairs + variance)``, ``nu`` the
    Welch-Satterthwaite degrees of freedom (``variance`` on ``df``, the pairs' on infinitely
    many)."""
    from scipy import stats

    out = []
    for bound in pair_ci:
        pairs = ((point - bound) / Z975) ** 2
        total = pairs + variance
        nu = total**2 / (variance**2 / df) if variance > 0 else 1e9
        out.append((stats.t.ppf(0.975, nu) / Z975) ** 2 * total - pairs)
    return out[0], out[1]


def satterthwaite(*, gain: float):
    """The annotators' part at lean gain ``gain`` (in place of LEAN_GAIN), the interval's
    sides at a t quantile with Welch-Satterthwaite degrees of freedom: the part on
    ``annotators - 1``, the pairs' variance on infinitely many."""

    def rule(name: str, part: dict) -> tuple[float, float]:
        inputs = _inputs(part)
        value = _part_at(
            part, lean=gain * inputs["lean_spread"], chance=gain * inputs["chance_spread"]
        )
        return _at_t(part["point"], part["pair_ci"], value, inputs["annotators"] - 1)

    return rule


def even_by_share(*, odd: float, low: float, high: float):
    """``odd`` x the odd part; the even part's gain rising from ``low`` to ``high`` with its
    share of itself plus the pairs' variance (a few annotators' uncertainty matters in
    proportion to the share of the variance that rests on them)."""

    def rule(name: str, part: dict) -> float:
        (o, e, *_), (chance_o, chance_e, *_) = part["split"]
        pairs = part["pairs_variance"]
        gain = low + (high - low) * (e / (e + pairs) if e + pairs > 0 else 0.0)
        return _part_at(part, lean=odd * o + gain * e, chance=odd * chance_o + gain * chance_e)

    return rule


def _sided_interval(point, pair_ci, *, lower, upper, bounds):
    """:func:`analysis.agreement.intervals.combined_interval` with its own annotators' part per side."""
    los = _original_combined(point, pair_ci, annotator_variance=lower, bounds=bounds)[0][0]
    his = _original_combined(point, pair_ci, annotator_variance=upper, bounds=bounds)[0][1]
    return los, his


def _prepare(data: dict) -> None:
    """Once per record: the point, the pairs' interval and its variance into each part."""
    for stored in data.values():
        for result in stored["results"]:
            for entry in result["records"]:
                part = entry["part"]
                if part is None:
                    continue
                lo, hi = entry["pair_ci"]
                part.update(
                    point=entry["point"],
                    pair_ci=entry["pair_ci"],
                    pairs_variance=((hi - lo) / 2 / Z975) ** 2,
                )


def counted(*, gain: float, count):
    """LEAN_GAIN replaced by ``gain``, and the jackknife's part divided by ``1 + (count(k) -
    1) * even share`` in place of the rule's ``1 + even share / (k - 2)``, its count of the
    leans' spread ``(k - 1) / (k - 2)``."""

    def rule(name: str, part: dict) -> float:
        divisor = 1 + (count(part["annotators"]) - 1) * part["even_share"]
        return _part_at(
            part,
            lean=gain * part["lean_spread"],
            chance=gain * part["chance_spread"],
            jackknife=part["jackknife_part"] / divisor,
            even_share=0.0,
        )

    return rule


def _as_rule(k: int) -> float:
    return (k - 1) / (k - 2)


def _pairwise(k: int) -> float:
    """The count of a purely pairwise (second-order) part."""
    return 2 * (k - 1) / (k - 2)


VARIANTS = {
    "recorded": as_recorded,
    "jackknife as it is": counted(gain=2.5, count=lambda k: 1.0),
    "count 2(k-1)/(k-2)": counted(gain=2.5, count=_pairwise),
    "gain 2": counted(gain=2.0, count=_as_rule),
    "gain 1.5": counted(gain=1.5, count=_as_rule),
}
EARLIER = {
    "side": shifted(odd=2.5, even=2.5, shift=1.0, other=0.0),
    "side, half": shifted(odd=2.5, even=2.5, shift=1.0, other=0.5),
    "both + shift": shifted(odd=2.5, even=2.5, shift=1.0, other=2.5),
    "semi f(0)": sided,
    "odd 3.5 / even 1": split_gains(odd=3.5, even=1.0),
    "t, gain 1": satterthwaite(gain=1.0),
    "t, gain 1.5": satterthwaite(gain=1.5),
    "even by share": even_by_share(odd=3.0, low=1.0, high=6.0),
}


def replay(pattern: str, *, earlier: bool) -> None:
    rules = {**VARIANTS, **(EARLIER if earlier else {})}
    data: dict[int, dict] = {}
    for path in sorted(RECORDS.glob(pattern)):
        with open(path, "rb") as f:
            stored = pickle.load(f)
        data.setdefault(stored["cell"], dict(target=stored["target"], results=[]))
        data[stored["cell"]]["results"] += stored["results"]
    _prepare(data)
    print("| cell | statistic | studies | " + " | ".join(rules) + " |")
    for index, stored in sorted(data.items()):
        for position, name in enumerate(bench.STATISTICS):
            if position >= len(stored["results"][0]["records"]):
                continue
            truth = stored["target"][name]
            row = []
            for rule in rules.values():
                covered, above, widths = [], [], []
                for result in stored["results"]:
                    entry = result["records"][position]
                    part = entry["part"]
                    variance = entry["variance"] if part is None else rule(name, part)
                    lower, upper = variance if isinstance(variance, tuple) else (variance,) * 2
                    lo, hi = _sided_interval(
                        entry["point"],
                        entry["pair_ci"],
                        lower=lower,
                        upper=upper,
                        bounds=entry["bounds"],
                    )
                    covered.append(lo <= truth <= hi)
                    above.append(hi < truth)
                    widths.append(hi - lo)
                row.append(
                    f"{100 * np.mean(covered):.1f} ({100 * np.mean(above):.1f}) w{np.mean(widths):.3f}"
                )
            studies = len(stored["results"])
            print(f"| {index} | {name} | {studies} | " + " | ".join(row) + " |")


def panels(index: int, *, count: int, pairs: int) -> None:
    """What moves a panel's value: ``count`` panels drawn from cell ``index``'s population,
    each statistic on ``pairs`` pairs rated by that panel, against the population value, and
    its correlation with the panel's mean lean and the spread of its leans and offsets."""
    cell = bench.CELLS[index]
    target = bench.population(cell, seed=12345)
    rows = []
    for seed in range(count):
        rng = np.random.default_rng([seed, 99])
        lean = rng.normal(0, cell.spread, cell.pool)
        offset = rng.normal(0, cell.spread, cell.pool)
        data = bench.simulate(rng, cell, n_pairs=pairs, lean=lean, offset=offset)
        values = bench.values_of(data, pairs)
        rows.append(
            [values[name] for name in bench.STATISTICS]
            + [lean.mean(), lean.var(ddof=1), offset.var(ddof=1)]
        )
    table = np.array(rows)
    print(
        "| statistic | population | bias | sd over panels | r mean lean | r lean var | r offset var |"
    )
    for i, name in enumerate(bench.STATISTICS):
        r = [np.corrcoef(table[:, i], table[:, j])[0, 1] for j in (-3, -2, -1)]
        print(
            f"| {name} | {target[name]:.4f} | {table[:, i].mean() - target[name]:+.4f} "
            f"| {table[:, i].std():.4f} | {r[0]:+.2f} | {r[1]:+.2f} | {r[2]:+.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("record")
    run.add_argument("--cells", default="3")
    run.add_argument("--studies", type=int, default=600)
    run.add_argument("--first-seed", type=int, default=0)
    again = commands.add_parser("replay")
    again.add_argument("--pattern", default="cell*.pkl")
    again.add_argument("--earlier", action="store_true", help="also the earlier rule families")
    drawn = commands.add_parser("panels")
    drawn.add_argument("--cell", type=int, default=3)
    drawn.add_argument("--panels", type=int, default=300)
    drawn.add_argument("--pairs", type=int, default=20_000)
    args = parser.parse_args()
    if args.command == "record":
        cells = [int(c) for c in args.cells.split(",")]
        record(cells, studies=args.studies, first_seed=args.first_seed)
    elif args.command == "panels":
        panels(args.cell, count=args.panels, pairs=args.pairs)
    else:
        replay(args.pattern, earlier=args.earlier)


if __name__ == "__main__":
    main()
