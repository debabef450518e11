"""Was personal preference the main factor separating the pairs? Checks with explicit thresholds.

Every check is a plain dict of this shape, so that another check (the aspect check, built
elsewhere) is just one more function returning it and one more entry in the mapping given to
:func:`conclude`::

    {
        "passed": bool,          # True only when outcome is "passed"
        "outcome": "passed" | "failed" | "insufficient",
                                 # failed: the evidence is against the claim;
                                 # insufficient: too little data to say either way
        "value": float | None,   # the estimate the rule looks at
        "ci95": [lo, hi] | None, # its 95% interval (the one the rule uses)
        "threshold": float,      # what the interval is compared with
        "n": int,                # units behind the value (pairs, or reasons for the count rule)
        "rule": str,             # the rule in words, with its numbers
        "note": str | None,      # why the outcome is what it is, when not obvious
        ...                      # check-specific detail (dimensions, the decided-only figure)
    }

``conclude`` gives ``status``: ``supported`` when every check passed, ``not_supported`` when
some check failed (evidence against), else ``insufficient_evidence``. A check whose evidence is
missing or too small is insufficient, never passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from analysis.report.shape import Conclusion, Section

SIGNIFICANCE = 0.05

# Why 0.6: the claim is that annotators, judging for this user, confirm the constructed label
# in a clear majority of pairs. 0.6 means confirmed pairs outnumber flipped or split ones 3 to
# 2, with the lower 95% bound above it, not the point. A bare "above 1/2" passes 2,000 pairs
# in which nearly half are flipped or split (p = 0.535 per annotation gives 0.552).
LABEL_THRESHOLD = 0.6
# Why 30: the TOST's t distribution of per-pair mean differences is trustworthy from about 30
# pairs; below that one odd pair decides it.
MIN_RATED_PAIRS = 30
# Why 30: fewer stated reasons are anecdotes (the same count as for rated pairs).
MIN_REASONS = 30

OUTCOMES = ("passed", "failed", "insufficient")


def check_section(
    outcome: str,
    *,
    value: float | None,
    ci95: Sequence[float] | None,
    threshold: float,
    n: int,
    rule: str,
    note: str | None = None,
    **detail: object,
) -> Section:
    """One check of the conclusion (report.json's `checks`): its outcome, the value and interval
    it was decided on, the threshold, n, the rule in words and any further detail."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    return {
        "passed": outcome == "passed",
        "outcome": outcome,
        "value": value,
        "ci95": ci95,
        "threshold": threshold,
        "n": n,
        "rule": rule,
        "note": note,
        **detail,
    }


def ci_outcome(ci95: Sequence[float] | None, threshold: float) -> str:
    """passed: the interval lies above the threshold; failed: at or below it."""
    if ci95 is None:
        return "insufficient"
    lo, hi = ci95
    if lo > threshold:
        return "passed"
    if hi <= threshold:
        return "failed"
    return "insufficient"


def label_check(
    confirmed: Section, *, decided: Section, threshold: float = LABEL_THRESHOLD
) -> Section:
    """The share of pairs (with enough annotations) whose majority is ``chosen``; no-consensus
    pairs count as not confirming. Compared with the threshold through the interval that
    treats the annotators as a sample (``ci95_annotators``): the claim is about annotators
    like these, not about these few people. Without that interval (too few pairs rated by three
    or more annotators: the evidence rule, :func:`analysis.agreement.intervals.annotator_evidence`)
    the check is insufficient whatever the pairs-only interval says: with two annotators who
    differ, that interval covered the value for annotators in general in only 47% of simulated
    studies."""
    # here, not at the top: the command-line parser imports this module's thresholds, and
    # the interval module brings numpy and scipy
    from analysis.agreement.intervals import MIN_ANNOTATORS, MIN_EVIDENCE_PAIRS

    ci = confirmed.get("ci95_annotators")
    rule = (
        f"lower end of the annotator-aware 95% interval of the share of pairs whose majority "
        f"is chosen (no consensus = not confirmed) above {threshold}; needs at least "
        f"{MIN_EVIDENCE_PAIRS} pairs with {MIN_ANNOTATORS}+ annotations"
    )
    note = None
    if not confirmed.get("n"):
        outcome = "insufficient"
        note = confirmed.get("note", "no pair has enough annotations")
    elif ci is None:
        outcome = "insufficient"
        pairs_only = ci_outcome(confirmed.get("ci95"), threshold)
        reading = {"passed": "above", "failed": "at or below", "insufficient": "across"}
        note = (
            "no interval that treats the annotators as a sample ("
            + confirmed.get("ci95_annotators_note", "none computed")
            + "); the interval for these annotators only lies "
            + reading[pairs_only]
            + f" {threshold}, which says nothing about annotators in general "
            "(annotate plan sizes a study that can tell)"
        )
    else:
        outcome = ci_outcome(ci, threshold)
    return check_section(
        outcome,
        value=confirmed.get("value"),
        ci95=ci,
        threshold=threshold,
        n=confirmed.get("n", 0),
        rule=rule,
        note=note,
        interval="ci95_annotators",
        ci95_pairs=confirmed.get("ci95"),
        decided_only={k: decided[k] for k in ("value", "ci95", "n", "note") if k in decided},
    )


def _dimension_outcome(q: Section, *, margin: float, min_pairs: int) -> tuple[str, str | None]:
    n = q["n_pairs"]
    if n == 0:
        return "insufficient", "never rated on both responses of a pair"
    if n < min_pairs:
        return "insufficient", f"rated on both responses in {n} pairs, fewer than {min_pairs}"
    if q["diff_ci90"] is None:
        return "insufficient", q.get("note", "no equivalence test")
    lo, hi = q["diff_ci90"]
    if -margin < lo and hi < margin:
        return "passed", None
    if lo >= margin or hi <= -margin:
        return "failed", "the 90% interval lies outside the margin"
    return "insufficient", "the 90% interval reaches past the margin"


def quality_check(
    quality: Mapping[str, Section],
    *,
    dimensions: list[str],
    margin: float,
    min_pairs: int = MIN_RATED_PAIRS,
) -> Section:
    """Every dimension the study asks: rated on both responses of ``min_pairs`` pairs and the
    TOST's 90% interval of chosen minus rejected inside +-margin (intersection-union test, no
    multiplicity correction needed). ``value`` and ``ci95`` are those of the dimension whose
    90% interval reaches farthest from 0."""
    rule = (
        f"every asked dimension ({', '.join(dimensions) or 'none'}): at least {min_pairs} "
        f"pairs rated on both responses and TOST p < {SIGNIFICANCE} with margin +-{margin:g} "
        "scale points (90% interval of chosen - rejected inside the margin)"
    )
    if not dimensions:
        return check_section(
            "insufficient",
            value=None,
            ci95=None,
            threshold=margin,
            n=0,
            rule=rule,
            note="the study asks no quality dimension",
            dimensions={},
        )
    detail = {}
    for name in dimensions:
        q = quality[name]
        outcome, why = _dimension_outcome(q, margin=margin, min_pairs=min_pairs)
        detail[name] = {
            "outcome": outcome,
            "equivalent": outcome == "passed",
            "mean_diff": q["mean_diff"],
            "diff_ci90": q["diff_ci90"],
            "diff_ci95": q.get("diff_ci95"),
            "tost_p": q["tost_p"],
            "n_pairs": q["n_pairs"],
            "note": why,
        }
    outcomes = {d["outcome"] for d in detail.values()}
    outcome = next(o for o in ("failed", "insufficient", "passed") if o in outcomes)
    reach = {
        name: max(abs(b) for b in d["diff_ci90"])
        for name, d in detail.items()
        if d["diff_ci90"] is not None
    }
    worst = max(reach, key=reach.__getitem__) if reach else None
    # one note per reason, naming every dimension it holds for (not the same words thrice)
    reasons: dict[str, list[str]] = {}
    for name, d in detail.items():
        if d["note"]:
            reasons.setdefault(d["note"], []).append(name)
    notes = [f"{', '.join(names)}: {why}" for why, names in reasons.items()]
    return check_section(
        outcome,
        value=detail[worst]["mean_diff"] if worst else None,
        ci95=detail[worst]["diff_ci95"] if worst else None,
        threshold=margin,
        n=min(d["n_pairs"] for d in detail.values()),
        rule=rule,
        note="; ".join(notes) or None,
        worst_dimension=worst,
        dimensions=detail,
    )


def reason_check(reasons: Section, *, min_reasons: int = MIN_REASONS) -> Section:
    """Personal fit (alone or with quality) more frequent than general quality, pairs as the
    independent units: ``reasons["by_pair"]`` is the share of pairs (among those where the two
    differ) in which personal fit was stated more often, with its exact interval."""
    by_pair = reasons.get("by_pair", {})
    stated = reasons.get("n", 0)
    rule = (
        f"at least {min_reasons} stated reasons, and the lower end of the 95% interval of the "
        "share of pairs where personal fit (alone or with quality) was stated more often than "
        "general quality (pairs where they differ) above 0.5"
    )
    note = None
    if stated < min_reasons:
        outcome = "insufficient"
        note = f"{stated} stated reasons, fewer than {min_reasons}"
    elif not by_pair.get("n"):
        outcome = "insufficient"
        note = by_pair.get("note", "no pair where the two reasons were stated unequally often")
    else:
        outcome = ci_outcome(by_pair.get("ci95"), 0.5)
    return check_section(
        outcome,
        value=by_pair.get("value"),
        ci95=by_pair.get("ci95"),
        threshold=0.5,
        n=by_pair.get("n", 0),
        rule=rule,
        note=note,
        stated_reasons=stated,
        personal_share=(reasons["personal_fit"] + reasons["both"] if reasons.get("n") else None),
        general_quality_share=reasons.get("general_quality"),
    )


def conclude(checks: Mapping[str, Section]) -> Conclusion:
    """``status`` and the headline boolean from any mapping of named checks (see above)."""
    outcomes = {check["outcome"] for check in checks.values()}
    if not checks:
        status = "insufficient_evidence"
    elif "failed" in outcomes:
        status = "not_supported"
    elif "insufficient" in outcomes:
        status = "insufficient_evidence"
    else:
        status = "supported"
    return {
        "personal_preference_main_factor": status == "supported",
        "status": status,
        "checks": dict(checks),
    }
