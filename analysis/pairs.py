"""Per-pair verdicts (contract section 4): the first rule that applies, in the contract's order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.frames import Coded
from analysis.tables import DIMENSIONS, PREFERENCES, REASONS, SIDES

VERDICTS = (
    "insufficient_annotations",
    "no_consensus",
    "preference_flip",
    "low_quality",
    "quality_confound",
    "valid",
)


def strict_majority(counts: np.ndarray) -> np.ndarray:
    """Label held by more than half of a pair's annotations, else None (object array)."""
    n = counts.sum(axis=1)
    top = counts.argmax(axis=1)
    has = counts.max(axis=1) * 2 > n
    labels = np.array(PREFERENCES, dtype=object)[top]
    return np.where(has, labels, None)


def pair_table(
    coded: Coded,
    *,
    gold: np.ndarray,
    category: np.ndarray,
    min_annotations: int,
    quality_threshold: float,
    pair_gap: float,
) -> pd.DataFrame:
    """One row per pair of ``coded.pair_ids``: counts, majority, quality means, verdict, flags."""
    counts = coded.per_pair(coded.preference, len(PREFERENCES))
    reasons = coded.per_pair(coded.reason, len(REASONS))
    n = counts.sum(axis=1)
    majority = strict_majority(counts)
    frame = pd.DataFrame(
        {
            "pair_id": coded.pair_ids.to_numpy(dtype=object),
            "category": category,
            "is_gold": gold,
            "n_annotations": n,
            "majority": majority,
        }
    )
    for i, label in enumerate(PREFERENCES):
        frame[f"n_{label}"] = counts[:, i]
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["share_chosen"] = np.where(n > 0, counts[:, 0] / np.maximum(n, 1), np.nan)

    low = np.zeros(coded.n_pairs, dtype=bool)
    gap_flag = np.zeros(coded.n_pairs, dtype=bool)
    flags: list[pd.Series] = [_flag(gold, "gold")]
    rated_any = np.zeros(coded.n_pairs, dtype=bool)
    for dimension in DIMENSIONS:
        means = {side: coded.pair_mean(f"{dimension}_{side}") for side in SIDES}
        for side in SIDES:
            frame[f"{dimension}_{side}_mean"] = means[side]
            below = means[side] < quality_threshold  # NaN (not rated) is never below
            low |= below
            rated_any |= ~np.isnan(means[side])
            flags.append(_flag(below, f"low:{dimension}_{side}"))
        gap = means["chosen"] - means["rejected"]
        frame[f"{dimension}_gap"] = gap
        wide = gap > pair_gap
        gap_flag |= wide
        flags.append(_flag(wide, f"gap:{dimension}"))

    for i, reason in enumerate(REASONS):
        frame[f"reason_{reason}"] = reasons[:, i]
    gq = reasons[:, REASONS.index("general_quality")]
    others = np.delete(reasons, REASONS.index("general_quality"), axis=1).max(axis=1)
    # A share of the top spot counts: a pair where quality ties with fit as the stated reason
    # is not evidence that personal fit separated it.
    quality_reason = (gq > 0) & (gq >= others)
    flags.append(_flag(quality_reason, "reason:general_quality"))
    flags.append(_flag(~rated_any & (n > 0), "unrated"))
    flags.append(_flag((n > 0) & (n < min_annotations), "few_annotations"))

    decided = (majority == "chosen") | (majority == "rejected")
    frame["verdict"] = np.select(
        [
            n < min_annotations,
            ~decided,
            majority == "rejected",
            low,
            gap_flag | quality_reason,
        ],
        list(VERDICTS[:-1]),
        default="valid",
    )
    joined = pd.concat(flags, axis=1).sum(axis=1).str.rstrip(";")
    frame["flags"] = joined.to_numpy(dtype=object)
    ordered = [
        "pair_id",
        "category",
        "is_gold",
        "verdict",
        "n_annotations",
        "majority",
        *[f"n_{label}" for label in PREFERENCES],
        "share_chosen",
        *[f"{d}_{s}_mean" for d in DIMENSIONS for s in SIDES],
        *[f"{d}_gap" for d in DIMENSIONS],
        *[f"reason_{r}" for r in REASONS],
        "flags",
    ]
    return frame[ordered]


def _flag(mask: np.ndarray, name: str) -> pd.Series:
    return pd.Series(np.where(mask, name + ";", ""), dtype=object)


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    counts = table["verdict"].value_counts()
    return {v: int(counts.get(v, 0)) for v in VERDICTS}
