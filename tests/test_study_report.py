"""The report's data from the database: one snapshot, pair content only when asked for."""

from __future__ import annotations

import pytest
from sqlmodel import select

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_answer
from annotate.results import frames, study_report
from annotate.store.db import session
from annotate.store.models import Pair
from annotate.studies.pair_import import import_pairs
from tests.factories import make_study, pair_record, write_jsonl


def _answer(engine, annotator_id, pair_key, study_id):
    with session(engine) as s:
        pair_id = s.exec(
            select(Pair.id).where(Pair.study_id == study_id, Pair.pair_key == pair_key)
        ).one()
    submit_answer(
        engine,
        annotator_id=annotator_id,
        pair_id=pair_id,
        answer=Answer(preference="chosen", chosen_position="A", main_reason="both"),
    )


def test_a_pair_imported_and_answered_while_the_report_reads_is_in_all_of_its_data_or_none(
    db_url, tmp_path, monkeypatch
):
    """Between the report's reads of the pairs and of the annotations, another process imports
    a pair and answers it. Read in separate transactions, the annotations named a pair the
    pairs did not hold and validation refused the study's own data."""
    engine = get_engine(db_url)
    study_id, people = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    ((annotator, _),) = people
    _answer(engine, annotator, "p0", study_id)
    real_annotations_frame = frames.annotations_frame

    def meanwhile(*args, **kwargs):
        late = write_jsonl(tmp_path / "late.jsonl", [pair_record("late")])
        import_pairs(engine, late, study_name="default")
        _answer(engine, annotator, "plate", study_id)
        monkeypatch.setattr(frames, "annotations_frame", real_annotations_frame)
        return real_annotations_frame(*args, **kwargs)

    monkeypatch.setattr(frames, "annotations_frame", meanwhile)
    data = study_report.study_tables(engine, study="default")
    # the snapshot began before the late pair: neither it nor its answer is in the data
    assert sorted(data.pairs["pair_id"]) == ["p0", "p1", "p2"]
    assert list(data.annotations["pair_id"]) == ["p0"]
    # the next report sees both
    data = study_report.study_tables(engine, study="default")
    assert sorted(data.pairs["pair_id"]) == ["p0", "p1", "p2", "plate"]
    assert sorted(data.annotations["pair_id"]) == ["p0", "plate"]


def test_pair_content_is_read_only_for_the_valid_pairs_export(db_url, tmp_path):
    engine = get_engine(db_url)
    make_study(engine, tmp_path, n_pairs=2)
    light = study_report.study_tables(engine, study="default")
    assert list(light.pairs.columns) == [
        "pair_id",
        "pair_version",
        "category",
        "is_gold",
        "n_aspects",
    ]
    full = study_report.study_tables(engine, study="default", content=True)
    assert list(full.pairs.columns) == [
        "pair_id",
        "pair_version",
        "category",
        "is_gold",
        "n_aspects",
        "record",
    ]
    assert full.pairs["record"][0] == pair_record(0)


def test_report_files_hold_the_valid_pairs_with_every_original_field(db_url, tmp_path):
    import json

    engine = get_engine(db_url)
    study_id, people = make_study(engine, tmp_path, n_pairs=2, annotators=2, overlap_target=2)
    for annotator, _ in people:
        for key in ("p0", "p1"):
            _answer(engine, annotator, key, study_id)
    report, _, pairs = study_report.build_study_report(engine, study="default", bootstrap=0)
    assert "record" not in pairs
    files = study_report.report_files(report, engine=engine, study="default")
    assert set(files) == {*study_report.REPORT_FILES, "valid_pairs.jsonl"}
    valid = {p["pair_id"] for p in report["pairs"] if p["verdict"] == "valid"}
    written = [json.loads(line) for line in files["valid_pairs.jsonl"].decode().splitlines()]
    assert [r["id"] for r in written] == sorted(valid) and all(
        r == pair_record(r["id"][1:]) for r in written
    )


@pytest.mark.parametrize("content", [False, True])
def test_the_light_and_full_pairs_frames_agree(db_url, tmp_path, content):
    engine = get_engine(db_url)
    make_study(engine, tmp_path, n_pairs=3)
    frame = frames.pairs_frame(engine, study="default", content=content)
    assert list(frame["pair_id"]) == ["p0", "p1", "p2"]
    assert frame["is_gold"].dtype == bool
    assert list(frame["n_aspects"]) == [1, 1, 1]  # the aspect check's entries per answer


def test_report_from_the_database_exports_the_valid_pairs_as_imported(tmp_path):
    import json

    from annotate.cli import main

    url = f"sqlite:///{tmp_path / 'a.db'}"
    engine = get_engine(url)
    study_id, people = make_study(engine, tmp_path, n_pairs=3, annotators=2)
    # the same pairs again, with fields the app does not know: kept and written back
    records = [pair_record(n, source={"split": "test", "n": n}) for n in range(3)]
    write_jsonl(tmp_path / "p.jsonl", records)
    assert main(["--db", url, "import-pairs", str(tmp_path / "p.jsonl"), "--update"]) == 0
    for annotator, _ in people:
        for key in ("p0", "p2"):
            _answer(engine, annotator, key, study_id)
    out = tmp_path / "valid.jsonl"
    argv = ["--db", url, "report", "--out", str(tmp_path / "r"), "--bootstrap", "0"]
    assert main([*argv, "--export-valid", str(out)]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    valid = sorted(p["pair_id"] for p in report["pairs"] if p["verdict"] == "valid")
    assert valid == ["p0", "p2"]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written == [records[0], records[2]]  # every original field, extra ones included
