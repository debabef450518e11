"""The per-aspect rubric check (issue 15): the aspects column, the verdict rubric_not_reflected,
agreement on the scores, the fourth conclusion check and the comparison with an automatic
scorer, checked against hand computations and Krippendorff's published example A."""

from __future__ import annotations

import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.aspects import check as aspect_check
from analysis.aspects.scorer import read_scorer_file
from analysis.files.annotations_table import load_annotations, validate_annotations, write_table
from analysis.report.build import ReportOptions, build_report, with_aspect_scores
from analysis.report.files import write_report
from annotate.cli import main
from annotate.errors import InputError, UserError
from tests.published_examples import EXAMPLE_A
from tests.report_fixtures import frame, pair_record, row
from tests.test_report_property import undefined_without_note


def scored(pair_id, annotator, preference, aspects, **kwargs) -> dict:
    out = row(pair_id, annotator, preference, **kwargs)
    out["aspects"] = [{"chosen": c, "rejected": r} for c, r in aspects]
    return out


def pairs_frame(aspect_counts: dict[str, int]) -> pd.DataFrame:
    records = [
        pair_record(
            pair_id,
            rubric_aspects=[
                {"aspect": f"aspect {i}", "evidence": "", "reason": ""} for i in range(n)
            ],
        )
        for pair_id, n in aspect_counts.items()
    ]
    return pd.DataFrame(
        {
            "pair_id": list(aspect_counts),
            "category": "cooking",
            "is_gold": False,
            "record": records,
        }
    )


def report_of(rows, aspect_counts, *, bootstrap=0, scorer=None, **options):
    table = validate_annotations(frame(rows), source="test", aspect_counts=aspect_counts)
    return build_report(
        table,
        pairs_frame(aspect_counts),
        options=ReportOptions(bootstrap=bootstrap, **options),
        aspect_scores=scorer,
    )


# --- the column ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_aspects_round_trip_in_every_format_and_csv_holds_a_json_string(tmp_path, suffix):
    rows = [
        scored("p1", "ann", "chosen", [(2, 0), (1, 1)]),
        row("p1", "bob", "chosen"),  # not scored
    ]
    table = validate_annotations(frame(rows), source="t", aspect_counts={"p1": 2})
    path = tmp_path / f"a{suffix}"
    write_table(table, path)
    back = load_annotations(path, aspect_counts={"p1": 2})
    assert back["aspects"].tolist() == [
        [{"chosen": 2, "rejected": 0}, {"chosen": 1, "rejected": 1}],
        None,
    ]
    if suffix == ".csv":
        cell = pd.read_csv(path, dtype=str)["aspects"][0]
        assert json.loads(cell) == [{"chosen": 2, "rejected": 0}, {"chosen": 1, "rejected": 1}]


def test_a_file_without_the_column_still_loads(tmp_path):
    path = tmp_path / "old.csv"
    frame([row("p1", "ann", "chosen")]).drop(columns="aspects").to_csv(path, index=False)
    assert load_annotations(path)["aspects"].tolist() == [None]


def test_broken_aspects_are_refused_with_row_and_field():
    rows = [
        {
            **row("p1", "a", "chosen"),
            "aspects": '[{"chosen": 3, "rejected": 0}, {"chosen": 1, "rejected": 1}]',
        },
        {**row("p1", "b", "chosen"), "aspects": '[{"chosen": 1, "rejected": 0}]'},
        {**row("p1", "c", "chosen"), "aspects": "not json"},
        {**row("p1", "d", "chosen"), "aspects": '[{"chosen": 1}, {"chosen": 1, "rejected": 1}]'},
        {
            **row("p1", "e", "chosen"),
            "aspects": '[{"chosen": 1, "rejected": 1, "x": 2}, {"chosen": 1, "rejected": 1}]',
        },
        {
            **row("p1", "f", "chosen"),
            "aspects": '[{"chosen": 1.5, "rejected": 1}, {"chosen": 1, "rejected": 1}]',
        },
        {**row("p1", "g", "chosen"), "aspects": '{"chosen": 1}'},
        {
            **row("p1", "h", "chosen"),
            "aspects": '[{"chosen": 2, "rejected": 0}, {"chosen": 1, "rejected": 1}]',
        },
        {
            **row("p1", "i", "chosen"),
            "aspects": '[{"chosen": 2, "chosen": 0, "rejected": 0}, {"chosen": 1, "rejected": 1}]',
        },
        {
            **row("p1", "j", "chosen"),
            "aspects": '[{"chosen": NaN, "rejected": 0}, {"chosen": 1, "rejected": 1}]',
        },
    ]
    with pytest.raises(InputError) as caught:
        validate_annotations(pd.DataFrame(rows), source="f.csv", aspect_counts={"p1": 2})
    assert caught.value.problems == [
        "row 1, column 'aspects': entry 1 'chosen' must be 0, 1 or 2 (got 3)",
        "row 2, column 'aspects': the pair has 2 rubric aspects, got 1 entry",
        "row 3, column 'aspects': not valid JSON: expecting value at column 1",
        "row 4, column 'aspects': entry 1 has no 'rejected' score",
        "row 5, column 'aspects': entry 1 has unknown keys ['x']",
        "row 6, column 'aspects': entry 1 'chosen' must be 0, 1 or 2 (got 1.5)",
        "row 7, column 'aspects': must be a list of {chosen, rejected} scores (got {'chosen': 1})",
        "row 9, column 'aspects': not valid JSON: the key 'chosen' appears twice in one object",
        "row 10, column 'aspects': not valid JSON: NaN is not a JSON value "
        "(JSON has no NaN or infinity)",
    ]


# --- verdict ---------------------------------------------------------------------------------

# Two annotators, both choosing `chosen`, no ratings (so no quality rule applies).
VERDICT_ROWS = [
    # p1: chosen means 2, 1.5 -> 1.75; rejected 0.5, 1 -> 0.75; gap 1.0: confirmed
    scored("p1", "a", "chosen", [(2, 0), (1, 1)]),
    scored("p1", "b", "chosen", [(2, 1), (2, 1)]),
    # p2: chosen 1.5, 1.5 -> 1.5; rejected 1, 2 -> 1.5; gap 0: not reflected
    scored("p2", "a", "chosen", [(1, 1), (2, 2)]),
    scored("p2", "b", "chosen", [(2, 1), (1, 2)]),
    # p3: one aspect, chosen 1.5, rejected 1: gap 0.5, exactly the threshold: confirmed
    scored("p3", "a", "chosen", [(2, 1)]),
    scored("p3", "b", "chosen", [(1, 1)]),
    # p4: the majority prefers rejected and the gap is 0: preference_flip comes first
    scored("p4", "a", "rejected", [(1, 1)]),
    scored("p4", "b", "rejected", [(1, 1)]),
]
VERDICT_COUNTS = {"p1": 2, "p2": 2, "p3": 1, "p4": 1}


def test_rubric_not_reflected_by_hand():
    report = report_of(VERDICT_ROWS, VERDICT_COUNTS)
    pairs = {p["pair_id"]: p for p in report["pairs"]}
    assert {k: p["verdict"] for k, p in pairs.items()} == {
        "p1": "valid",
        "p2": "rubric_not_reflected",
        "p3": "valid",
        "p4": "preference_flip",
    }
    assert pairs["p1"]["aspects_chosen_coverage"] == pytest.approx(1.75)
    assert pairs["p1"]["aspects_rejected_coverage"] == pytest.approx(0.75)
    assert pairs["p1"]["aspects_gap"] == pytest.approx(1.0)
    assert pairs["p1"]["aspects_chosen_means"] == [2.0, 1.5]
    assert pairs["p1"]["aspects_rejected_means"] == [0.5, 1.0]
    assert pairs["p2"]["aspects_gap"] == pytest.approx(0.0)
    assert pairs["p3"]["aspects_gap"] == pytest.approx(0.5)
    assert "aspects:not_reflected" in pairs["p2"]["flags"]
    assert "aspects:not_reflected" in pairs["p4"]["flags"]  # flagged whatever the verdict
    assert "aspects:not_reflected" not in pairs["p3"]["flags"]
    verdicts = report["verdicts"]
    assert list(verdicts)[-2:] == ["rubric_not_reflected", "valid"]  # the documented order
    assert verdicts["rubric_not_reflected"] == 1 and verdicts["valid"] == 2
    # set figures over p1..p4: chosen (1.75 + 1.5 + 1.5 + 1) / 4, rejected (0.75 + 1.5 + 1 + 1) / 4
    assert report["aspects"]["chosen_coverage"] == pytest.approx(5.75 / 4)
    assert report["aspects"]["rejected_coverage"] == pytest.approx(4.25 / 4)
    assert report["aspects"]["n_pairs"] == 4


def test_a_stricter_gap_option_moves_the_boundary():
    report = report_of(VERDICT_ROWS, VERDICT_COUNTS, aspect_gap=0.75)
    verdict = {p["pair_id"]: p["verdict"] for p in report["pairs"]}
    assert verdict["p3"] == "rubric_not_reflected" and verdict["p1"] == "valid"


def test_without_aspect_scores_the_report_is_unchanged():
    report = report_of([row("p1", "a", "chosen"), row("p1", "b", "chosen")], {"p1": 1})
    assert "aspects" not in report
    assert "rubric_not_reflected" not in report["verdicts"]
    assert "aspects" not in report["conclusion"]["checks"]
    assert "aspects_gap" not in report["pairs"][0]


# --- agreement -------------------------------------------------------------------------------


def example_a_rows() -> list[dict]:
    """Krippendorff (2011) example A (2 observers, 10 binary units) as aspect scores: unit
    2k is pair k's chosen response on its one aspect, unit 2k + 1 its rejected one."""
    rows = []
    for observer, values in enumerate(EXAMPLE_A):
        for k in range(5):
            rows.append(
                scored(f"p{k}", f"obs{observer}", "chosen", [(values[2 * k], values[2 * k + 1])])
            )
    return rows


def test_score_agreement_reproduces_krippendorff_example_a():
    # Ordinal alpha equals nominal alpha on two values; published: 0.095. Five pairs are too
    # few for an interval (analysis.agreement.bootstrap.MIN_INTERVAL_UNITS): null, with a note.
    report = report_of(example_a_rows(), {f"p{k}": 1 for k in range(5)}, bootstrap=200)
    agreement = report["aspects"]["agreement"]
    assert round(agreement["value"], 3) == 0.095
    assert agreement["ci95"] is None and agreement["note"]
    assert agreement["ci95_annotators"] is None and agreement["ci95_annotators_note"]
    by_aspect = report["aspects"]["by_aspect"][0]["agreement"]["value"]
    assert by_aspect == pytest.approx(agreement["value"])


def test_score_agreement_matches_the_krippendorff_package_on_three_values():
    rng = np.random.default_rng(3)
    counts = {f"p{k}": int(rng.integers(1, 5)) for k in range(30)}
    rows, data = [], {}
    for annotator in ("a", "b", "c"):
        for pair_id, n in counts.items():
            if annotator == "c" and pair_id.endswith("7"):
                continue  # a missing annotation
            values = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(n)]
            rows.append(scored(pair_id, annotator, "chosen", values))
            for a, (c, r) in enumerate(values):
                data.setdefault(annotator, {})[(pair_id, a, 0)] = c
                data[annotator][(pair_id, a, 1)] = r
    units = sorted({u for d in data.values() for u in d})
    matrix = [[d.get(u, np.nan) for u in units] for d in data.values()]
    expected = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2]
    )
    report = report_of(rows, counts)
    assert report["aspects"]["agreement"]["value"] == pytest.approx(expected, abs=1e-12)


# --- the fourth conclusion check -------------------------------------------------------------


def test_aspects_check_by_hand():
    # 2 of 3 confirmed: exact interval [0.094, 0.992] straddles 0.6: insufficient
    check = aspect_check.aspects_check(np.array([1.0, 0.0, 0.5]), gap_threshold=0.5)
    assert check["value"] == pytest.approx(2 / 3) and check["n"] == 3
    assert check["p_value"] == pytest.approx(0.5)  # P(X >= 2 | 3, 1/2) = 4/8
    assert check["outcome"] == "insufficient" and check["passed"] is False
    assert check["threshold"] == 0.6
    assert set(check) >= {"passed", "outcome", "value", "ci95", "threshold", "n", "rule", "note"}
    # 20 of 20: Clopper-Pearson lower bound 0.025 ** (1/20) = 0.832 > 0.6: passed
    check = aspect_check.aspects_check(np.full(20, 2.0), gap_threshold=0.5)
    assert check["ci95"][0] == pytest.approx(0.025 ** (1 / 20)) and check["ci95"][1] == 1.0
    assert check["outcome"] == "passed" and check["passed"] is True and check["note"] is None
    # 0 of 10: upper bound 1 - 0.025 ** (1/10) = 0.308 <= 0.6: failed (evidence against)
    check = aspect_check.aspects_check(np.zeros(10), gap_threshold=0.5)
    assert check["ci95"][1] == pytest.approx(1 - 0.025 ** (1 / 10))
    assert check["outcome"] == "failed"
    # no evidence is insufficient, with a note, never passed
    check = aspect_check.aspects_check(np.array([np.nan]), gap_threshold=0.5)
    assert check["outcome"] == "insufficient" and check["value"] is None and check["n"] == 0
    assert check["note"]


def test_the_fourth_check_is_in_the_conclusion_and_can_fail_it():
    report = report_of(VERDICT_ROWS, VERDICT_COUNTS)
    check = report["conclusion"]["checks"]["aspects"]
    # confirmed: p1, p3 of p1..p4 (p4's gap 0): 2 of 4, p = 11/16, interval straddles 0.6
    assert check["n"] == 4 and check["value"] == pytest.approx(0.5)
    assert check["p_value"] == pytest.approx(11 / 16)
    assert check["outcome"] == "insufficient"
    assert list(report["conclusion"]["checks"]) == ["label", "quality", "reason", "aspects"]
    assert report["conclusion"]["personal_preference_main_factor"] is False
    # a failing aspect check alone makes the conclusion not supported
    failing = report_of(
        [scored(f"q{k}", a, "chosen", [(1, 1)]) for k in range(12) for a in ("a", "b")],
        {f"q{k}": 1 for k in range(12)},
    )
    assert failing["conclusion"]["checks"]["aspects"]["outcome"] == "failed"
    assert failing["conclusion"]["status"] == "not_supported"


# --- humans against the automatic scorer -----------------------------------------------------

# Two annotators who agree, one aspect per pair; (chosen, rejected) scores.
HUMANS = {"p1": (2, 0), "p2": (1, 1), "p3": (2, 1), "p4": (0, 1)}
SCORER = {"p1": (2, 0), "p2": (2, 1), "p3": (1, 1), "p4": (0, 1)}


def scorer_rows() -> list[dict]:
    return [
        {"id": pair_id, "response": side, "scores": [scores[i]]}
        for pair_id, scores in SCORER.items()
        for i, side in enumerate(("chosen", "rejected"))
    ]


def write_jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_scorer_comparison_by_hand(tmp_path):
    rows = [
        scored(pair_id, annotator, "rejected" if pair_id == "p4" else "chosen", [scores])
        for pair_id, scores in HUMANS.items()
        for annotator in ("a", "b")
    ]
    counts = {pair_id: 1 for pair_id in HUMANS}
    scorer = read_scorer_file(
        write_jsonl(tmp_path / "s.jsonl", scorer_rows()), aspect_counts=counts
    )
    result = report_of(rows, counts, bootstrap=200, scorer=scorer)["aspects"]["scorer"]
    # Coincidences of (scorer, human mean) over 8 units: o00 = 4, o11 = 6, o22 = 2, o12 = o21 = 2;
    # n = (4, 8, 4); ordinal delta01 = delta12 = 6^2, delta02 = 12^2; D_o = 4 * 36 = 144;
    # D_e = 2 (32 * 36 + 32 * 36 + 16 * 144) / 15 = 614.4; alpha = 1 - 144 / 614.4 = 49/64.
    assert result["agreement"]["value"] == pytest.approx(49 / 64)
    assert result["n"] == 4
    # |scorer - humans| per pair: p1 0, p2 (1 + 0) / 2, p3 (1 + 0) / 2, p4 0
    assert [d["pair_id"] for d in result["disagreements"]][:2] == ["p2", "p3"]
    assert result["disagreements"][0]["mean_abs_diff"] == 0.5
    # scorer gaps 2, 1, 0, -1; humans confirm p1 (gap 2) and p3 (gap 1): positives {2, 0},
    # negatives {1, -1}: 3 of 4 comparisons won -> AUC 0.75
    assert result["predicts_confirmed"]["value"] == pytest.approx(0.75)
    # majority chosen for p1..p3 (gaps 2, 1, 0), rejected for p4 (-1): AUC 1
    assert result["predicts_majority"]["value"] == pytest.approx(1.0)
    # ranks 4 3 2 1 vs 4 2 3 1: rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert result["gap_correlation"]["value"] == pytest.approx(0.8)
    assert result["gap_correlation"]["ci95"] is not None or result["gap_correlation"]["note"]


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        (
            [{"id": "zz", "response": "chosen", "scores": [1]}],
            "line 1, field 'id': no pair with id 'zz'",
        ),
        (
            [
                {"id": "p1", "response": "chosen", "scores": [1, 2]},
                {"id": "p1", "response": "rejected", "scores": [1]},
            ],
            "line 1, field 'scores': the pair has 1 rubric aspect, got 2 scores",
        ),
        (
            [
                {"id": "p1", "response": "chosen", "scores": [3]},
                {"id": "p1", "response": "rejected", "scores": [1]},
            ],
            "line 1, field 'scores': score 1 must be 0, 1 or 2 (got 3)",
        ),
        (
            [
                {"id": "p1", "response": "chosen", "scores": [1]},
                {"id": "p1", "response": "chosen", "scores": [1]},
                {"id": "p1", "response": "rejected", "scores": [1]},
            ],
            "line 2: a second chosen row for pair 'p1' (first at line 1)",
        ),
        (
            [{"id": "p1", "response": "chosen", "scores": [1]}],
            "line 1: pair 'p1' has a chosen row but no rejected row",
        ),
        (
            [{"id": "p1", "response": "A", "scores": [1]}],
            "line 1, field 'response': must be chosen or rejected (got 'A')",
        ),
    ],
)
def test_broken_scorer_files_are_refused_with_their_line(tmp_path, records, problem):
    with pytest.raises(InputError) as caught:
        read_scorer_file(write_jsonl(tmp_path / "s.jsonl", records), aspect_counts={"p1": 1})
    assert problem in caught.value.problems


@pytest.mark.parametrize(
    "line, problem",
    [
        (
            '{"id": "p1", "response": "rejected", "scores": [1], "scores": [2]}',
            "line 2: not valid JSON: the key 'scores' appears twice in one object",
        ),
        (
            '{"id": "p1", "response": "rejected", "scores": [NaN]}',
            "line 2: not valid JSON: NaN is not a JSON value (JSON has no NaN or infinity)",
        ),
    ],
)
def test_scorer_json_lines_are_strict_json_as_the_importers_read_it(tmp_path, line, problem):
    # json.loads read NaN as a number and kept the last of two keys: the importers refuse both
    path = tmp_path / "s.jsonl"
    first = '{"id": "p1", "response": "chosen", "scores": [1]}'
    path.write_text(f"{first}\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_scorer_file(str(path), aspect_counts={"p1": 1})
    assert caught.value.problems == [problem]


def test_scorer_csv_and_parquet_are_read_alike(tmp_path):
    records = scorer_rows()
    counts = {pair_id: 1 for pair_id in SCORER}
    csv = tmp_path / "s.csv"
    pd.DataFrame([{**r, "scores": json.dumps(r["scores"])} for r in records]).to_csv(
        csv, index=False
    )
    parquet = tmp_path / "s.parquet"
    pd.DataFrame(records).to_parquet(parquet)
    jsonl = read_scorer_file(write_jsonl(tmp_path / "s.jsonl", records), aspect_counts=counts)
    pd.testing.assert_frame_equal(read_scorer_file(csv, aspect_counts=counts), jsonl)
    pd.testing.assert_frame_equal(read_scorer_file(parquet, aspect_counts=counts), jsonl)
    bad = tmp_path / "bad.csv"
    bad.write_text('id,response,scores\np1,chosen,"[1]"\np1,rejected,"[x]"\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_scorer_file(bad, aspect_counts=counts)
    assert caught.value.problems == ["row 2, field 'scores': not a JSON list (Expecting value)"]


def test_an_uploaded_scorer_file_reads_as_the_same_file_on_disk(tmp_path):
    """The console reads an upload's bytes (no file on disk): the same rows and the same
    problems, named by the upload's name, as the command line gets from the file."""
    records = scorer_rows()
    counts = {pair_id: 1 for pair_id in SCORER}
    files = {
        "s.jsonl": write_jsonl(tmp_path / "s.jsonl", records),
        "s.csv": tmp_path / "s.csv",
        "s.parquet": tmp_path / "s.parquet",
    }
    pd.DataFrame([{**r, "scores": json.dumps(r["scores"])} for r in records]).to_csv(
        files["s.csv"], index=False
    )
    pd.DataFrame(records).to_parquet(files["s.parquet"])
    for name, path in files.items():
        data = Path(path).read_bytes()
        pd.testing.assert_frame_equal(
            read_scorer_file(name, aspect_counts=counts, data=data),
            read_scorer_file(path, aspect_counts=counts),
        )
    broken = b'{"id": "p1", "response": "chosen", "scores": [1]}\n{"id": "p1", "response": "x"}\n'
    with pytest.raises(InputError) as caught:
        read_scorer_file("upload.jsonl", aspect_counts=counts, data=broken)
    assert caught.value.source == "upload.jsonl"
    assert caught.value.problems == [
        "line 2, field 'response': must be chosen or rejected (got 'x')",
        "line 1: pair 'p1' has a chosen row but no rejected row",
    ]


def test_a_scorer_added_to_a_finished_report_gives_the_reports_own_section(tmp_path):
    """with_aspect_scores (the console's upload) adds exactly what build_report computes with
    the scorer given from the start; a gold pair's scorer rows stay out of both."""
    rows = [
        scored(pair_id, annotator, "rejected" if pair_id == "p4" else "chosen", [scores])
        for pair_id, scores in HUMANS.items()
        for annotator in ("a", "b", "c")
    ]
    counts = {pair_id: 1 for pair_id in HUMANS}
    scorer = read_scorer_file(
        write_jsonl(tmp_path / "s.jsonl", scorer_rows()), aspect_counts=counts
    )
    table = validate_annotations(frame(rows), source="test", aspect_counts=counts)
    pairs = pairs_frame(counts)
    pairs.loc[pairs["pair_id"] == "p2", "is_gold"] = True
    options = ReportOptions(bootstrap=200, seed=3)
    plain = build_report(table, pairs, options=options)
    added = with_aspect_scores(plain, table, pairs, scorer)
    assert "scorer" not in plain["aspects"]
    assert added == build_report(table, pairs, options=options, aspect_scores=scorer)
    assert added["aspects"]["scorer"]["n"] == 3  # p2 is gold
    assert json.dumps(added, allow_nan=False)


def test_a_scorer_cannot_be_added_to_a_report_without_aspect_scores():
    rows = [row("p1", "a", "chosen"), row("p1", "b", "chosen")]
    table = validate_annotations(frame(rows), source="test")
    report = build_report(table, None, options=ReportOptions(bootstrap=0))
    scorer = pd.DataFrame({"pair_id": ["p1"], "aspect": [0], "side": [0], "score": [2]})
    with pytest.raises(UserError, match="needs annotations with aspect scores"):
        with_aspect_scores(report, table, None, scorer)


# --- through the command ---------------------------------------------------------------------


def test_annotate_report_writes_the_aspect_section_everywhere(tmp_path, capsys):
    counts = {pair_id: 1 for pair_id in HUMANS}
    rows = [
        scored(pair_id, annotator, "rejected" if pair_id == "p4" else "chosen", [scores])
        for pair_id, scores in HUMANS.items()
        for annotator in ("a", "b")
    ]
    annotations = tmp_path / "annotations.csv"
    write_table(frame(rows), annotations)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(pair_record(p)) + "\n" for p in counts), encoding="utf-8")
    scorer = write_jsonl(tmp_path / "scorer.jsonl", scorer_rows())
    out = tmp_path / "report"
    code = main(
        [
            "report", "--annotations", str(annotations), "--pairs", str(pairs),
            "--aspect-scores", scorer, "--out", str(out), "--bootstrap", "100",
        ]
    )  # fmt: skip
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["aspects"]["scorer"]["agreement"]["value"] == pytest.approx(49 / 64)
    assert set(report["aspects"]) >= {"chosen_coverage", "rejected_coverage", "agreement", "scorer"}
    assert set(report["aspects"]["scorer"]) >= {"agreement", "n"}
    assert "aspects" in report["conclusion"]["checks"]
    pairs_csv = pd.read_csv(out / "pairs.csv")
    assert {"aspects_chosen_coverage", "aspects_gap", "aspects_chosen_means"} <= set(
        pairs_csv.columns
    )
    summary = (out / "summary.md").read_text()
    assert "## Rubric aspects" in summary and "Automatic scorer vs human mean score" in summary
    page = (out / "report.html").read_text()
    assert "Rubric aspects" in page and "disagree most" in page

    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "p9", "response": "chosen", "scores": [1]}])
    code = main(
        ["report", "--annotations", str(annotations), "--pairs", str(pairs),
         "--aspect-scores", bad, "--out", str(out)]
    )  # fmt: skip
    assert code != 0
    err = capsys.readouterr().err
    assert "line 1, field 'id': no pair with id 'p9'" in err and "Traceback" not in err


def test_write_report_keeps_the_aspect_means_in_pairs_csv(tmp_path):
    report = report_of(VERDICT_ROWS, VERDICT_COUNTS)
    write_report(report, tmp_path, pairs=None)
    table = pd.read_csv(tmp_path / "pairs.csv", dtype=str).set_index("pair_id")
    assert table.loc["p1", "aspects_chosen_means"] == "2;1.5"
    assert not math.isnan(float(table.loc["p1", "aspects_gap"]))


# --- never crashes ---------------------------------------------------------------------------

score_values = st.integers(0, 2)


@st.composite
def scored_tables(draw):
    counts = {p: draw(st.integers(1, 3)) for p in ("p1", "p2", "p3", "p4")}
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(list(counts)), st.sampled_from(["a", "b", "c"])),
            min_size=1,
            unique=True,
        )
    )
    rows = []
    for pair_id, annotator in keys:
        preference = draw(st.sampled_from(["chosen", "rejected", "tie"]))
        if draw(st.booleans()) or not rows:
            aspects = [(draw(score_values), draw(score_values)) for _ in range(counts[pair_id])]
            rows.append(scored(pair_id, annotator, preference, aspects))
        else:
            rows.append(row(pair_id, annotator, preference))
    scorer = [
        {"id": pair_id, "response": side, "scores": [draw(score_values) for _ in range(n)]}
        for pair_id, n in counts.items()
        if draw(st.booleans())
        for side in ("chosen", "rejected")
    ]
    return rows, counts, scorer


# Split by the bootstrap's setting (it drew 0 or 20 before) so that two workers share the
# examples; 20 of each.
@pytest.mark.parametrize("bootstrap", [0, 20])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=scored_tables(), min_annotations=st.integers(1, 3))
def test_the_aspect_report_never_crashes_and_every_null_has_a_note(
    tmp_path_factory, bootstrap, data, min_annotations
):
    rows, counts, scorer_records = data
    tmp = tmp_path_factory.mktemp("scorer")
    scorer = None
    if scorer_records:
        scorer = read_scorer_file(
            write_jsonl(tmp / "s.jsonl", scorer_records), aspect_counts=counts
        )
    report = report_of(
        rows, counts, bootstrap=bootstrap, scorer=scorer, min_annotations=min_annotations
    )
    text = json.dumps(report, allow_nan=False)
    assert json.loads(text) == report
    assert undefined_without_note(report) == []
    assert isinstance(report["conclusion"]["checks"]["aspects"]["passed"], bool)
    write_report(report, tmp / "out", pairs=None)


def test_pair_ids_in_the_aspect_section_are_shown_inert(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    rows = [scored(evil, a, "chosen", [(2, 0)]) for a in ("a", "b")]
    counts = {evil: 1}
    scorer = read_scorer_file(
        write_jsonl(
            tmp_path / "s.jsonl",
            [
                {"id": evil, "response": "chosen", "scores": [0]},
                {"id": evil, "response": "rejected", "scores": [2]},
            ],
        ),
        aspect_counts=counts,
    )
    report = report_of(rows, counts, scorer=scorer)
    write_report(report, tmp_path / "out", pairs=None)
    page = (tmp_path / "out" / "report.html").read_text()
    assert evil not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_aspect_scores_without_human_aspect_scores_are_refused(tmp_path, capsys):
    annotations = tmp_path / "annotations.csv"
    write_table(frame([row("p1", "a", "chosen"), row("p1", "b", "chosen")]), annotations)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps(pair_record("p1")) + "\n", encoding="utf-8")
    scorer = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"id": "p1", "response": "chosen", "scores": [2]},
            {"id": "p1", "response": "rejected", "scores": [0]},
        ],
    )
    args = ["report", "--annotations", str(annotations), "--pairs", str(pairs)]
    assert main([*args, "--aspect-scores", scorer, "--out", str(tmp_path / "r")]) != 0
    err = capsys.readouterr().err
    assert "--aspect-scores needs annotations with aspect scores" in err
    assert "Traceback" not in err


def test_scorer_agreement_matches_the_krippendorff_package_with_fractional_means(tmp_path):
    """Three annotators make human means in thirds; the scorer and the mean are two coders on
    the ordered values that occur."""
    rng = np.random.default_rng(5)
    counts = {f"p{k}": int(rng.integers(1, 4)) for k in range(25)}
    rows, human, records = [], {}, []
    for pair_id, n in counts.items():
        for annotator in ("a", "b", "c"):
            values = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(n)]
            rows.append(scored(pair_id, annotator, "chosen", values))
            for a, pair_scores in enumerate(values):
                for s, v in enumerate(pair_scores):
                    human.setdefault((pair_id, a, s), []).append(v)
        machine = [[int(rng.integers(0, 3)) for _ in range(n)] for _ in range(2)]
        records += [
            {"id": pair_id, "response": side, "scores": machine[s]}
            for s, side in enumerate(("chosen", "rejected"))
        ]
    units = sorted(human)
    means = [float(np.mean(human[u])) for u in units]
    by_unit = {
        (r["id"], a, 0 if r["response"] == "chosen" else 1): v
        for r in records
        for a, v in enumerate(r["scores"])
    }
    machine_values = [float(by_unit[u]) for u in units]
    domain = sorted(set(means) | set(machine_values))
    expected = krippendorff.alpha(
        reliability_data=[machine_values, means],
        level_of_measurement="ordinal",
        value_domain=domain,
    )
    scorer = read_scorer_file(write_jsonl(tmp_path / "s.jsonl", records), aspect_counts=counts)
    result = report_of(rows, counts, scorer=scorer)["aspects"]["scorer"]
    assert result["agreement"]["value"] == pytest.approx(expected, abs=1e-12)


def test_the_verdict_chart_gives_rubric_not_reflected_its_own_colour():
    """The chart had six colours for seven verdicts: with the aspect check `valid` came out
    black and `rubric_not_reflected` took valid's green."""
    from analysis.report.html_page import figures

    rows = [scored("p1", a, "chosen", [(2, 0)]) for a in ("a", "b")]
    rows += [scored("p2", a, "chosen", [(1, 1)]) for a in ("a", "b")]
    report = report_of(rows, {"p1": 1, "p2": 1})
    chart = dict(figures(report))["Pair verdicts"]["data"][0]
    colours = dict(zip(chart["x"], chart["marker"]["color"], strict=True))
    assert list(colours) == list(report["verdicts"])
    assert colours["valid"] == "#1a9850"  # green, as without the aspect check
    assert len(set(colours.values())) == len(colours)
