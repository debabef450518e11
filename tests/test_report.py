"""build_report: known answers for verdicts, conclusion, position bias, annotators, undefined cases."""

from __future__ import annotations

import csv
import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.files.annotations_table import validate_annotations
from analysis.report.build import ReportOptions, build_report
from analysis.report.shape import Report
from tests.report_fixtures import frame, row, synthetic

GOOD = (4, 4, 4)


def report_of(rows, pairs=None, **options) -> Report:
    table = validate_annotations(frame(rows), source="test")
    options.setdefault("bootstrap", 0)
    report = build_report(table, pairs, options=ReportOptions(**options))
    json.dumps(report, allow_nan=False)  # never NaN in JSON
    return report


def verdicts(report) -> dict[str, str]:
    return {p["pair_id"]: p["verdict"] for p in report["pairs"]}


def pair(report, pair_id) -> dict:
    return next(p for p in report["pairs"] if p["pair_id"] == pair_id)


def two(pair_id, first, second, **kwargs) -> list[dict]:
    return [row(pair_id, "a1", first, **kwargs), row(pair_id, "a2", second, **kwargs)]


# --- verdicts ------------------------------------------------------------------------------


def test_every_verdict_with_its_rule():
    rows = [
        row("insufficient", "a1", "chosen", chosen=GOOD, rejected=GOOD),
        *two("split", "chosen", "rejected", chosen=GOOD, rejected=GOOD),
        row("tie_majority", "a1", "tie"),
        row("tie_majority", "a2", "tie"),
        row("tie_majority", "a3", "chosen"),
        *two("flip", "rejected", "rejected", chosen=GOOD, rejected=GOOD),
        *two("low", "chosen", "chosen", chosen=(4, 2, 4), rejected=GOOD),
        *two("gap", "chosen", "chosen", chosen=(5, 5, 5), rejected=(3, 5, 5)),
        *two("reason", "chosen", "chosen", chosen=GOOD, rejected=GOOD, reason="general_quality"),
        *two("valid", "chosen", "chosen", chosen=GOOD, rejected=GOOD, reason="personal_fit"),
    ]
    report = report_of(rows)
    assert verdicts(report) == {
        "insufficient": "insufficient_annotations",
        "split": "no_consensus",
        "tie_majority": "no_consensus",
        "flip": "preference_flip",
        "low": "low_quality",
        "gap": "quality_confound",
        "reason": "quality_confound",
        "valid": "valid",
    }
    assert pair(report, "tie_majority")["majority"] == "tie"
    assert pair(report, "split")["majority"] is None
    assert pair(report, "low")["flags"] == ["low:relevance_chosen"]
    assert pair(report, "gap")["flags"] == ["gap:correctness"]
    assert pair(report, "gap")["correctness_gap"] == 2.0
    assert pair(report, "reason")["flags"] == ["reason:general_quality"]
    assert report["verdicts"] == {
        "insufficient_annotations": 1,
        "no_consensus": 2,
        "preference_flip": 1,
        "low_quality": 1,
        "quality_confound": 2,
        "valid": 1,
    }


def test_verdict_order_first_rule_wins():
    rows = [
        # low quality and a quality gap: low_quality comes first
        *two("both", "chosen", "chosen", chosen=(5, 5, 5), rejected=(2, 5, 5)),
        # a flip with low quality: preference_flip comes first
        *two("flip_low", "rejected", "rejected", chosen=(1, 1, 1), rejected=GOOD),
    ]
    report = report_of(rows)
    assert verdicts(report) == {"both": "low_quality", "flip_low": "preference_flip"}
    assert pair(report, "both")["flags"] == ["low:correctness_rejected", "gap:correctness"]


def test_boundaries_are_strict():
    rows = [
        # mean exactly at the threshold is not low; a gap exactly equal to --pair-gap is no confound
        *two("edge", "chosen", "chosen", chosen=(4, 4, 4), rejected=(3, 3, 3)),
        # 2 of 4 is no strict majority
        row("half", "a1", "chosen"),
        row("half", "a2", "chosen"),
        row("half", "a3", "rejected"),
        row("half", "a4", "tie"),
    ]
    assert verdicts(report_of(rows)) == {"edge": "valid", "half": "no_consensus"}
    assert verdicts(report_of(rows, quality_threshold=3.5))["edge"] == "low_quality"
    assert verdicts(report_of(rows, pair_gap=0.5))["edge"] == "quality_confound"


def test_min_annotations_and_reason_ties():
    rows = [
        *two("p", "chosen", "chosen", chosen=GOOD, rejected=GOOD),
        # general_quality as often as personal_fit and both together: no confound (rule 5
        # needs general quality given by *more* annotators, as the reason check counts)
        row("even", "a1", "chosen", chosen=GOOD, rejected=GOOD, reason="general_quality"),
        row("even", "a2", "chosen", chosen=GOOD, rejected=GOOD, reason="personal_fit"),
        row("even", "a3", "chosen", chosen=GOOD, rejected=GOOD),
        row("q", "a1", "chosen", chosen=GOOD, rejected=GOOD, reason="general_quality"),
        row("q", "a2", "chosen", chosen=GOOD, rejected=GOOD, reason="general_quality"),
        row("q", "a3", "chosen", chosen=GOOD, rejected=GOOD, reason="both"),
    ]
    assert verdicts(report_of(rows)) == {"p": "valid", "even": "valid", "q": "quality_confound"}
    assert verdicts(report_of(rows, min_annotations=3)) == {
        "p": "insufficient_annotations",
        "even": "valid",
        "q": "quality_confound",
    }


def test_pairs_without_annotations_are_listed_as_insufficient():
    pairs = pd.DataFrame(
        {"pair_id": ["p", "empty"], "category": ["c", "d"], "is_gold": [False, False]}
    )
    report = report_of(two("p", "chosen", "chosen"), pairs=pairs)
    assert verdicts(report) == {"p": "valid", "empty": "insufficient_annotations"}
    assert pair(report, "empty")["n_annotations"] == 0
    assert report["counts"]["pairs"] == 2
    assert report["counts"]["pairs_with_annotations"] == 1


# --- preference agreement ------------------------------------------------------------------


def random_table(seed: int, n_pairs: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_pairs):
        lean = rng.choice(3, p=[0.7, 0.2, 0.1])
        for a in range(5):
            if rng.random() < 0.3:
                continue  # missing: not every annotator labels every pair
            probs = np.full(3, 0.15)
            probs[lean] = 0.7
            rows.append(
                row(
                    f"p{p}",
                    f"a{a}",
                    ["chosen", "rejected", "tie"][rng.choice(3, p=probs)],
                    chosen=tuple(int(v) for v in rng.integers(1, 6, 3)),
                    rejected=tuple(int(v) for v in rng.integers(1, 6, 3)),
                )
            )
    return frame(rows)


def reliability(table: pd.DataFrame, column: str, mapping=None) -> np.ndarray:
    wide = table.pivot(index="annotator", columns="pair_id", values=column)
    if mapping:
        wide = wide.apply(lambda s: s.map(mapping))
    return wide.to_numpy(dtype=float, na_value=np.nan)


def test_preference_alpha_matches_the_krippendorff_package_with_missing_data():
    table = random_table(1)
    report = report_of(table.to_dict("records"))
    expected = krippendorff.alpha(
        reliability_data=reliability(table, "preference", {"chosen": 0, "rejected": 1, "tie": 2}),
        level_of_measurement="nominal",
    )
    assert report["preference"]["alpha"]["value"] == pytest.approx(expected, abs=1e-12)


def test_neutral_alpha_is_alpha_after_orienting_by_the_pair_hash():
    from analysis.agreement.coefficients import chosen_is_first

    table = random_table(2)
    flip = {p: not chosen_is_first(p) for p in table["pair_id"].unique()}
    neutral = [
        {"chosen": "rejected", "rejected": "chosen", "tie": "tie"}[pref] if flip[pid] else pref
        for pid, pref in zip(table["pair_id"], table["preference"], strict=True)
    ]
    table = table.assign(neutral=neutral)
    expected = krippendorff.alpha(
        reliability_data=reliability(table, "neutral", {"chosen": 0, "rejected": 1, "tie": 2}),
        level_of_measurement="nominal",
    )
    report = report_of(table.drop(columns="neutral").to_dict("records"))
    assert report["preference"]["alpha_neutral"]["value"] == pytest.approx(expected, abs=1e-12)


def test_quality_alpha_units_are_pair_and_response():
    table = random_table(3)
    report = report_of(table.to_dict("records"))
    both = np.concatenate(
        [reliability(table, "helpfulness_chosen"), reliability(table, "helpfulness_rejected")],
        axis=1,
    )
    expected = krippendorff.alpha(
        reliability_data=both, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert report["quality"]["helpfulness"]["alpha"]["value"] == pytest.approx(expected, abs=1e-12)


def test_bootstrap_intervals_are_seeded_and_contain_the_point():
    rows = random_table(4).to_dict("records")
    first = report_of(rows, bootstrap=200, seed=7)
    again = report_of(rows, bootstrap=200, seed=7)
    other = report_of(rows, bootstrap=200, seed=8)
    for key in ("alpha", "alpha_neutral", "ac1"):
        estimate = first["preference"][key]
        lo, hi = estimate["ci95"]
        assert lo <= estimate["value"] <= hi
        assert estimate["ci95"] == again["preference"][key]["ci95"]
    q = first["quality"]["correctness"]["alpha"]
    assert q["ci95"][0] <= q["value"] <= q["ci95"][1]
    assert q["ci95"] == again["quality"]["correctness"]["alpha"]["ci95"]
    assert q["ci95"] != other["quality"]["correctness"]["alpha"]["ci95"]
    assert first["methods"]["bootstrap"] | {"detail": None} == {
        "resamples": 200,
        "seed": 7,
        "unit": "pair",
        "interval": (
            "95% BCa (bias-corrected and accelerated) interval of the resampled statistic, "
            "its levels at sqrt(n / (n - 1)) t(n - 1) for n pairs instead of 1.96 "
            "(Hesterberg 2015)"
        ),
        "detail": None,
    }
    # summary.md and report.html name the resamples, the seed and the expanded levels too
    from analysis.report.html_page import render_html
    from analysis.report.summary import EXPANDED_LEVELS, render_summary

    for text in (render_summary(first), render_html(first)):
        assert "200 resamples" in text and "seed 7" in text
        assert EXPANDED_LEVELS in text


def test_percent_agreement_tie_rate_and_label_agreement():
    rows = [
        *two("p1", "chosen", "chosen"),
        *two("p2", "chosen", "tie"),
        *two("p3", "rejected", "rejected"),
        *two("p4", "tie", "tie"),
    ]
    pref = report_of(rows)["preference"]
    # pairs agree: p1, p3, p4 (a tie is a label); p2 does not
    assert pref["percent_agreement"] == pytest.approx(3 / 4)
    assert pref["tie_rate"] == pytest.approx(3 / 8)
    # decided pairs: p1 (chosen), p3 (rejected); p2 and p4 have no strict chosen/rejected majority
    la = pref["label_agreement"]
    assert (la["value"], la["n"], la["k"]) == (0.5, 2, 1)
    assert la["p_value"] == pytest.approx(stats.binomtest(1, 2, 0.5, alternative="greater").pvalue)


def test_position_bias_counts_first_slot_picks_without_ties():
    rows = [
        row("p1", "a1", "chosen", position="A"),  # slot A
        row("p1", "a2", "rejected", position="A"),  # slot B
        row("p2", "a1", "rejected", position="B"),  # slot A
        row("p2", "a2", "chosen", position="A"),  # slot A
        row("p3", "a1", "tie", position="A"),  # a tie picks no slot
        row("p3", "a2", "chosen"),  # slot unknown
        row("p4", "a1", "chosen", position="B"),  # slot B
        row("p4", "a2", "rejected", position="B"),  # slot A
    ]
    report = report_of(rows)
    pb = report["preference"]["position_bias"]
    assert (pb["first_slot_rate"], pb["n"]) == (4 / 6, 6)
    assert pb["p_value"] == pytest.approx(stats.binomtest(4, 6, 0.5).pvalue)
    a1 = next(a for a in report["annotators"] if a["annotator"] == "a1")
    assert (a1["first_slot_rate"], a1["n_slot"]) == (2 / 3, 3)


def test_strong_position_bias_is_significant():
    rows = [
        row(f"p{i}", "a", "chosen" if i % 2 else "rejected", position="A" if i % 2 else "B")
        for i in range(30)
    ]
    pb = report_of(rows)["preference"]["position_bias"]
    assert pb["first_slot_rate"] == 1.0
    assert pb["p_value"] < 1e-8


# --- annotators ----------------------------------------------------------------------------


def test_annotator_label_peer_agreement_speed_and_straight_lining():
    rows = []
    for i in range(6):
        rows.append(
            row(f"p{i}", "same", "chosen", chosen=(3, 3, 3), rejected=(3, 3, 3), seconds=10)
        )
        rows.append(
            row(
                f"p{i}",
                "b",
                "chosen" if i < 4 else "tie",
                chosen=(5, 4, 3) if i % 2 else (4, 4, 3),
                seconds=20 + i,
            )
        )
        rows.append(row(f"p{i}", "c", "rejected" if i == 0 else "chosen", seconds=None))
    people = {a["annotator"]: a for a in report_of(rows)["annotators"]}
    b = people["b"]
    assert (b["n"], b["n_decisive"], b["label_agreement"]) == (6, 4, 1.0)
    assert b["tie_rate"] == pytest.approx(2 / 6)
    assert b["median_seconds"] == 22.5
    assert b["straight_lining"] is False
    # others of "b" on p0: chosen + rejected, a split: 1/2; p1-p3: chosen + chosen: 1;
    # p4-p5 (b says tie): 0
    assert (b["n_peer"], b["peer_agreement"]) == (6, pytest.approx(3.5 / 6))
    # "c" on p0: others chosen, chosen -> 0; p1-3: 1; p4-5 others chosen + tie, a split: 1/2
    c = people["c"]
    assert (c["n_peer"], c["peer_agreement"], c["label_agreement"]) == (
        6,
        pytest.approx(4 / 6),
        5 / 6,
    )
    assert c["median_seconds"] is None
    assert people["same"]["straight_lining"] is True
    assert people["same"]["median_seconds"] == 10


def test_peer_agreement_credits_the_consistent_annotators_not_the_dissenter():
    # the audit's case: 30 pairs answered (chosen, chosen, rejected) by the same three people
    rows = [
        row(f"p{i}", a, pick)
        for i in range(30)
        for a, pick in (("x", "chosen"), ("y", "chosen"), ("z", "rejected"))
    ]
    people = {a["annotator"]: a for a in report_of(rows)["annotators"]}
    # x's others on every pair: y chosen, z rejected, a split: 1/2; z's others agree on chosen
    assert people["x"]["peer_agreement"] == people["y"]["peer_agreement"] == 0.5
    assert people["z"]["peer_agreement"] == 0.0
    assert people["x"]["n_peer"] == people["z"]["n_peer"] == 30


def test_straight_lining_catches_a_fixed_pattern_not_only_one_value():
    rows = []
    for i in range(8):
        slot = "A" if i % 2 else "B"
        rows.append(row(f"p{i}", "five_one", "chosen", chosen=(5, 5, 5), rejected=(1, 1, 1)))
        # always 5 for slot A and 2 for slot B, whichever response is shown there
        a_is_chosen = slot == "A"
        rows.append(
            row(
                f"p{i}",
                "slot",
                "chosen",
                position=slot,
                chosen=(5, 5, 5) if a_is_chosen else (2, 2, 2),
                rejected=(2, 2, 2) if a_is_chosen else (5, 5, 5),
            )
        )
        rows.append(row(f"p{i}", "honest", "chosen", chosen=(5, 4, 5), rejected=(4 + i % 2, 4, 3)))
    people = {a["annotator"]: a for a in report_of(rows)["annotators"]}
    assert people["five_one"]["straight_lining"] is True
    assert people["slot"]["straight_lining"] is True
    assert people["honest"]["straight_lining"] is False


# --- main reasons and the conclusion -------------------------------------------------------


def test_main_reason_shares_and_cross_tab():
    rows = [
        row("p1", "a1", "chosen", reason="personal_fit"),
        row("p1", "a2", "rejected", reason="general_quality"),
        row("p2", "a1", "chosen", reason="personal_fit"),
        row("p2", "a2", "tie", reason="both"),
        row("p3", "a1", "chosen"),
    ]
    report = report_of(rows)
    reason = report["main_reason"]
    assert (
        reason["personal_fit"],
        reason["general_quality"],
        reason["both"],
        reason["unsure"],
    ) == (
        0.5,
        0.25,
        0.25,
        0.0,
    )
    assert reason["n"] == 4
    cross = report["main_reason_by_choice"]
    assert cross["personal_fit"] == {
        "chosen": 2,
        "rejected": 0,
        "tie": 0,
        "followed_rubric_share": 1.0,
    }
    assert cross["general_quality"]["followed_rubric_share"] == 0.0
    assert cross["both"]["followed_rubric_share"] is None and "note" in cross["both"]


def test_conclusion_true_on_a_clean_benchmark():
    report = report_of(synthetic(200, 3, confounded=False).to_dict("records"))
    conclusion = report["conclusion"]
    assert conclusion["personal_preference_main_factor"] is True
    assert conclusion["status"] == "supported"
    checks = conclusion["checks"]
    assert checks["label"]["passed"] and checks["label"]["ci95"][0] > checks["label"]["threshold"]
    assert set(checks["quality"]["dimensions"]) == {"correctness", "relevance", "helpfulness"}
    assert all(d["equivalent"] for d in checks["quality"]["dimensions"].values())
    assert checks["reason"]["personal_share"] > 0.5


def test_conclusion_false_on_a_quality_confounded_benchmark():
    report = report_of(synthetic(200, 3, confounded=True).to_dict("records"))
    checks = report["conclusion"]["checks"]
    assert report["conclusion"]["personal_preference_main_factor"] is False
    assert report["conclusion"]["status"] == "not_supported"
    assert checks["label"]["passed"] is True  # chosen still wins...
    assert checks["quality"]["passed"] is False  # ...but because rejected is worse
    assert all(d["mean_diff"] > 1.5 for d in checks["quality"]["dimensions"].values())
    assert checks["reason"]["passed"] is False
    assert report["verdicts"]["valid"] < 10


def test_conclusion_insufficient_without_reasons_or_ratings():
    rows = [row(f"p{i}", a, "chosen") for i in range(40) for a in ("a1", "a2", "a3")]
    report = report_of(rows)
    checks = report["conclusion"]["checks"]
    assert checks["label"]["passed"] is True
    assert checks["quality"]["outcome"] == "insufficient"
    assert "never rated" in checks["quality"]["note"]
    assert checks["reason"]["outcome"] == "insufficient"
    assert checks["reason"]["note"] == "0 stated reasons, fewer than 30"
    assert report["conclusion"]["status"] == "insufficient_evidence"


def test_a_dimension_rated_on_one_pair_fails_the_equivalence_check():
    rows = [
        row(
            f"p{i}",
            a,
            "chosen",
            chosen=(4, None, None) if i else GOOD,
            rejected=(4, None, None) if i else GOOD,
            reason="personal_fit",
        )
        for i in range(10)
        for a in ("a1", "a2")
    ]
    checks = report_of(rows)["conclusion"]["checks"]
    dims = checks["quality"]["dimensions"]
    assert dims["relevance"]["equivalent"] is False
    assert dims["relevance"]["note"] == "rated on both responses in 1 pairs, fewer than 30"
    assert checks["quality"]["passed"] is False


# --- gold pairs ----------------------------------------------------------------------------


def test_gold_pairs_are_left_out_of_the_statistics():
    rows = [*two("p1", "chosen", "chosen"), *two("p2", "chosen", "rejected")]
    gold_rows = [*two("g1", "rejected", "tie"), row("g1", "a3", "rejected")]
    pairs = pd.DataFrame(
        {"pair_id": ["p1", "p2", "g1"], "category": "", "is_gold": [False, False, True]}
    )
    without = report_of(rows)
    with_gold = report_of(rows + gold_rows, pairs=pairs)
    assert with_gold["preference"] == without["preference"]
    assert with_gold["counts"] | {"gold_pairs": 0, "gold_annotations": 0} == without["counts"]
    assert (with_gold["counts"]["gold_pairs"], with_gold["counts"]["gold_annotations"]) == (1, 3)
    assert pair(with_gold, "g1")["is_gold"] is True
    a3 = next(a for a in with_gold["annotators"] if a["annotator"] == "a3")
    assert (a3["n"], a3["n_gold"]) == (0, 1)
    assert "gold" in with_gold["methods"]["gold"]


# --- undefined statistics ------------------------------------------------------------------


def assert_null_with_note(estimate: dict, fragment: str):
    assert estimate["value"] is None
    assert fragment in estimate["note"]


def test_one_annotator_leaves_agreement_undefined():
    rows = [row(f"p{i}", "solo", "chosen", chosen=GOOD, rejected=GOOD) for i in range(5)]
    report = report_of(rows, bootstrap=50)
    pref = report["preference"]
    assert pref["percent_agreement"] is None
    assert "no unit has two or more ratings" in pref["percent_agreement_note"]
    for key in ("alpha", "alpha_neutral", "ac1"):
        assert_null_with_note(pref[key], "no unit has two or more ratings")
    assert_null_with_note(report["quality"]["correctness"]["alpha"], "two or more ratings")
    assert report["annotators"][0]["peer_agreement"] is None
    assert set(verdicts(report).values()) == {"insufficient_annotations"}
    assert_null_with_note(pref["label_agreement"], "no pair has a chosen or rejected majority")


def test_all_ties():
    rows = [row(f"p{i}", a, "tie", position="A") for i in range(4) for a in ("a1", "a2")]
    pref = report_of(rows, bootstrap=50)["preference"]
    assert pref["percent_agreement"] == 1.0
    assert pref["tie_rate"] == 1.0
    assert_null_with_note(pref["alpha"], "no variation")
    assert_null_with_note(pref["alpha_neutral"], "no variation")
    assert pref["position_bias"]["first_slot_rate"] is None
    assert "no decisive annotation" in pref["position_bias"]["note"]
    assert_null_with_note(pref["label_agreement"], "no pair has")


def test_all_ratings_missing():
    rows = [row(f"p{i}", a, "chosen") for i in range(4) for a in ("a1", "a2")]
    quality = report_of(rows, bootstrap=50)["quality"]
    for q in quality.values():
        assert_null_with_note(q["alpha"], "no unit has two or more ratings")
        assert q["mean_diff"] is None and q["tost_p"] is None and q["both_high_share"] is None
        assert q["note"] == "no pair has ratings of both responses on this dimension"


def test_identical_ratings_make_quality_alpha_undefined_not_one():
    rows = [
        row(f"p{i}", a, "chosen", chosen=GOOD, rejected=GOOD)
        for i in range(4)
        for a in ("a1", "a2")
    ]
    quality = report_of(rows)["quality"]["correctness"]
    assert_null_with_note(quality["alpha"], "no variation")
    # no spread at all: the TOST takes the spread rounding alone gives, and says so
    assert quality["equivalent"] is True and "resolution" in quality["note"]
    assert quality["zero_spread"] is True and quality["tost_p"] > 0


def test_no_annotations_at_all():
    pairs = pd.DataFrame({"pair_id": ["p1"], "category": "", "is_gold": [False]})
    report = report_of([], pairs=pairs, bootstrap=20)
    assert report["counts"] == {
        "pairs": 1,
        "annotators": 0,
        "annotations": 0,
        "gold_pairs": 0,
        "gold_annotations": 0,
        "pairs_with_annotations": 0,
    }
    assert report["preference"]["tie_rate"] is None
    assert report["preference"]["tie_rate_note"] == "undefined: no annotations"
    assert report["main_reason"]["personal_fit"] is None and "note" in report["main_reason"]
    assert report["conclusion"]["personal_preference_main_factor"] is False
    assert report["annotators"] == []


def test_quality_pair_bootstrap_equals_naive_recomputation():
    """Each resample draws whole pairs; its alpha equals alpha recomputed on the drawn pairs,
    and the interval is the BCa interval of those recomputed values."""
    from analysis.agreement.bootstrap import bca_interval, grouped_units, resample_weights
    from analysis.agreement.coefficients import alpha, alpha_statistic
    from analysis.verdicts.quality import quality_alpha

    rng = np.random.default_rng(5)
    counts = rng.multinomial(3, [0.1, 0.2, 0.3, 0.3, 0.1], size=40)  # 20 pairs x 2 responses
    counts[rng.random(40) < 0.2] = 0
    domain = [1, 2, 3, 4, 5]
    by_pair = counts.reshape(20, 10)
    pairable = (counts.sum(axis=1) >= 2).reshape(-1, 2).any(axis=1)
    patterns, frequencies, inverse = grouped_units(by_pair[pairable])
    weights = np.concatenate(list(resample_weights(frequencies, inverse, resamples=200, seed=3)))
    assert (weights.sum(axis=1) == pairable.sum()).all()
    statistic = alpha_statistic(level="ordinal", domain=domain, parts=2)
    fast = statistic.finish(weights @ statistic.features(patterns))
    naive = []
    for w in weights.astype(int):
        drawn = np.repeat(patterns, w, axis=0).reshape(-1, 5)
        value = alpha(drawn, level="ordinal", domain=domain, min_units=1).value
        naive.append(np.nan if value is None else value)
    np.testing.assert_allclose(fast, naive, atol=1e-12)
    point = alpha(counts, level="ordinal", domain=domain).value
    jackknife = [
        alpha(np.delete(patterns, p, axis=0).reshape(-1, 5) if frequencies[p] == 1 else
              np.repeat(patterns, frequencies - np.eye(len(patterns), dtype=int)[p], axis=0)
              .reshape(-1, 5), level="ordinal", domain=domain, min_units=1).value
        for p in range(len(patterns))
    ]  # fmt: skip
    lo_hi, _ = bca_interval(
        np.array(naive),
        point=point,
        jackknife=np.array(jackknife),
        jackknife_weights=frequencies,
        resamples=200,
    )
    result = quality_alpha(counts, domain=domain, bootstrap=200, seed=3)
    assert result["value"] == pytest.approx(point)
    assert result["ci95"] == pytest.approx(list(lo_hi), abs=1e-12)


def test_report_files_are_written_in_chunks_without_changing_them(tmp_path, monkeypatch):
    import analysis.report.files as report_module

    report = report_of(random_table(6).to_dict("records"))
    monkeypatch.setattr(report_module, "CHUNK_RECORDS", 7)
    report_module.write_json(report, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == report
    report_module.write_records_csv(report["pairs"], tmp_path / "p.csv", list_columns=("flags",))
    written = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert written["pair_id"].tolist() == [p["pair_id"] for p in report["pairs"]]
    assert written["flags"].tolist() == [";".join(p["flags"]) for p in report["pairs"]]


def test_a_chunk_without_probabilities_keeps_the_probability_columns(tmp_path, monkeypatch):
    """pairs.csv is written a chunk of pairs at a time; a chunk none of whose pairs the model
    gave probabilities (none labelled) still writes every p_<verdict> column, empty."""
    import analysis.report.files as report_module

    report = report_of(random_table(6).to_dict("records"))
    pairs = [dict(p) for p in report["pairs"]]
    assert pairs[0]["probabilities"]
    for p in pairs[2:]:
        p["probabilities"] = None
    monkeypatch.setattr(report_module, "CHUNK_RECORDS", 2)
    report_module.write_records_csv(pairs, tmp_path / "p.csv", list_columns=("flags",))
    with (tmp_path / "p.csv").open(newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    assert len(rows) == len(pairs)
    assert {len(row) for row in rows} == {len(header)}, "a row with fewer cells than the header"
    p_columns = [i for i, name in enumerate(header) if name.startswith("p_")]
    assert p_columns and all(row[i] == "" for row in rows[2:] for i in p_columns)
    assert all(rows[0][i] for i in p_columns)


def test_the_csv_writer_writes_what_pandas_would(tmp_path):
    """append_csv stands in for DataFrame.to_csv: the same bytes for every kind of cell a
    report's table holds (floats at the edges of their notation, missing values of every
    dtype, text that needs quoting)."""
    from analysis.report.files import append_csv

    floats = [0.1, 1e-5, 1e-4, 1e15, 1e16, -0.0, 1.5999999999999996, float("nan"), float("inf")]
    texts = ["plain", 'a "quote"', "comma, here", "line\nbreak", "", None, "'=1", "é ✓"]
    size = max(len(floats), len(texts))
    frame = pd.DataFrame(
        {
            "float": (floats * 2)[:size],
            "int": range(size),
            "nullable_int": pd.array([1, None] * (size // 2) + [3] * (size % 2), dtype="Int64"),
            "bool": [True, False] * (size // 2) + [True] * (size % 2),
            "text": (texts * 2)[:size],
            "string": pd.array((texts * 2)[:size], dtype="string"),
            "mixed": ([1, 2.5, "x", None, np.float64(0.3), np.int64(4), pd.NA, True] * 2)[:size],
        }
    )
    append_csv(frame, tmp_path / "ours.csv", header=True)
    append_csv(frame, tmp_path / "ours.csv", header=False)
    frame.to_csv(tmp_path / "pandas.csv", index=False)
    frame.to_csv(tmp_path / "pandas.csv", index=False, mode="a", header=False)
    assert (tmp_path / "ours.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()


def test_charts_are_valid_plotly_figures():
    """The page renders figures without validation for speed: validate them here instead."""
    import plotly.graph_objects as go

    from analysis.report.html_page import figures

    for rows in (random_table(7).to_dict("records"), [row("p1", "solo", "tie")]):
        charts = figures(report_of(rows, bootstrap=20))
        assert len(charts) == 5
        for _, figure in charts:
            go.Figure(figure)  # raises on any invalid property


def test_the_reading_never_calls_constant_ratings_from_one_annotator_equivalent():
    # One annotator rating every response 5 on six pairs: the equivalence test alone would
    # pass (its spread floored at the ratings' resolution), but six pairs are too few for the
    # quality check, and the reading follows the check; and the sentences read as English
    # ("the label check found not enough evidence").
    from analysis.report.html_page import reading

    rows = [row(f"p{i}", "a1", "chosen", chosen=(5, 5, 5), rejected=(5, 5, 5)) for i in range(6)]
    report = report_of(rows)
    text = " ".join(reading(report))
    assert "shows the two within" not in text and "shown equivalent" not in text
    assert "fewer than 30" in text
    assert " check not enough evidence" not in text
    assert "check found not enough evidence" in text
    assert "has a enough" not in json.dumps(report)


def test_annotator_names_beside_their_points_keep_apart():
    """The Agreement chart's names overlapped where two annotators worked at about the same
    speed with about the same share, or one annotator's two shares were equal (issue 19)."""
    from analysis.report.html_page import _name_places

    points = [
        (47, 1.0, "ann-alice", "top right"),
        (44, 0.9, "ann-bob", "top right"),
        (4, 0.0, "ann-chen", "top right"),
        (4, 0.0, "ann-chen", "bottom right"),  # the same point: the other measure
    ]
    places = _name_places(points, x_range=[0, 61], y_range=[-0.2, 1.2])
    assert places[0] == "top right" and places[1] != "top right"
    assert places[2] != places[3]
    far = [(5, 0.1, "a", "top right"), (50, 0.9, "b", "top right")]
    assert _name_places(far, x_range=[0, 61], y_range=[-0.2, 1.2]) == ["top right"] * 2


def test_few_annotators_are_told_the_annotator_interval_is_approximate():
    """With three annotators the annotators' part of ci95_annotators rests on two degrees of
    freedom: bench_coverage measured 92-99% coverage of the population value depending on
    how the panel differs (README). The summary and the page say so for a study with few
    annotators, and not for one with many."""
    from analysis.report.html_page import reading
    from analysis.report.summary import render_summary

    few = report_of(synthetic(30, 3, confounded=False).to_dict("records"), bootstrap=50)
    many = report_of(synthetic(30, 12, confounded=False).to_dict("records"), bootstrap=50)
    for report, expected in ((few, True), (many, False)):
        summary, page = render_summary(report), " ".join(reading(report))
        for text in (summary, page):
            assert ("With 3 annotators this interval is approximate" in text) is expected
            assert ("firmer with more annotators" in text) is expected


def test_both_ways_of_drawing_pair_bootstrap_weights_have_one_distribution():
    """resample_weights picks the cheaper of a multinomial over patterns and drawing units and
    counting them per pattern: the same distribution (mean n p, covariance n (diag p - p p^T)),
    so which one runs never changes a statistic beyond bootstrap noise."""
    from analysis.agreement.bootstrap import bootstrap_weights, drawn_weights

    rng = np.random.default_rng(8)
    inverse = rng.choice(6, size=60, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.05])
    frequencies = np.bincount(inverse, minlength=6)
    n, p = len(inverse), frequencies / len(inverse)
    resamples = 20_000
    expected = n * (np.diag(p) - np.outer(p, p))
    for weights in (
        np.concatenate(list(bootstrap_weights(frequencies, resamples=resamples, seed=1))),
        np.concatenate(list(drawn_weights(inverse, 6, resamples=resamples, seed=2))),
    ):
        assert (weights.sum(axis=1) == n).all()
        np.testing.assert_allclose(weights.mean(axis=0), n * p, atol=0.08)
        np.testing.assert_allclose(np.cov(weights.T), expected, atol=0.5)
