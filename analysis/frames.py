"""Shared preparation: annotations coded against one pair index, for vectorised aggregation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.tables import PREFERENCES, REASONS


@dataclass(frozen=True)
class Coded:
    """Annotations with integer codes: ``pair`` indexes ``pair_ids``; labels index their tuples."""

    annotations: pd.DataFrame
    pair_ids: pd.Index  # every pair of the report, sorted
    pair: np.ndarray  # per annotation, position in pair_ids
    preference: np.ndarray  # per annotation, index into PREFERENCES
    reason: np.ndarray  # per annotation, index into REASONS, -1 when no reason was given

    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    def subset(self, mask: np.ndarray) -> Coded:
        return Coded(
            annotations=self.annotations[mask].reset_index(drop=True),
            pair_ids=self.pair_ids,
            pair=self.pair[mask],
            preference=self.preference[mask],
            reason=self.reason[mask],
        )

    def per_pair(self, codes: np.ndarray, n_values: int) -> np.ndarray:
        """pairs x n_values counts of ``codes`` (entries < 0 are ignored)."""
        keep = codes >= 0
        flat = self.pair[keep] * n_values + codes[keep]
        return np.bincount(flat, minlength=self.n_pairs * n_values).reshape(self.n_pairs, n_values)

    def rating(self, column: str) -> np.ndarray:
        return self.annotations[column].to_numpy(dtype=np.float64, na_value=np.nan)

    def pair_mean(self, column: str) -> np.ndarray:
        """Per pair mean of a rating column over the annotators who gave it; NaN when none did."""
        values = self.rating(column)
        rated = ~np.isnan(values)
        sums = np.bincount(self.pair[rated], weights=values[rated], minlength=self.n_pairs)
        counts = np.bincount(self.pair[rated], minlength=self.n_pairs)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def code(annotations: pd.DataFrame, pair_ids: pd.Index) -> Coded:
    pair = pair_ids.get_indexer(annotations["pair_id"])
    if (pair < 0).any():
        raise ValueError("annotations name pairs that are not in the pair index")
    return Coded(
        annotations=annotations.reset_index(drop=True),
        pair_ids=pair_ids,
        pair=pair.astype(np.int64),
        preference=_codes(annotations["preference"], PREFERENCES),
        reason=_codes(annotations["main_reason"], REASONS),
    )


def _codes(values: pd.Series, categories: tuple[str, ...]) -> np.ndarray:
    return pd.Categorical(values, categories=list(categories)).codes.astype(np.int64)


def first_slot_picked(annotations: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(counted, picked_first): decisive annotations with a known slot; whether slot A won.

    The first slot is "A". A tie picks no slot, so ties are not counted.
    """
    preference = annotations["preference"].to_numpy(dtype=object, na_value=None)
    position = annotations["chosen_position"].to_numpy(dtype=object, na_value=None)
    decisive = (preference == "chosen") | (preference == "rejected")
    known = (position == "A") | (position == "B")
    counted = decisive & known
    picked_first = counted & ((preference == "chosen") == (position == "A"))
    return counted, picked_first
