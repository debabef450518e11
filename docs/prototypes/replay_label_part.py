"""Record what label_confirmed's annotator-aware interval was built from in every study of
``benchmarks/bench_coverage.py``, then replay other rules for a majority's annotators' part.

A research tool, not part of the report (docs/intervals.md, "Open, and what was tried"): it
swaps :func:`analysis.agreement.intervals.annotator_component` for a recording copy at run time, so it
follows it only as long as its signature stays. Only label_confirmed is computed, so a cell of
4,000 studies records in about 12 s on two cores.

    python docs/prototypes/replay_label_part.py record --cells 0,1,3,4,5,6,7,8,9 --studies 4000
    python docs/prototypes/replay_label_part.py replay
    python docs/prototypes/replay_label_part.py record --edge 3 --studies 3000
    python docs/prototypes/replay_label_part.py replay --records /tmp/replay_label_part/edge3

``--edge MEAN`` records the alike and panel cells with the pairs' log-odds mean at MEAN (1.2 in
the audit's cells): label_confirmed at 0.90-0.95 (3) or 0.94-0.98 (4), where a benchmark whose
pairs work lies and where a rule's shape near 1 shows.

``record`` keeps, per study, the point, the pairs' interval, the counts behind it and the
component's inputs (the bootstrap over annotators, its floor, the number of annotators,
``H / H0``). ``replay`` prints coverage of the population value (in brackets the shares of
studies whose population value lies below / above the interval) and how often the label check
passes (the interval's lower end above ``LABEL_THRESHOLD``) for the rule as it is, recomputed
from the records with ``main``'s own component (it gives back the intervals of records made
with the same rule), and for the variants in ``VARIANTS``, whose knobs re-spell that
component (:func:`component`; at its defaults it is checked against ``main``'s on every
record). The variants measured before label agreement moved to the mid-p interval start from
``BEFORE``, the knobs of the rule then, so that docs/intervals.md's older tables replay.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_coverage as bench

import analysis.agreement.intervals as intervals
from analysis.agreement.panel import Panel
from analysis.distributions import clopper_pearson, mid_p_interval
from analysis.verdicts.conclusion import LABEL_THRESHOLD
from analysis.verdicts.validity import label_share, wilson_interval

RECORDS = Path("/tmp/replay_label_part")
_original_component = intervals.annotator_component
_captured: list[dict] = []


def _recording_component(**inputs):
    component = _original_component(**inputs)
    _captured.append(dict(inputs, component=component))
    return component


def _one_study(job: tuple) -> dict:
    cell, seed, target = job
    _, _, (pair, annotator, preference, _, _) = bench.study_data(cell, seed)
    counts = np.zeros((cell.pairs, 3), dtype=np.int64)
    np.add.at(counts, (pair, preference), 1)
    panel = Panel.of(pair, annotator, seed=seed)
    _captured.clear()
    out = label_share(
        counts, min_annotations=2, decided_only=False, panel=panel, own=bench.one_hot(preference, 3)
    )
    return {
        "value": out["value"],
        "ci95": tuple(out["ci95"]),
        "k": out["k"],
        "n": out["n"],
        "recorded": out.get("ci95_annotators"),
        "inputs": _captured[-1],
        "target": target,
    }


def edge_cells(pair_mean: float) -> tuple[bench.Cell, ...]:
    """The audit's alike and panel cells with the pairs' log-odds mean at ``pair_mean`` (1.2 in
    the audit): label_confirmed near 1, where a benchmark whose pairs work lies."""
    return tuple(replace(bench.CELLS[index], pair_mean=pair_mean) for index in (0, 1, 3, 4))


def record(cells: list[int], studies: int, first_seed: int, *, pair_mean: float | None) -> None:
    intervals.annotator_component = _recording_component
    where = RECORDS if pair_mean is None else RECORDS / f"edge{pair_mean:g}"
    where.mkdir(parents=True, exist_ok=True)
    chosen = (
        [(index, bench.CELLS[index]) for index in cells]
        if pair_mean is None
        else list(enumerate(edge_cells(pair_mean)))
    )
    with ProcessPoolExecutor(2) as pool:
        for index, cell in chosen:
            target = bench.population(cell, seed=12345)["label_confirmed"]
            jobs = [(cell, seed, target) for seed in range(first_seed, first_seed + studies)]
            records = list(pool.map(_one_study, jobs, chunksize=8))
            path = where / f"cell{index}-{first_seed}-{studies}.pkl"
            path.write_bytes(pickle.dumps((cell.label, records)))
            print(f"{path}: {cell.label}", flush=True)


# --- rules -------------------------------------------------------------------------------

Rule = Callable[[dict], float]  # a study's record -> the annotators' variance component


# The majority's knobs before label agreement moved to the mid-p interval (2026-12-04): the
# variants measured then start from these, so that the tables in docs/intervals.md replay.
BEFORE = {"power": 1.0, "growth_to": 2.0}


def component(
    *,
    power: float = intervals.MAJORITY_WEIGHT_POWER,
    growth_to: float = intervals.MAJORITY_GROWTH,
    scale: str = "floor + observed",
    evidence=None,
) -> Rule:
    """:func:`analysis.agreement.intervals.annotator_component` for a majority with its knobs exposed:
    the weight to a ``power``, the spread growth up to ``growth_to`` times, the smoothing's
    scale, and an optional factor for the bootstrap's own evidence (as non-majorities get).
    At its defaults it is ``main``'s (``replay`` checks that on every record)."""

    def rule(r: dict) -> float:
        inputs = r["inputs"]
        s, k = inputs["main_effects"], inputs["annotators"]
        observed, floor = inputs["observed"], inputs["floor"]
        weight = intervals.main_effect_weight(s) ** power
        span = intervals.SPREAD_GROWTH_SPAN
        weight *= 1 + (growth_to - 1) * min(max(s - 1, 0), span) / span
        variance = {"floor + observed": floor + observed, "floor": floor}[scale]
        part = intervals.smooth_positive(observed - floor, variance=variance, annotators=k)
        if evidence is not None:
            part *= -np.expm1(-max(observed - floor, 0) / (evidence * floor))
        return weight * part

    return rule


def project_component(r: dict) -> float:
    """The component as ``main`` computes it, from the recorded inputs."""
    inputs = {key: value for key, value in r["inputs"].items() if key != "component"}
    return float(intervals.annotator_component(**inputs))


@cache
def mid_p(x: float, m: float) -> tuple[float, float]:
    """:func:`analysis.distributions.mid_p_interval` (fractional ``x`` of ``m`` too, as at an
    effective sample size), cached: the replay asks for the same counts many times."""
    return mid_p_interval(x, m)


def _acceptability(x: int, n: int, p: np.ndarray) -> np.ndarray:
    """Blaker's (2000) acceptability of ``x`` of ``n`` at each ``p``: the probability of an
    outcome whose smaller tail is no larger than ``x``'s (his ``acceptbin``)."""
    binom = stats.binom
    at_least, at_most = binom.sf(x - 1, n, p), binom.cdf(x, n, p)
    a1 = at_least + binom.cdf(binom.ppf(at_least, n, p) - 1, n, p)
    a2 = at_most + binom.sf(binom.ppf(1 - at_most, n, p), n, p)
    return np.minimum(a1, a2)


@cache
def blaker(k: int, n: int, *, step: float = 1e-5) -> tuple[float, float]:
    """Blaker's (2000) exact interval, as his ``acceptinterval``: each Clopper-Pearson bound
    moved towards the point until the acceptability reaches 0.05 (so inside Clopper-Pearson and
    still at least 95% coverage at every true share, with less of its excess). Like his
    algorithm it can step over a piece of the acceptable set shorter than ``step`` (Klaschka
    2010, the BlakerCI package); for the replay's counts the coverage it gives at a known
    share was checked against the binomial sum, not against a published table."""
    lo, hi = clopper_pearson(k, n)
    if k > 0:
        grid = np.arange(lo, k / n, step)
        ok = np.flatnonzero(_acceptability(k, n, grid) >= 0.05)
        lo = float(grid[ok[0]]) if ok.size else lo
    if k < n:
        grid = np.arange(hi, k / n, -step)
        ok = np.flatnonzero(_acceptability(k, n, grid) >= 0.05)
        hi = float(grid[ok[0]]) if ok.size else hi
    return lo, hi


def effective_n(r: dict, part: float) -> float:
    """Korn and Graubard's (1998) effective sample size: the pairs' binomial variance over the
    whole variance, ``n * v / (v + part)``, with ``v`` at ``(k + 1/2) / (n + 1)`` so that it is
    defined at 0 and n."""
    k, n = r["k"], r["n"]
    shrunk = (k + 0.5) / (n + 1)
    v = shrunk * (1 - shrunk) / n
    return n * v / (v + part)


def at_effective_n(r: dict, part: float, *, pairs: str) -> tuple[float, float]:
    """The binomial interval (``exact`` Clopper-Pearson or ``mid-p``) at the point's share of
    the effective sample size, the pairs' own interval kept inside: the annotators' part
    shrinks the sample instead of being added to a side, so the interval keeps the binomial's
    shape (longer towards 1/2) and its bounds."""
    m = effective_n(r, part)
    x = r["value"] * m
    if pairs == "exact":
        # clopper_pearson's beta form at fractional counts; it refuses an n_eff below 1
        lo = 0.0 if r["k"] == 0 else float(stats.beta.ppf(0.025, x, m - x + 1))
        hi = 1.0 if r["k"] == r["n"] else float(stats.beta.ppf(0.975, x + 1, m - x))
        kept = clopper_pearson(r["k"], r["n"])
    else:
        lo, hi = mid_p(x, m)
        kept = mid_p(float(r["k"]), float(r["n"]))
    return min(lo, kept[0]), max(hi, kept[1])


def on_scale(
    r: dict, part: float, *, pairs: str = "exact", inside: str | None = None, logit: bool = False
) -> tuple[float, float]:
    """The annotator-aware interval from a component: the pairs' variance per side from the
    Clopper-Pearson (``exact``, as ``main``), Wilson or mid-p interval (``pairs``), combined on
    the share's own scale (as ``main``) or on the log-odds (the component carried there by the
    delta method, divided by ``(p (1 - p))^2``), with the ``inside`` interval (default: the
    pairs' one) kept inside."""
    intervals_of = {
        "exact": lambda: clopper_pearson(r["k"], r["n"]),
        "wilson": lambda: wilson_interval(r["k"], r["n"]),
        "mid-p": lambda: mid_p(float(r["k"]), float(r["n"])),
        "blaker": lambda: blaker(int(r["k"]), int(r["n"])),
    }
    base = intervals_of[pairs]()
    kept = intervals_of[inside or pairs]()
    point = r["value"]
    if logit and 0 < point < 1 and base[0] > 0 and base[1] < 1:
        sides = log_odds_sides(point, base, part)
    else:
        sides = intervals.combined_interval(
            point, base, annotator_variance=part, bounds=(0.0, 1.0)
        )[0]
    return min(sides[0], kept[0]), max(sides[1], kept[1])


def log_odds_sides(point: float, base: tuple[float, float], part: float) -> tuple[float, float]:
    z, centre, slope = intervals.Z975, special.logit(point), point * (1 - point)
    lo, hi = (
        float(
            special.expit(
                centre + sign * z * np.hypot((special.logit(b) - centre) / z, part**0.5 / slope)
            )
        )
        for b, sign in ((base[0], -1), (base[1], 1))
    )
    return lo, hi


VARIANTS: dict[str, Callable[[dict], tuple[float, float]]] = {
    "as it is (mid-p, weight^0.75, growth to 3)": lambda r: on_scale(
        r, project_component(r), pairs="mid-p"
    ),
    "before (exact, weight, growth to 2)": lambda r: on_scale(r, component(**BEFORE)(r)),
    "mid-p, growth to 3": lambda r: on_scale(
        r, component(power=1.0, growth_to=3.0)(r), pairs="mid-p"
    ),
    "mid-p, weight^0.5, growth to 3": lambda r: on_scale(
        r, component(power=0.5, growth_to=3.0)(r), pairs="mid-p"
    ),
    "exact alone": lambda r: on_scale(r, 0.0),
    "exact, on the log-odds": lambda r: on_scale(r, component(**BEFORE)(r), logit=True),
    "Wilson alone": lambda r: on_scale(r, 0.0, pairs="wilson"),
    "Wilson, on the share's scale": lambda r: on_scale(r, component(**BEFORE)(r), pairs="wilson"),
    "Wilson, on the log-odds": lambda r: on_scale(
        r, component(**BEFORE)(r), pairs="wilson", logit=True
    ),
    "Wilson, exact kept inside": lambda r: on_scale(
        r, component(**BEFORE)(r), pairs="wilson", inside="exact"
    ),
    "mid-p, on the log-odds": lambda r: on_scale(
        r, component(**BEFORE)(r), pairs="mid-p", logit=True
    ),
    "exact at the effective sample size": lambda r: at_effective_n(
        r, component(**BEFORE)(r), pairs="exact"
    ),
    "mid-p at the effective sample size": lambda r: at_effective_n(
        r, component(**BEFORE)(r), pairs="mid-p"
    ),
    "mid-p alone": lambda r: on_scale(r, 0.0, pairs="mid-p"),
    "Blaker alone": lambda r: on_scale(r, 0.0, pairs="blaker"),
    "Blaker, on the share's scale": lambda r: on_scale(r, component(**BEFORE)(r), pairs="blaker"),
}
for _name, _knobs in {
    "weight^1.5": {"power": 1.5},
    "weight^2": {"power": 2},
    "scale floor": {"scale": "floor"},
    "evidence 3 floors": {"evidence": 3.0},
    "evidence 1 floor": {"evidence": 1.0},
    "growth to 2.5": {"growth_to": 2.5},
    "growth to 3": {"growth_to": 3.0},
}.items():
    VARIANTS[f"before, {_name}"] = lambda r, k=_knobs: on_scale(r, component(**BEFORE | k)(r))
    VARIANTS[f"Wilson, share's scale, {_name}"] = lambda r, k=_knobs: on_scale(
        r, component(**BEFORE | k)(r), pairs="wilson"
    )
    VARIANTS[f"Blaker, share's scale, {_name}"] = lambda r, k=_knobs: on_scale(
        r, component(**BEFORE | k)(r), pairs="blaker"
    )


def replay(where: Path) -> None:
    cells: dict[str, list[dict]] = {}
    for path in sorted(where.glob("cell*.pkl")):
        label, records = pickle.loads(path.read_bytes())
        cells.setdefault(label, []).extend(records)
    as_is = VARIANTS["as it is (mid-p, weight^0.75, growth to 3)"]
    drift = max(
        max(abs(a - b) for a, b in zip(as_is(r), r["recorded"], strict=True))
        for records in cells.values()
        for r in records
    )
    print(f"the rule as it is against the recorded intervals: largest difference {drift:.1e}")
    knobs = max(
        abs(component()(r) - project_component(r)) for records in cells.values() for r in records
    )
    print(f"component() at its defaults against main's annotator_component: {knobs:.1e}")
    for name, variant in VARIANTS.items():
        print(f"\n{name}")
        for label, records in cells.items():
            below = above = passed = 0
            for r in records:
                lo, hi = variant(r)
                below += r["target"] < lo
                above += r["target"] > hi
                passed += lo > LABEL_THRESHOLD
            n = len(records)
            covered = 100 * (n - below - above) / n
            print(
                f"  {label:55s} {covered:6.2f} ({100 * below / n:.1f} / {100 * above / n:.1f})"
                f"  check passes {100 * passed / n:5.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--cells", default="0,1,3,4,5,6")
    rec.add_argument("--studies", type=int, default=1000)
    rec.add_argument("--first-seed", type=int, default=0)
    rec.add_argument(
        "--edge",
        type=float,
        metavar="MEAN",
        help="record the alike and panel cells at this pairs' log-odds mean instead (into "
        f"{RECORDS}/edgeMEAN)",
    )
    rep = sub.add_parser("replay")
    rep.add_argument("--records", type=Path, default=RECORDS)
    args = parser.parse_args()
    if args.command == "record":
        cells = [int(c) for c in args.cells.split(",")]
        record(cells, args.studies, args.first_seed, pair_mean=args.edge)
    else:
        replay(args.records)


if __name__ == "__main__":
    main()
