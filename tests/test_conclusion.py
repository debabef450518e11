"""The conclusion's checks on data with known answers: each weak-evidence case of issue 13
(built here the same way), each check passing and failing, insufficient evidence, the study's
categories in AC1, and nulls below the unit thresholds."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from analysis.files.annotations_table import validate_annotations
from analysis.report.build import ReportOptions, build_report
from analysis.report.shape import Report
from tests.report_fixtures import frame, row, synthetic

GOOD = (4, 4, 4)
REASONS = ("personal_fit", "both", "personal_fit", "general_quality")


def report_of(rows, **options) -> Report:
    scale = options.pop("scale", (1, 5))
    options.update(scale_min=scale[0], scale_max=scale[1])
    table = validate_annotations(frame(rows), source="test", scale=scale)
    options.setdefault("bootstrap", 0)
    report = build_report(table, None, options=ReportOptions(**options))
    json.dumps(report, allow_nan=False)
    return report


def checks(report) -> dict:
    return report["conclusion"]["checks"]


def rated(pair_id, annotator, preference, k=0, *, chosen=None, rejected=None, reason=None):
    """An annotation with ratings that vary a little (so the TOST has spread), chosen rated
    about as well as rejected."""
    base = 3 + k % 2
    better = base + (k % 5 == 0) - (k % 7 == 0)
    return row(
        pair_id,
        annotator,
        preference,
        chosen=chosen or (better,) * 3,
        rejected=rejected or (base,) * 3,
        reason=reason or REASONS[k % len(REASONS)],
    )


def clean_study(n_pairs=60, annotators=("a1", "a2", "a3")):
    """Every annotation picks chosen for personal fit, both responses rated alike."""
    return [
        rated(f"p{i}", a, "chosen", i + j, reason="personal_fit" if (i + j) % 4 else "both")
        for i in range(n_pairs)
        for j, a in enumerate(annotators)
    ]


# --- the cases under "Why" -----------------------------------------------------------------


def test_five_pairs_all_rated_five_are_not_evidence():
    rows = [
        row(f"p{i}", a, "chosen", chosen=(5, 5, 5), rejected=(5, 5, 5), reason="personal_fit")
        for i in range(5)
        for a in ("a1", "a2")
    ]
    report = report_of(rows)
    assert report["conclusion"]["status"] == "insufficient_evidence"
    assert report["conclusion"]["personal_preference_main_factor"] is False
    quality = checks(report)["quality"]
    assert quality["outcome"] == "insufficient"
    assert "fewer than 30" in quality["dimensions"]["correctness"]["note"]


def _all_fives(n_pairs: int) -> list[dict]:
    return [
        row(f"p{i}", a, "chosen", chosen=(5, 5, 5), rejected=(5, 5, 5), reason="personal_fit")
        for i in range(n_pairs)
        for a in ("a1", "a2", "a3")
    ]


def test_quality_check_is_continuous_between_zero_and_almost_zero_spread():
    # the audit's case: 40 pairs with every rating 5 were insufficient, and the same with one
    # rating 4 supported
    flat = report_of(_all_fives(40))
    rows = _all_fives(40)
    rows[0]["relevance_rejected"] = 4
    almost = report_of(rows)
    for report in (flat, almost):
        quality = checks(report)["quality"]
        assert quality["outcome"] == "passed"
        relevance = report["quality"]["relevance"]
        # the block and the check say the same
        assert relevance["equivalent"] is True
        assert quality["dimensions"]["relevance"]["outcome"] == "passed"
        # the spread is floored at the rounding of means of three integer ratings:
        # sqrt((1/3 + 1/3) / 12)
        assert relevance["tost_p"] > 0
        assert "resolution" in relevance["note"]
    a, b = (r["quality"]["relevance"]["diff_ci90"] for r in (flat, almost))
    assert a[1] - a[0] == pytest.approx(2 * 1.684875 * np.sqrt(2 / 36 / 40), rel=1e-4)
    assert b == pytest.approx(a, abs=0.02)
    assert flat["quality"]["relevance"]["zero_spread"] is True


def test_thirty_pairs_of_which_two_rated():
    rows = [
        row(
            f"p{i}",
            a,
            "chosen",
            chosen=(4, 4, 4) if i < 2 else (None,) * 3,
            rejected=(4, 4, 4) if i < 2 else (None,) * 3,
            reason="personal_fit",
        )
        for i in range(30)
        for a in ("a1", "a2")
    ]
    report = report_of(rows)
    assert checks(report)["quality"]["outcome"] == "insufficient"
    assert checks(report)["quality"]["n"] == 2
    assert report["conclusion"]["status"] == "insufficient_evidence"


def _pattern_rows(patterns: dict[int, int], *, annotators=("a1", "a2", "a3")) -> list[dict]:
    """patterns: number of annotators picking chosen -> number of pairs with that pattern.
    Which annotators pick chosen rotates from pair to pair (the annotators are alike)."""
    rows, i = [], 0
    for k_chosen, n_pairs in patterns.items():
        for _ in range(n_pairs):
            for j, a in enumerate(annotators):
                pick = "chosen" if (j - i) % len(annotators) < k_chosen else "rejected"
                rows.append(rated(f"p{i}", a, pick, i + j, reason="personal_fit"))
            i += 1
    return rows


def test_barely_above_half_per_annotation_is_not_supported():
    # 2,000 pairs x 3 with p = 0.535 per annotation: the expected pattern shares are p^3,
    # 3p^2q, 3pq^2, q^3 = 0.153, 0.399, 0.347, 0.100, so 55.25% of pairs have a chosen
    # majority: significantly above 1/2, but nearly half the pairs are flipped.
    report = report_of(_pattern_rows({3: 306, 2: 799, 1: 694, 0: 201}))
    label = checks(report)["label"]
    assert label["value"] == pytest.approx(1105 / 2000)
    assert report["preference"]["label_confirmed"]["p_value"] < 0.001
    assert label["ci95"][1] < 0.6  # the default --label-threshold
    assert label["outcome"] == "failed"
    assert report["conclusion"]["status"] == "not_supported"
    assert report["conclusion"]["personal_preference_main_factor"] is False


def test_split_pairs_count_as_not_confirming():
    rows = []
    for i in range(100):
        second = "chosen" if i < 20 else "rejected"
        rows += [
            rated(f"p{i}", "a1", "chosen", i, reason="personal_fit"),
            rated(f"p{i}", "a2", second, i + 1, reason="personal_fit"),
        ]
    report = report_of(rows)
    label = checks(report)["label"]
    assert (label["value"], label["n"]) == (0.2, 100)
    assert label["decided_only"]["value"] == 1.0 and label["decided_only"]["n"] == 20
    # two annotators: the interval for these two lies below the threshold, but only an
    # annotator-aware interval (three or more annotators) decides the check either way
    assert label["outcome"] == "insufficient"
    assert "these annotators only lies at or below 0.6" in label["note"]
    assert report["conclusion"]["status"] == "insufficient_evidence"


def test_one_stated_reason_among_sixty_is_not_enough():
    rows = clean_study(30, annotators=("a1", "a2"))
    for r in rows[1:]:
        r["main_reason"] = None
    reason = checks(report_of(rows))["reason"]
    assert reason["outcome"] == "insufficient"
    assert reason["note"] == "1 stated reasons, fewer than 30"


def test_a_dimension_never_rated_is_not_dropped():
    rows = clean_study()
    for r in rows:
        r["helpfulness_chosen"] = r["helpfulness_rejected"] = None
    report = report_of(rows)
    quality = checks(report)["quality"]
    assert set(quality["dimensions"]) == {"correctness", "relevance", "helpfulness"}
    assert quality["dimensions"]["helpfulness"]["note"] == (
        "never rated on both responses of a pair"
    )
    assert quality["outcome"] == "insufficient"
    assert report["conclusion"]["status"] == "insufficient_evidence"
    # A study that does not ask for helpfulness passes without it.
    asked = report_of(rows, dimensions=("correctness", "relevance"))
    assert set(checks(asked)["quality"]["dimensions"]) == {"correctness", "relevance"}
    assert asked["conclusion"]["status"] == "supported"


def test_a_dimension_rated_on_one_pair_is_insufficient_not_evidence_against():
    rows = clean_study()
    for r in rows:
        if r["pair_id"] != "p0":
            r["relevance_chosen"] = r["relevance_rejected"] = None
    quality = checks(report_of(rows))["quality"]
    assert quality["dimensions"]["relevance"]["outcome"] == "insufficient"
    assert quality["dimensions"]["relevance"]["n_pairs"] == 1
    assert quality["outcome"] == "insufficient"


def _tie_free_study() -> list[dict]:
    """10 pairs x 2 annotators, no ties: 6 pairs agree on chosen, 1 on rejected, 3 split.
    pa = 7/10; pi_chosen = 15/20 = 3/4."""
    rows = []
    for i in range(10):
        first, second = (
            ("chosen", "chosen") if i < 6 else ("rejected", "rejected") if i == 6 else
            ("chosen", "rejected")
        )  # fmt: skip
        rows += [row(f"p{i}", "a1", first), row(f"p{i}", "a2", second)]
    return rows


def test_ac1_uses_the_studys_categories():
    # Hand computation (Gwet 2008): pe = sum_k pi_k (1 - pi_k) / (Q - 1).
    pa, pi = Fraction(7, 10), Fraction(3, 4)
    two = (pa - 2 * pi * (1 - pi)) / (1 - 2 * pi * (1 - pi))  # Q = 2: 13/25
    three = (pa - pi * (1 - pi)) / (1 - pi * (1 - pi))  # Q = 3, the tie never possible: 41/65
    assert (two, three) == (Fraction(13, 25), Fraction(41, 65))
    no_ties = report_of(_tie_free_study(), allow_ties=False)["preference"]
    with_ties = report_of(_tie_free_study(), allow_ties=True)["preference"]
    assert no_ties["ac1"]["value"] == pytest.approx(float(two), abs=1e-12)
    assert with_ties["ac1"]["value"] == pytest.approx(float(three), abs=1e-12)
    assert no_ties["categories"] == ["chosen", "rejected"]
    # Alpha and percent agreement do not depend on an unused category.
    assert no_ties["alpha"]["value"] == pytest.approx(with_ties["alpha"]["value"], abs=1e-12)
    assert no_ties["percent_agreement"] == pytest.approx(0.7)


def test_ties_in_a_study_without_ties_are_refused():
    rows = [*_tie_free_study(), row("p0", "a3", "tie")]
    with pytest.raises(ValueError, match="allows no ties"):
        report_of(rows, allow_ties=False)


@pytest.mark.parametrize("n_pairs", [1, 2])
def test_one_or_two_pairable_pairs_give_null_not_0_or_1(n_pairs):
    rows = [row(f"p{i}", a, "chosen" if a == "a1" else "rejected") for i in range(n_pairs)
            for a in ("a1", "a2")]  # fmt: skip
    rows += [row("lonely", "a1", "tie")]
    pref = report_of(rows, bootstrap=200)["preference"]
    for key in ("alpha", "alpha_neutral", "ac1"):
        assert pref[key]["value"] is None and pref[key]["ci95"] is None
        assert f"{n_pairs} unit(s) with two or more ratings" in pref[key]["note"]
    assert pref["percent_agreement"] is None and pref["percent_agreement_note"]


def test_interval_null_below_ten_pairable_units():
    rows = [row(f"p{i}", a, ["chosen", "rejected", "tie"][(i + j * (i % 2)) % 3])
            for i in range(6) for j, a in enumerate(("a1", "a2", "a3"))]  # fmt: skip
    alpha = report_of(rows, bootstrap=200)["preference"]["alpha"]
    assert alpha["value"] is not None
    assert alpha["ci95"] is None and alpha["ci95_annotators"] is None
    assert "6 units with two or more ratings, fewer than 10" in alpha["note"]


@pytest.mark.parametrize(("scale", "margin"), [((1, 5), 0.5), ((1, 7), 0.75), ((0, 10), 1.25)])
def test_equivalence_margin_scales_with_the_scale(scale, margin):
    report = report_of(clean_study(), scale=scale)
    assert report["options"]["equivalence_margin"] == margin
    assert checks(report)["quality"]["threshold"] == margin
    explicit = report_of(clean_study(), scale=scale, equivalence_margin=0.3)
    assert checks(explicit)["quality"]["threshold"] == 0.3


def test_a_difference_within_a_wide_scales_margin_passes():
    # On a 1-9 scale the default margin is 1 point; chosen rated 0.6 higher is equivalent there
    # (a fixed 0.5 would call it different).
    rows = []
    for i in range(60):
        for j, a in enumerate(("a1", "a2", "a3")):
            base = 5 + (i + j) % 3
            bump = 1 if (i + j) % 5 < 3 else 0
            rows.append(row(f"p{i}", a, "chosen", chosen=(base + bump,) * 3,
                            rejected=(base,) * 3, reason="personal_fit"))  # fmt: skip
    report = report_of(rows, scale=(1, 9))
    quality = checks(report)["quality"]
    assert 0.5 < quality["value"] < 0.7
    assert quality["threshold"] == 1.0 and quality["outcome"] == "passed"


# --- each check passes and fails ----------------------------------------------------------


def test_supported_on_a_clean_study():
    report = report_of(clean_study(), bootstrap=200)
    conclusion = report["conclusion"]
    assert conclusion["status"] == "supported"
    assert conclusion["personal_preference_main_factor"] is True
    for name in ("label", "quality", "reason"):
        check = conclusion["checks"][name]
        assert check["passed"] is True and check["outcome"] == "passed"
        assert {"value", "ci95", "threshold", "n", "note"} <= set(check)


def test_quality_fails_when_chosen_is_clearly_better():
    report = report_of(synthetic(200, 3, confounded=True).to_dict("records"))
    quality = checks(report)["quality"]
    assert quality["outcome"] == "failed"
    assert all(d["outcome"] == "failed" for d in quality["dimensions"].values())
    assert checks(report)["reason"]["outcome"] == "failed"
    assert report["conclusion"]["status"] == "not_supported"


def test_reason_fails_when_general_quality_dominates_by_pair():
    rows = clean_study()
    for r in rows:
        r["main_reason"] = "general_quality"
    reason = checks(report_of(rows))["reason"]
    assert (reason["value"], reason["outcome"]) == (0.0, "failed")
    assert reason["n"] == 60  # pairs, not the 180 annotations


def test_label_insufficient_when_the_interval_straddles_the_threshold():
    # 14 of 20 pairs confirmed: 0.7, exact interval [0.457, 0.881] straddles 0.6.
    report = report_of(_pattern_rows({3: 14, 0: 6}))
    label = checks(report)["label"]
    assert label["value"] == 0.7
    assert label["outcome"] == "insufficient"


def test_conclude_takes_any_mapping_of_checks():
    # A fourth check (the aspect check) is one more entry of the same shape.
    from analysis.verdicts.conclusion import conclude, label_check

    passed = label_check(
        {"value": 0.9, "ci95": [0.8, 0.95], "ci95_annotators": [0.8, 0.95], "n": 100}, decided={}
    )
    assert conclude({"label": passed})["status"] == "supported"
    failing = {**passed, "passed": False, "outcome": "failed"}
    assert conclude({"label": passed, "aspects": failing})["status"] == "not_supported"
    unsure = {**passed, "passed": False, "outcome": "insufficient"}
    assert conclude({"label": passed, "aspects": unsure})["status"] == "insufficient_evidence"
    assert conclude({})["status"] == "insufficient_evidence"


def test_label_check_uses_the_annotator_aware_interval():
    report = report_of(clean_study(), bootstrap=200)
    label = checks(report)["label"]
    assert label["interval"] == "ci95_annotators"
    assert label["ci95"] == report["preference"]["label_confirmed"]["ci95_annotators"]
    two = report_of(clean_study(annotators=("a1", "a2")), bootstrap=200)
    label = checks(two)["label"]
    # two annotators: never supported, whatever these two annotators' interval says
    assert label["ci95"] is None
    assert label["ci95_pairs"] == two["preference"]["label_confirmed"]["ci95"]
    assert label["ci95_pairs"][0] > 0.6
    assert label["outcome"] == "insufficient"
    assert "these annotators only lies above 0.6" in label["note"]
    assert "30 more pairs with a third annotation" in label["note"]
    assert two["conclusion"]["status"] == "insufficient_evidence"
    assert two["conclusion"]["personal_preference_main_factor"] is False
    assert two["preference"]["percent_agreement_ci95_annotators"] is None
    assert "needs at least 30" in two["preference"]["percent_agreement_ci95_annotators_note"]


def test_report_options_are_in_the_report():
    report = report_of(clean_study(), label_threshold=0.7, min_rated_pairs=10, min_reasons=5)
    assert checks(report)["label"]["threshold"] == 0.7
    assert "at least 10 pairs" in checks(report)["quality"]["rule"]
    assert "at least 5 stated" in checks(report)["reason"]["rule"]
    assert np.isclose(report["options"]["label_threshold"], 0.7)


# --- evidence, not headcount: pairs rated by three or more annotators --------------------

AGREEMENT_KEYS = ("alpha", "alpha_neutral", "ac1", "label_agreement", "label_confirmed")


def topped_up(third: int, n_pairs: int = 100) -> list[dict]:
    """Two annotators on every pair of a clean study, a third on the first ``third`` pairs;
    the second picks rejected on one pair in ten (so that alpha has variation)."""
    rows = clean_study(n_pairs=n_pairs, annotators=("a1", "a2"))
    for r in rows:
        if r["annotator"] == "a2" and int(r["pair_id"][1:]) % 10 == 5:
            r["preference"] = "rejected"
    return rows + [
        rated(f"p{i}", "a3", "chosen", i + 2, reason="personal_fit") for i in range(third)
    ]


def test_three_names_on_a_few_pairs_are_not_evidence_about_annotators():
    # Two annotators on 100 pairs and a third on 3: three names, but the annotators' variance
    # would rest on three pairs (its interval covered the population value in about 90% of
    # simulated studies). Not supported, and every annotator-aware interval is null with a note
    # saying what would suffice.
    report = report_of(topped_up(3), bootstrap=200)
    assert report["counts"]["annotators"] == 3
    conclusion = report["conclusion"]
    assert conclusion["status"] == "insufficient_evidence"
    assert conclusion["personal_preference_main_factor"] is False
    pref = report["preference"]
    label = conclusion["checks"]["label"]
    assert label["outcome"] == "insufficient" and label["ci95"] is None
    assert label["ci95_pairs"][0] > 0.6  # these annotators' own interval would have passed
    assert "27 more pairs with a third annotation" in label["note"]
    for key in AGREEMENT_KEYS:
        assert pref[key]["ci95_annotators"] is None, key
        assert "27 more pairs with a third annotation" in pref[key]["ci95_annotators_note"], key
        assert "3 pairs with three or more annotations" in pref[key]["ci95_annotators_note"]
    assert pref["percent_agreement_ci95_annotators"] is None
    assert "27 more pairs" in pref["percent_agreement_ci95_annotators_note"]
    for dimension in ("correctness", "relevance", "helpfulness"):
        assert report["quality"][dimension]["alpha"]["ci95_annotators"] is None
    assert "30 pairs with 3+ annotations" in label["rule"]


def test_thirty_pairs_with_a_third_annotation_suffice():
    at_rule = report_of(topped_up(30), bootstrap=200)
    below = report_of(topped_up(29), bootstrap=200)
    # (alpha is left out: without the second annotator's few rejections it has no variation)
    for key in ("alpha_neutral", "ac1", "label_agreement", "label_confirmed"):
        assert at_rule["preference"][key]["ci95_annotators"] is not None, key
        assert below["preference"][key]["ci95_annotators"] is None, key
    assert "1 more pair with a third annotation" in checks(below)["label"]["note"]
    assert at_rule["conclusion"]["status"] == "supported"
    assert below["conclusion"]["status"] == "insufficient_evidence"


def test_a_third_annotation_without_ratings_is_no_evidence_for_quality_alpha():
    # The third annotator picked a response on 40 pairs but rated none: enough for the
    # preference statistics, none for quality alpha, whose own annotations decide.
    rows = clean_study(n_pairs=60, annotators=("a1", "a2")) + [
        row(f"p{i}", "a3", "chosen", reason="personal_fit") for i in range(40)
    ]
    report = report_of(rows, bootstrap=200)
    assert report["preference"]["label_confirmed"]["ci95_annotators"] is not None
    quality = report["quality"]["correctness"]["alpha"]
    assert quality["ci95_annotators"] is None
    assert "0 pairs with three or more annotations" in quality["ci95_annotators_note"]
    assert "30 more pairs with a third annotation" in quality["ci95_annotators_note"]
