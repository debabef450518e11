"""Validating a whole benchmark from a sample: coverage, width and bad pairs found, simulated.

    python benchmarks/bench_population.py                 # 200 benchmarks a scenario
    python benchmarks/bench_population.py --benchmarks 50 # quicker

Each simulated benchmark has 3,000 pairs, 20 % of them not valid (exactly 600, placed at
random). The human verdict of a labelled pair is taken as its truth (the estimand is the share
of pairs the report's verdict rules would call valid if humans labelled every pair). The draw
and the estimates are the functions `import-pairs --sample` and `annotate report` use
(analysis/sampling.draw_sample, analysis/population.population_section); the verdicts are
simulated directly instead of through annotations (the end-to-end test,
tests/test_population_cli.py, runs the real labelling step and verdict rules).

Scenarios (issue 24's "Must show"):
- judge-guided, N = 1,056: the judge flags 60 % of the bad pairs and 20 % of the good ones
  (about 840); every flagged pair is queued (they fit in 80 % of N) plus a uniform sample of
  the rest; compared with a uniform sample of the same size;
- uniform, N = 600, with a judge score that correlates 0.8 with the human verdict (the verdict
  plus normal noise of 0.75 times its standard deviation): PPI++ against human only;
- uniform, N = 600, a useless judge (a coin flip per pair): PPI++ against human only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from analysis.population.estimates import population_section
from analysis.population.sampling import draw_sample

PAIRS = 3000
BAD = 600


def _benchmark(rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    ids = [f"b{i}" for i in range(PAIRS)]
    valid = np.ones(PAIRS, dtype=bool)
    valid[rng.choice(PAIRS, BAD, replace=False)] = False
    return ids, valid


def _estimate(ids, valid, draws, judge=None) -> dict:
    sampled = np.array([d.sampled for d in draws])
    units = pd.DataFrame(
        {
            "pair_id": ids,
            "sampled": sampled,
            "inclusion_probability": [d.inclusion_probability for d in draws],
            "stratum": [d.stratum for d in draws],
            "verdict": np.where(
                sampled, np.where(valid, "valid", "preference_flip"), "insufficient_annotations"
            ),
        }
    )
    section = population_section(units, judge=judge, judge_name=None if judge is None else "j")
    valid = section["estimates"]["valid"]  # keep only what the table needs
    return {"valid": valid, "found": section["bad_found"]}


def _row(truth: float, results: list[dict], key: str) -> tuple[float, float, float]:
    """(coverage, mean half-width in points, mean width) of `key` (ci95 or ci95_human_only)."""
    cis = np.array([r["valid"][key] for r in results], dtype=float)
    covered = (cis[:, 0] <= truth) & (truth <= cis[:, 1])
    widths = cis[:, 1] - cis[:, 0]
    return float(covered.mean()), float(100 * widths.mean() / 2), float(widths.mean())


def simulate(benchmarks: int, *, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    truth = 1 - BAD / PAIRS
    guided, uniform_same, corr, useless = [], [], [], []
    for b in range(benchmarks):
        ids, valid = _benchmark(rng)
        flags = np.where(valid, rng.random(PAIRS) < 0.2, rng.random(PAIRS) < 0.6)
        guided.append(
            _estimate(
                ids,
                valid,
                draw_sample(ids, 1056, seed=b, flagged=flags.tolist()),
                judge=(~flags).astype(float),
            )
        )
        uniform_same.append(_estimate(ids, valid, draw_sample(ids, 1056, seed=b)))
        y = valid.astype(float)
        score = y + rng.normal(0, 0.75 * y.std(), PAIRS)
        uniform = draw_sample(ids, 600, seed=b)
        corr.append(_estimate(ids, valid, uniform, judge=score))
        coin = (rng.random(PAIRS) < 0.5).astype(float)
        useless.append(_estimate(ids, valid, uniform, judge=coin))
    rows = []
    for name, n, results, baseline in (
        ("judge-guided (flags 60% bad / 20% good)", 1056, guided, uniform_same),
        ("uniform, same size, no judge", 1056, uniform_same, uniform_same),
        ("uniform, score correlating 0.8", 600, corr, corr),
        ("uniform, useless judge (coin)", 600, useless, useless),
    ):
        coverage, half, width = _row(truth, results, "ci95")
        _, half_h, width_h = _row(truth, results, "ci95_human_only")
        found = float(np.mean([r["found"] for r in results]))
        base_found = float(np.mean([r["found"] for r in baseline]))
        rows.append(
            {
                "scenario": name,
                "N": n,
                "coverage": coverage,
                "half_width_points": half,
                "width_vs_human_only": width / width_h,
                "human_only_half_width_points": half_h,
                "bad_found": found,
                "bad_found_vs_uniform": found / base_found,
            }
        )
    return rows


def table(rows: list[dict], benchmarks: int) -> str:
    lines = [
        f"{benchmarks} benchmarks of {PAIRS:,} pairs, {BAD} not valid (truth: 80.0% valid)",
        "",
        "| scenario | N | coverage of ci95 | half-width (points) | width / human-only "
        "| bad found | bad found / uniform |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['scenario']} | {r['N']:,} | {100 * r['coverage']:.1f}% | "
            f"{r['half_width_points']:.2f} | {r['width_vs_human_only']:.3f} | "
            f"{r['bad_found']:.0f} | {r['bad_found_vs_uniform']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmarks", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.process_time()
    rows = simulate(args.benchmarks, seed=args.seed)
    print(table(rows, args.benchmarks))
    print(f"\n({time.process_time() - start:.0f} s CPU)")


if __name__ == "__main__":
    main()
