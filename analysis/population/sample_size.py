"""How many pairs of a benchmark to have humans label (`annotate plan --population M`): the
smallest sample whose 95 % interval for the benchmark-wide valid share has at most the wanted
half-width, for the designs of analysis/population/sampling.py and the estimators of
analysis/population/estimates.py (normal intervals, finite-population correction, expected values):

- uniform, human only: half-width z * sqrt((1 - n/M) p (1 - p) / n), p the valid share;
- uniform with a judge score correlating rho with the human verdict (PPI++): the residual
  variance p (1 - p) (1 - rho^2) instead of p (1 - p);
- judge-guided (`--sample-by`): the judge flags a share `sensitivity` of the bad pairs and
  `false_alarm` of the good ones; the flagged stratum gets up to FLAGGED_SHARE of n, the rest a
  uniform sample; the variance is the two strata's, each with its own bad share.

Each design also gives the bad pairs humans are expected to find.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from analysis.population.estimates import Z95
from analysis.population.sampling import FLAGGED_SHARE, stratum_sizes


def _smallest(half_widths: NDArray[np.float64], wanted: float) -> int | None:
    ok = np.flatnonzero(half_widths <= wanted + 1e-12)
    return int(ok[0]) + 1 if len(ok) else None


def uniform_plan(
    population: int, *, valid_share: float, half_width: float, rho: float = 0.0
) -> dict[str, float] | None:
    """{pairs, half_width, bad_found} of the smallest uniform sample (None: not reachable)."""
    n = np.arange(1, population + 1, dtype=float)
    variance = valid_share * (1 - valid_share) * (1 - rho**2)
    widths = Z95 * np.sqrt(np.clip(1 - n / population, 0, None) * variance / n)
    size = _smallest(widths, half_width)
    if size is None:
        return None
    return {
        "pairs": size,
        "half_width": float(widths[size - 1]),
        "bad_found": size * (1 - valid_share),
    }


def guided_plan(
    population: int,
    *,
    valid_share: float,
    half_width: float,
    sensitivity: float,
    false_alarm: float,
    flagged_share: float = FLAGGED_SHARE,
) -> dict[str, float] | None:
    """{pairs, flagged, rest, half_width, bad_found} of the smallest judge-guided sample."""
    bad = 1 - valid_share
    flagged = round(population * (bad * sensitivity + valid_share * false_alarm))
    rest = population - flagged
    bad_flagged = population * bad * sensitivity / flagged if flagged else 0.0
    bad_rest = population * bad * (1 - sensitivity) / rest if rest else 0.0
    for n in range(1, population + 1):
        take_f, take_r = stratum_sizes(population, flagged, n, flagged_share=flagged_share)
        variance = 0.0
        for size, taken, share in ((flagged, take_f, bad_flagged), (rest, take_r, bad_rest)):
            if size == 0 or taken == size:
                continue
            if taken == 0:
                variance = float("inf")
                break
            variance += (size / population) ** 2 * (1 - taken / size) * share * (1 - share) / taken
        width = Z95 * variance**0.5
        if width <= half_width + 1e-12:
            return {
                "pairs": n,
                "flagged": take_f,
                "rest": take_r,
                "half_width": width,
                "bad_found": take_f * bad_flagged + take_r * bad_rest,
            }
    return None
