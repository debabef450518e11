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

With the model of annotation's probabilities (each pair's ``p_valid``) an export also says
what it is expected to get wrong: the expected number of not-valid pairs among those written
(the sum of 1 - p_valid; a pair never labelled counts at the benchmark's estimated true rate)
and of valid pairs left out (the sum of p_valid over the pairs dropped for their answers). A
reviewer's decision counts as certain. ``max_bad_share`` (``--max-bad-share X``) then leaves
out the labelled pairs least likely to be valid, one at a time, until the expected share of
not-valid pairs among those written is at most X; it only ever removes pairs the export would
otherwise write.
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
OVER_BUDGET = "over the bad-share budget"


@dataclass(frozen=True)
class Shipment:
    """The pairs an export writes (ids, in the report's order) and, by reason, how many it
    writes and how many it leaves out (`dropped`: for what their answers or a reviewer said;
    `pending`: not judged yet, --export-valid only)."""

    written: list[str]
    written_by: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    expected_bad_kept: float | None = None  # None without the model's probabilities
    expected_good_dropped: float | None = None
    budget_note: str | None = None  # --max-bad-share that could not be met

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
        if self.expected_bad_kept is not None and self.expected_good_dropped is not None:
            share = self.expected_bad_kept / len(self.written) if self.written else 0.0
            text += (
                f"; expected by the model of annotation: {self.expected_bad_kept:,.1f} not-valid "
                f"pairs among those written ({100 * share:.1f}%) and "
                f"{self.expected_good_dropped:,.1f} valid pairs among those dropped"
            )
        if self.budget_note:
            text += f"; {self.budget_note}"
        return text


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {reason}" for reason, n in counts.items())


def _decision(pair: Section) -> str | None:
    decision = pair.get("decision")
    return decision if decision in (KEEP, DROP) else None


def _dropped_reason(pair: Section) -> str:
    category = pair.get("decision_category")
    return f"{DROPPED_BY_REVIEWER} as {category}" if category else DROPPED_BY_REVIEWER


def _p_valid(pair: Section) -> float | None:
    probabilities = pair.get("probabilities")
    return None if not probabilities else probabilities.get(VALID)


@dataclass
class _Draft:
    """An export being decided: what it writes, with each written pair's chance of being not
    valid (None: a reviewer's keep, or no probability) and whether the budget may drop it."""

    written: list[str] = field(default_factory=list)
    reason: list[str] = field(default_factory=list)
    bad: list[float] = field(default_factory=list)
    droppable: list[bool] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    good_dropped: float = 0.0
    pending: int = 0
    known: bool = True  # every pair's probability is known

    def write(self, pair_id: str, reason: str, bad: float | None, *, droppable: bool) -> None:
        self.written.append(pair_id)
        self.reason.append(reason)
        self.bad.append(0.0 if bad is None else bad)
        self.droppable.append(droppable and bad is not None)

    def drop(self, reason: str, p_valid: float | None) -> None:
        self.dropped[reason] += 1
        if reason != DROPPED_BY_REVIEWER and not reason.startswith(DROPPED_BY_REVIEWER):
            self.good_dropped += p_valid or 0.0

    def shipment(self, max_bad_share: float | None) -> Shipment:
        keep = [True] * len(self.written)
        note = None
        if max_bad_share is not None and self.known:
            bad_total = sum(self.bad)
            order = sorted(
                (i for i in range(len(self.written)) if self.droppable[i]),
                key=lambda i: -self.bad[i],
            )
            kept = len(self.written)
            for i in order:
                if kept == 0 or bad_total <= max_bad_share * kept:
                    break
                keep[i] = False
                bad_total -= self.bad[i]
                kept -= 1
                self.dropped[OVER_BUDGET] += 1
                self.good_dropped += 1.0 - self.bad[i]
            if kept and bad_total > max_bad_share * kept + 1e-12:
                note = (
                    f"--max-bad-share {max_bad_share:g} cannot be met: the pairs that cannot be "
                    f"left out (reviewers' keeps, pairs never labelled) alone are expected to "
                    f"hold {100 * bad_total / kept:.1f}% not-valid pairs"
                )
        elif max_bad_share is not None:
            note = (
                "--max-bad-share needs the model of annotation's probabilities, which some "
                "pairs lack; nothing was left out for it"
            )
        written = [w for w, k in zip(self.written, keep, strict=True) if k]
        by: Counter[str] = Counter(r for r, k in zip(self.reason, keep, strict=True) if k)
        bad = sum(b for b, k in zip(self.bad, keep, strict=True) if k)
        return Shipment(
            written,
            dict(by),
            dict(self.dropped),
            self.pending,
            expected_bad_kept=bad if self.known else None,
            expected_good_dropped=self.good_dropped if self.known else None,
            budget_note=note,
        )


def valid_shipment(report: Report, *, max_bad_share: float | None = None) -> Shipment:
    """`--export-valid` (module docstring)."""
    draft = _Draft()
    for pair in report["pairs"]:
        if pair.get("is_gold"):
            continue
        decision, verdict, p_valid = _decision(pair), pair["verdict"], _p_valid(pair)
        if decision == KEEP:
            draft.write(pair["pair_id"], WRITTEN_KEPT, None, droppable=False)
        elif decision == DROP:
            draft.drop(_dropped_reason(pair), None)
        elif verdict == UNLABELLED:
            draft.pending += 1
        else:
            draft.known &= p_valid is not None
            if verdict == VALID:
                bad = None if p_valid is None else 1.0 - p_valid
                draft.write(pair["pair_id"], WRITTEN_VALID, bad, droppable=True)
            else:
                draft.drop(verdict, p_valid)
    return draft.shipment(max_bad_share)


def cleaned_shipment(report: Report, *, max_bad_share: float | None = None) -> Shipment:
    """`--export-cleaned` (module docstring): over the population of a sampled study."""
    pairs = {pair["pair_id"]: pair for pair in report["pairs"]}
    true_share = report["population"].get("estimates", {}).get(VALID, {}).get("true_share")
    unknown_bad = None if true_share is None else 1.0 - true_share
    draft = _Draft()
    for unit in report["population"]["pairs"]:
        pair = pairs.get(unit["pair_id"], {"verdict": UNLABELLED})
        if pair.get("is_gold"):
            continue
        decision, verdict, p_valid = _decision(pair), pair["verdict"], _p_valid(pair)
        if decision == DROP:
            draft.drop(_dropped_reason(pair), None)
        elif decision == KEEP:
            draft.write(unit["pair_id"], WRITTEN_KEPT, None, droppable=False)
        elif not unit["sampled"] or verdict == UNLABELLED:
            draft.known &= unknown_bad is not None
            reason = WRITTEN_UNSAMPLED if not unit["sampled"] else WRITTEN_UNLABELLED
            draft.write(unit["pair_id"], reason, unknown_bad, droppable=False)
        else:
            draft.known &= p_valid is not None
            if verdict == VALID:
                bad = None if p_valid is None else 1.0 - p_valid
                draft.write(unit["pair_id"], WRITTEN_VALID, bad, droppable=True)
            else:
                draft.drop(verdict, p_valid)
    return draft.shipment(max_bad_share)
