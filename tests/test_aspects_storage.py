"""Aspect scores in storage (issue 15), on SQLite and PostgreSQL: every submit path stores them
exactly, the answer is upserted whole, export writes them in every format and
import-annotations reads them back; older answers without them keep working."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from analysis.files.annotations_table import read_table
from analysis.vocabulary import COLUMNS
from annotate.cli import main
from annotate.engine import get_engine
from annotate.labelling.answers import Answer, FormState, to_answer
from annotate.labelling.step import submit_and_next, submit_answer
from annotate.queue.assignment import next_assignment
from annotate.results.frames import annotations_frame
from annotate.store.db import session
from annotate.store.models import Annotation, Study
from tests.factories import fast_path_of, make_study, pair_record, write_jsonl
from tests.labelling_helpers import missing_answers

FOUR = [{"aspect": f"aspect {i}", "evidence": "", "reason": ""} for i in range(4)]
SCORES = [
    {"chosen": 2, "rejected": 0},
    {"chosen": 1, "rejected": 1},
    {"chosen": 0, "rejected": 2},
    {"chosen": 2, "rejected": 1},
]


@pytest.fixture
def engine(db_url):
    return get_engine(db_url)


def stored(engine) -> dict[int, list | None]:
    with session(engine) as s:
        return {a.pair_id: a.aspects for a in s.exec(select(Annotation)).all()}


def test_submit_answer_stores_the_scores_exactly_and_replaces_them(engine, tmp_path):
    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=1, annotators=1, aspect_check=True)
    item = next_assignment(engine, annotator_id=a)
    answer = Answer(preference="chosen", chosen_position=item.chosen_position, aspects=SCORES[:1])
    submit_answer(engine, annotator_id=a, pair_id=item.pair_id, answer=answer)
    assert stored(engine) == {item.pair_id: SCORES[:1]}
    changed = Answer(preference="tie", chosen_position=item.chosen_position, aspects=SCORES[3:])
    submit_answer(engine, annotator_id=a, pair_id=item.pair_id, answer=changed)
    assert stored(engine) == {item.pair_id: SCORES[3:]}
    # an answer without scores replaces them too: the answer is upserted whole
    submit_answer(
        engine,
        annotator_id=a,
        pair_id=item.pair_id,
        answer=Answer(preference="chosen", chosen_position=item.chosen_position),
    )
    assert stored(engine) == {item.pair_id: None}


def test_submit_and_next_stores_the_scores_on_the_common_path(engine, tmp_path):
    """The common Submit (SQLite's driver path, PostgreSQL's generated submit function) stores
    the scores itself: each Submit reports the path that committed it, and the full rules never
    run."""
    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    paths: list[str] = []
    first = next_assignment(engine, annotator_id=a)
    answer = Answer(preference="chosen", chosen_position=first.chosen_position, aspects=SCORES[:1])
    second = submit_and_next(
        engine, annotator_id=a, pair_id=first.pair_id, answer=answer, served=paths
    )
    assert second is not None and second.pair_id != first.pair_id
    plain = Answer(preference="rejected", chosen_position=second.chosen_position)
    third = submit_and_next(
        engine, annotator_id=a, pair_id=second.pair_id, answer=plain, served=paths
    )
    assert third is not None
    assert paths == [fast_path_of(engine)] * 2
    assert stored(engine) == {first.pair_id: SCORES[:1], second.pair_id: None}


def test_a_malformed_answer_is_refused_before_anything_is_written(engine, tmp_path):
    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=1, annotators=1)
    item = next_assignment(engine, annotator_id=a)
    bad = Answer(
        preference="chosen",
        chosen_position=item.chosen_position,
        aspects=[{"chosen": 3, "rejected": 0}],
    )
    with pytest.raises(ValueError, match="must be 0, 1 or 2"):
        submit_answer(engine, annotator_id=a, pair_id=item.pair_id, answer=bad)
    assert stored(engine) == {}


def test_form_slots_map_to_chosen_and_rejected_and_back():
    """The page's form keys aspect scores by (aspect index, slot); stored they are
    chosen/rejected, and an answer the form could not complete is never stored."""
    form = FormState(slot="A", aspects={"0_A": 2, "0_B": 0, "1_A": 1, "1_B": 2})
    answer = to_answer(form, chosen_position="B", seconds=None)
    assert answer.aspects == [{"chosen": 0, "rejected": 2}, {"chosen": 2, "rejected": 1}]
    assert FormState.from_draft(form.as_draft()).aspects == form.aspects
    annotation = Annotation(
        study_id=1, pair_id=1, annotator_id=1, preference="rejected", aspects=answer.aspects
    )
    assert FormState.from_annotation(annotation, "B").aspects == form.aspects
    study = Study(name="s", aspect_check=True, dimensions=[], reasons=[])
    partial = FormState(slot="A", aspects={"0_A": 2})
    assert missing_answers(study, partial, n_aspects=2) == [
        "aspect 1 in response B",
        "aspect 2 in response A",
        "aspect 2 in response B",
    ]
    with pytest.raises(ValueError, match="must be 0, 1 or 2"):
        to_answer(partial, chosen_position="A", seconds=None).values()


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_export_and_import_annotations_carry_the_scores(db_url, tmp_path, suffix):
    engine = get_engine(db_url)
    pairs = write_jsonl(
        tmp_path / "pairs.jsonl",
        [pair_record(0, rubric_aspects=FOUR), pair_record(1)],  # 4 aspects, 1 aspect
    )
    assert main(["--db", db_url, "import-pairs", str(pairs), "--study", "s"]) == 0
    annotations = tmp_path / f"in{suffix}"
    write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"pair_id": "p0", "annotator": "ann", "preference": "chosen", "aspects": SCORES},
            {"pair_id": "p1", "annotator": "ann", "preference": "chosen"},  # an older row
        ],
    )
    from analysis.files.annotations_table import load_annotations, write_table

    write_table(load_annotations(tmp_path / "in.jsonl"), annotations)
    assert main(["--db", db_url, "import-annotations", str(annotations), "--study", "s"]) == 0
    frame = annotations_frame(engine, study="s")
    assert list(frame.columns) == COLUMNS
    assert frame.set_index("pair_id")["aspects"].to_dict() == {"p0": SCORES, "p1": None}

    out = tmp_path / f"out{suffix}"
    assert main(["--db", db_url, "export", "--study", "s", "--out", str(out)]) == 0
    exported = read_table(out).set_index("pair_id")["aspects"]
    if suffix == ".csv":
        assert json.loads(exported["p0"]) == SCORES
    elif suffix == ".jsonl":
        assert exported["p0"] == SCORES
    else:
        assert [dict(e) for e in exported["p0"]] == SCORES
    assert exported.isna()["p1"]
    # and the export imports again unchanged
    assert main(["--db", db_url, "import-annotations", str(out), "--study", "s"]) == 0
    assert annotations_frame(engine, study="s").set_index("pair_id")["aspects"]["p0"] == SCORES


def test_import_refuses_a_wrong_number_of_scores_with_its_row(db_url, tmp_path, capsys):
    engine = get_engine(db_url)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [pair_record(0, rubric_aspects=FOUR)])
    assert main(["--db", db_url, "import-pairs", str(pairs), "--study", "s"]) == 0
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"pair_id": "p0", "annotator": "ok", "preference": "chosen", "aspects": SCORES},
            {"pair_id": "p0", "annotator": "short", "preference": "chosen", "aspects": SCORES[:3]},
        ],
    )
    assert main(["--db", db_url, "import-annotations", str(bad), "--study", "s"]) != 0
    err = capsys.readouterr().err
    assert "row 2, column 'aspects': the pair has 4 rubric aspects, got 3 entries" in err
    assert "Traceback" not in err
    assert len(annotations_frame(engine, study="s")) == 0  # all or nothing


def test_the_report_from_the_database_equals_the_file_report(db_url, tmp_path):
    """Aspect scores imported into a study give the same aspect section, verdicts and scorer
    comparison as the same files given to `annotate report` directly."""
    pairs = write_jsonl(
        tmp_path / "pairs.jsonl",
        [pair_record(0, rubric_aspects=FOUR), pair_record(1), pair_record(2)],
    )
    rows = [
        {"pair_id": "p0", "annotator": "a", "preference": "chosen", "aspects": SCORES},
        {"pair_id": "p0", "annotator": "b", "preference": "chosen", "aspects": SCORES[::-1]},
        {"pair_id": "p1", "annotator": "a", "preference": "chosen", "aspects": [SCORES[0]]},
        {"pair_id": "p1", "annotator": "b", "preference": "chosen", "aspects": [SCORES[1]]},
        {"pair_id": "p2", "annotator": "a", "preference": "chosen", "aspects": [SCORES[3]]},
        {"pair_id": "p2", "annotator": "b", "preference": "rejected", "aspects": [SCORES[0]]},
    ]
    annotations = write_jsonl(tmp_path / "annotations.jsonl", rows)
    scorer = write_jsonl(
        tmp_path / "scorer.jsonl",
        [
            {"id": "p0", "response": "chosen", "scores": [2, 2, 1, 2]},
            {"id": "p0", "response": "rejected", "scores": [0, 1, 1, 0]},
            {"id": "p1", "response": "chosen", "scores": [1]},
            {"id": "p1", "response": "rejected", "scores": [1]},
        ],
    )
    assert main(["--db", db_url, "import-pairs", str(pairs), "--study", "s"]) == 0
    assert main(["--db", db_url, "import-annotations", str(annotations), "--study", "s"]) == 0
    common = ["--aspect-scores", str(scorer), "--bootstrap", "50"]
    from_db, from_files = tmp_path / "db", tmp_path / "files"
    assert main(["--db", db_url, "report", "--study", "s", "--out", str(from_db), *common]) == 0
    files = ["--annotations", str(annotations), "--pairs", str(pairs)]
    assert main(["report", *files, "--out", str(from_files), *common]) == 0
    db_report, file_report = (
        json.loads((d / "report.json").read_text()) for d in (from_db, from_files)
    )
    assert db_report["aspects"] == file_report["aspects"]
    assert db_report["verdicts"] == file_report["verdicts"]
    assert (
        db_report["conclusion"]["checks"]["aspects"]
        == file_report["conclusion"]["checks"]["aspects"]
    )
    # p0: per aspect chosen (2, .5, .5, 2) -> 1.25, rejected (.5, 1.5, 1.5, .5) -> 1: gap 0.25;
    # p1: chosen (2 + 1) / 2 = 1.5, rejected (0 + 1) / 2 = 0.5: gap 1; p2: a split preference
    verdicts = {p["pair_id"]: p["verdict"] for p in db_report["pairs"]}
    assert verdicts == {"p0": "rubric_not_reflected", "p1": "valid", "p2": "no_consensus"}
