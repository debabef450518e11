"""Small files that would take gigabytes, and import errors as readable sentences.

Memory is measured in a child process running `annotate import-pairs` (its own peak RSS), against
the same command on a small valid file; the hostile files are built small here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.files import parquet_limits
from analysis.files.annotations_table import MAX_LINE_BYTES, read_table, write_table
from annotate.cli import main
from annotate.engine import get_engine
from annotate.errors import InputError
from annotate.studies.pair_import import import_pairs
from tests.factories import pair_record, write_jsonl
from tests.report_fixtures import frame, row

MB = 1024 * 1024

PEAK_SCRIPT = """
import resource, sys
from annotate.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)
"""


def peak_mb(*argv: str) -> tuple[int, str]:
    """(peak RSS in MB, stderr without the last line) of `annotate ARGV` in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, *argv], capture_output=True, text=True, timeout=300
    )
    lines = done.stderr.strip().splitlines()
    return int(lines[-1]), "\n".join(lines[:-1])


def baseline_mb(tmp_path) -> int:
    small = write_jsonl(tmp_path / "small.jsonl", [pair_record(i) for i in range(3)])
    peak, _ = peak_mb("--db", f"sqlite:///{tmp_path / 'base.db'}", "import-pairs", str(small))
    return peak


def many_posts_parquet(path, posts: int) -> None:
    """One record whose profile repeats one post `posts` times: a few KB on disk."""
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(posts, dtype=np.int32)), ["I hike."])
    post = pa.StructArray.from_arrays([text], names=["text"])
    profile = pa.ListArray.from_arrays(pa.array([0, posts], type=pa.int32()), post)
    table = pa.table(
        {
            "id": ["p1"],
            "question": ["q"],
            "chosen": ["a"],
            "rejected": ["b"],
            "profile": profile,
        }
    )
    pq.write_table(table, path, compression="zstd")


def test_a_tiny_parquet_file_that_decodes_to_gigabytes_is_refused_in_little_memory(tmp_path):
    path = tmp_path / "posts.parquet"
    many_posts_parquet(path, 4_000_000)  # before: to_pylist built four million dicts
    assert path.stat().st_size < 64 * 1024
    base = baseline_mb(tmp_path)
    peak, err = peak_mb("--db", f"sqlite:///{tmp_path / 'x.db'}", "import-pairs", str(path))
    assert "row 1: record is" in err and "over the limit of 8,388,608 bytes" in err
    assert "Traceback" not in err
    assert peak - base < 150, f"peak {peak} MB against {base} MB for a small file"


def test_parquet_layout_limits_are_checked_before_reading(tmp_path, monkeypatch, db_url):
    engine = get_engine(db_url)
    path = tmp_path / "posts.parquet"
    many_posts_parquet(path, 5_000)
    monkeypatch.setattr(parquet_limits, "MAX_CHUNK_VALUES", 1_000)
    with pytest.raises(
        InputError,
        match=r"rows 1 to 1: column 'profile.list.element.text' "
        r"holds 5,000 values, over the limit of 1,000 in one row group",
    ):
        import_pairs(engine, path)

    monkeypatch.setattr(parquet_limits, "MAX_PAGE_BYTES", 1 * MB)
    big = pa.table(
        {
            "id": [str(i) for i in range(3)],
            "question": ["q" * (2 * MB)] * 3,  # compresses to almost nothing
            "chosen": ["a"] * 3,
            "rejected": ["b"] * 3,
        }
    )
    pq.write_table(big, tmp_path / "big.parquet", compression="zstd", row_group_size=2)
    with pytest.raises(InputError, match=r"rows 1 to 2: a page of column 'question' decodes to "):
        import_pairs(engine, tmp_path / "big.parquet")


def test_parquet_rows_of_a_valid_file_still_import(tmp_path, db_url):
    records = [pair_record(i, profile=[{"text": "same post"}] * 50) for i in range(40)]
    path = tmp_path / "ok.parquet"
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=7)
    assert import_pairs(get_engine(db_url), path).added == 40


def test_a_huge_line_without_newline_is_read_in_bounded_memory(tmp_path):
    path = tmp_path / "one-line.jsonl"
    with path.open("wb") as handle:
        handle.write(json.dumps(pair_record(0)).encode() + b"\n")
        for _ in range(160):  # 160 MB, no newline: before, read and decoded whole
            handle.write(b"x" * MB)
    base = baseline_mb(tmp_path)
    peak, err = peak_mb("--db", f"sqlite:///{tmp_path / 'x.db'}", "import-pairs", str(path))
    assert "line 2: record is 167,772,160 bytes, over the limit" in err
    assert peak - base < 60, f"peak {peak} MB against {base} MB for a small file"

    annotations = tmp_path / "a.jsonl"
    with annotations.open("wb") as handle:
        handle.write(b"x" * (MAX_LINE_BYTES + 10))
    with pytest.raises(InputError, match=r"line 1: 1,048,586 bytes, over the limit"):
        read_table(annotations)
    as_csv = tmp_path / "a.csv"
    as_csv.write_bytes(b"pair_id,annotator,preference,comment\np1,ann,chosen," + b"x" * MB * 2)
    with pytest.raises(InputError, match=r"line 2: 2,097,166 bytes, over the limit"):
        read_table(as_csv)


@pytest.mark.parametrize("chunk_bytes", [1, 3, 7, 64])
def test_the_quick_check_for_long_lines_agrees_with_reading_line_by_line(chunk_bytes):
    """strict_input.lines_within (chunks) says a file is fine exactly when bounded_lines (one
    line at a time) finds no line over the limit, whatever the chunks cut."""
    import io
    import random

    from analysis.files import strict_input

    generator = random.Random(chunk_bytes)
    limit = 10
    for _ in range(400):
        lines = [
            b"x" * generator.choice([0, 1, 9, 10, 11, 25]) for _ in range(generator.randint(0, 5))
        ]
        data = b"\n".join(lines) + (b"\n" if generator.random() < 0.5 else b"")
        by_line = all(
            line is not None for _, line, _ in strict_input.bounded_lines(io.BytesIO(data), limit)
        )
        quick = strict_input.lines_within(io.BytesIO(data), limit, chunk_bytes=chunk_bytes)
        assert quick == by_line, data


# --- import errors: one sentence naming line and field, the same on both databases ------------


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def assert_readable(code: int, err: str, *expected: str) -> None:
    assert code != 0
    for text in expected:
        assert text in err, err
    for raw in ("Traceback", "sqlalche.me", "psycopg", "RecursionError", "[parameters"):
        assert raw not in err, err


def test_pairs_import_errors_are_sentences(db_url, tmp_path, capsys):
    base = '{"id": "1", "question": "q", "chosen": "c", "rejected": "r"'
    cases = {
        "nan.jsonl": (base + ', "score": NaN}', "line 1: not valid JSON: NaN is not a JSON value"),
        "deep.jsonl": (
            base + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "line 1: values are nested too deeply",
        ),
        "dup.jsonl": (base + ', "id": "2"}', "line 1: not valid JSON: the key 'id' appears twice"),
        "ctrl.jsonl": (
            base.replace('"q"', '"q\x01"') + "}",
            "line 1: not valid JSON: invalid control character at column 27",
        ),
        "deep.json": (
            "[" + base + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}]",
            "record 1 (line 1): values are nested too deeply",
        ),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text + "\n", encoding="utf-8")
        code, err = run_cli(capsys, "--db", db_url, "import-pairs", str(tmp_path / name))
        assert_readable(code, err, expected)
    # a NaN in a Parquet float reaches the database as JSON: refused before, by name
    pq.write_table(
        pa.table(
            {
                "id": ["1"],
                "question": ["q"],
                "chosen": ["c"],
                "rejected": ["r"],
                "score": [float("nan")],
            }
        ),
        tmp_path / "nan.parquet",
    )
    code, err = run_cli(capsys, "--db", db_url, "import-pairs", str(tmp_path / "nan.parquet"))
    assert_readable(code, err, "row 1: field 'score' holds NaN or infinity")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    code, err = run_cli(capsys, "--db", db_url, "import-pairs", str(folder))
    assert_readable(code, err, "is a folder, not a file")


def test_annotations_import_errors_are_sentences(db_url, tmp_path, capsys):
    pairs = write_jsonl(tmp_path / "p.jsonl", [pair_record(1)])
    assert main(["--db", db_url, "import-pairs", str(pairs)]) == 0
    good = row("p1", "ann", "chosen", chosen=(4, 4, 4), rejected=(3, 3, 3))
    write_table(frame([good]), tmp_path / "ok.jsonl")
    line = (tmp_path / "ok.jsonl").read_text().strip()
    nan_line = line.replace('"correctness_chosen": 4', '"correctness_chosen": NaN')
    assert nan_line != line
    cases = {
        # NaN rating: CSV refused it, JSONL stored it as "not rated"; both refuse now
        "nan.jsonl": (nan_line, "line 1: not valid JSON: NaN is not a JSON value"),
        "dup.jsonl": (
            line[:-1] + ', "comment": "x", "comment": "y"}',
            "the key 'comment' appears twice",
        ),
        "deep.jsonl": ("[" * 100_000 + "]" * 100_000, "line 1: values are nested too deeply"),
        "dup.csv": (
            "pair_id,annotator,preference,comment,comment\np1,ann,chosen,a,b",
            "the column 'comment' appears more than once",
        ),
        "late.jsonl": (
            line.replace('"submitted_at": null', '"submitted_at": "9999-12-31T23:59:59-23:59"'),
            "column 'submitted_at': outside the years 1 to 9999 once converted to UTC",
        ),
        "surrogate.jsonl": (
            line.replace('"comment": null', '"comment": "\\ud800"'),
            "line 1: a lone UTF-16 surrogate escape",
        ),
        "nan.csv": (
            "pair_id,annotator,preference,correctness_chosen\np1,ann,chosen,NaN",
            "row 1, column 'correctness_chosen'",
        ),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text + "\n", encoding="utf-8")
        code, err = run_cli(capsys, "--db", db_url, "import-annotations", str(tmp_path / name))
        assert_readable(code, err, expected)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    code, err = run_cli(capsys, "--db", db_url, "import-annotations", str(folder))
    assert_readable(code, err, "is a folder, not a file")


def test_a_json_array_with_an_endless_record_is_refused_in_bounded_memory(tmp_path):
    path = tmp_path / "endless.json"
    with path.open("wb") as handle:
        handle.write(b'[{"id": "1", "question": "')
        for _ in range(120):  # 120 MB inside one string, never closed
            handle.write(b"x" * MB)
    base = baseline_mb(tmp_path)
    peak, err = peak_mb("--db", f"sqlite:///{tmp_path / 'x.db'}", "import-pairs", str(path))
    assert "record 1 (line 1) is over the limit of 8,388,608 bytes" in err, err
    assert peak - base < 80, f"peak {peak} MB against {base} MB for a small file"


def repeated_text_parquet(path, rows: int, chars: int) -> None:
    """`rows` valid pairs whose texts all name one dictionary entry of `chars` characters:
    a few KB on disk, rows x 3 x chars bytes decoded."""
    long = "x" * chars

    def one_text(prefix: str) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(rows, dtype=np.int32)), [prefix + long]
        )

    table = pa.table(
        {
            "id": [f"p{i}" for i in range(rows)],
            "question": one_text("q"),
            "chosen": one_text("c"),
            "rejected": one_text("r"),
        }
    )
    pq.write_table(table, path, compression="zstd")


def test_an_import_decodes_at_most_its_bound_and_writes_nothing_beyond(
    db_url, tmp_path, capsys, monkeypatch
):
    # N12: a 5 KB file whose rows repeat one dictionary text became a 604 MB database. The
    # bound is lowered here so that the test decodes megabytes, not the real 256 MiB.
    from annotate.studies import pairs_files

    monkeypatch.setattr(pairs_files, "MIN_DECODED_LIMIT", 4 * MB, raising=False)
    path = tmp_path / "repeated.parquet"
    repeated_text_parquet(path, rows=200, chars=150_000)  # 90 MB decoded
    assert path.stat().st_size < 16 * 1024
    code, err = run_cli(capsys, "--db", db_url, "import-pairs", str(path))
    assert_readable(code, err, f"decodes to more than {4 * MB:,} bytes", "limit per import")
    assert len(err.strip().splitlines()) <= 2, err  # the file's name and one sentence
    engine = get_engine(db_url)
    from sqlmodel import func, select

    from annotate.store.db import read_session
    from annotate.store.models import Pair

    with read_session(engine) as s:
        assert s.exec(select(func.count()).select_from(Pair)).one() == 0  # nothing half-written
    # a file within the bound still imports
    small = tmp_path / "small.parquet"
    repeated_text_parquet(small, rows=5, chars=150_000)  # 2.25 MB decoded
    assert main(["--db", db_url, "import-pairs", str(small)]) == 0


def _parquet_with_a_struct_for_its_encoding(path):
    """A valid file whose first data page header then holds a struct where the data page's
    encoding (an integer) belongs: PLAIN's field `15 00` becomes `1c 00`, an empty struct
    of the same length, so every other offset in the file still holds."""
    pq.write_table(
        pa.table({"a": ["x" * 5, "y" * 5]}), path, use_dictionary=False, compression="none"
    )
    start = pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    header = bytes(data[start : start + 32])
    nested = header.index(b"\x2c")  # field 5 (data_page_header), a struct
    encoding = nested + 1 + header[nested + 1 :].index(b"\x15\x00")
    assert header[nested + 1] == 0x15  # num_values comes first, then the encoding
    data[start + encoding] = 0x1C
    path.write_bytes(bytes(data))


def test_a_page_header_with_a_malformed_encoding_is_a_sentence_not_a_type_error(tmp_path, db_url):
    path = tmp_path / "broken.parquet"
    _parquet_with_a_struct_for_its_encoding(path)
    with path.open("rb") as handle, pytest.raises(ValueError, match="malformed"):
        parquet_limits.inspect(handle, pq.ParquetFile(path).metadata)
    with pytest.raises(InputError, match="malformed"):
        read_table(path)
    with pytest.raises(InputError, match="malformed"):
        import_pairs(get_engine(db_url), path)
