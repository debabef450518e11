"""Hostile model files (hypothesis): reading one ends either in judgements that match the
file or in a ModelFileError listing readable problems; never another exception."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.judges.files import PICKS, ModelFileError, read_model_file

IDS = ["p1", "p2", "p3"]
FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["A", "B", "a", "chosen", "rejected", "tie", "true", "0", "", " ", *IDS]),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
columns = st.sampled_from(
    ["id", "pair_id", "prediction", "pos_in_a", "correct_answer", "parse_failed", "label",
     "score", "score_chosen", "score_rejected", "preference", "other"]
)  # fmt: skip
records = st.lists(st.dictionaries(columns, values, max_size=6), max_size=8)


def check(path) -> None:
    try:
        model = read_model_file(path, name="m", known_ids=IDS)
    except ModelFileError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        assert all("Traceback" not in p for p in exc.problems)
        return
    assert sorted(model.pair_id.tolist()) == IDS  # every pair judged once
    assert set(model.pick.tolist()) <= set(range(len(PICKS)))


@FUZZ
@given(rows=records)
def test_any_json_lines_file_is_read_or_refused_in_sentences(tmp_path, rows):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    check(path)


@FUZZ
@given(rows=records)
def test_any_csv_file_is_read_or_refused_in_sentences(tmp_path, rows):
    path = tmp_path / "m.csv"
    pd.DataFrame.from_records(rows).astype(str).to_csv(path, index=False)
    check(path)


@FUZZ
@given(data=st.binary(max_size=200))
def test_any_bytes_are_read_or_refused_in_sentences(tmp_path, data):
    for suffix in (".jsonl", ".csv", ".parquet"):
        path = tmp_path / f"m{suffix}"
        path.write_bytes(data)
        check(path)
