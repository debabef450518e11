"""Coverage of the report's 95% intervals on simulated studies with a known truth.

    python benchmarks/bench_coverage.py                 # 300 studies per design, 1,000 resamples
    python benchmarks/bench_coverage.py --studies 100   # quicker, wider standard errors

Two designs, each at 100 pairs x 3 annotators and 40 pairs x 5 (every annotator of the panel
rates every pair):

- exchangeable: the annotators behave alike; each pair has its own propensity to be judged
  chosen / rejected / tie and its own quality, and every annotation is a draw from the pair's;
- panel: each study recruits a fixed panel from a population of annotators who differ: a
  lasting lean towards chosen (logit shift, sd 0.8) and a lasting rating offset (sd 0.5).

The truth is the statistic on one very large study (40,000 pairs) from the same generator in
which every annotation comes from a fresh annotator of the population: the value "for
annotators in general". For each statistic the table gives the share of studies whose interval
contains the truth, +- its standard error. ``ci95`` (pairs resampled; holds for these
annotators) is meant to cover in the exchangeable design; ``ci95_annotators`` (annotators
treated as a sample too) in both. The statistics are computed by the report's own functions.
Runs its studies in two processes.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from analysis.agreement import alpha, gwet_ac1, percent_agreement
from analysis.intervals import Panel
from analysis.quality import quality_alpha
from analysis.validity import label_share

DOMAIN = [1, 2, 3, 4, 5]
STATISTICS = ("percent", "alpha", "alpha_neutral", "ac1", "label_confirmed", "quality_alpha")
LEAN_SD = 0.8
OFFSET_SD = 0.5
TRUTH_PAIRS = 40_000


def simulate(rng, *, n_pairs: int, per_pair: int, design: str, fresh: bool = False):
    """Annotations as arrays: pair, annotator, preference code (0 chosen, 1 rejected, 2 tie),
    chosen rating, rejected rating, and a per-pair coin for the neutral orientation."""
    pair = np.repeat(np.arange(n_pairs), per_pair)
    n = pair.size
    # fresh: a new annotator for every annotation (the population, for the truth)
    annotator = np.arange(n) if fresh else np.tile(np.arange(per_pair), n_pairs)
    n_people = n if fresh else per_pair
    biased = design == "panel"
    lean = rng.normal(0, LEAN_SD, n_people) if biased else np.zeros(n_people)
    offset = rng.normal(0, OFFSET_SD, n_people) if biased else np.zeros(n_people)

    pair_logit = rng.normal(1.2, 1.2, n_pairs)
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
    swap = [1, 0, 2]
    neutral = np.where(coin[:, None], counts, counts[:, swap])
    neutral_own = np.where(coin[pair][:, None], own, own[:, swap])
    quality_counts = np.zeros((n_pairs, 2, 5), dtype=np.int64)
    np.add.at(quality_counts, (pair, 0, ratings[:, 0] - 1), 1)
    np.add.at(quality_counts, (pair, 1, ratings[:, 1] - 1), 1)
    quality_own = one_hot(ratings[:, 0] - 1, 10) + one_hot(ratings[:, 1] - 1, 10, offset=5)

    boot = {"bootstrap": bootstrap if intervals else 0, "seed": seed}
    panel = Panel.of(pair, annotator, seed=seed) if intervals else None
    out = {
        "percent": percent_agreement(counts, **boot, panel=panel, own=own).as_dict(),
        "alpha": alpha(
            counts, level="nominal", domain=[0, 1, 2], **boot, panel=panel, own=own
        ).as_dict(),
        "alpha_neutral": alpha(
            neutral, level="nominal", domain=[0, 1, 2], **boot, panel=panel, own=neutral_own
        ).as_dict(),
        "ac1": gwet_ac1(counts, **boot, panel=panel, own=own).as_dict(),
        "label_confirmed": label_share(
            counts, min_annotations=2, decided_only=False, panel=panel, own=own
        ),
        "quality_alpha": quality_alpha(
            quality_counts.reshape(-1, 5), domain=DOMAIN, **boot, panel=panel, own=quality_own
        ),
    }
    return out


def truth(design: str, per_pair: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    data = simulate(rng, n_pairs=TRUTH_PAIRS, per_pair=per_pair, design=design, fresh=True)
    values = statistics(data, n_pairs=TRUTH_PAIRS, bootstrap=0, seed=0, intervals=False)
    return {name: values[name]["value"] for name in STATISTICS}


def one_study(args) -> dict[str, tuple[bool | None, bool | None]]:
    design, n_pairs, per_pair, bootstrap, seed, target = args
    rng = np.random.default_rng([seed, 7])
    data = simulate(rng, n_pairs=n_pairs, per_pair=per_pair, design=design)
    values = statistics(data, n_pairs=n_pairs, bootstrap=bootstrap, seed=seed)
    hits = {}
    for name in STATISTICS:
        hits[name] = tuple(
            None
            if values[name].get(key) is None
            else values[name][key][0] <= target[name] <= values[name][key][1]
            for key in ("ci95", "ci95_annotators")
        )
    return hits


def coverage(hits: list[bool | None]) -> str:
    defined = [h for h in hits if h is not None]
    if not defined:
        return "n/a"
    p = float(np.mean(defined))
    se = np.sqrt(p * (1 - p) / len(defined))
    missing = len(hits) - len(defined)
    return f"{100 * p:.1f} +- {100 * se:.1f}" + (f" ({missing} null)" if missing else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=300, help="studies per design and size")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples per interval")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    print(
        f"{args.studies} simulated studies per row, {args.bootstrap} resamples each; "
        "coverage in % +- standard error (goal: ci95 93-97 exchangeable, ci95_annotators 92-98)"
    )
    print()
    print(f"| design | pairs x annotators | statistic | {'ci95':<18} | ci95_annotators |")
    print("| --- | --- | --- | --- | --- |")
    with ProcessPoolExecutor(args.workers) as pool:
        for design in ("exchangeable", "panel"):
            for n_pairs, per_pair in ((100, 3), (40, 5)):
                target = truth(design, per_pair, seed=12345)
                jobs = [
                    (design, n_pairs, per_pair, args.bootstrap, seed, target)
                    for seed in range(args.studies)
                ]
                results = list(pool.map(one_study, jobs, chunksize=8))
                for name in STATISTICS:
                    pairs = [r[name][0] for r in results]
                    annotators = [r[name][1] for r in results]
                    print(
                        f"| {design} | {n_pairs} x {per_pair} | {name} (truth "
                        f"{target[name]:.3f}) | {coverage(pairs):<18} | {coverage(annotators)} |",
                        flush=True,
                    )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
