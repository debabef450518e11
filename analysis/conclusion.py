"""Was personal preference the main factor separating the pairs? Three checks, all required.

A check whose evidence is missing (no decided pair, no rated dimension, no stated reason) fails
with a note: the absence of evidence never passes.
"""

from __future__ import annotations

SIGNIFICANCE = 0.05


def label_check(label_agreement: dict) -> dict:
    p = label_agreement.get("p_value")
    check = {
        "passed": p is not None and p < SIGNIFICANCE,
        "rule": f"share of decided pairs whose majority is chosen > 1/2, one-sided exact p < {SIGNIFICANCE}",
        "value": label_agreement.get("value"),
        "ci95": label_agreement.get("ci95"),
        "p_value": p,
        "n": label_agreement.get("n"),
    }
    if p is None:
        check["note"] = "fails: " + label_agreement.get("note", "label agreement is undefined")
    return check


def equivalence_check(quality: dict, *, margin: float) -> dict:
    dimensions = {}
    for name, q in quality.items():
        if not q["n_pairs"]:
            continue  # not rated at all: not part of this data set's quality judgement
        dimensions[name] = {
            "equivalent": bool(q["equivalent"]) if q["equivalent"] is not None else False,
            "tost_p": q["tost_p"],
            "mean_diff": q["mean_diff"],
            "diff_ci90": q["diff_ci90"],
            "n_pairs": q["n_pairs"],
        }
        if q["equivalent"] is None:
            dimensions[name]["note"] = "fails: " + q.get("note", "the test is undefined")
    check = {
        "passed": bool(dimensions) and all(d["equivalent"] for d in dimensions.values()),
        "rule": (
            f"every rated dimension: TOST of chosen minus rejected within +-{margin}, p < "
            f"{SIGNIFICANCE} (intersection-union test, no multiplicity correction needed)"
        ),
        "margin": margin,
        "dimensions": dimensions,
    }
    if not dimensions:
        check["note"] = "fails: no quality dimension was rated on both responses of any pair"
    return check


def reason_check(main_reason: dict) -> dict:
    n = main_reason.get("n", 0)
    personal = None
    if n:
        personal = main_reason["personal_fit"] + main_reason["both"]
    check = {
        "passed": bool(n)
        and personal > main_reason["general_quality"]
        and personal > main_reason["unsure"],
        "rule": (
            "personal_fit + both is a larger share than general_quality and than unsure, "
            "among annotations that gave a reason"
        ),
        "personal_share": personal,
        "general_quality_share": main_reason.get("general_quality"),
        "unsure_share": main_reason.get("unsure"),
        "n": n,
    }
    if not n:
        check["note"] = "fails: no annotation gave a main reason"
    return check


def conclusion(*, label_agreement: dict, quality: dict, main_reason: dict, margin: float) -> dict:
    checks = {
        "label_agreement": label_check(label_agreement),
        "equal_quality": equivalence_check(quality, margin=margin),
        "main_reason": reason_check(main_reason),
    }
    return {
        "personal_preference_main_factor": all(c["passed"] for c in checks.values()),
        "checks": checks,
    }
