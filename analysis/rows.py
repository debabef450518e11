"""Row-wise sums and reductions over long arrays of a few columns (classes, components, label
values), the commonest operations of the model of annotation and of the annotators' lean
spread, in the forms numpy runs fastest."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def sum_rows(
    index: NDArray[np.int64], values: NDArray[np.float64], size: int
) -> NDArray[np.float64]:
    """size x columns: the rows of ``values`` summed by ``index`` (np.add.at, but faster; the
    columns made contiguous first, which bincount reads a third faster)."""
    columns = np.ascontiguousarray(np.asarray(values, dtype=np.float64).T)
    return np.stack([np.bincount(index, weights=c, minlength=size) for c in columns], axis=1)


def across(ufunc: np.ufunc, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``ufunc.reduce(values, axis=-1)`` for rows of a few columns (classes, components), one
    column at a time: the same numbers, several times faster than numpy's reduction over a
    short last axis."""
    out: NDArray[np.float64] = values[..., 0].copy()
    for c in range(1, values.shape[-1]):
        ufunc(out, values[..., c], out=out)
    return out
