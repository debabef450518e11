"""Per-aspect match scores (docs/reference/file-formats.md, annotations table, `aspects`): the one rule for what a valid value
is, used by the annotations table, the app's answers and the scorer files.

A value is a list with one entry per rubric aspect of the pair, in the pair's order, each
``{"chosen": s, "rejected": s}`` with ``s`` the benchmark's match score: 0 not covered,
1 somewhat, 2 very well. Missing (None, NaN, blank text, an empty list) means "not scored".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np

from analysis.files import strict_input
from analysis.vocabulary import ASPECT_SCORES as SCORES
from analysis.vocabulary import SIDES


class AspectValueError(ValueError):
    """Why a value is not a valid aspects list (one readable clause, no row or column)."""


def is_missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, str) and not value.strip():
        return True
    return isinstance(value, (list, tuple, np.ndarray)) and len(value) == 0


def score(value: object, *, what: str) -> int:
    """One match score as an int, or AspectValueError naming ``what``."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        raise AspectValueError(f"{what} must be 0, 1 or 2 (got {value!r})")
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if not isinstance(value, (int, np.integer)) or int(value) not in SCORES:
        raise AspectValueError(f"{what} must be 0, 1 or 2 (got {value!r})")
    return int(value)


def parse_aspects(value: object, *, n_aspects: int | None = None) -> list[dict[str, int]] | None:
    """The value as a plain list of {"chosen": int, "rejected": int}, None when missing.

    Accepts a JSON string (CSV), a list (JSON Lines, the app) or an array of mappings
    (Parquet). With ``n_aspects``, the list must have exactly that many entries.
    """
    if is_missing(value):
        return None  # not scored at all is allowed; a partial list is not
    if isinstance(value, str):
        try:
            value = strict_input.loads(value)  # a repeated key is refused, not last-wins
        except strict_input.FAILURES as exc:
            raise AspectValueError(strict_input.describe_line(exc)) from None
        if is_missing(value):
            return None
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise AspectValueError(f"must be a list of {{chosen, rejected}} scores (got {value!r})")
    entries = []
    for number, entry in enumerate(value, start=1):
        if not isinstance(entry, Mapping):
            raise AspectValueError(
                f'entry {number} must be an object {{"chosen": 0-2, "rejected": 0-2}} '
                f"(got {entry!r})"
            )
        unknown = sorted(set(entry) - set(SIDES))
        if unknown:
            raise AspectValueError(f"entry {number} has unknown keys {unknown}")
        absent = [side for side in SIDES if side not in entry]
        if absent:
            raise AspectValueError(f"entry {number} has no '{absent[0]}' score")
        entries.append(
            {side: score(entry[side], what=f"entry {number} '{side}'") for side in SIDES}
        )
    if n_aspects is not None and len(entries) != n_aspects:
        raise AspectValueError(
            f"the pair has {n_aspects} rubric aspect{'s' if n_aspects != 1 else ''}, "
            f"got {len(entries)} entr{'ies' if len(entries) != 1 else 'y'}"
        )
    return entries


def dumps(aspects: list[dict[str, int]] | None) -> str | None:
    """The CSV cell and the database driver's parameter: compact JSON, None when missing."""
    return None if aspects is None else json.dumps(aspects, separators=(",", ":"))
