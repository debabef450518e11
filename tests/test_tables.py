"""The annotations table: reading by suffix, validation with row numbers, normalised types."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.files.annotations_table import (
    SUFFIXES,
    load_annotations,
    read_table,
    validate_annotations,
    write_table,
)
from analysis.vocabulary import COLUMNS, RATING_COLUMNS
from annotate.errors import InputError, UserError
from tests.report_fixtures import frame, row


def sample() -> pd.DataFrame:
    return frame(
        [
            row(
                "p1",
                "ann",
                "chosen",
                position="A",
                chosen=(5, 4, 3),
                rejected=(2, 1, 5),
                reason="personal_fit",
                seconds=12.5,
                comment='says "hi", then\nleaves',
            ),
            row("p1", "bob", "tie", reason=None, seconds=None),
            row("p2", "ann", "rejected", position="B", chosen=(None, 3, None), reason="unsure"),
        ]
    ).assign(
        submitted_at=pd.Series(["2026-01-02T03:04:05+00:00", None, "2026-01-02T03:04:06+00:00"])
    )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_round_trip_by_suffix_keeps_values_and_types(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    write_table(sample(), path)
    loaded = load_annotations(path)
    assert list(loaded.columns) == COLUMNS
    for column in RATING_COLUMNS:
        assert loaded[column].dtype == "Int64"
    assert loaded["seconds"].dtype == "Float64"
    assert pd.api.types.is_string_dtype(loaded["pair_id"])
    assert loaded.loc[0, "correctness_chosen"] == 5
    assert pd.isna(loaded.loc[1, "correctness_chosen"])
    assert pd.isna(loaded.loc[1, "chosen_position"])
    assert loaded.loc[0, "comment"] == 'says "hi", then\nleaves'
    assert loaded.loc[0, "seconds"] == 12.5
    assert loaded.loc[2, "submitted_at"] == "2026-01-02T03:04:06+00:00"
    again = tmp_path / f"b{suffix}"
    write_table(loaded, again)
    assert again.read_bytes() == path.read_bytes()


def test_same_table_from_every_format(tmp_path):
    loaded = []
    for suffix in SUFFIXES:
        write_table(sample(), tmp_path / f"a{suffix}")
        loaded.append(load_annotations(tmp_path / f"a{suffix}"))
    pd.testing.assert_frame_equal(loaded[0], loaded[1])
    pd.testing.assert_frame_equal(loaded[0], loaded[2])


def test_csv_empty_cells_are_missing_and_jsonl_nulls_too(tmp_path):
    write_table(sample(), tmp_path / "a.csv")
    text = (tmp_path / "a.csv").read_text().splitlines()
    assert text[0] == ",".join(COLUMNS)
    # bob's tie: no position, no ratings, no reason, no comment, no seconds, no timestamp
    assert text[3].startswith("p1,bob,tie,,,,,,,,,,,")
    write_table(sample(), tmp_path / "a.jsonl")
    record = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[1])
    assert record["chosen_position"] is None and record["correctness_chosen"] is None


def test_integer_ids_and_integral_floats_are_accepted(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(
        json.dumps(
            {"pair_id": 7, "annotator": "x", "preference": "chosen", "correctness_chosen": 4.0}
        )
        + "\n"
    )
    loaded = load_annotations(path)
    assert loaded.loc[0, "pair_id"] == "7"
    assert loaded.loc[0, "correctness_chosen"] == 4


def problems_of(raw: pd.DataFrame, **kwargs) -> list[str]:
    with pytest.raises(InputError) as info:
        validate_annotations(raw, source="f.csv", **kwargs)
    return info.value.problems


def test_every_problem_listed_with_row_and_column():
    raw = pd.DataFrame(
        {
            "pair_id": ["p1", "p2", "", "p1", "p9"],
            "annotator": ["a", "a", "a", "a", "b"],
            "preference": ["chosen", "maybe", "tie", "rejected", None],
            "chosen_position": ["A", "C", None, "B", "b"],
            "correctness_chosen": ["5", "0", "3.5", "x", "6"],
            "main_reason": ["both", "fit", None, "unsure", None],
            "seconds": ["1", "-2", "ten", None, None],
            "submitted_at": [None, "yesterday", None, None, "2026-01-01T00:00:00Z"],
        }
    )
    problems = problems_of(raw, pair_ids={"p1", "p2"})
    expected = [
        "row 2, column 'preference': must be one of chosen, rejected, tie (got 'maybe')",
        "row 2, column 'chosen_position': must be one of A, B (got 'C')",
        "row 2, column 'correctness_chosen': outside the rating scale 1..5 (got '0')",
        "row 2, column 'main_reason': must be one of personal_fit, general_quality, both, unsure (got 'fit')",
        "row 2, column 'seconds': must be a non-negative number of seconds (got '-2')",
        "row 2, column 'submitted_at': not an ISO 8601 timestamp (got 'yesterday')",
        "row 3, column 'pair_id': is empty",
        "row 3, column 'correctness_chosen': not a whole number (got '3.5')",
        "row 3, column 'seconds': must be a non-negative number of seconds (got 'ten')",
        "row 4, column 'correctness_chosen': not a number (got 'x')",
        "row 4: a second row for pair 'p1' and annotator 'a' (first at row 1)",
        "row 5, column 'preference': is empty",
        "row 5, column 'chosen_position': must be one of A, B (got 'b')",
        "row 5, column 'correctness_chosen': outside the rating scale 1..5 (got '6')",
        "row 5, column 'pair_id': no pair with this id (got 'p9')",
    ]
    assert sorted(problems) == sorted(expected)
    assert [int(p.split(",")[0].split(":")[0].split()[1]) for p in problems] == sorted(
        int(p.split(",")[0].split(":")[0].split()[1]) for p in problems
    )


def test_missing_required_columns():
    problems = problems_of(pd.DataFrame({"pair_id": ["p1"], "comment": ["x"]}))
    assert problems == [
        "required column 'annotator' is missing",
        "required column 'preference' is missing",
    ]


def test_optional_columns_may_be_absent():
    loaded = validate_annotations(
        pd.DataFrame({"pair_id": ["p1"], "annotator": ["a"], "preference": ["tie"]}), source="x"
    )
    assert list(loaded.columns) == COLUMNS
    assert loaded[RATING_COLUMNS].isna().all().all()


def test_scale_of_the_study_is_used():
    raw = pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "annotator": ["a", "a"],
            "preference": ["tie", "tie"],
            "relevance_rejected": [0, 10],
        }
    )
    assert validate_annotations(raw, source="x", scale=(0, 10))["relevance_rejected"].tolist() == [
        0,
        10,
    ]
    assert problems_of(raw, scale=(1, 7)) == [
        "row 1, column 'relevance_rejected': outside the rating scale 1..7 (got 0)",
        "row 2, column 'relevance_rejected': outside the rating scale 1..7 (got 10)",
    ]


def test_unsupported_suffix_and_missing_file(tmp_path):
    with pytest.raises(UserError, match=r"unsupported file type '\.xlsx'"):
        read_table(tmp_path / "a.xlsx")
    with pytest.raises(UserError, match="no such file"):
        read_table(tmp_path / "a.csv")


def test_an_oversized_table_is_refused_with_the_limit(tmp_path, monkeypatch):
    import analysis.files.annotations_table as tables

    monkeypatch.setattr(tables, "MAX_TABLE_BYTES", 100)
    path = tmp_path / "a.csv"
    path.write_text("pair_id,annotator,preference\n" + "p1,x,tie\n" * 20)
    with pytest.raises(UserError, match=r"is 209 bytes, over the limit of 100 bytes"):
        read_table(path)


def test_broken_jsonl_is_an_input_error(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"pair_id": "p1"\n')
    with pytest.raises(InputError, match="line 1: not valid JSON"):
        load_annotations(path)


def test_jsonl_lines_that_are_not_objects_are_named(tmp_path):
    # a bare value on the last line made pandas' reader raise a TypeError (found by the fuzz test)
    path = tmp_path / "a.jsonl"
    good = '{"pair_id": "p1", "annotator": "x", "preference": "tie"}'
    path.write_text(f"{good}\n\n[1, 2]\n{good}\n0\n")
    with pytest.raises(InputError) as raised:
        load_annotations(path)
    assert raised.value.problems == [
        "line 3: expected a JSON object, got list",
        "line 5: expected a JSON object, got int",
    ]


def test_large_table_validates_quickly(tmp_path):
    import time

    n = 200_000
    raw = pd.DataFrame(
        {
            "pair_id": [f"p{i // 5}" for i in range(n)],
            "annotator": [f"a{i % 5}" for i in range(n)],
            "preference": ["chosen", "rejected", "tie", "chosen"] * (n // 4),
            "correctness_chosen": [1, 2, 3, 4, 5] * (n // 5),
        }
    )
    # CPU time of this thread: what validating costs, however many processes share the machine
    start = time.thread_time()
    validate_annotations(raw, source="x")
    assert time.thread_time() - start < 5


def test_an_overlong_comment_is_refused_with_the_limit(tmp_path):
    from analysis.files.annotations_table import MAX_COMMENT_CHARS

    path = tmp_path / "a.csv"
    path.write_text(
        "pair_id,annotator,preference,comment\n"
        f"p1,ann,chosen,fine\np2,ann,chosen,{'x' * (MAX_COMMENT_CHARS + 1)}\n"
    )
    with pytest.raises(
        InputError, match=r"row 2, column 'comment': longer than the limit of 20,000"
    ):
        load_annotations(path)
