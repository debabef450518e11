"""Importing pairs: every kind of bad input is refused with its line and field, nothing is
half-written, identical re-import is a no-op, changed records need --update."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func
from sqlmodel import select

from annotate.cli import main
from annotate.db import get_engine, session
from annotate.errors import InputError
from annotate.importer import import_pairs
from annotate.models import Pair
from annotate.pairs_io import MAX_TEXT_CHARS, read_pairs, write_pairs
from tests.factories import pair_record, write_jsonl


def count_pairs(engine) -> int:
    with session(engine) as s:
        return s.exec(select(func.count()).select_from(Pair)).one()


@pytest.fixture
def engine(db_url):
    return get_engine(db_url)


def test_jsonl_json_and_parquet_import_the_same_records(engine, tmp_path):
    records = [pair_record(i, extra_field={"k": i}) for i in range(5)]
    records[0]["id"] = 17  # integer ids are accepted and kept as text
    write_jsonl(tmp_path / "p.jsonl", records)
    (tmp_path / "p.json").write_text(json.dumps(records, indent=2))
    pq.write_table(
        pa.Table.from_pylist([{**records[0], "id": "17"}, *records[1:]]), tmp_path / "p.parquet"
    )

    for study, suffix in [("a", "jsonl"), ("b", "json"), ("c", "parquet")]:
        result = import_pairs(engine, tmp_path / f"p.{suffix}", study_name=study)
        assert (result.added, result.updated, result.unchanged) == (5, 0, 0)
    with session(engine) as s:
        keys = s.exec(select(Pair.pair_key).where(Pair.study_id == 1).order_by(Pair.position)).all()
        stored = s.exec(select(Pair).where(Pair.pair_key == "p3")).first()
    assert keys == ["17", "p1", "p2", "p3", "p4"]
    assert stored.extra == {"extra_field": {"k": 3}}
    assert stored.profile[0]["text"] == "I hike a lot."


def test_reimport_is_a_noop_and_changes_need_update(engine, tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(3)])
    assert import_pairs(engine, path).added == 3
    again = import_pairs(engine, path)
    assert (again.added, again.unchanged) == (0, 3)

    changed = write_jsonl(tmp_path / "c.jsonl", [pair_record(1, chosen="A different answer.")])
    with pytest.raises(InputError, match=r"line 1: pair id 'p1' already exists .*--update"):
        import_pairs(engine, changed)
    updated = import_pairs(engine, changed, update_existing=True)
    assert updated.updated == 1
    with session(engine) as s:
        assert (
            s.exec(select(Pair.chosen).where(Pair.pair_key == "p1")).one() == "A different answer."
        )
    assert count_pairs(engine) == 3


BAD_RECORDS = [
    (pair_record(1, question=""), "field 'question' must not be empty"),
    (pair_record(1, chosen="   "), "field 'chosen': must not be blank"),
    (
        pair_record(1, rejected=pair_record(1)["chosen"]),
        "fields 'chosen' and 'rejected' are the same text",
    ),
    (pair_record(1, question=42), "field 'question': input should be a valid string (got int)"),
    (pair_record(1, id=True), "field 'id' must be a string or an integer (got bool)"),
    (pair_record(1, profile="not a list"), "field 'profile'"),
    (
        pair_record(1, rubric_aspects=[{"evidence": "x"}]),
        "field 'rubric_aspects.0.aspect' is missing",
    ),
    ({k: v for k, v in pair_record(1).items() if k != "rejected"}, "field 'rejected' is missing"),
    (pair_record(1, chosen="x" * (MAX_TEXT_CHARS + 1)), f"limit of {MAX_TEXT_CHARS:,} characters"),
    ([1, 2, 3], "expected a JSON object, got list"),
]


@pytest.mark.parametrize(("record", "message"), BAD_RECORDS)
def test_each_bad_record_is_refused_with_line_and_field(engine, tmp_path, record, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [pair_record(0), record, pair_record(2)])
    with pytest.raises(InputError) as caught:
        import_pairs(engine, path)
    assert any(p.startswith("line 2: ") and message in p for p in caught.value.problems), (
        caught.value.problems
    )
    assert count_pairs(engine) == 0  # all or nothing


def test_every_problem_is_listed_and_nothing_written(engine, tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(pair_record(i)) for i in range(300)]  # more than one write batch
    lines[250] = json.dumps(pair_record(5))  # duplicate id of line 6
    lines.append("{not json")
    path.write_bytes("\n".join(lines).encode() + b"\n" + b'{"id": "x\xff"}\n')
    with pytest.raises(InputError) as caught:
        import_pairs(engine, path)
    problems = caught.value.problems
    assert problems[0] == "line 251: field 'id': duplicate id 'p5' (first at line 6)"
    assert problems[1].startswith("line 301: not valid JSON")
    assert problems[2].startswith("line 302: not valid UTF-8")
    assert "3 problems, nothing was written" in str(caught.value)
    assert count_pairs(engine) == 0


def test_broken_json_array_and_parquet_files(engine, tmp_path):
    (tmp_path / "a.json").write_text('[{"id": 1, "question": "q", "chosen": "a", "rejected": "b"},')
    (tmp_path / "b.parquet").write_bytes(b"PAR1 this is not parquet")
    (tmp_path / "c.txt").write_text("hello")
    (tmp_path / "d.jsonl").write_text("")
    with pytest.raises(InputError, match=r"array is not closed|not valid JSON"):
        import_pairs(engine, tmp_path / "a.json")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        import_pairs(engine, tmp_path / "b.parquet")
    with pytest.raises(Exception, match=r"unsupported file type '\.txt'"):
        import_pairs(engine, tmp_path / "c.txt")
    with pytest.raises(InputError, match="holds no records"):
        import_pairs(engine, tmp_path / "d.jsonl")
    assert count_pairs(engine) == 0


def test_parquet_problems_name_the_row(engine, tmp_path):
    records = [pair_record(0), pair_record(1, chosen=pair_record(1)["rejected"])]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "p.parquet")
    with pytest.raises(InputError, match="row 2: fields 'chosen' and 'rejected' are the same text"):
        import_pairs(engine, tmp_path / "p.parquet")


def test_large_json_array_streams_in_small_chunks(tmp_path, monkeypatch):
    import annotate.pairs_io as pairs_io

    records = [
        pair_record(i, profile=[{"id": j, "text": "post " * 50} for j in range(20)])
        for i in range(40)
    ]
    (tmp_path / "big.json").write_text(json.dumps(records, indent=1))
    original = pairs_io._iter_json_array
    monkeypatch.setattr(pairs_io, "_iter_json_array", lambda p: original(p, chunk_size=97))
    pairs = read_pairs(tmp_path / "big.json")
    assert [p.key for p in pairs] == [f"p{i}" for i in range(40)]


def test_written_pairs_read_back_unchanged(tmp_path):
    records = [
        pair_record(i, source={"site": "forum", "score": i}, tags=["a", "b"]) for i in range(3)
    ]
    for suffix in ("jsonl", "json", "parquet"):
        write_pairs(records, tmp_path / f"out.{suffix}")
        assert [p.as_record() for p in read_pairs(tmp_path / f"out.{suffix}")] == records


def test_cli_reports_problems_without_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "bad.jsonl", [pair_record(1, question="")])
    assert main(["import-pairs", str(path), "--db", f"sqlite:///{tmp_path}/x.db"]) == 2
    err = capsys.readouterr().err
    assert "line 1: field 'question' must not be empty" in err
    assert "Traceback" not in err
    assert (
        main(
            ["import-pairs", str(tmp_path / "missing.jsonl"), "--db", f"sqlite:///{tmp_path}/x.db"]
        )
        == 2
    )
    assert "no such file" in capsys.readouterr().err
    good = write_jsonl(tmp_path / "good.jsonl", [pair_record(1)])
    assert (
        main(["import-pairs", str(good), "--study", "s1", "--db", f"sqlite:///{tmp_path}/x.db"])
        == 0
    )
    assert "1 pairs added" in capsys.readouterr().out


def test_an_oversized_record_in_a_json_array_is_refused_with_the_limit(
    engine, tmp_path, monkeypatch
):
    import annotate.pairs_io as pairs_io

    monkeypatch.setattr(pairs_io, "MAX_RECORD_BYTES", 5_000)
    records = [pair_record(0), pair_record(1, narrative="x" * 50_000)]
    (tmp_path / "big.json").write_text(json.dumps(records))
    original = pairs_io._iter_json_array
    monkeypatch.setattr(pairs_io, "_iter_json_array", lambda p: original(p, chunk_size=1024))
    with pytest.raises(InputError, match=r"record 2 \(line 1\) is over the limit of 5,000 bytes"):
        import_pairs(engine, tmp_path / "big.json")
    assert count_pairs(engine) == 0
