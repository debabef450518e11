"""Review decisions in the report: each pair's decision and the `review` section.

A decision is taken on one version of a pair (keep, drop with a verdict name as category, or
revise: a new version was made). A pair's `decision` is the latest decision on its latest
version (null when there is none: a pair revised through review has its `revise` on the
earlier version, in `earlier_versions`, until its new version is decided).

`review` counts (non-gold pairs): `reviewed`, pairs with any decision; `kept` and `dropped`,
pairs whose decision is that; `revised`, pairs a reviewer revised; `overridden`, pairs whose
decision goes against the crowd's verdict of the same version (keep on a pair that is not
`valid`, drop on a `valid` one); and `agreement_with_crowd`: over the pairs whose latest
decision was taken on a version with a verdict (enough answers), the share where the reviewer
agrees with the crowd, `keep` meaning valid and `drop` or `revise` not valid.
"""

from __future__ import annotations

import pandas as pd

from analysis.aspects.check import VERDICT as RUBRIC_NOT_REFLECTED
from analysis.report.shape import KEY_ORDER, Report, Section, reordered
from analysis.verdicts.pairs import VERDICTS
from analysis.vocabulary import DECISIONS

KEEP, DROP, REVISE = DECISIONS
VALID = "valid"
UNLABELLED = "insufficient_annotations"
# A drop's category: what is wrong with the pair, in the verdicts' words (docs/reference/report-keys.md).
DROP_CATEGORIES = tuple(
    verdict
    for verdict in (*VERDICTS[:-1], RUBRIC_NOT_REFLECTED)
    if verdict not in (VALID, UNLABELLED)
)
# The columns of a decisions table (docs/reference/command-line.md, `annotate review --export`)
DECISION_COLUMNS = (
    "pair_id",
    "pair_version",
    "decision",
    "category",
    "note",
    "reviewer",
    "decided_at",
)


def _agrees(decision: str, verdict: str) -> bool:
    return (decision == KEEP) == (verdict == VALID)


def with_review(report: Report, decisions: pd.DataFrame | None) -> Report:
    """The report with each pair's `decision` and `decision_category` (module docstring), the
    decisions of its earlier versions, and the `review` section when there are decisions.
    `decisions`: DECISION_COLUMNS, in the order they were taken (None or empty: none)."""
    if decisions is None or decisions.empty:
        return report
    # (pair, version) -> (decision, category) of its latest decision
    by_key: dict[tuple[str, int], tuple[str, str | None]] = {}
    newest: dict[str, tuple[int, str]] = {}  # pair -> (version, decision) of its latest decision
    for record in decisions.to_dict(orient="records"):
        pair_id, version = str(record["pair_id"]), int(record["pair_version"])
        category = record.get("category")
        by_key[pair_id, version] = (
            str(record["decision"]),
            str(category) if isinstance(category, str) and category else None,
        )
        newest[pair_id] = (version, str(record["decision"]))
    pairs = []
    counts = {"reviewed": 0, KEEP: 0, DROP: 0, "revised": 0, "overridden": 0}
    agree = n = 0
    for pair in report["pairs"]:
        pair_id, version = pair["pair_id"], int(pair["pair_version"])
        own, own_category = by_key.get((pair_id, version), (None, None))
        history = [
            {**entry, "decision": by_key.get((pair_id, entry["pair_version"]), (None, None))[0]}
            for entry in pair.get("earlier_versions") or []
        ]
        pairs.append(
            {
                **pair,
                "decision": own,
                "decision_category": own_category,
                "earlier_versions": history,
            }
        )
        if pair.get("is_gold") or pair_id not in newest:
            continue
        counts["reviewed"] += 1
        if own in (KEEP, DROP):
            counts[own] += 1
            if pair["verdict"] != UNLABELLED and not _agrees(own, pair["verdict"]):
                counts["overridden"] += 1
        if own == REVISE or any(entry["decision"] == REVISE for entry in history):
            counts["revised"] += 1
        decided_version, decision = newest[pair_id]
        verdict = (
            pair["verdict"]
            if decided_version == version
            else next((e["verdict"] for e in history if e["pair_version"] == decided_version), None)
        )
        if verdict is not None and verdict != UNLABELLED:
            n += 1
            agree += _agrees(decision, verdict)
    agreement: Section = {"value": agree / n if n else None, "n": n}
    if not n:
        agreement["note"] = (
            "undefined: no decision was taken on a version with enough answers for a verdict"
        )
    review: Section = {
        "reviewed": counts["reviewed"],
        "kept": counts[KEEP],
        "dropped": counts[DROP],
        "revised": counts["revised"],
        "overridden": counts["overridden"],
        "agreement_with_crowd": agreement,
    }
    out: Report = {**report, "pairs": pairs, "review": review}
    return reordered(out, KEY_ORDER)
