"""Benchmark: the model of annotation against a known truth (docs/annotation-model.md).

    python benchmarks/bench_annotation_model.py               # 100 studies per design
    python benchmarks/bench_annotation_model.py --studies 20  # a quick look
    python benchmarks/bench_annotation_model.py --levels normal  # levels as the model assumes

Each study is analysis.annotation_model.simulation's: a benchmark of ``--population`` pairs
(20 % truly flipped, confounded pairs at gaps 0.5-2.5 and several levels, low-quality pairs),
of which ``--sample`` are labelled by three annotators each from a pool of twelve who differ,
one of them near random. The sample is drawn uniformly, or judge-guided: a judge flags 70 % of
the not-valid pairs and 15 % of the valid ones, every flagged pair up to half the sample is
labelled, the rest drawn uniformly. Printed, one JSON line per check:

- calibration: the labelled pairs binned by p_preference_flip (and p_valid): each bin's mean
  probability and the observed share of truly flipped (valid) pairs;
- verdicts: the share of pairs whose valid / not valid call is right, the model's verdict
  against the crowd's (strict majority) verdict;
- export: the realised share of truly not-valid pairs among those --export-valid writes with
  --max-bad-share X, against X;
- coverage: how often true_ci95 holds the benchmark's true share of valid pairs, and
  true_ci95 of bad_left the truly not-valid pairs left after cleaning (target 93-97 %), with
  the crowd's verdict share's ci95 beside them for comparison.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import pandas as pd

from analysis.annotation_model.fit import fit_model
from analysis.annotation_model.simulation import simulate_study
from analysis.frames import code
from analysis.majority import strict_majority
from analysis.population.estimates import (
    stratified_share,
    true_share,
    true_weights,
    truly_bad_left,
)
from analysis.verdicts.pairs import gap_noise, pair_table
from analysis.verdicts.shipping import valid_shipment
from analysis.vocabulary import DIMENSIONS

BUDGETS = (0.02, 0.05, 0.10)


def one_study(
    seed: int, *, population: int, sample: int, guided: bool, levels: str = "kinds"
) -> dict[str, Any]:
    study = simulate_study(pairs=population, seed=seed, levels_from=levels)
    truth = study.truth
    rng = np.random.default_rng(10_000 + seed)
    bad = ~truth["valid"].to_numpy()
    if guided:
        flagged = np.where(bad, rng.random(population) < 0.7, rng.random(population) < 0.15)
    else:
        flagged = np.zeros(population, dtype=bool)
    take_flagged = min(int(flagged.sum()), sample // 2 if guided else 0)
    chosen_flagged = rng.choice(np.flatnonzero(flagged), take_flagged, replace=False)
    rest = np.flatnonzero(~flagged)
    chosen_rest = rng.choice(rest, sample - take_flagged, replace=False)
    labelled = np.sort(np.concatenate([chosen_flagged, chosen_rest]))
    strata_all = np.where(flagged, "flagged", "rest").astype(object)
    sizes = {name: int((strata_all == name).sum()) for name in ("flagged", "rest")}
    sizes = {k: v for k, v in sizes.items() if v}

    ids = truth["pair_id"].to_numpy()[labelled]
    annotations = study.annotations[study.annotations["pair_id"].isin(set(ids))]
    coded = code(annotations, pd.Index(sorted(ids)))
    strata = pd.Series(strata_all, index=truth["pair_id"]).loc[coded.pair_ids].to_numpy()
    fit = fit_model(
        coded,
        dimensions=DIMENSIONS,
        quality_threshold=3.0,
        pair_gap=1.0,
        allow_ties=False,
        strata=strata,
        scale=(1, 5),
        seed=seed,
    )
    table = pair_table(
        coded,
        gold=np.zeros(coded.n_pairs, dtype=bool),
        category=np.full(coded.n_pairs, "", dtype=object),
        min_annotations=2,
        quality_threshold=3.0,
        pair_gap=1.0,
        noise=gap_noise(coded),
    )
    known = truth.set_index("pair_id").loc[coded.pair_ids]
    probabilities = fit.probabilities
    p_valid = probabilities["p_valid"].to_numpy()
    crowd_valid = table["verdict"].to_numpy() == "valid"
    true_valid_share = float(truth["valid"].mean())
    share_w, bad_w, _ = true_weights(strata, sizes, crowd_valid)
    shared_share = fit.shared_variance(share_w)["valid"] or 0.0
    shared_bad = fit.shared_variance(bad_w)["valid"] or 0.0
    estimate = true_share(p_valid, strata, sizes, shared_variance=shared_share)
    verdict_estimate = stratified_share(crowd_valid.astype(float), strata, sizes)
    left = truly_bad_left(p_valid, crowd_valid, strata, sizes, shared_variance=shared_bad)
    unlabelled = np.setdiff1d(np.arange(population), labelled)
    truly_left = int(bad[unlabelled].sum()) + int((~known["valid"].to_numpy() & crowd_valid).sum())
    report: Any = {
        "pairs": [
            {
                "pair_id": pid,
                "verdict": verdict,
                "probabilities": {"valid": float(p)},
            }
            for pid, verdict, p in zip(coded.pair_ids, table["verdict"], p_valid, strict=True)
        ]
    }
    exports = {}
    for budget in BUDGETS:
        written = set(valid_shipment(report, max_bad_share=budget).written)
        mask = np.isin(coded.pair_ids.to_numpy(), list(written))
        exports[budget] = (int(mask.sum()), int((mask & ~known["valid"].to_numpy()).sum()))
    counts = coded.per_pair(coded.preference, 3)
    majority = strict_majority(counts)
    return {
        "flip_p": probabilities["p_preference_flip"].to_numpy(),
        "flip_true": (known["preferred"] == "rejected").to_numpy(),
        "valid_p": p_valid,
        "valid_true": known["valid"].to_numpy(),
        "model_valid": probabilities["model_verdict"].to_numpy() == "valid",
        "crowd_valid": crowd_valid,
        "majority_flip": majority == "rejected",
        "covered": estimate["ci95"][0] <= true_valid_share <= estimate["ci95"][1],
        "verdict_covered": verdict_estimate["ci95"][0]
        <= true_valid_share
        <= verdict_estimate["ci95"][1],
        "left_covered": left["ci95"][0] <= truly_left <= left["ci95"][1],
        "error": estimate["share"] - true_valid_share,
        "half_width": (estimate["ci95"][1] - estimate["ci95"][0]) / 2,
        "exports": exports,
    }


def calibration(p: np.ndarray, truth: np.ndarray) -> list[dict[str, Any]]:
    edges = np.linspace(0, 1, 11)
    where = np.clip(np.digitize(p, edges) - 1, 0, 9)
    rows = []
    for b in range(10):
        mask = where == b
        if mask.sum() >= 20:
            rows.append(
                {
                    "bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}",
                    "n": int(mask.sum()),
                    "mean_p": round(float(p[mask].mean()), 3),
                    "observed": round(float(truth[mask].mean()), 3),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=100)
    parser.add_argument("--population", type=int, default=2000)
    parser.add_argument("--sample", type=int, default=400)
    parser.add_argument(
        "--levels",
        choices=("kinds", "normal"),
        default="kinds",
        help="the responses' true levels: alike, confounded and low pairs (default), or one "
        "correlated normal distribution (the family of the model's quality prior)",
    )
    args = parser.parse_args()
    for design, guided in (("uniform", False), ("judge-guided", True)):
        started = time.perf_counter()
        runs = [
            one_study(
                seed,
                population=args.population,
                sample=args.sample,
                guided=guided,
                levels=args.levels,
            )
            for seed in range(args.studies)
        ]
        pooled = {
            k: np.concatenate([r[k] for r in runs])
            for k in runs[0]
            if k.endswith(("_p", "_true", "_valid", "_flip"))
        }
        flip_rows = calibration(pooled["flip_p"], pooled["flip_true"])
        print(
            json.dumps(
                {
                    "design": design,
                    "check": "calibration p_preference_flip",
                    "bins": flip_rows,
                    "worst_gap": max(abs(r["mean_p"] - r["observed"]) for r in flip_rows),
                }
            )
        )
        valid_rows = calibration(pooled["valid_p"], pooled["valid_true"])
        print(
            json.dumps(
                {
                    "design": design,
                    "check": "calibration p_valid",
                    "bins": valid_rows,
                    "worst_gap": max(abs(r["mean_p"] - r["observed"]) for r in valid_rows),
                }
            )
        )
        truth_valid = pooled["valid_true"]
        print(
            json.dumps(
                {
                    "design": design,
                    "check": "verdicts",
                    "valid_call_right_model": round(
                        float((pooled["model_valid"] == truth_valid).mean()), 4
                    ),
                    "valid_call_right_crowd": round(
                        float((pooled["crowd_valid"] == truth_valid).mean()), 4
                    ),
                    "flip_call_right_model": round(
                        float(((pooled["flip_p"] > 0.5) == pooled["flip_true"]).mean()), 4
                    ),
                    "flip_call_right_majority": round(
                        float((pooled["majority_flip"] == pooled["flip_true"]).mean()), 4
                    ),
                }
            )
        )
        exports = {}
        for budget in BUDGETS:
            written = sum(r["exports"][budget][0] for r in runs)
            bad = sum(r["exports"][budget][1] for r in runs)
            exports[str(budget)] = {
                "written": written,
                "realised_bad_share": round(bad / max(written, 1), 4),
            }
        print(json.dumps({"design": design, "check": "export --max-bad-share", "budgets": exports}))
        print(
            json.dumps(
                {
                    "design": design,
                    "check": "coverage",
                    "studies": len(runs),
                    "true_share_coverage": round(float(np.mean([r["covered"] for r in runs])), 3),
                    "true_share_mean_error": round(float(np.mean([r["error"] for r in runs])), 4),
                    "true_share_error_sd": round(float(np.std([r["error"] for r in runs])), 4),
                    "true_ci95_mean_half_width": round(
                        float(np.mean([r["half_width"] for r in runs])), 4
                    ),
                    "bad_left_true_coverage": round(
                        float(np.mean([r["left_covered"] for r in runs])), 3
                    ),
                    "verdict_share_covers_true_share": round(
                        float(np.mean([r["verdict_covered"] for r in runs])), 3
                    ),
                    "seconds": round(time.perf_counter() - started, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
