"""The strict majority of a pair's answers: the verdicts' majority step, one home for the
report's verdicts (`analysis.verdicts.pairs`), the adaptive stopping rule (`analysis.design.stopping`) and the
planner. numpy only, so that the labelling step can use it without loading pandas."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from analysis.vocabulary import PREFERENCES

# None as an array for np.where (numpy's stubs take no bare None there; the result is the same).
NONE = np.array(None, dtype=object)


def strict_majority(counts: NDArray[np.int64]) -> NDArray[np.object_]:
    """Label held by more than half of a pair's annotations, else None (object array)."""
    n = counts.sum(axis=1)
    top = counts.argmax(axis=1)
    has = counts.max(axis=1) * 2 > n
    labels = np.array(PREFERENCES, dtype=object)[top]
    return np.where(has, labels, NONE)
