"""Hostile and broken input (hypothesis): thousands of generated pairs and annotations files.

Every import ends in exactly one of two ways: a UserError/InputError (one clear message, the
database unchanged to the row) or a correct import (exactly the file's records, nothing else).
Never another exception, never a partial write.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func
from sqlmodel import col, select

from annotate import cli
from annotate.engine import get_engine
from annotate.errors import InputError, UserError
from annotate.store.db import session
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study
from annotate.studies.pair_import import import_pairs
from annotate.studies.pairs_files import CORE_FIELDS, MAX_RECORD_BYTES, MAX_TEXT_CHARS
from tests.scale_helpers import make_study

# Example counts: over a thousand in all, most on SQLite (same code, PostgreSQL round trips are
# slower). Every fresh clone draws new examples (.hypothesis/ is not committed), so runs add
# up; ANNOTATE_FUZZ_SCALE=10 for one deep run (the SQLite pairs fuzz was the suite's costliest
# test at 1,000 examples: 28 s of CPU of its ~18 min).
SCALE = float(os.environ.get("ANNOTATE_FUZZ_SCALE", "1"))
PAIRS_EXAMPLES = {"sqlite": int(400 * SCALE), "postgresql": int(150 * SCALE)}
BYTES_EXAMPLES = {"sqlite": int(300 * SCALE), "postgresql": int(100 * SCALE)}
ANNOTATION_EXAMPLES = {"sqlite": int(150 * SCALE), "postgresql": int(75 * SCALE)}
# PostgreSQL text cannot hold U+0000: the importers refuse it on every backend.
NUL = "\x00"

FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
_names = itertools.count()

# --- what the database holds ---------------------------------------------------------------


def _counts(engine) -> dict[str, int]:
    models = (Study, Pair, Annotator, Assignment, Annotation)
    with session(engine) as s:
        row = s.exec(
            select(*(select(func.count()).select_from(m).scalar_subquery() for m in models))
        ).one()
    return {m.__name__: n for m, n in zip(models, row, strict=True)}


# --- pairs files ---------------------------------------------------------------------------

# text that is sometimes awkward: control characters, NUL, RTL marks, emoji, quotes, newlines
awkward_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\x00", "\u202e", "\n", '"', "\\", "😀", "\ufeff", "$", "<", "\r"]),
    ),
    max_size=40,
)
nonblank_text = awkward_text.filter(lambda s: s.strip())
pair_ids = st.one_of(
    st.sampled_from(["a", "b", "c", " a ", "1", "2"]),
    st.integers(min_value=0, max_value=3),
    nonblank_text,
)


@st.composite
def valid_record(draw) -> dict:
    text = draw(nonblank_text)
    record = {
        "id": draw(pair_ids),
        "question": draw(nonblank_text),
        "chosen": "C:" + text,
        "rejected": "R:" + text,
    }
    if draw(st.booleans()):
        record["profile"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"text": awkward_text},
                    optional={
                        "id": st.one_of(st.text(max_size=5), st.integers()),
                        "category": awkward_text,
                    },
                ),
                max_size=3,
            )
        )
    if draw(st.booleans()):
        record["rubric_aspects"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"aspect": nonblank_text},
                    optional={"evidence": awkward_text, "reason": awkward_text},
                ),
                max_size=3,
            )
        )
    for name in ("narrative", "category"):
        if draw(st.booleans()):
            record[name] = draw(awkward_text)
    if draw(st.booleans()):
        record[draw(st.sampled_from(["source", "model", "x-extra"]))] = draw(
            st.one_of(st.integers(), awkward_text, st.lists(st.integers(), max_size=3))
        )
    return record


WRONG_VALUES = [None, 5, 1.5, True, [], {}, [1], {"a": 1}, "", "   "]
HUGE = "x" * (MAX_TEXT_CHARS + 1)


@st.composite
def invalid_record(draw) -> dict:
    """A record that no import may accept."""
    record = draw(valid_record())
    how = draw(st.sampled_from(["missing", "wrong_type", "huge", "same_responses", "bad_list"]))
    if how == "missing":
        del record[draw(st.sampled_from(["id", "question", "chosen", "rejected"]))]
    elif how == "wrong_type":
        field = draw(st.sampled_from(["id", "question", "chosen", "rejected"]))
        wrong = [v for v in WRONG_VALUES if not (field == "id" and v in (5, True))]
        record[field] = draw(st.sampled_from(wrong))
    elif how == "huge":
        record[
            draw(st.sampled_from(["question", "chosen", "rejected", "narrative", "category"]))
        ] = HUGE
    elif how == "same_responses":
        record["rejected"] = record["chosen"]
    else:
        field = draw(st.sampled_from(["profile", "rubric_aspects"]))
        record[field] = draw(st.sampled_from(["text", 5, [5], [{}], [{"aspect": ""}], [None]]))
    return record


def _line(record) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode()


@st.composite
def pairs_line(draw) -> tuple[str, object, bytes]:
    """(kind, record or None, bytes of one JSONL line without the newline)."""
    kind = draw(
        st.sampled_from(
            ["valid", "valid", "valid", "invalid", "truncated", "not_object", "bad_utf8", "blank"]
        )
    )
    if kind == "valid":
        record = draw(valid_record())
        return kind, record, _line(record)
    if kind == "invalid":
        return kind, None, _line(draw(invalid_record()))
    if kind == "truncated":
        whole = _line(draw(valid_record()))
        return kind, None, whole[: draw(st.integers(1, len(whole) - 1))]
    if kind == "not_object":
        value = draw(st.sampled_from([5, "text", [1, 2], None, True, 1.5]))
        return kind, None, json.dumps(value).encode()
    if kind == "bad_utf8":
        return kind, None, b'{"id": "\xff\xfe"}'
    return kind, None, draw(st.sampled_from([b"", b"   ", b"\t"]))


def _expected_keys(lines) -> list[str] | None:
    """The pair ids a correct import stores, or None when the file must be refused."""
    keys = []
    for kind, record, _ in lines:
        if kind == "blank":
            continue
        if kind != "valid":
            return None
        stored = ("id", "question", "narrative", "category", "chosen", "rejected")
        if any(NUL in str(record.get(field, "")) for field in stored):
            return None
        keys.append(str(record["id"]).strip())
    if not keys or len(set(keys)) != len(keys):
        return None
    return keys


def _write_pairs(tmp_path: Path, lines, as_array: bool) -> Path:
    path = tmp_path / f"fuzz-{next(_names)}.{'json' if as_array else 'jsonl'}"
    if as_array:
        body = b"[" + b",\n".join(raw for kind, _, raw in lines if kind != "blank") + b"]"
    else:
        body = b"\n".join(raw for _, _, raw in lines) + b"\n"
    path.write_bytes(body)
    return path


def _stored_as_read(record: dict) -> dict:
    """What a valid record must read back as: the JSON columns equal to the file's values."""
    return {
        "question": record["question"],
        "profile": record.get("profile") or [],
        "rubric_aspects": record.get("rubric_aspects") or [],
        "narrative": record.get("narrative") or "",
        "category": record.get("category") or "",
        "chosen": record["chosen"],
        "rejected": record["rejected"],
        "extra": {k: v for k, v in record.items() if k not in CORE_FIELDS},
    }


def _check_pairs_import(
    engine, path: Path, expected: list[str] | None, records: list[dict] | None = None
) -> None:
    study = f"fuzz-{next(_names)}"
    before = _counts(engine)
    try:
        result = import_pairs(engine, path, study_name=study)
    except UserError as exc:  # InputError is a UserError
        assert str(exc).strip(), "an error must say something"
        assert _counts(engine) == before, "a refused import changed the database"
        assert expected is None, f"a valid file was refused: {exc}"
        return
    assert expected is not None, "an invalid file was imported"
    assert result.added == len(expected)
    with session(engine) as s:
        stored = s.exec(
            select(Pair.pair_key)
            .join(Study, col(Study.id) == Pair.study_id)
            .where(Study.name == study)
            .order_by(col(Pair.position))
        ).all()
    assert stored == expected
    if records is not None:  # the stored values read back equal to the file's (as written)
        with session(engine) as s:
            rows = s.exec(
                select(Pair)
                .join(Study, col(Study.id) == Pair.study_id)
                .where(Study.name == study)
                .order_by(col(Pair.position))
            ).all()
            got = [{k: getattr(row, k) for k in _stored_as_read(records[0])} for row in rows]
        assert got == [_stored_as_read(r) for r in records]


@pytest.mark.slow
def test_fuzz_pairs_files(db_url, db_backend, tmp_path):
    engine = get_engine(db_url)

    @settings(FUZZ, max_examples=PAIRS_EXAMPLES[db_backend])
    @given(lines=st.lists(pairs_line(), min_size=0, max_size=8), as_array=st.booleans())
    def check(lines, as_array):
        expected = _expected_keys(lines)
        if as_array and any(kind in ("truncated", "bad_utf8") for kind, _, _ in lines):
            expected = None
        path = _write_pairs(tmp_path, lines, as_array)
        try:
            records = [r for kind, r, _ in lines if kind == "valid"]
            _check_pairs_import(engine, path, expected, records if expected else None)
        finally:
            path.unlink()

    check()


@pytest.mark.slow
def test_fuzz_random_bytes_as_pairs_files(db_url, db_backend, tmp_path):
    engine = get_engine(db_url)

    @settings(FUZZ, max_examples=BYTES_EXAMPLES[db_backend])
    @given(
        data=st.one_of(
            st.binary(max_size=300),
            st.binary(max_size=40).map(lambda b: b"[" + b),
            st.binary(max_size=40).map(lambda b: b'{"id": "1", "question": ' + b),
        ),
        suffix=st.sampled_from([".jsonl", ".json", ".parquet"]),
    )
    def check(data, suffix):
        path = tmp_path / f"bytes-{next(_names)}{suffix}"
        path.write_bytes(data)
        before = _counts(engine)
        try:
            import_pairs(engine, path, study_name=f"bytes-{next(_names)}")
        except UserError:
            assert _counts(engine) == before
        else:  # random bytes that happen to be a valid pairs file: fine, if they really are
            assert _counts(engine)["Pair"] > before["Pair"]
        finally:
            path.unlink()

    check()


def test_oversized_text_and_records_are_refused_with_the_limit_named(db_url, tmp_path):
    engine = get_engine(db_url)
    good = {"id": "ok", "question": "q", "chosen": "a", "rejected": "b"}
    long_text = tmp_path / "long.jsonl"
    long_text.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "id": "long", "chosen": HUGE}) + "\n"
    )
    before = _counts(engine)
    with pytest.raises(InputError) as caught:
        import_pairs(engine, long_text)
    assert f"{MAX_TEXT_CHARS:,} characters" in str(caught.value)
    assert "line 2" in str(caught.value)
    big_record = tmp_path / "big.jsonl"
    with big_record.open("w") as handle:
        handle.write(json.dumps(good) + "\n")
        posts = [{"text": "y" * 100_000} for _ in range(MAX_RECORD_BYTES // 100_000 + 1)]
        handle.write(json.dumps({**good, "id": "big", "profile": posts}) + "\n")
    with pytest.raises(InputError) as caught:
        import_pairs(engine, big_record)
    assert f"{MAX_RECORD_BYTES:,} bytes" in str(caught.value)
    assert "line 2" in str(caught.value)
    assert _counts(engine) == before


# --- annotations files ---------------------------------------------------------------------

ANNOTATION_PAIRS = [f"p{i}" for i in range(4)]


@st.composite
def annotation_row(draw) -> tuple[bool, dict]:
    """(valid?, row in the section 3 layout)."""
    row = {
        "pair_id": draw(st.sampled_from(ANNOTATION_PAIRS)),
        "annotator": draw(st.sampled_from(["ann-1", "ann-2", "new person", "Zoë"])),
        "preference": draw(st.sampled_from(["chosen", "rejected", "tie"])),
    }
    optional = {
        "chosen_position": st.sampled_from(["A", "B", ""]),
        "correctness_chosen": st.one_of(st.integers(1, 5), st.just("")),
        "helpfulness_rejected": st.integers(1, 5),
        "main_reason": st.sampled_from(["personal_fit", "general_quality", "both", "unsure", ""]),
        "comment": st.one_of(awkward_text, st.just("")),
        "seconds": st.floats(0, 10_000, allow_nan=False),
        "submitted_at": st.sampled_from(["2026-11-01T10:00:00+00:00", "2026-11-02T08:30:00Z", ""]),
    }
    for column, strategy in optional.items():
        if draw(st.booleans()):
            row[column] = draw(strategy)
    if draw(st.integers(0, 3)) > 0:
        return True, row
    column, bad = draw(
        st.sampled_from(
            [
                ("preference", "maybe"),
                ("preference", ""),
                ("preference", 3),
                ("pair_id", "no-such-pair"),
                ("pair_id", ""),
                ("annotator", ""),
                ("chosen_position", "C"),
                ("correctness_chosen", 0),
                ("correctness_chosen", 9),
                ("correctness_chosen", 2.5),
                ("correctness_chosen", "four"),
                ("main_reason", "vibes"),
                ("submitted_at", "yesterday"),
                ("seconds", "slow"),
            ]
        )
    )
    row[column] = bad
    return False, row


def _annotation_file(tmp_path: Path, rows: list[dict], suffix: str, garbage: bytes | None):
    path = tmp_path / f"ann-{next(_names)}{suffix}"
    if suffix == ".jsonl":
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    else:
        import csv

        columns = sorted({c for r in rows for c in r}) or ["pair_id"]
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        body = text.getvalue().encode()
    if garbage is not None:
        body = body + garbage
    path.write_bytes(body)
    return path


def _import_annotations(path: Path, study: str, url: str) -> None:
    """The real command, in this process; --debug lets every exception through unchanged."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["import-annotations", str(path), "--study", study, "--db", url, "--debug"])
    assert code == 0


@pytest.mark.slow
def test_fuzz_annotation_files(db_url, db_backend, tmp_path):
    engine = get_engine(db_url)
    make_study(
        engine, tmp_path, n_pairs=len(ANNOTATION_PAIRS), n_annotators=2, overlap=3, name="ann"
    )
    with session(engine) as s:  # the two study annotators are "ann-1" and "ann-2"
        for i, annotator in enumerate(
            s.exec(select(Annotator).where(Annotator.name.like("ann-annotator-%"))).all()
        ):
            annotator.name = f"ann-{i + 1}"
            s.add(annotator)

    @settings(FUZZ, max_examples=ANNOTATION_EXAMPLES[db_backend])
    @given(
        rows=st.lists(annotation_row(), max_size=8),
        suffix=st.sampled_from([".jsonl", ".csv"]),
        garbage=st.one_of(
            st.none(),
            st.none(),
            st.none(),
            st.binary(min_size=1, max_size=20),
            st.just(b'{"pair_id": "p1", "annot'),
        ),
    )
    def check(rows, suffix, garbage):
        plain = [r for _, r in rows]
        keys = [(str(r["pair_id"]), str(r["annotator"])) for r in plain]
        has_nul = any(isinstance(v, str) and NUL in v for r in plain for v in r.values())
        must_fail = not all(ok for ok, _ in rows) or len(set(keys)) != len(keys) or has_nul
        path = _annotation_file(tmp_path, plain, suffix, garbage)
        before = _counts(engine)
        try:
            _import_annotations(path, "ann", db_url)
        except UserError as exc:
            assert str(exc).strip()
            assert _counts(engine) == before, "a refused import changed the database"
            if garbage is None and rows:
                assert must_fail, f"a valid annotations file was refused: {exc}"
            return
        finally:
            path.unlink()
        assert not must_fail, "an invalid annotations file was imported"
        with session(engine) as s:
            stored = dict(
                s.exec(
                    select(Pair.pair_key, Annotation.preference)
                    .join(Pair, Pair.id == Annotation.pair_id)
                    .join(Annotator, Annotator.id == Annotation.annotator_id)
                    .where(Annotator.name == "Zoë")
                ).all()
            )
        for row in plain:  # spot check: a replaced row holds the file's value
            if row["annotator"] == "Zoë":
                assert stored[row["pair_id"]] == row["preference"]

    check()


# --- the command line, for a sample -------------------------------------------------------


def _annotate(*args, cwd) -> subprocess.CompletedProcess:
    """The real `annotate` command, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "annotate.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_command_line_sample_of_broken_files(tmp_path):
    """A handful of broken files through the real `annotate` processes: exit 2, one message,
    no traceback, database unchanged."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    engine = get_engine(url)
    make_study(engine, tmp_path, n_pairs=2, n_annotators=1, overlap=3, name="cli")
    before = _counts(engine)
    good = json.dumps({"id": "x", "question": "q", "chosen": "a", "rejected": "b"})
    cases = {
        "random.jsonl": os.urandom(200),
        "huge.jsonl": (
            json.dumps({"id": "h", "question": HUGE, "chosen": "a", "rejected": "b"}) + "\n"
        ).encode(),
        "mixed.jsonl": (good + "\n{not json}\n" + good + "\n").encode(),
    }
    for name, body in cases.items():
        path = tmp_path / name
        path.write_bytes(body)
        done = _annotate("import-pairs", path, "--study", "cli", "--db", url, cwd=tmp_path)
        assert done.returncode == 2, (name, done.stderr)
        assert "Traceback" not in done.stderr and "unexpected error" not in done.stderr, name
        assert "nothing was written" in done.stderr, (name, done.stderr)
    bad = tmp_path / "bad.csv"
    bad.write_text("pair_id,annotator,preference\np0,someone,maybe\nnope,x,chosen\n")
    done = _annotate("import-annotations", bad, "--study", "cli", "--db", url, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "row 1" in done.stderr and "row 2" in done.stderr
    assert _counts(engine) == before
