"""Per-annotator quality: label and peer agreement, position bias, speed, straight-lining."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.distributions import binom_half_two_sided
from analysis.frames import Coded, first_slot_picked
from analysis.tables import PREFERENCES, RATING_COLUMNS

STRAIGHT_LINING_MIN_ITEMS = 5


def _loo_agreement(coded: Coded) -> tuple[np.ndarray, np.ndarray]:
    """(has_peer_majority, agrees) per annotation.

    The others' labels on the same pair are the pair's counts minus this annotation; their
    majority is a strict one (more than half of the others), a tie being a label like any other.
    """
    counts = coded.per_pair(coded.preference, len(PREFERENCES))[coded.pair]
    counts[np.arange(len(coded.pair)), coded.preference] -= 1
    others = counts.sum(axis=1)
    top = counts.argmax(axis=1)
    has = (others > 0) & (counts.max(axis=1) * 2 > others)
    return has, has & (top == coded.preference)


def annotator_table(coded: Coded, *, gold_counts: pd.Series) -> pd.DataFrame:
    """One row per annotator over the (non-gold) annotations in ``coded``.

    ``label_agreement``: share of the annotator's decisive (chosen/rejected) annotations that
    picked ``chosen``; ties are left out. ``peer_agreement``: share of their annotations whose
    label (tie included) equals the strict majority of the other annotators of the same pair,
    over pairs where the others have one.
    """
    ann = coded.annotations
    decisive = coded.preference < 2
    picked_chosen = coded.preference == 0
    has_peer, agrees = _loo_agreement(coded)
    counted, first = first_slot_picked(ann)

    ratings = ann[RATING_COLUMNS].to_numpy(dtype=np.float64, na_value=np.nan)
    rated_rows = ~np.isnan(ratings).all(axis=1)
    row_min = np.where(np.isnan(ratings), np.inf, ratings).min(axis=1, initial=np.inf)
    row_max = np.where(np.isnan(ratings), -np.inf, ratings).max(axis=1, initial=-np.inf)

    work = pd.DataFrame(
        {
            "annotator": ann["annotator"].to_numpy(dtype=object),
            "decisive": decisive,
            "chosen": picked_chosen,
            "tie": coded.preference == 2,
            "has_peer": has_peer,
            "agrees": agrees,
            "counted": counted,
            "first": first,
            "seconds": ann["seconds"].to_numpy(dtype=np.float64, na_value=np.nan),
            "rated": rated_rows,
            "row_min": np.where(rated_rows, row_min, np.nan),
            "row_max": np.where(rated_rows, row_max, np.nan),
        }
    )
    g = work.groupby("annotator", sort=True)
    sums = g[["decisive", "chosen", "tie", "has_peer", "agrees", "counted", "first", "rated"]].sum()
    out = pd.DataFrame(index=sums.index)
    out["n"] = g.size()
    out["n_gold"] = gold_counts.reindex(out.index).fillna(0).astype(int)
    out["n_decisive"] = sums["decisive"]
    out["label_agreement"] = _share(sums["chosen"], sums["decisive"])
    out["tie_rate"] = _share(sums["tie"], out["n"])
    out["n_peer"] = sums["has_peer"]
    out["peer_agreement"] = _share(sums["agrees"], sums["has_peer"])
    out["n_slot"] = sums["counted"]
    out["first_slot_rate"] = _share(sums["first"], sums["counted"])
    # One p-value per annotator; the exact interval of validity.position_bias is left out
    # here because its root finding costs ~30 ms per annotator.
    out["first_slot_p"] = [
        binom_half_two_sided(int(k), int(n)) if n else None
        for k, n in zip(sums["first"], sums["counted"], strict=True)
    ]
    out["median_seconds"] = g["seconds"].median()
    lo, hi = g["row_min"].min(), g["row_max"].max()
    out["n_rated"] = sums["rated"]
    out["straight_lining"] = (sums["rated"] >= STRAIGHT_LINING_MIN_ITEMS) & (lo == hi)
    return out.reset_index()


def _share(k: pd.Series, n: pd.Series) -> pd.Series:
    k = k.astype(np.float64)
    n = n.astype(np.float64)
    return (k / n.where(n > 0)).astype(np.float64)
