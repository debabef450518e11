"""The MIN-MAX an adaptive study (or `annotate plan --adaptive`) may ask for, written once.

No numpy here: the command line checks `--adaptive` while it parses, before any heavy import.
The rule itself is analysis/design/stopping.py.
"""

from __future__ import annotations

# One answer never decides a pair (one further answer could always split it), so MIN starts at
# 2; MIN = MAX is a fixed overlap. Above MAX = 10 the rule has stopped almost every pair
# already: of evenly split pairs (each answer chosen or rejected at 50:50, no ties) 1 in 32 is
# still undecided after 10 answers (tests/test_stopping.py works it out); the few that a
# higher MAX would follow cost many answers each, and what they end on is chance.
ADAPTIVE_MIN_LOWEST = 2
ADAPTIVE_MAX_HIGHEST = 10
ADAPTIVE_BOUNDS = (
    f"MIN at least {ADAPTIVE_MIN_LOWEST} (one answer never decides a pair), MAX above MIN "
    f"(MIN = MAX is a fixed overlap: use --overlap) and at most {ADAPTIVE_MAX_HIGHEST} (the "
    f"rule decides almost every pair before: only 1 in 32 evenly split pairs is still "
    f"undecided after {ADAPTIVE_MAX_HIGHEST} answers)"
)


def adaptive_range_problem(minimum: int, maximum: int) -> str | None:
    """Why MIN-MAX cannot be a study's adaptive overlap (ADAPTIVE_BOUNDS), or None."""
    if ADAPTIVE_MIN_LOWEST <= minimum < maximum <= ADAPTIVE_MAX_HIGHEST:
        return None
    return f"adaptive overlap {minimum}-{maximum} is out of bounds: {ADAPTIVE_BOUNDS}"
