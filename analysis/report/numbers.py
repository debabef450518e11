"""How the report's pages (summary.md, report.html and their sections) write a number, a 95%
interval and a p-value."""

from __future__ import annotations

from collections.abc import Sequence


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def fmt_ci(ci: Sequence[float] | None) -> str:
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""


def fmt_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"
