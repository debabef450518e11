"""Importing pairs: every kind of bad input is refused with its line and field, nothing is
half-written, identical re-import is a no-op, changed records need --update."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func
from sqlmodel import col, select

from analysis.files import strict_input
from annotate.cli import main
from annotate.engine import get_engine
from annotate.errors import InputError
from annotate.store.db import session
from annotate.store.models import Pair
from annotate.studies.pair_import import import_pairs
from annotate.studies.pairs_files import MAX_TEXT_CHARS, read_pairs, write_pairs
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
    import annotate.studies.pairs_files as pairs_io

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
    import annotate.studies.pairs_files as pairs_io

    monkeypatch.setattr(pairs_io, "MAX_RECORD_BYTES", 5_000)
    records = [pair_record(0), pair_record(1, narrative="x" * 50_000)]
    (tmp_path / "big.json").write_text(json.dumps(records))
    original = pairs_io._iter_json_array
    monkeypatch.setattr(pairs_io, "_iter_json_array", lambda p: original(p, chunk_size=1024))
    with pytest.raises(InputError, match=r"record 2 \(line 1\) is over the limit of 5,000 bytes"):
        import_pairs(engine, tmp_path / "big.json")
    assert count_pairs(engine) == 0


def test_an_oversized_parquet_row_is_refused_with_the_limit(engine, tmp_path, monkeypatch):
    # many posts, each under the per-text limit, add up to a record over the per-record limit
    import annotate.studies.pairs_files as pairs_io

    monkeypatch.setattr(pairs_io, "MAX_RECORD_BYTES", 50_000)
    posts = [{"id": str(i), "category": "c", "text": "x" * 1_000} for i in range(100)]
    records = [pair_record(0), {**pair_record(1), "profile": posts}, pair_record(2)]
    write_pairs(records, tmp_path / "big.parquet")
    with pytest.raises(
        InputError, match=r"row 2: record is [\d,]+ bytes, over the limit of 50,000"
    ):
        import_pairs(engine, tmp_path / "big.parquet")
    assert count_pairs(engine) == 0


# --- hashes of the file's own text, and the values stored as written -----------------------


def _stored(engine, study: str = "default") -> dict[str, dict]:
    from annotate.store.models import Study

    with session(engine) as s:
        rows = s.exec(
            select(Pair).join(Study, col(Study.id) == Pair.study_id).where(Study.name == study)
        ).all()
        return {p.pair_key: p.model_dump() for p in rows}


def test_stored_json_values_read_back_equal_to_the_file(engine, tmp_path):
    records = [
        pair_record(
            i,
            profile=[
                {
                    "text": 'Zoë \u00e9t\u00e9 😀 "quoted" back\\slash \u0001',
                    "id": i,
                    "z": [1.5, None],
                },
                {"category": "tab\there", "text": "line\nbreak", "id": "x", "a": {"b": True}},
            ],
            rubric_aspects=[{"reason": "r", "aspect": "Ünïcode", "evidence": "e"}],
            extra={"nested": {"k": [1, 2.0, "three"]}},
        )
        for i in range(3)
    ]
    path = tmp_path / "p.jsonl"
    # three layouts of JSON text: compact, spaced, ASCII-escaped
    path.write_text(
        json.dumps(records[0], separators=(",", ":"), ensure_ascii=False)
        + "\n"
        + json.dumps(records[1], indent=2).replace("\n", " ")
        + "\n"
        + json.dumps(records[2])
        + "\n",
        encoding="utf-8",
    )
    assert import_pairs(engine, path).added == 3
    stored = _stored(engine)
    for record in records:
        row = stored[record["id"]]
        assert row["profile"] == record["profile"]
        assert row["rubric_aspects"] == record["rubric_aspects"]
        assert row["extra"] == {"extra": record["extra"]}
    again = import_pairs(engine, path)
    assert (again.added, again.unchanged) == (0, 3)


def test_same_records_in_another_layout_or_format_are_unchanged(engine, tmp_path):
    records = [pair_record(i, tags=["a", "é"]) for i in range(4)]
    jsonl = write_jsonl(tmp_path / "p.jsonl", records)
    assert import_pairs(engine, jsonl).added == 4
    # other bytes, same records: pretty JSON array, reordered keys, Parquet
    (tmp_path / "p.json").write_text(json.dumps(records, indent=3, ensure_ascii=False))
    reordered = write_jsonl(tmp_path / "r.jsonl", [dict(reversed(r.items())) for r in records])
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "p.parquet")
    for path in (tmp_path / "p.json", reordered, tmp_path / "p.parquet"):
        result = import_pairs(engine, path)
        assert (result.added, result.updated, result.unchanged) == (0, 0, 4), path
    # a real change in another layout is still a change
    changed = [dict(r) for r in records]
    changed[2]["profile"] = [{"text": "I changed my mind."}]
    (tmp_path / "c.json").write_text(json.dumps(changed, indent=1))
    with pytest.raises(InputError, match=r"record 3 \(line \d+\): pair id 'p2' already exists"):
        import_pairs(engine, tmp_path / "c.json")
    result = import_pairs(engine, tmp_path / "c.json", update_existing=True)
    assert (result.updated, result.unchanged) == (1, 3)
    assert _stored(engine)["p2"]["profile"] == [{"text": "I changed my mind."}]
    assert import_pairs(engine, tmp_path / "c.json").unchanged == 4  # and now it is the same


def test_databases_holding_canonical_hashes_still_see_unchanged_records(engine, tmp_path):
    """Databases made by earlier versions hold `record_hash` of the canonical encoding."""
    from sqlalchemy import update

    from annotate.studies.pairs_files import record_hash

    records = [pair_record(i) for i in range(3)]
    path = write_jsonl(tmp_path / "p.jsonl", records)
    import_pairs(engine, path)
    with session(engine) as s:
        for record in records:
            s.exec(
                update(Pair)
                .where(Pair.pair_key == record["id"])
                .values(record_hash=record_hash(record))
            )
    again = import_pairs(engine, path)
    assert (again.added, again.unchanged) == (0, 3)
    changed = write_jsonl(tmp_path / "c.jsonl", [pair_record(1, narrative="Other.")])
    with pytest.raises(InputError, match="pair id 'p1' already exists"):
        import_pairs(engine, changed)
    assert import_pairs(engine, changed, update_existing=True).updated == 1
    assert _stored(engine)["p1"]["narrative"] == "Other."


def test_a_database_error_after_written_batches_writes_nothing(engine, tmp_path, monkeypatch):
    import annotate.studies.pair_import as importer

    original = importer._row

    def row(pair):
        values = original(pair)
        if pair.key == f"p{importer.BATCH * 2 + 5}":
            values["question"] = None  # NOT NULL: the database refuses the third batch
        return values

    monkeypatch.setattr(importer, "_row", row)
    path = write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(importer.BATCH * 4)])
    with pytest.raises(Exception, match=r"(?i)not null|null value"):
        import_pairs(engine, path)
    assert count_pairs(engine) == 0


def test_odd_but_valid_json_parses_as_json_loads_does(engine, tmp_path):
    good = pair_record(0)
    lines = [
        # whitespace everywhere, escapes in keys, an empty object value
        ' \t{ "\\u0069d" : "e" , "question":"q","chosen":"a","rejected":"b", "x": {} } \r',
        json.dumps(good),
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert import_pairs(engine, path).added == 2
    stored = _stored(engine)
    assert stored["e"]["extra"] == {"x": {}}
    assert import_pairs(engine, path).unchanged == 2


def test_a_repeated_key_is_refused_naming_the_line_and_key(engine, tmp_path):
    # json.loads keeps the last value silently; a file saying two things is refused
    lines = [
        json.dumps(pair_record(0)),
        '{"id": "d", "question": "q", "chosen": "first", "chosen": "a", "rejected": "b"}',
        json.dumps(pair_record(1, profile=[{"text": "t"}])).replace(
            '"text": "t"', '"text": "t", "text": "u"'
        ),
    ]
    for suffix, text in ((".jsonl", "\n".join(lines)), (".json", "[" + ",\n".join(lines) + "]")):
        path = tmp_path / f"p{suffix}"
        path.write_text(text + "\n", encoding="utf-8")
        with pytest.raises(InputError) as caught:
            import_pairs(engine, path)
        message = str(caught.value)
        assert "the key 'chosen' appears twice in one object" in message
        assert ("line 2:" if suffix == ".jsonl" else "record 2 (line 2)") in message
        assert count_pairs(engine) == 0
    path = tmp_path / "nested.jsonl"
    path.write_text(lines[0] + "\n" + lines[2] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2: .*the key 'text' appears twice"):
        import_pairs(engine, path)


@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=5), children, max_size=3)
        ),
        max_leaves=10,
    ),
    indent=st.sampled_from([None, 0, 2]),
    ascii_only=st.booleans(),
    cut=st.integers(min_value=0, max_value=200),
)
@settings(max_examples=300, deadline=None)
def test_object_walker_agrees_with_json_loads(value, indent, ascii_only, cut):
    from annotate.studies.pairs_files import _loads_object

    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    for candidate in (text, " " + text + " ", text[:cut]):
        parsed = _loads_object(candidate)
        if parsed is None:  # then json.loads refuses it, or it is not an object
            try:  # the walker agrees with the importers' strict decoder (no NaN)
                loaded = strict_input.loads(candidate)
            except strict_input.FAILURES:
                continue
            assert not isinstance(loaded, dict)
            continue
        values, spans, end = parsed
        if candidate[end:].strip() == "":
            assert json.dumps(values) == json.dumps(json.loads(candidate))
        for key, (start, stop) in spans.items():
            assert json.dumps(json.loads(candidate[start:stop])) == json.dumps(values[key])


def test_a_lone_surrogate_escape_is_refused_and_nothing_written(engine, tmp_path):
    """It cannot be stored as UTF-8 text; an escaped surrogate pair (an emoji) is fine."""
    path = tmp_path / "s.jsonl"
    lone = json.dumps(pair_record(1)).replace("I hike a lot.", "I hike \\ud800 a lot.")
    emoji = [{"text": "😀"}]
    pair = json.dumps(pair_record(2, profile=emoji))  # ASCII-escaped: \\ud83d\\ude00
    path.write_text(json.dumps(pair_record(0)) + "\n" + lone + "\n" + pair + "\n")
    with pytest.raises(InputError, match=r"line 2: .*surrogates not allowed"):
        import_pairs(engine, path)
    assert count_pairs(engine) == 0
    path.write_text(json.dumps(pair_record(0)) + "\n" + pair + "\n")
    assert import_pairs(engine, path).added == 2
    assert _stored(engine)["p2"]["profile"] == emoji
