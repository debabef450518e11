"""Simulated answers for the aspect-check demo study (annotate.studies.demo.DEMO_ASPECT_STUDY), and a
simulated automatic scorer, so that the README's aspect section can be reproduced:

    annotate demo --no-serve
    python -m annotate.studies.demo_answers --out sim/
    annotate import-annotations sim/annotations.jsonl --study demo-aspects
    annotate report --study demo-aspects --aspect-scores sim/scorer.jsonl --out report/

Three simulated annotators score every pair. On every pair but one the chosen response mostly
covers the user's aspects (score 2) and the rejected one mostly misses them (0 or 1); on
BROKEN_PAIR both responses cover them alike, as in a pair whose construction failed (the
annotators still mostly prefer chosen: a preference alone would not reveal it). The simulated
scorer believes every pair's construction, the broken one too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from analysis.vocabulary import DIMENSIONS, SIDES
from annotate.studies.demo import aspect_pair_records

BROKEN_PAIR = "demo-soc-02"
ANNOTATORS = ("sim-annotator-1", "sim-annotator-2", "sim-annotator-3")


def _draw(rng: np.random.Generator, probabilities: dict[int, float]) -> int:
    values = list(probabilities)
    return int(rng.choice(values, p=list(probabilities.values())))


def simulated_annotations(records: list[dict[str, Any]], *, seed: int = 0) -> list[dict[str, Any]]:
    """Annotation rows (docs/reference/file-formats.md, annotations table), one per pair and simulated annotator."""
    rng = np.random.Generator(np.random.PCG64(seed))
    rows = []
    for record in records:
        broken = record["id"] == BROKEN_PAIR
        chosen_p = {2: 0.5, 1: 0.5} if broken else {2: 0.75, 1: 0.25}
        rejected_p = {2: 0.5, 1: 0.5} if broken else {0: 0.6, 1: 0.35, 2: 0.05}
        for annotator in ANNOTATORS:
            preference = "chosen" if rng.random() < 0.85 else "rejected"
            row = {
                "pair_id": record["id"],
                "annotator": annotator,
                "preference": preference,
                "chosen_position": "A" if rng.random() < 0.5 else "B",
                "main_reason": _draw(rng, {0: 0.7, 1: 0.2, 2: 0.1}),
                "seconds": round(float(rng.gamma(6, 15)), 1),
                "aspects": [
                    {"chosen": _draw(rng, chosen_p), "rejected": _draw(rng, rejected_p)}
                    for _ in record["rubric_aspects"]
                ],
            }
            row["main_reason"] = ("personal_fit", "both", "general_quality")[row["main_reason"]]
            for dimension in DIMENSIONS:
                for side in SIDES:
                    row[f"{dimension}_{side}"] = int(rng.integers(4, 6))
            rows.append(row)
    return rows


def simulated_scorer(records: list[dict[str, Any]], *, seed: int = 0) -> list[dict[str, Any]]:
    """Scorer rows (docs/reference/file-formats.md, model files): id, response, scores in the pair's aspect order."""
    rng = np.random.Generator(np.random.PCG64(seed + 1))
    rows = []
    for record in records:
        n = len(record["rubric_aspects"])
        chosen = [_draw(rng, {2: 0.8, 1: 0.2}) for _ in range(n)]
        rejected = [_draw(rng, {0: 0.7, 1: 0.3}) for _ in range(n)]
        rows.append({"id": record["id"], "response": "chosen", "scores": chosen})
        rows.append({"id": record["id"], "response": "rejected", "scores": rejected})
    return rows


def write_simulation(out: Path, *, seed: int = 0) -> tuple[Path, Path]:
    """annotations.jsonl and scorer.jsonl for the demo's aspect study, in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    records = aspect_pair_records()
    paths = out / "annotations.jsonl", out / "scorer.jsonl"
    for path, rows in zip(
        paths,
        (simulated_annotations(records, seed=seed), simulated_scorer(records, seed=seed)),
        strict=True,
    ):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for path in write_simulation(Path(args.out), seed=args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
