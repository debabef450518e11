"""Which pairs of a benchmark humans label: the sample draw, written once.

`draw_sample` is the one function that decides it (import-pairs --sample uses it; the
simulation in benchmarks/bench_population.py uses it; the tests reproduce it from the seed).

The design is a stratified simple random sample without replacement:

- without a judge, one stratum (``all``): N of the M pairs, each with probability N / M;
- with a judge (``--sample-by NAME=FILE``), two strata. ``flagged``: the pairs the judge flags
  (it prefers ``rejected``, says tie or failed to parse). They get up to FLAGGED_SHARE of N
  (80 %): all of them when there are that few (probability 1), else a random FLAGGED_SHARE * N
  of them. ``rest``: the remaining places go to a uniform random sample of the other pairs.
  Places the flagged stratum cannot use (fewer flagged pairs than its share) go to ``rest``.

Within a stratum the pairs taken are the n with the smallest keyed hash
sha256("SEED:PAIR_ID"): the draw depends on the seed and the pair ids only, not on the file's
order, so the same seed draws the same sample and anybody can recompute it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

FLAGGED_SHARE = 0.8


@dataclass(frozen=True)
class Draw:
    """One pair's place in the design."""

    pair_id: str
    sampled: bool
    inclusion_probability: float
    stratum: str


def sample_key(seed: int, pair_id: str) -> bytes:
    """The pair's keyed hash: the smallest ones in a stratum are drawn."""
    return hashlib.sha256(f"{seed}:{pair_id}".encode()).digest()


def _take(ids: list[str], n: int, seed: int) -> set[str]:
    return set(sorted(ids, key=lambda pair_id: sample_key(seed, pair_id))[:n])


def stratum_sizes(total: int, flagged: int, n: int, *, flagged_share: float) -> tuple[int, int]:
    """How many flagged and how many other pairs a sample of n takes (module docstring)."""
    take_flagged = min(flagged, math.floor(flagged_share * n + 1e-9))
    take_rest = min(total - flagged, n - take_flagged)
    # the rest stratum too small: the flagged one takes the places left over
    take_flagged = min(flagged, n - take_rest)
    return take_flagged, take_rest


def draw_sample(
    pair_ids: Sequence[str],
    n: int,
    *,
    seed: int,
    flagged: Sequence[bool] | None = None,
    flagged_share: float = FLAGGED_SHARE,
) -> list[Draw]:
    """Each pair's draw, in the order given. `flagged` (one flag per pair) makes it the
    judge-guided design; None the uniform one."""
    ids = [str(pair_id) for pair_id in pair_ids]
    if len(set(ids)) != len(ids):
        raise ValueError("pair ids must be unique to draw a sample")
    if not 1 <= n <= len(ids):
        raise ValueError(f"the sample size must be between 1 and the {len(ids)} pairs, not {n}")
    if not 0 <= flagged_share <= 1:
        raise ValueError(f"the flagged share must be between 0 and 1, not {flagged_share}")
    if flagged is None:
        taken = _take(ids, n, seed)
        p = n / len(ids)
        return [Draw(i, i in taken, p, "all") for i in ids]
    import numpy as np  # here: the command line's help reads FLAGGED_SHARE and loads no numpy

    flags = np.asarray(flagged, dtype=bool)
    if len(flags) != len(ids):
        raise ValueError("one flag per pair is needed")
    strata = {
        "flagged": [i for i, f in zip(ids, flags, strict=True) if f],
        "rest": [i for i, f in zip(ids, flags, strict=True) if not f],
    }
    sizes = dict(
        zip(
            ("flagged", "rest"),
            stratum_sizes(len(ids), len(strata["flagged"]), n, flagged_share=flagged_share),
            strict=True,
        )
    )
    taken = set()
    probability: dict[str, float] = {}
    for name, members in strata.items():
        taken |= _take(members, sizes[name], seed)
        probability[name] = sizes[name] / len(members) if members else 0.0
    return [
        Draw(i, i in taken, probability["flagged" if f else "rest"], "flagged" if f else "rest")
        for i, f in zip(ids, flags, strict=True)
    ]
