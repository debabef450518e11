"""When a pair has enough answers: the stopping rule of adaptive overlap, written once.

A pair is **decided** when it has at least ``minimum`` answers and no single further answer,
whatever label it gives (``tie`` only where the study allows ties), could change the pair's
consensus verdict: the strict majority of the report's verdict rules
(:func:`analysis.majority.strict_majority`), which decides between ``no_consensus``,
``preference_flip`` and the verdicts that follow. Otherwise the pair is **at_max** once it has
``maximum`` answers, and **needs_more** below that.

Without ties this is "one side leads by two": 2-0 stops, 1-1 and 2-1 go on, 3-1 stops. With
ties a tie answer counts against both sides, so chosen, chosen, tie (2 of 3 is a strict
majority that a rejected answer would break) goes on.

The rule looks at preferences only. The quality verdicts (``low_quality``,
``quality_confound``) compare pair means of 1-5 ratings with thresholds; with two or three
answers one extreme rating moves such a mean by more than a scale point, so asking that no
further rating could change them would send nearly every pair to ``maximum`` and spend the
budget on rating noise instead of on contested preferences. Those verdicts use all the answers
a pair got, as in a fixed-overlap study.

The labelling step (annotate's queue), the report (each pair's ``stopped``) and ``annotate
plan`` (the simulated adaptive designs) all call :func:`stopping_states`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from analysis.majority import NONE, strict_majority
from analysis.report.shape import Design
from analysis.vocabulary import PREFERENCES

DECIDED, NEEDS_MORE, AT_MAX = "decided", "needs_more", "at_max"
# The report's per-pair `stopped`, from the state of the answers a pair ended with.
STOPPED = {DECIDED: "decided", AT_MAX: "max", NEEDS_MORE: "open"}


def _consensus(counts: NDArray[np.int64]) -> NDArray[np.object_]:
    """The verdict-relevant outcome of each row: chosen, rejected, or None (no consensus:
    no strict majority, or a majority of ties)."""
    majority = strict_majority(counts)
    return np.where((majority == "chosen") | (majority == "rejected"), majority, NONE)


def stopping_states(
    counts: ArrayLike, *, minimum: int, maximum: int, ties: bool = True
) -> NDArray[np.object_]:
    """The state of each pair from its pairs x (chosen, rejected, tie) answer counts (the
    order of ``analysis.files.annotations_table.PREFERENCES``): an object array of DECIDED, NEEDS_MORE, AT_MAX."""
    if not 1 <= minimum <= maximum:
        raise ValueError(f"need 1 <= minimum <= maximum, got {minimum}-{maximum}")
    table = np.asarray(counts, dtype=np.int64).reshape(-1, len(PREFERENCES))
    n = table.sum(axis=1)
    now = _consensus(table)
    stable = np.ones(len(table), dtype=bool)
    labels = PREFERENCES if ties else tuple(p for p in PREFERENCES if p != "tie")
    for label in labels:
        more = table.copy()
        more[:, PREFERENCES.index(label)] += 1
        stable &= _consensus(more) == now
    return np.select(
        [(n >= minimum) & stable, n >= maximum], [DECIDED, AT_MAX], default=NEEDS_MORE
    ).astype(object)


def target_after(state: str, *, n: int, minimum: int, maximum: int) -> int:
    """How many answers the pair should get at most, given its state with ``n`` answers: the
    queue serves a pair while fewer are reserved than this. Below ``minimum`` the minimum;
    undecided, one more (never above ``maximum``); decided or at the maximum, what it has."""
    if n < minimum:
        return minimum
    if state == NEEDS_MORE:
        return min(maximum, n + 1)
    return min(n, maximum) if state == AT_MAX else n


# --- the report's view of a study's overlap design ------------------------------------------

SAMPLE_METHOD = (
    "adaptive overlap: every agreement statistic, and the conclusion's population checks "
    "(label agreement, quality equivalence, stated reasons), are computed on the agreement "
    "sample only: pairs drawn by a keyed coin before any answer, each given exactly K "
    "annotations whatever its answers said. Over all pairs they would be biased, because "
    "whether a pair got more answers depends on its answers (stopping when annotators agree "
    "makes agreement look higher; contested pairs would weigh more in annotation-level "
    "shares). Weighting cannot repair that: how many answers a pair got is a function of "
    "those answers, not a known inclusion probability. Per-pair verdicts use all answers."
)


@dataclass(frozen=True)
class OverlapDesign:
    """How many annotations a study gave each pair: fixed (minimum = maximum = the overlap)
    or adaptive (this module's rule between minimum and maximum), with the agreement sample
    (pair ids drawn by the study's keyed coin, each given exactly ``agreement_overlap``)."""

    adaptive: bool
    minimum: int
    maximum: int
    ties: bool = True
    agreement_fraction: float = 0.0
    agreement_overlap: int = 0
    sample: frozenset[str] = frozenset()

    def section(self) -> Design:
        """The report's ``design`` key (docs/reference/report-keys.md)."""
        out: Design = {
            "overlap": "adaptive" if self.adaptive else "fixed",
            "min": self.minimum,
            "max": self.maximum,
        }
        if self.adaptive:
            out["agreement_sample"] = {
                "fraction": self.agreement_fraction,
                "overlap": self.agreement_overlap,
                "pairs": len(self.sample),
            }
            out["note"] = SAMPLE_METHOD
        return out

    def stopped(self, pair_ids: Sequence[str], counts: ArrayLike) -> list[str | None]:
        """Each pair's ``stopped`` ("decided", "max", "open") from its answer counts; None in
        a fixed-overlap study. A pair of the agreement sample is "max" once it has its K."""
        if not self.adaptive:
            return [None] * len(pair_ids)
        states = stopping_states(counts, minimum=self.minimum, maximum=self.maximum, ties=self.ties)
        totals = np.asarray(counts).sum(axis=1)
        return [
            ("max" if n >= self.agreement_overlap else "open")
            if pair_id in self.sample
            else STOPPED[str(state)]
            for pair_id, n, state in zip(pair_ids, totals, states, strict=True)
        ]


def expected_annotations(
    counts: ArrayLike, *, in_sample: NDArray[np.bool_], design: OverlapDesign
) -> NDArray[np.int64] | NDArray[np.float64]:
    """How many annotations each pair is expected to end with (progress and ETA of an
    adaptive study): a pair of the agreement sample its K; a pair the rule has stopped what it
    has; an open pair at least one more than it has, and otherwise the mean final count of the
    stopped pairs outside the sample (the midpoint of MIN and MAX while there are none),
    never above MAX."""
    table = np.asarray(counts, dtype=np.int64).reshape(-1, len(PREFERENCES))
    n = table.sum(axis=1)
    if not design.adaptive:
        fixed: NDArray[np.int64] = np.maximum(n, design.maximum)
        return fixed
    states = stopping_states(
        table, minimum=design.minimum, maximum=design.maximum, ties=design.ties
    )
    stopped = states != NEEDS_MORE
    finished = stopped & ~in_sample
    typical = n[finished].mean() if finished.any() else (design.minimum + design.maximum) / 2
    open_ = np.minimum(np.maximum(n + 1, typical), design.maximum)
    out = np.where(stopped, n, open_).astype(float)
    expected: NDArray[np.float64] = np.where(
        in_sample, np.maximum(n, design.agreement_overlap), out
    )
    return expected
