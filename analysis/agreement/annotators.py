"""Per-annotator quality: label and peer agreement, position bias, speed, straight-lining."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.distributions import binom_half_two_sided
from analysis.frames import Coded, first_slot_picked, objects
from analysis.vocabulary import DIMENSIONS, PREFERENCES, RATING_COLUMNS

STRAIGHT_LINING_MIN_ITEMS = 5


def _loo_agreement(coded: Coded) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """(has_peer, agreement) per annotation.

    The others' labels on the same pair are the pair's counts minus this annotation. Agreement
    is with their majority, broken at random where they split: 1 when this label is their only
    most frequent label, 1/m when it is one of m labels tied for most frequent, else 0 (the
    expected agreement with a coin-tossed majority). A pair counts when it has any other
    annotation. Without the split credit, in 30 pairs answered (chosen, chosen, rejected) the
    two consistent annotators had no peer majority anywhere (null) and the dissenter 0.0.
    """
    counts = coded.per_pair(coded.preference, len(PREFERENCES))[coded.pair]
    rows = np.arange(len(coded.pair))
    counts[rows, coded.preference] -= 1
    others = counts.sum(axis=1)
    top = counts.max(axis=1)
    is_top = counts == top[:, None]
    has = others > 0
    own_top = is_top[rows, coded.preference]
    agreement = np.where(has & own_top, 1.0 / is_top.sum(axis=1), 0.0)
    return has, agreement


def annotator_table(coded: Coded, *, gold_counts: pd.Series) -> pd.DataFrame:
    """One row per annotator over the (non-gold) annotations in ``coded``.

    ``label_agreement``: share of the annotator's decisive (chosen/rejected) annotations that
    picked ``chosen``; ties are left out. ``peer_agreement``: share of their annotations whose
    label (tie included) agrees with the majority of the other annotators of the same pair, a
    split among them credited as a coin toss (see :func:`_loo_agreement`), over pairs with
    other annotators. ``straight_lining``: at least five rated items and not one rating that
    varies from item to item, read as chosen/rejected or, where the slots are known, as A/B
    (an annotator who always gives 5 to A and 1 to B is as careless as one who gives 5 to
    everything).
    """
    ann = coded.annotations
    decisive = coded.preference < 2
    picked_chosen = coded.preference == 0
    has_peer, agrees = _loo_agreement(coded)
    constant = _constant_ratings(ann)
    counted, first = first_slot_picked(ann)

    ratings = ann[RATING_COLUMNS].to_numpy(dtype=np.float64, na_value=np.nan)
    rated_rows = ~np.isnan(ratings).all(axis=1)

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
    out["n_rated"] = sums["rated"]
    out["straight_lining"] = (sums["rated"] >= STRAIGHT_LINING_MIN_ITEMS) & constant.reindex(
        out.index, fill_value=False
    )
    return out.reset_index()


def _constant_ratings(ann: pd.DataFrame) -> pd.Series:
    """Per annotator: no rating column varies over their rated items, read as chosen/rejected
    (the columns as stored) or as the slots A/B (rows with a known slot only)."""
    position = objects(ann["chosen_position"])
    chosen_first = position == "A"
    known = chosen_first | (position == "B")
    by_side = pd.DataFrame(
        ann[RATING_COLUMNS].to_numpy(dtype=np.float64, na_value=np.nan), columns=RATING_COLUMNS
    )
    by_slot = pd.DataFrame(index=by_side.index)
    for dimension in DIMENSIONS:
        chosen, rejected = by_side[f"{dimension}_chosen"], by_side[f"{dimension}_rejected"]
        by_slot[f"{dimension}_A"] = chosen.where(chosen_first, rejected)
        by_slot[f"{dimension}_B"] = rejected.where(chosen_first, chosen)
    who = ann["annotator"].to_numpy(dtype=object)

    def flat(ratings: pd.DataFrame, rows: NDArray[np.bool_]) -> pd.Series:
        # min and max skip missing values: a column never rated does not vary either
        groups = ratings[rows].groupby(who[rows], sort=True)
        return ~groups.max().gt(groups.min()).any(axis=1)

    every = np.ones(len(ann), dtype=bool)
    sides = flat(by_side, every)
    rated = ann[RATING_COLUMNS].notna().any(axis=1).to_numpy()
    slot_items = pd.Series(known & rated).groupby(who).sum()
    slots = flat(by_slot, known).reindex(sides.index, fill_value=False)
    slots &= slot_items.reindex(sides.index, fill_value=0) >= STRAIGHT_LINING_MIN_ITEMS
    return sides | slots


def _share(k: pd.Series, n: pd.Series) -> pd.Series:
    k = k.astype(np.float64)
    n = n.astype(np.float64)
    return (k / n.where(n > 0)).astype(np.float64)
