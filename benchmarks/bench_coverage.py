"""Coverage and width of the report's 95% intervals on simulated studies with a known truth.

    python benchmarks/bench_coverage.py                 # 1,000 studies per cell, 1,000 resamples
    python benchmarks/bench_coverage.py --studies 300   # quicker, wider standard errors
    python benchmarks/bench_coverage.py --first-seed 1000   # another 1,000 studies a cell

The cells of the statistical audit (issue 20):

- exchangeable annotators (alike) at 100 pairs x 3, 40 x 5 and 100 x 2 (every annotator of the
  panel rates every pair);
- a fixed panel of three recruited from a population whose members differ (a lasting lean to
  chosen, log-odds sd 0.7, and a lasting rating offset, sd 0.7) at 100 x 3 and 40 x 3;
- unbalanced: 80 pairs, each rated by 2 or 5 annotators (even odds) drawn from a pool of 6, 10%
  of those annotations missing; annotators alike, and differing as the panel.

Three more cells run only when asked for (``--cells 7,8,9``): a panel of five who differ at
40 x 5 and 100 x 5 and one of four at 60 x 4, to tell which misses of the panel of three come
from having three annotators and which from the rule.

And the cells behind the report's evidence rule (``--cells 10,11,12,13,14,15``,
``analysis.agreement.intervals.MIN_PAIRS_WITH_THREE``): a panel of three who differ in which two
annotators rate all 100 pairs and the third only 3, 10, 20, 30, 50 or 100 of them. The report
gives no ``ci95_annotators`` below the rule's count, so run these with ``--no-evidence-rule``
to see the intervals the rule holds back.

Every pair has its own propensity to be judged chosen / rejected / tie and its own quality; an
annotation is a draw from the pair's, shifted by its annotator's lean and offset.

Two truths. The *population* value: the statistic on one 40,000-pair study of the same design
in which every annotation comes from a fresh annotator of the population (what
``ci95_annotators`` claims to cover). The value *for the study's own annotators*: the statistic
on a 20,000-pair study of the same design rated by the study's own panel (what ``ci95`` claims
to cover; for alike annotators the two are the same). The *oracle* width is the spread of the
estimates across the simulated studies (their 2.5% to 97.5% quantiles): what an interval would
need to be if the truth's sampling distribution were known. The statistics are computed by the
report's own functions. Runs its studies in two processes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from analysis.agreement import intervals
from analysis.agreement.coefficients import alpha, gwet_ac1, neutral_coding, percent_agreement
from analysis.agreement.panel import Panel
from analysis.verdicts.quality import quality_alpha
from analysis.verdicts.validity import label_share

DOMAIN = [1, 2, 3, 4, 5]
STATISTICS = ("percent", "alpha", "alpha_neutral", "ac1", "label_confirmed", "quality_alpha")
# The range of each statistic with three categories (AC1's minimum is -1 / (Q - 1)).
RANGES = {
    "percent": (0.0, 1.0),
    "alpha": (-1.0, 1.0),
    "alpha_neutral": (-1.0, 1.0),
    "ac1": (-0.5, 1.0),
    "label_confirmed": (0.0, 1.0),
    "quality_alpha": (-1.0, 1.0),
}
SPREAD = 0.7
# The audit's mean of the pairs' log-odds of being judged chosen (sd 1.2): label_confirmed
# about 0.56-0.72. Higher puts it near 1, where a benchmark whose pairs work lies.
PAIR_MEAN = 1.2
POPULATION_PAIRS = 40_000
OWN_PAIRS = 20_000


@dataclass(frozen=True)
class Cell:
    name: str
    pairs: int
    sizes: tuple[int, ...]  # annotations a pair gets, one drawn per pair at even odds
    pool: int
    spread: float  # sd of the annotators' lean (log-odds) and rating offset
    missing: float = 0.0
    pair_mean: float = PAIR_MEAN
    # Topped up: two annotators on every pair, a third on this many of ``pairs`` (the same
    # share in the population study); None: sizes drawn at even odds.
    third: int | None = None

    @property
    def label(self) -> str:
        sizes = " or ".join(map(str, self.sizes))
        if self.third is not None:
            sizes = f"2, a third on {self.third}"
        extra = f", pool {self.pool}, {self.missing:.0%} missing" if self.missing else ""
        if self.pair_mean != PAIR_MEAN:
            extra += f", pairs' log-odds mean {self.pair_mean:g}"
        return f"{self.name} {self.pairs} x {sizes}{extra}"


CELLS = (
    Cell("exchangeable", 100, (3,), 3, 0.0),
    Cell("exchangeable", 40, (5,), 5, 0.0),
    Cell("exchangeable", 100, (2,), 2, 0.0),
    Cell("panel", 100, (3,), 3, SPREAD),
    Cell("panel", 40, (3,), 3, SPREAD),
    Cell("unbalanced alike", 80, (2, 5), 6, 0.0, missing=0.1),
    Cell("unbalanced differing", 80, (2, 5), 6, SPREAD, missing=0.1),
    # not the audit's: more annotators who differ (run with --cells 7,8,9)
    Cell("panel", 40, (5,), 5, SPREAD),
    Cell("panel", 100, (5,), 5, SPREAD),
    Cell("panel", 60, (4,), 4, SPREAD),
    # the evidence rule: two of a panel of three on every pair, the third on some (--cells 10-15: 10,11,...)
    *(Cell("topped up", 100, (2, 3), 3, SPREAD, third=m) for m in (3, 10, 20, 30, 50, 100)),
)
AUDIT_CELLS = 7  # the default run: the first seven


def simulate(rng, cell: Cell, *, n_pairs: int, lean=None, offset=None):
    """Annotations as arrays: pair, annotator, preference code (0 chosen, 1 rejected, 2 tie),
    chosen and rejected rating, and a per-pair coin for the neutral orientation. Without
    ``lean``/``offset`` every annotation has a fresh annotator of the population."""
    if cell.third is None:
        sizes = rng.choice(cell.sizes, size=n_pairs)
    else:
        sizes = np.full(n_pairs, 2)
        sizes[rng.permutation(n_pairs)[: round(cell.third * n_pairs / cell.pairs)]] = 3
    pair = np.repeat(np.arange(n_pairs), sizes)
    n = pair.size
    if lean is None:
        annotator = np.arange(n)
        lean = rng.normal(0, cell.spread, n) if cell.spread else np.zeros(n)
        offset = rng.normal(0, cell.spread, n) if cell.spread else np.zeros(n)
    elif cell.pool == max(cell.sizes) and len(cell.sizes) == 1:
        annotator = np.tile(np.arange(cell.pool), n_pairs)
    elif cell.third is not None:  # the panel's first two on every pair, the third where drawn
        annotator = np.concatenate([np.arange(size) for size in sizes])
    else:
        order = np.argsort(rng.random((n_pairs, cell.pool)), axis=1)
        annotator = np.concatenate([order[p, : sizes[p]] for p in range(n_pairs)])
    keep = rng.random(n) >= cell.missing
    pair, annotator, n = pair[keep], annotator[keep], int(keep.sum())

    pair_logit = rng.normal(cell.pair_mean, 1.2, n_pairs)
    tie = 0.1
    p_chosen = (1 - tie) / (1 + np.exp(-(pair_logit[pair] + lean[annotator])))
    draw = rng.random(n)
    preference = np.where(draw < p_chosen, 0, np.where(draw < 1 - tie, 1, 2))
    quality = rng.normal(3.8, 0.7, (n_pairs, 2))
    noise = rng.normal(0, 0.7, (n, 2))
    ratings = np.clip(np.rint(quality[pair] + offset[annotator, None] + noise), 1, 5).astype(int)
    coin = rng.random(n_pairs) < 0.5
    return pair, annotator, preference, ratings, coin


def one_hot(codes, width, offset=0):
    out = np.zeros((codes.size, width), dtype=np.int64)
    out[np.arange(codes.size), offset + codes] = 1
    return out


def statistics(data, *, n_pairs: int, bootstrap: int, seed: int, intervals: bool = True):
    pair, annotator, preference, ratings, coin = data
    counts = np.zeros((n_pairs, 3), dtype=np.int64)
    np.add.at(counts, (pair, preference), 1)
    own = one_hot(preference, 3)
    neutral, neutral_own, neutral_columns = neutral_coding(counts, own, keep=coin, pair=pair)
    quality_counts = np.zeros((n_pairs, 2, 5), dtype=np.int64)
    np.add.at(quality_counts, (pair, 0, ratings[:, 0] - 1), 1)
    np.add.at(quality_counts, (pair, 1, ratings[:, 1] - 1), 1)
    quality_own = one_hot(ratings[:, 0] - 1, 10) + one_hot(ratings[:, 1] - 1, 10, offset=5)

    boot = {"bootstrap": bootstrap if intervals else 0, "seed": seed}
    panel = Panel.of(pair, annotator, seed=seed) if intervals else None
    return {
        "percent": percent_agreement(counts, **boot, panel=panel, own=own).as_dict(),
        "alpha": alpha(
            counts, level="nominal", domain=[0, 1, 2], **boot, panel=panel, own=own
        ).as_dict(),
        "alpha_neutral": alpha(
            neutral,
            level="nominal",
            domain=[0, 1, 2],
            **boot,
            panel=panel.with_traits(own, columns=neutral_columns) if panel else None,
            own=neutral_own,
        ).as_dict(),
        "ac1": gwet_ac1(counts, **boot, panel=panel, own=own).as_dict(),
        "label_confirmed": label_share(
            counts, min_annotations=2, decided_only=False, panel=panel, own=own
        ),
        "quality_alpha": quality_alpha(
            quality_counts.reshape(-1, 5), domain=DOMAIN, **boot, panel=panel, own=quality_own
        ),
    }


def values_of(data, n_pairs: int) -> dict[str, float]:
    values = statistics(data, n_pairs=n_pairs, bootstrap=0, seed=0, intervals=False)
    return {name: values[name]["value"] for name in STATISTICS}


def population(cell: Cell, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return values_of(simulate(rng, cell, n_pairs=POPULATION_PAIRS), POPULATION_PAIRS)


def study_data(cell: Cell, seed: int):
    """Study ``seed`` of ``cell``: its panel's leans and offsets and its annotations."""
    rng = np.random.default_rng([seed, 7])
    lean = rng.normal(0, cell.spread, cell.pool) if cell.spread else np.zeros(cell.pool)
    offset = rng.normal(0, cell.spread, cell.pool) if cell.spread else np.zeros(cell.pool)
    return lean, offset, simulate(rng, cell, n_pairs=cell.pairs, lean=lean, offset=offset)


def one_study(args) -> dict:
    cell, bootstrap, seed, target = args
    lean, offset, data = study_data(cell, seed)
    values = statistics(data, n_pairs=cell.pairs, bootstrap=bootstrap, seed=seed)
    if cell.spread:
        own_data = simulate(
            np.random.default_rng([seed, 8]), cell, n_pairs=OWN_PAIRS, lean=lean, offset=offset
        )
        own_truth = values_of(own_data, OWN_PAIRS)
    else:
        own_truth = target
    out = {}
    for name in STATISTICS:
        v = values[name]
        lo, hi = RANGES[name]
        out[name] = {
            "value": v["value"],
            "ci95": _side(v.get("ci95"), own_truth[name]),
            "ci95_annotators": _side(v.get("ci95_annotators"), target[name]),
            "width": _width(v.get("ci95_annotators")),
            "outside": any(
                ci is not None and (ci[0] < lo - 1e-12 or ci[1] > hi + 1e-12)
                for ci in (v.get("ci95"), v.get("ci95_annotators"))
            ),
        }
    return out


def _side(ci, truth) -> int | None:
    """-1 when the truth lies below the interval (the interval is too high: the error that lets
    a check on a lower bound pass wrongly), +1 above it, 0 covered; None without an interval."""
    if ci is None:
        return None
    return -1 if truth < ci[0] else (1 if truth > ci[1] else 0)


def _width(ci) -> float | None:
    return None if ci is None else ci[1] - ci[0]


def coverage(sides: list[int | None]) -> str:
    """Share of studies whose truth the interval covers, in % with its standard error."""
    defined = [s for s in sides if s is not None]
    if not defined:
        return "null"
    p = float(np.mean([s == 0 for s in defined]))
    se = np.sqrt(p * (1 - p) / len(defined))
    missing = len(sides) - len(defined)
    return f"{100 * p:.1f} +- {100 * se:.1f}" + (f" ({missing} null)" if missing else "")


def misses(sides: list[int | None]) -> str:
    """Share of studies whose truth lies below / above the interval, in %."""
    defined = [s for s in sides if s is not None]
    if not defined:
        return "n/a"
    below = 100 * sum(s < 0 for s in defined) / len(defined)
    above = 100 * sum(s > 0 for s in defined) / len(defined)
    return f"{below:.1f} / {above:.1f}"


def width_ratio(results: list[dict]) -> str:
    values = np.array([r["value"] for r in results if r["value"] is not None])
    widths = np.array([r["width"] for r in results if r["width"] is not None])
    if values.size < 20 or not widths.size:
        return "n/a"
    oracle = np.subtract(*np.quantile(values, [0.975, 0.025]))
    if not oracle > 0:
        return "n/a"
    return f"{np.mean(widths) / oracle:.2f} ({np.median(widths) / oracle:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=1000, help="studies per cell")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples per interval")
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="seed of the first study (studies are seeded in turn)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--cells",
        default="",
        help="comma-separated cell numbers (default the audit's seven, 0-6; 7-9 more panels)",
    )
    parser.add_argument(
        "--no-evidence-rule",
        action="store_true",
        help="compute ci95_annotators below the report's count of pairs with three or more "
        "annotations too (to see what the rule holds back; cells 10-15)",
    )
    args = parser.parse_args()
    if args.no_evidence_rule:
        # read at call time by the rule (AnnotatorEvidence.sufficient); the workers are forked
        intervals.MIN_EVIDENCE_PAIRS = 0
    chosen = [int(c) for c in args.cells.split(",") if c] or range(AUDIT_CELLS)
    started = time.perf_counter()
    print(
        f"{args.studies} simulated studies per cell, {args.bootstrap} resamples each; coverage "
        "in % +- standard error (goal 93-97); ci95 of the value for the study's own "
        "annotators, ci95_annotators of the population value; width: mean ci95_annotators "
        "width / oracle width (goal at most 1.3 with alike annotators); below / above: % of "
        "studies whose population value lies below / above ci95_annotators (below is the miss "
        "that lets a check on a lower bound pass wrongly; 2.5 each is nominal); outside: "
        "intervals reaching outside the statistic's range"
    )
    print()
    print(
        "| cell | statistic (population value) | ci95 | ci95_annotators | below / above "
        "| width / oracle | outside |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for index in chosen:
            cell = CELLS[index]
            target = population(cell, seed=12345)
            seeds = range(args.first_seed, args.first_seed + args.studies)
            jobs = [(cell, args.bootstrap, seed, target) for seed in seeds]
            results = list(pool.map(one_study, jobs, chunksize=4))
            for name in STATISTICS:
                rows = [r[name] for r in results]
                print(
                    f"| {cell.label} | {name} ({target[name]:.3f}) "
                    f"| {coverage([r['ci95'] for r in rows])} "
                    f"| {coverage([r['ci95_annotators'] for r in rows])} "
                    f"| {misses([r['ci95_annotators'] for r in rows])} "
                    f"| {width_ratio(rows)} | {sum(r['outside'] for r in rows)} |",
                    flush=True,
                )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
