"""Shared preparation: annotations coded against one pair index, for vectorised aggregation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.vocabulary import PREFERENCES, REASONS


@dataclass(frozen=True)
class Coded:
    """Annotations with integer codes: ``pair`` indexes ``pair_ids``; labels index their tuples."""

    annotations: pd.DataFrame
    pair_ids: pd.Index[str]  # every pair of the report, sorted
    pair: NDArray[np.int64]  # per annotation, position in pair_ids
    preference: NDArray[np.int64]  # per annotation, index into PREFERENCES
    reason: NDArray[np.int64]  # per annotation, index into REASONS, -1 when no reason was given

    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    def subset(self, mask: NDArray[np.bool_]) -> Coded:
        return Coded(
            annotations=self.annotations[mask].reset_index(drop=True),
            pair_ids=self.pair_ids,
            pair=self.pair[mask],
            preference=self.preference[mask],
            reason=self.reason[mask],
        )

    def per_pair(self, codes: NDArray[np.int64], n_values: int) -> NDArray[np.int64]:
        """pairs x n_values counts of ``codes`` (entries < 0 are ignored)."""
        keep = codes >= 0
        flat = self.pair[keep] * n_values + codes[keep]
        return np.bincount(flat, minlength=self.n_pairs * n_values).reshape(self.n_pairs, n_values)

    def rating(self, column: str) -> NDArray[np.float64]:
        return self.annotations[column].to_numpy(dtype=np.float64, na_value=np.nan)

    def pair_mean(self, column: str) -> NDArray[np.float64]:
        """Per pair mean of a rating column over the annotators who gave it; NaN when none did."""
        values = self.rating(column)
        rated = ~np.isnan(values)
        sums = np.bincount(self.pair[rated], weights=values[rated], minlength=self.n_pairs)
        counts = np.bincount(self.pair[rated], minlength=self.n_pairs)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def code(annotations: pd.DataFrame, pair_ids: pd.Index[str]) -> Coded:
    pair = pair_ids.get_indexer(pd.Index(annotations["pair_id"]))
    if (pair < 0).any():
        raise ValueError("annotations name pairs that are not in the pair index")
    return Coded(
        annotations=annotations.reset_index(drop=True),
        pair_ids=pair_ids,
        pair=pair.astype(np.int64),
        preference=_codes(annotations["preference"], PREFERENCES),
        reason=_codes(annotations["main_reason"], REASONS),
    )


def _codes(values: pd.Series[str], categories: tuple[str, ...]) -> NDArray[np.int64]:
    return pd.Categorical(values, categories=list(categories)).codes.astype(np.int64)


def first_slot_picked(
    annotations: pd.DataFrame,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(counted, picked_first): decisive annotations with a known slot; whether slot A won.

    The first slot is "A". A tie picks no slot, so ties are not counted.
    """
    preference = objects(annotations["preference"])
    position = objects(annotations["chosen_position"])
    decisive = (preference == "chosen") | (preference == "rejected")
    known = (position == "A") | (position == "B")
    counted = decisive & known
    picked_first = counted & ((preference == "chosen") == (position == "A"))
    return counted, picked_first


def objects(column: pd.Series[str]) -> NDArray[np.object_]:
    """A text column as Python objects, None where it is missing (NaN or pd.NA alike)."""
    # pandas-stubs (3.1.0.261029) leaves None out of to_numpy's na_value; pandas accepts it.
    values: NDArray[np.object_] = column.to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
    return values
