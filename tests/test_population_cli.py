"""Validating a whole benchmark from a sample, end to end (issue 24): import 300 pairs with
--sample 60 --sample-by judge=FILE, label the 60 through the real labelling step (the Submit
the labelling page calls), report, export what ships. On SQLite and PostgreSQL."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from sqlmodel import select

from analysis.population.sampling import draw_sample
from annotate.cli import main
from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_and_next
from annotate.people.auth import create_annotator
from annotate.queue.assignment import next_assignment, progress
from annotate.results.monitoring import study_progress
from annotate.results.study_report import build_study_report
from annotate.store.db import read_session, session
from annotate.store.models import Annotation, Pair
from annotate.studies.catalog import get_study
from annotate.studies.pairs_files import read_pairs
from tests.factories import pair_record, write_jsonl

PAIRS = 300
FLAGGED = {f"p{i}" for i in range(0, PAIRS, 10)}  # the judge prefers rejected on 30 pairs
FLIPS = {f"p{i}" for i in range(0, PAIRS, 20)}  # humans prefer rejected on 15 of those


def _judge_file(path: Path) -> Path:
    rows = []
    for i in range(PAIRS):
        pair_id = f"p{i}"
        chosen_first = i % 2 == 0
        right = "A" if chosen_first else "B"
        wrong = "B" if chosen_first else "A"
        rows.append(
            {
                "id": pair_id,
                "prediction": wrong if pair_id in FLAGGED else right,
                "pos_in_a": chosen_first,
            }
        )
    return write_jsonl(path, rows)


def _label_everything(engine, annotator_id: int) -> list[str]:
    """Answer every pair the queue serves, as the labelling page's Submit does."""
    served = []
    row = next_assignment(engine, annotator_id=annotator_id)
    while row is not None:
        with read_session(engine) as s:
            key = s.get_one(Pair, row.pair_id).pair_key
        served.append(key)
        answer = Answer(
            preference="rejected" if key in FLIPS else "chosen",
            chosen_position=row.chosen_position,
            ratings={
                f"{d}_{side}": 4
                for d in ("correctness", "relevance", "helpfulness")
                for side in ("chosen", "rejected")
            },
            main_reason="personal_fit",
        )
        row = submit_and_next(engine, annotator_id=annotator_id, pair_id=row.pair_id, answer=answer)
    return served


def test_sample_label_report_export_cleaned(db_backend, make_db_url, tmp_path):
    url = make_db_url(db_backend)
    pairs_file = write_jsonl(tmp_path / "pairs.jsonl", [pair_record(i) for i in range(PAIRS)])
    judge = _judge_file(tmp_path / "judge.jsonl")
    sample = ["--sample", "60", "--sample-by", f"judge={judge}", "--seed", "7"]
    args = ["import-pairs", str(pairs_file), "--study", "s", *sample, "--db", url]
    assert main(args) == 0
    assert main(["configure-study", "s", "--overlap", "2", "--db", url]) == 0

    engine = get_engine(url)
    with read_session(engine) as s:
        stored = s.exec(select(Pair).order_by(Pair.position)).all()
    queued = {p.pair_key for p in stored if p.queued}
    assert len(stored) == PAIRS and len(queued) == 60
    # every flagged pair (30 <= 80 % of 60) and 30 of the other 270, as drawn from the seed
    ids = [p.pair_key for p in stored]
    draws = draw_sample(ids, 60, seed=7, flagged=[i in FLAGGED for i in ids])
    assert queued == {d.pair_id for d in draws if d.sampled}
    assert queued >= FLAGGED
    probabilities = {p.pair_key: (p.inclusion_probability, p.stratum) for p in stored}
    assert probabilities["p0"] == (1.0, "flagged")
    assert probabilities["p1"] == (pytest.approx(30 / 270), "rest")
    # the same import again changes nothing
    assert main(args) == 0

    with session(engine) as s:
        study = get_study(s, "s")
        people = [create_annotator(s, name=f"ann-{k}", study_id=study.id)[0].id for k in (1, 2)]
    for annotator_id in people:
        assert progress(engine, annotator_id=annotator_id).total == 60  # the sample, not 300
        served = _label_everything(engine, annotator_id)
        assert sorted(served) == sorted(queued)  # the queue never serves an unsampled pair

    done = study_progress(engine, study_id=study.id)  # the console's progress: the sample's
    assert (done.pairs, done.needed, done.remaining) == (60, 120, 0)

    out, cleaned = tmp_path / "out", tmp_path / "cleaned.jsonl"
    report_args = ["report", "--db", url, "--study", "s", "--out", str(out), "--bootstrap", "0"]
    assert main([*report_args, "--model", f"judge={judge}", "--export-cleaned", str(cleaned)]) == 0
    report = json.loads((out / "report.json").read_text())
    population = report["population"]
    assert population["pairs_total"] == PAIRS
    assert population["pairs_sampled"] == population["pairs_labelled"] == 60
    assert population["bad_found"] == len(FLIPS)
    valid = population["estimates"]["valid"]
    # flagged stratum (a census): 15 of 30 valid; rest: all 30 labelled valid
    assert valid["share_human_only"] == pytest.approx((15 + 270) / PAIRS)
    assert valid["method"] == "ppi++ with judge 'judge'"
    assert population["bad_left"]["value"] == pytest.approx(0.0)
    assert {p["pair_id"] for p in population["pairs"] if p["sampled"]} == queued
    assert "of the benchmark's 300 pairs" in (out / "summary.md").read_text()
    assert html.escape(population["sentence"]) in (out / "report.html").read_text()
    # the rest stratum's 30 labelled pairs are all valid: still not a zero-width interval
    assert valid["ci95"][0] < valid["share"] and population["bad_left"]["ci95"][1] > 0
    # beside the verdicts' share, the share truly valid by the model of annotation, named so
    assert 0 < valid["true_share"] < 1
    assert valid["true_ci95"][0] <= valid["true_share"] <= valid["true_ci95"][1]
    assert population["bad_left"]["true_value"] >= 0
    assert (
        "truly valid" in population["sentence"]
        and "by the annotators' verdicts" in (population["sentence"])
    )
    assert report["annotation_model"]["shared_variance"]["share"]["valid"] >= 0

    # the console's report (Agreement and Exports pages) has the population key too (no judge)
    console, _, _ = build_study_report(engine, study="s", bootstrap=0)
    console_valid = console["population"]["estimates"]["valid"]
    assert console_valid["ci95"] == console_valid["ci95_human_only"] == valid["ci95_human_only"]
    assert console_valid["method"] == "design-based"

    # the unchecked pairs are untouched: no annotation, no verdict of their own
    with read_session(engine) as s:
        answered = set(s.exec(select(Pair.pair_key).join(Annotation)).all())
    assert answered == queued
    verdicts = {p["pair_id"]: p["verdict"] for p in report["pairs"]}
    assert {verdicts[i] for i in set(ids) - queued} == {"insufficient_annotations"}
    # what ships: the population minus the pairs found not valid, records as imported
    shipped = read_pairs(cleaned)
    assert [p.key for p in shipped] == [i for i in ids if i not in FLIPS]
    originals = {p.key: p.as_record() for p in read_pairs(pairs_file)}
    assert all(p.as_record() == originals[p.key] for p in shipped)


def test_export_cleaned_needs_a_sampled_study(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    pairs_file = write_jsonl(tmp_path / "pairs.jsonl", [pair_record(i) for i in range(3)])
    assert main(["import-pairs", str(pairs_file), "--db", url]) == 0
    out = tmp_path / "out"
    args = ["report", "--db", url, "--out", str(out), "--export-cleaned", str(tmp_path / "c")]
    assert main(args) != 0
    assert "--export-cleaned needs a sampled study" in capsys.readouterr().err


def test_sample_refusals_name_the_problem(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    pairs_file = write_jsonl(tmp_path / "pairs.jsonl", [pair_record(i) for i in range(5)])
    judge = write_jsonl(
        tmp_path / "judge.jsonl", [{"id": "p0", "prediction": "A", "pos_in_a": True}]
    )
    assert main(["import-pairs", str(pairs_file), "--sample", "9", "--db", url]) != 0
    assert "asks for 9 pairs but the study holds 5" in capsys.readouterr().err
    args = ["import-pairs", str(pairs_file), "--sample", "2", "--sample-by", f"j={judge}"]
    assert main([*args, "--db", url]) != 0
    err = capsys.readouterr().err
    assert "--sample-by" in err and "p1" in err
    with read_session(get_engine(url)) as s:
        assert s.exec(select(Pair)).all() == []  # all or nothing


def test_without_sample_by_the_draw_is_uniform_and_reported_design_based(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    pairs_file = write_jsonl(tmp_path / "pairs.jsonl", [pair_record(i) for i in range(40)])
    assert main(["import-pairs", str(pairs_file), "--sample", "10", "--db", url]) == 0
    with read_session(get_engine(url)) as s:
        stored = s.exec(select(Pair)).all()
    assert sum(p.queued for p in stored) == 10
    assert {(p.inclusion_probability, p.stratum) for p in stored} == {(0.25, "all")}
    out = tmp_path / "out"
    assert main(["report", "--db", url, "--out", str(out), "--bootstrap", "0"]) == 0
    population = json.loads((out / "report.json").read_text())["population"]
    assert population["pairs_labelled"] == 0
    assert population["estimates"]["valid"]["share"] is None
    assert "no labelled pair" in population["estimates"]["valid"]["note"]


def test_pairs_added_to_a_sampled_study_need_a_new_draw(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    first = write_jsonl(tmp_path / "a.jsonl", [pair_record(i) for i in range(10)])
    more = write_jsonl(tmp_path / "b.jsonl", [pair_record(i) for i in range(12)])
    assert main(["import-pairs", str(first), "--sample", "4", "--db", url]) == 0
    assert main(["import-pairs", str(more), "--db", url]) != 0
    assert "is a sampled population" in capsys.readouterr().err
    assert main(["import-pairs", str(more), "--sample", "4", "--db", url]) == 0
    with read_session(get_engine(url)) as s:
        stored = s.exec(select(Pair)).all()
    assert len(stored) == 12 and sum(p.queued for p in stored) == 4
    assert {p.inclusion_probability for p in stored} == {4 / 12}


def test_sample_by_cuts_a_long_id_and_its_help_says_percent_plainly(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    pairs_file = write_jsonl(tmp_path / "pairs.jsonl", [pair_record(i) for i in range(5)])
    long_id = "x" * 100_000
    judge = write_jsonl(
        tmp_path / "judge.jsonl",
        [{"id": i, "prediction": "A", "pos_in_a": True} for i in [f"p{n}" for n in range(5)]]
        + [{"id": long_id, "prediction": "A", "pos_in_a": True}],
    )
    args = ["import-pairs", str(pairs_file), "--sample", "2", "--sample-by", f"j={judge}"]
    assert main([*args, "--db", url]) != 0
    err = capsys.readouterr().err
    assert "--sample-by" in err and "xxxx…" in err and len(err) < 1_000
    with pytest.raises(SystemExit):
        main(["import-pairs", "--help"])
    shown = capsys.readouterr().out
    assert "%%" not in shown and "up to 80 percent of N" in " ".join(shown.split())
    with pytest.raises(SystemExit):
        main(["import-pairs", str(pairs_file), "--sample", "2", "--sample-by", long_id])
    err = capsys.readouterr().err
    assert "expected NAME=FILE, got 'xxxx" in err and "…" in err and len(err) < 1_000
