"""Small builders for report tests: pairs files, annotation rows, synthetic benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.files.annotations_table import write_table
from analysis.vocabulary import COLUMNS, DIMENSIONS


def pair_record(pair_id: str, **extra) -> dict:
    return {
        "id": pair_id,
        "question": f"question {pair_id}?",
        "profile": [],
        "rubric_aspects": [{"aspect": "concise", "evidence": "", "reason": ""}],
        "narrative": "",
        "category": "cooking",
        "chosen": f"good answer {pair_id}",
        "rejected": f"other answer {pair_id}",
        **extra,
    }


def write_pairs_file(path: Path, ids, **extra) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for pair_id in ids:
            handle.write(json.dumps(pair_record(str(pair_id), **extra)) + "\n")
    return path


def row(
    pair_id,
    annotator,
    preference,
    *,
    position=None,
    chosen=(None, None, None),
    rejected=(None, None, None),
    reason=None,
    seconds=None,
    comment=None,
) -> dict:
    out = {
        "pair_id": str(pair_id),
        "annotator": annotator,
        "preference": preference,
        "chosen_position": position,
        "main_reason": reason,
        "comment": comment,
        "seconds": seconds,
        "submitted_at": None,
    }
    for dimension, c, r in zip(DIMENSIONS, chosen, rejected, strict=True):
        out[f"{dimension}_chosen"] = c
        out[f"{dimension}_rejected"] = r
    return out


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def write_files(tmp_path: Path, rows: list[dict], *, ids=None, suffix=".csv") -> tuple[Path, Path]:
    table = frame(rows)
    ids = ids if ids is not None else list(dict.fromkeys(table["pair_id"]))
    annotations = tmp_path / f"annotations{suffix}"
    write_table(table, annotations)
    return annotations, write_pairs_file(tmp_path / "pairs.jsonl", ids)


def synthetic(
    n_pairs: int,
    n_annotators: int,
    *,
    confounded: bool,
    seed: int = 0,
    p_chosen: float = 0.85,
) -> pd.DataFrame:
    """Every annotator labels every pair. Clean: chosen preferred for personal fit, both
    responses rated alike (around 4). Confounded: chosen preferred because rejected is worse
    (rejected rated about 2 points lower, general_quality the stated reason)."""
    rng = np.random.default_rng(seed)
    pairs = np.repeat(np.arange(n_pairs), n_annotators)
    annotators = np.tile(np.arange(n_annotators), n_pairs)
    n = len(pairs)
    draw = rng.random(n)
    preference = np.where(
        draw < p_chosen, "chosen", np.where(draw < p_chosen + 0.1, "rejected", "tie")
    )
    data = {
        "pair_id": [f"p{i}" for i in pairs],
        "annotator": [f"a{i}" for i in annotators],
        "preference": preference,
        "chosen_position": rng.choice(["A", "B"], size=n),
    }
    for dimension in DIMENSIONS:
        base = 4 + rng.integers(-1, 2, size=n_pairs)[pairs]
        noise = rng.integers(0, 2, size=n) * rng.choice([-1, 1], size=n)
        data[f"{dimension}_chosen"] = np.clip(base + noise, 1, 5)
        shift = 2 if confounded else 0
        noise = rng.integers(0, 2, size=n) * rng.choice([-1, 1], size=n)
        data[f"{dimension}_rejected"] = np.clip(base - shift + noise, 1, 5)
    if confounded:
        reasons = rng.choice(
            ["general_quality", "personal_fit", "both"], p=[0.7, 0.15, 0.15], size=n
        )
    else:
        reasons = rng.choice(
            ["personal_fit", "both", "general_quality", "unsure"], p=[0.6, 0.2, 0.15, 0.05], size=n
        )
    data["main_reason"] = reasons
    data["comment"] = None
    data["seconds"] = rng.gamma(4, 10, size=n).round(1)
    data["submitted_at"] = None
    data["pair_version"] = 1
    data["aspects"] = None  # no aspect check
    table = pd.DataFrame(data)
    for column in COLUMNS:
        if column.endswith(("_chosen", "_rejected")):
            table[column] = table[column].astype("Int64")
    return table[COLUMNS]
