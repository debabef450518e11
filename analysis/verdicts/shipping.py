"""Which pairs the exports write (`--export-valid`, `--export-cleaned`), and why each other pair
is left out: one home for both, over the report's pairs (docs/reference/command-line.md and report-keys.md).

A reviewer's decision on a pair's current version overrides the crowd's verdict: `keep` writes
the pair whatever its verdict, `drop` leaves it out whatever its verdict. Otherwise:

- `--export-valid` writes the pairs whose verdict is `valid`. A pair without enough answers
  yet (`insufficient_annotations`) is not judged: it is not written, and is counted apart
  from the pairs dropped for what their answers said.
- `--export-cleaned` (sampled studies) writes what ships: the whole population minus the pairs
  whose answers show them not valid. Pairs never sampled and sampled pairs not labelled yet are
  kept: a pair is never dropped only because nobody has labelled it yet.

Gold pairs (quality checks) are never written. Every pair not written has a reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from analysis.report.shape import Report, Section

VALID = "valid"
UNLABELLED = "insufficient_annotations"
KEEP, DROP = "keep", "drop"

# Why a pair is written
WRITTEN_VALID = "valid"
WRITTEN_KEPT = "kept by a reviewer"
WRITTEN_UNSAMPLED = "never sampled"
WRITTEN_UNLABELLED = "not labelled yet"
# Why a pair is not: a verdict's name, or these
DROPPED_BY_REVIEWER = "dropped by a reviewer"
NOT_YET = "not labelled yet"


@dataclass(frozen=True)
class Shipment:
    """The pairs an export writes (ids, in the report's order) and, by reason, how many it
    writes and how many it leaves out (`dropped`: for what their answers or a reviewer said;
    `pending`: not judged yet, --export-valid only)."""

    written: list[str]
    written_by: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    pending: int = 0

    def summary(self, *, option: str, path: str | Path) -> str:
        """One sentence for the command line."""
        text = f"{option}: {len(self.written):,} pairs written to {path}"
        if self.written_by:
            text += f" ({_reasons(self.written_by)})"
        dropped = sum(self.dropped.values())
        text += f"; {dropped:,} dropped"
        if dropped:
            text += f" ({_reasons(self.dropped)})"
        if self.pending:
            text += (
                f"; {self.pending:,} not written because nobody has labelled them enough yet "
                "(not dropped: run the export again once they are)"
            )
        return text


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {reason}" for reason, n in counts.items())


def _decision(pair: Section) -> str | None:
    decision = pair.get("decision")
    return decision if decision in (KEEP, DROP) else None


def _dropped_reason(pair: Section) -> str:
    category = pair.get("decision_category")
    return f"{DROPPED_BY_REVIEWER} as {category}" if category else DROPPED_BY_REVIEWER


def valid_shipment(report: Report) -> Shipment:
    """`--export-valid` (module docstring)."""
    written: list[str] = []
    written_by: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    pending = 0
    for pair in report["pairs"]:
        if pair.get("is_gold"):
            continue
        decision, verdict = _decision(pair), pair["verdict"]
        if decision == KEEP or (decision is None and verdict == VALID):
            written.append(pair["pair_id"])
            written_by[WRITTEN_KEPT if decision == KEEP else WRITTEN_VALID] += 1
        elif decision == DROP:
            dropped[_dropped_reason(pair)] += 1
        elif verdict == UNLABELLED:
            pending += 1
        else:
            dropped[verdict] += 1
    return Shipment(written, dict(written_by), dict(dropped), pending)


def cleaned_shipment(report: Report) -> Shipment:
    """`--export-cleaned` (module docstring): over the population of a sampled study."""
    pairs = {pair["pair_id"]: pair for pair in report["pairs"]}
    written: list[str] = []
    written_by: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for unit in report["population"]["pairs"]:
        pair = pairs.get(unit["pair_id"], {"verdict": UNLABELLED})
        if pair.get("is_gold"):
            continue
        decision, verdict = _decision(pair), pair["verdict"]
        if decision == DROP:
            dropped[_dropped_reason(pair)] += 1
            continue
        if decision == KEEP:
            reason = WRITTEN_KEPT
        elif not unit["sampled"]:
            reason = WRITTEN_UNSAMPLED
        elif verdict == VALID:
            reason = WRITTEN_VALID
        elif verdict == UNLABELLED:
            reason = WRITTEN_UNLABELLED
        else:
            dropped[verdict] += 1
            continue
        written.append(unit["pair_id"])
        written_by[reason] += 1
    return Shipment(written, dict(written_by), dict(dropped))
