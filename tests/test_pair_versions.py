"""Versions of a pair (issue 47), on SQLite and PostgreSQL: a revised pair does not inherit the
answers given to its earlier text; answers stay with the version they saw through an update,
an export, the report and a backup; a Submit still showing the earlier text is refused and its
draft never reaches the new text; a revised pair is labelled up to its overlap again; imported
answers count toward a pair's overlap and their annotators are not given those pairs again;
--export-cleaned before any labelling keeps the sampled pairs and says so.

The first four tests are the issue's bug reports, written against the command line and the
queue as they were, so that they failed before the change."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlmodel import col, select

from annotate.cli import main
from annotate.engine import get_engine
from annotate.labelling.answers import Answer, FormState
from annotate.labelling.drafts import drop_revised_drafts, save_draft
from annotate.labelling.step import submit_and_next
from annotate.people.auth import create_annotator
from annotate.queue.assignment import next_assignment, progress
from annotate.queue.rules import PairRevised
from annotate.store.db import read_session, session
from annotate.store.models import Annotation, Annotator, Assignment, Pair, PairVersion
from annotate.studies.pair_import import import_pairs
from tests.factories import pair_record, write_jsonl

RATINGS = {
    f"{dimension}_{side}": 4
    for dimension in ("correctness", "relevance", "helpfulness")
    for side in ("chosen", "rejected")
}


def _answers(path: Path, rows: list[tuple[str, str, str]], **extra) -> Path:
    """An annotations file: (pair id, annotator, preference) rows, rated alike, personal fit."""
    records = [
        {
            "pair_id": pair,
            "annotator": who,
            "preference": preference,
            "chosen_position": "A",
            "main_reason": "personal_fit",
            **RATINGS,
            **extra,
        }
        for pair, who, preference in rows
    ]
    return write_jsonl(path, records)


def _cli(capsys, *args: str) -> str:
    assert main(list(args)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _pair(engine, key: str, study: str = "default") -> Pair:
    with read_session(engine) as s:
        from annotate.store.models import Study

        return s.exec(
            select(Pair).join(Study).where(Pair.pair_key == key, Study.name == study)
        ).one()


def _key(engine, pair_id: int) -> str:
    with read_session(engine) as s:
        return s.get_one(Pair, pair_id).pair_key


# --- the bug reports -----------------------------------------------------------------------


def test_a_revised_pair_does_not_inherit_its_old_answers(db_url, tmp_path, capsys):
    """3 pairs, 9 answers, one pair's chosen response replaced, --update: the pair is no
    longer `valid` on the three answers given to the old text, the update says so, and the
    export tells which text each answer judged."""
    records = [pair_record(i) for i in range(3)]
    first = write_jsonl(tmp_path / "pairs.jsonl", records)
    answers = [(f"p{i}", f"ann{a}", "chosen") for i in range(3) for a in range(3)]
    _cli(capsys, "import-pairs", str(first), "--db", db_url)
    _cli(capsys, "import-annotations", str(_answers(tmp_path / "a.jsonl", answers)), "--db", db_url)
    records[1]["chosen"] = "A different text: a waterproof bag under $40 with a chest strap."
    revised = write_jsonl(tmp_path / "pairs2.jsonl", records)
    said = _cli(capsys, "import-pairs", str(revised), "--update", "--db", db_url)
    assert "1 revised" in said and "3 answers now belong to an earlier version" in said
    out = tmp_path / "report"
    _cli(capsys, "report", "--out", str(out), "--bootstrap", "0", "--db", db_url)
    pairs = {p["pair_id"]: p for p in json.loads((out / "report.json").read_text())["pairs"]}
    assert pairs["p1"]["verdict"] == "insufficient_annotations"
    assert pairs["p1"]["n_annotations"] == 0
    assert pairs["p0"]["verdict"] == pairs["p2"]["verdict"] == "valid"
    exported = tmp_path / "answers.csv"
    _cli(capsys, "export", "--out", str(exported), "--db", db_url)
    header, *rows = exported.read_text().splitlines()
    version = header.split(",").index("pair_version")
    assert {row.split(",")[version] for row in rows} == {"1"}  # every answer judged version 1


def test_imported_answers_count_toward_a_pairs_overlap(db_url, tmp_path, capsys):
    """Six pairs with three imported answers each, overlap 3: a new annotator gets nothing
    (before, each would have ended at four answers)."""
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(6)]))
    rows = [(f"p{i}", f"crowd{a}", "chosen") for i in range(6) for a in range(3)]
    _cli(capsys, "import-annotations", str(_answers(tmp_path / "a.jsonl", rows)), "--db", db_url)
    with session(engine) as s:
        newcomer, _ = create_annotator(s, name="newcomer", study_id=1)
        newcomer_id = newcomer.id
    assert next_assignment(engine, annotator_id=newcomer_id) is None
    assert progress(engine, annotator_id=newcomer_id).total == 0
    with read_session(engine) as s:
        assert sorted(p.n_assigned for p in s.exec(select(Pair)).all()) == [3] * 6


def test_an_imported_annotator_is_not_served_the_pairs_they_answered(db_url, tmp_path, capsys):
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(4)]))
    rows = [("p0", "alice", "chosen"), ("p1", "alice", "rejected")]
    _cli(capsys, "import-annotations", str(_answers(tmp_path / "a.jsonl", rows)), "--db", db_url)
    with read_session(engine) as s:
        alice = s.exec(select(Annotator).where(Annotator.name == "alice")).one().id
    served = []
    row = next_assignment(engine, annotator_id=alice)
    while row is not None:
        served.append(_key(engine, row.pair_id))
        row = submit_and_next(
            engine,
            annotator_id=alice,
            pair_id=row.pair_id,
            answer=Answer(preference="chosen", chosen_position=row.chosen_position),
        )
    assert sorted(served) == ["p2", "p3"]
    with read_session(engine) as s:
        assert len(s.exec(select(Annotation)).all()) == 4  # one answer each, none twice


def test_export_cleaned_before_any_labelling_keeps_the_sampled_pairs(tmp_path, capsys):
    """15 pairs, 8 queued, 0 answers: --export-cleaned writes all 15 (the 8 queued pairs are
    not judged yet, not found bad) and says so."""
    db_url = f"sqlite:///{tmp_path / 'sample.db'}"
    pairs = write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(15)])
    _cli(capsys, "import-pairs", str(pairs), "--sample", "8", "--db", db_url)
    cleaned = tmp_path / "cleaned.jsonl"
    said = _cli(
        capsys,
        "report",
        "--out",
        str(tmp_path / "r"),
        "--bootstrap",
        "0",
        "--export-cleaned",
        str(cleaned),
        "--db",
        db_url,
    )
    assert len(cleaned.read_text().splitlines()) == 15
    assert "--export-cleaned: 15 pairs written" in said
    assert "7 never sampled" in said and "8 not labelled yet" in said and "0 dropped" in said


# --- what versions must show -----------------------------------------------------------------


def _revise(engine, tmp_path, key: str, *, name: str = "rev", **changes) -> None:
    with read_session(engine) as s:
        pairs = [p.record() for p in s.exec(select(Pair).order_by(col(Pair.position))).all()]
    for record in pairs:
        if record["id"] == key:
            record.update(changes)
    result = import_pairs(
        engine, write_jsonl(tmp_path / f"{name}.jsonl", pairs), update_existing=True
    )
    assert result.updated == 1


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "full rules"])
def test_an_update_while_the_old_version_is_open_refuses_its_submit(db_url, tmp_path, fast):
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(0)]))
    with session(engine) as s:
        annotator, _ = create_annotator(s, name="ann", study_id=1)
        who = annotator.id
    held = next_assignment(engine, annotator_id=who)
    assert held.pair_version == 1
    draft = FormState(slot="A", comment="half written about the old text")
    assert save_draft(engine, assignment_id=held.id, form=draft, seconds=12.0)
    _revise(engine, tmp_path, "p0", rejected="A new rejected response, built to violate it.")
    # the page still shows version 1: its Submit is refused and stores nothing
    with pytest.raises(PairRevised, match="revised while you had it open"):
        submit_and_next(
            engine,
            annotator_id=who,
            pair_id=held.pair_id,
            answer=Answer(preference="chosen", chosen_position=held.chosen_position),
            version=held.pair_version,
            fast=fast,
        )
    with read_session(engine) as s:
        assert s.exec(select(Annotation)).all() == []
        old = s.get(Assignment, held.id)
        assert old.status == "revised" and old.draft["comment"] == draft.comment
    # its draft is dropped (with the page's message) and never applied to the new text
    assert drop_revised_drafts(engine, annotator_id=who) == 1
    again = next_assignment(engine, annotator_id=who)
    assert (again.pair_id, again.pair_version, again.draft) == (held.pair_id, 2, None)
    submit_and_next(
        engine,
        annotator_id=who,
        pair_id=again.pair_id,
        answer=Answer(preference="chosen", chosen_position=again.chosen_position),
        version=2,
        fast=fast,
    )
    with read_session(engine) as s:
        (answer,) = s.exec(select(Annotation)).all()
        assert answer.pair_version == 2
        assert s.get(Assignment, held.id).draft is None


def test_a_revised_pair_reaches_its_overlap_again(db_url, tmp_path):
    """Overlap 2: two annotators answer version 1; after the revision both are served version
    2 (they never saw it), and a third annotator is not (the pair is full again)."""
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(0)]))
    people = []
    with session(engine) as s:
        from annotate.studies.catalog import get_study, update_study_options

        update_study_options(s, get_study(s, "default"), overlap_target=2)
        for name in ("a", "b", "c"):
            people.append(create_annotator(s, name=name, study_id=1)[0].id)

    def label(who: int, version: int) -> None:
        row = next_assignment(engine, annotator_id=who)
        assert row is not None and row.pair_version == version
        submit_and_next(
            engine,
            annotator_id=who,
            pair_id=row.pair_id,
            answer=Answer(preference="rejected", chosen_position=row.chosen_position),
            version=row.pair_version,
        )

    label(people[0], 1)
    label(people[1], 1)
    assert next_assignment(engine, annotator_id=people[2]) is None  # full at version 1
    _revise(engine, tmp_path, "p0", chosen="A revised chosen response that fits the rubric.")
    assert _pair(engine, "p0").n_assigned == 0
    label(people[0], 2)
    label(people[1], 2)
    assert next_assignment(engine, annotator_id=people[2]) is None  # full at version 2
    assert _pair(engine, "p0").n_assigned == 2
    with read_session(engine) as s:
        versions = sorted(a.pair_version for a in s.exec(select(Annotation)).all())
    assert versions == [1, 1, 2, 2]


def test_answers_stay_with_their_version_through_export_report_and_backup(
    db_url, db_backend, make_db_url, tmp_path, capsys
):
    if db_backend == "postgresql" and shutil.which("pg_restore") is None:
        pytest.skip("pg_restore is not installed: cannot restore the PostgreSQL dump")
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(2)]))
    old_rows = [("p0", f"ann{a}", "rejected") for a in range(3)]
    _cli(
        capsys, "import-annotations", str(_answers(tmp_path / "a.jsonl", old_rows)), "--db", db_url
    )
    _revise(engine, tmp_path, "p0", chosen="The revised chosen response.")
    new_rows = [("p0", f"ann{a}", "chosen") for a in range(3)]
    _cli(
        capsys,
        "import-annotations",
        str(_answers(tmp_path / "b.jsonl", new_rows, pair_version=2)),
        "--db",
        db_url,
    )
    # the export: each answer with its version; imported again into a copy, the same
    exported = tmp_path / "export.jsonl"
    _cli(capsys, "export", "--out", str(exported), "--db", db_url)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert (
        sorted((r["pair_version"], r["preference"]) for r in lines)
        == [(1, "rejected")] * 3 + [(2, "chosen")] * 3
    )
    # every version of the pairs, the earlier text included (the console's Exports page)
    from annotate.results.exports import export_pair_versions

    texts = [
        json.loads(line) for line in export_pair_versions(engine, study="default").splitlines()
    ]
    assert [(r["id"], r["pair_version"], r["chosen"]) for r in texts] == [
        ("p0", 1, pair_record(0)["chosen"]),
        ("p0", 2, "The revised chosen response."),
        ("p1", 1, pair_record(1)["chosen"]),
    ]
    # the report: the latest version by default, every version with --version all
    out = tmp_path / "latest"
    _cli(capsys, "report", "--out", str(out), "--bootstrap", "0", "--db", db_url)
    p0 = json.loads((out / "report.json").read_text())["pairs"][0]
    assert (p0["pair_version"], p0["verdict"], p0["n_chosen"], p0["n_rejected"]) == (
        2,
        "valid",
        3,
        0,
    )
    assert p0["earlier_versions"] == [
        {"pair_version": 1, "n_annotations": 3, "verdict": "preference_flip", "decision": None}
    ]
    assert "v1: preference_flip (3 answers)" in (out / "pairs.csv").read_text()
    every = tmp_path / "all"
    _cli(
        capsys,
        "report",
        "--out",
        str(every),
        "--bootstrap",
        "0",
        "--version",
        "all",
        "--db",
        db_url,
    )
    p0_all = json.loads((every / "report.json").read_text())["pairs"][0]
    # each annotator once per pair: their answer to the latest version they saw
    assert (p0_all["n_chosen"], p0_all["n_rejected"]) == (3, 0)
    # the backup: restored, the answers and both versions' texts are still there
    copy = tmp_path / ("copy.db" if db_backend == "sqlite" else "copy.dump")
    _cli(capsys, "backup", "--out", str(copy), "--db", db_url)
    if db_backend == "sqlite":
        copy_url = f"sqlite:///{copy}"
    else:
        copy_url = make_db_url("postgresql")
        restored = subprocess.run(
            ["pg_restore", "--no-owner", "-d", copy_url.replace("+psycopg", ""), str(copy)],
            capture_output=True,
            text=True,
        )
        assert restored.returncode == 0, restored.stderr
    copied = get_engine(copy_url)
    with read_session(copied) as s:
        stored = sorted((a.pair_version, a.preference) for a in s.exec(select(Annotation)).all())
        (earlier,) = s.exec(select(PairVersion)).all()
        current = s.exec(select(Pair).where(Pair.pair_key == "p0")).one()
    assert stored == [(1, "rejected")] * 3 + [(2, "chosen")] * 3
    assert earlier.version == 1 and earlier.chosen == pair_record(0)["chosen"]
    assert current.version == 2 and current.chosen == "The revised chosen response."


def test_an_import_naming_a_version_the_pair_does_not_have_is_refused(tmp_path, capsys):
    db_url = f"sqlite:///{tmp_path / 'v.db'}"
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(0)]))
    bad = _answers(tmp_path / "a.jsonl", [("p0", "x", "chosen")], pair_version=2)
    assert main(["import-annotations", str(bad), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "row 1, column 'pair_version': pair 'p0' has no version 2 (its latest is 1)" in err
