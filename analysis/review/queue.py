"""Which pairs a reviewer looks at, and in which order (the console's Review page and its
command line twin read the queue from here).

A pair is in the queue for each reason that applies (`reasons`):
- `not_valid`: its verdict is one of the problems (not `valid`, and it has enough answers);
- `no_consensus`: no strict majority (its verdict, or one of its flags);
- `split`: its answers disagree (some prefer chosen, some rejected);
- `judge`: a judge compared with the report (`model:NAME`) did not pick chosen;
- `uncertain`: the model of annotation gives no verdict a probability of UNCERTAIN or more
  (pairs with `probabilities` only).

`review_order` is the one order of the queue: least certain first when pairs have
`probabilities` (the largest verdict probability, lowest first), else by verdict (the most
contested first, VERDICT_ORDER) and, within a verdict, the most split first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from analysis.report.shape import Section

UNCERTAIN = 0.8
REASONS = {
    "not_valid": "not valid",
    "no_consensus": "no consensus",
    "split": "split",
    "judge": "flagged by a judge",
    "uncertain": "least certain",
}
# The verdicts in the order a reviewer meets them: a crowd that could not decide, or decided
# against the pair's construction, before quality problems, and valid pairs last.
VERDICT_ORDER = (
    "no_consensus",
    "preference_flip",
    "quality_confound",
    "low_quality",
    "rubric_not_reflected",
    "valid",
    "insufficient_annotations",
)
_UNLABELLED = "insufficient_annotations"


def _certainty(pair: Section) -> float | None:
    probabilities = pair.get("probabilities")
    if not isinstance(probabilities, dict) or not probabilities:
        return None
    values = [p for p in probabilities.values() if isinstance(p, int | float)]
    return max(values) if values else None


def _split(pair: Section) -> float:
    """How evenly the pair's answers divide between the responses: the smaller side's share
    of its decisive answers (0: unanimous, 0.5: an even split)."""
    chosen, rejected = pair.get("n_chosen") or 0, pair.get("n_rejected") or 0
    return min(chosen, rejected) / (chosen + rejected) if chosen + rejected else 0.0


def reasons(pair: Section) -> list[str]:
    """Why a reviewer should look at this pair (keys of REASONS; empty: no reason)."""
    if pair.get("is_gold"):
        return []
    verdict = pair.get("verdict")
    found = []
    if verdict not in ("valid", _UNLABELLED):
        found.append("not_valid")
    if verdict == "no_consensus" or "no_consensus" in (pair.get("flags") or []):
        found.append("no_consensus")
    if _split(pair) > 0:
        found.append("split")
    picks = [value for key, value in pair.items() if key.startswith("model:")]
    if any(pick not in (None, "chosen") for pick in picks):
        found.append("judge")
    certainty = _certainty(pair)
    if certainty is not None and certainty < UNCERTAIN:
        found.append("uncertain")
    return found


def _key(pair: Section) -> tuple[int, float, int, float, int]:
    certainty = _certainty(pair)
    verdict = pair.get("verdict")
    rank = VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)
    return (
        0 if certainty is not None else 1,
        certainty if certainty is not None else 0.0,
        rank,
        -_split(pair),
        -(pair.get("n_annotations") or 0),
    )


def review_order(pairs: Iterable[Section]) -> list[Section]:
    """`pairs` in the queue's order (module docstring); stable for ties."""
    return sorted(pairs, key=_key)


def review_queue(pairs: Sequence[Section], *, wanted: Iterable[str] = ()) -> list[Section]:
    """The pairs with a reason to be reviewed (with one of the `wanted` reasons, when given),
    each with its `reasons`, in review_order."""
    wanted = set(wanted)
    queue = []
    for pair in pairs:
        found = reasons(pair)
        if found and (not wanted or wanted & set(found)):
            queue.append({**pair, "reasons": found})
    return review_order(queue)


def reason_counts(pairs: Sequence[Section]) -> dict[str, int]:
    """How many pairs each reason brings into the queue."""
    counts = dict.fromkeys(REASONS, 0)
    for pair in pairs:
        for reason in reasons(pair):
            counts[reason] += 1
    return counts
