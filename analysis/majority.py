"""The strict majority of a pair's answers: the verdicts' majority step, one home for the
report's verdicts (`analysis.pairs`), the adaptive stopping rule (`analysis.stopping`) and the
planner. numpy only, so that the labelling step can use it without loading pandas."""

from __future__ import annotations

import numpy as np

from analysis.vocabulary import PREFERENCES


def strict_majority(counts: np.ndarray) -> np.ndarray:
    """Label held by more than half of a pair's annotations, else None (object array)."""
    n = counts.sum(axis=1)
    top = counts.argmax(axis=1)
    has = counts.max(axis=1) * 2 > n
    labels = np.array(PREFERENCES, dtype=object)[top]
    return np.where(has, labels, None)
