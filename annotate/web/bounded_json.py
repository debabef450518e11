"""JSON from strangers, bounded before it is parsed: a request body that nests deeper than a
page ever sends, carries an integer no database column holds, or is bigger than allowed is
refused as a `BadBody` (a 4xx for the caller), never a `RecursionError` or an `OverflowError`
deep in a query with a traceback in the log.

The depth is counted on the raw text (brackets outside strings) before `json.loads` runs, so a
body nested 10,000 deep costs one linear scan, not Python's recursion limit.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 8  # the form's draft nests 3 deep ({"form": {"ratings": {...}}})
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what a BIGINT column (and SQLite's INTEGER) holds
MAX_INT_DIGITS = 20  # len(str(INT_MIN)): longer digit strings are refused unconverted

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class BadBody(ValueError):
    """A body refused before or while parsing; `status` is the HTTP answer (400 or 413)."""

    def __init__(self, reason: str, *, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def _depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in `raw` (brackets inside strings skipped)."""
    deepest = depth = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", raw)):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadBody("an integer has too many digits")
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise BadBody("an integer is outside the 64-bit range")
    return value


def loads(raw: bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `raw`, or `BadBody`: more than `max_bytes` (413), nested deeper than
    `max_depth`, an integer outside 64 bits, or not JSON (400)."""
    if len(raw) > max_bytes:
        raise BadBody("the body is too big", status=413)
    if _depth(raw) > max_depth:
        raise BadBody("the body nests too deep")
    try:
        return json.loads(raw, parse_int=_bounded_int)
    except BadBody:
        raise
    except (ValueError, RecursionError) as error:  # RecursionError: belt and braces
        raise BadBody("the body is not JSON") from error
