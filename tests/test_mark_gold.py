"""`annotate mark-gold` (docs/reference/command-line.md): gold checks from the command line, with the
console's rule (annotate/queue/gold.py set_gold). Both databases."""

from __future__ import annotations

from sqlmodel import select

from annotate.engine import get_engine
from annotate.store.db import dispose_engines, session
from annotate.store.models import Pair
from tests.factories import make_study
from tests.processes import run_annotate


def gold_marks(db_url: str) -> dict[str, str | None]:
    with session(get_engine(db_url)) as s:
        rows = s.exec(select(Pair.pair_key, Pair.gold_answer).where(Pair.is_gold == True)).all()  # noqa: E712
    return dict(rows)


def test_mark_gold_marks_and_unmarks_pairs(db_url, tmp_path):
    make_study(get_engine(db_url), tmp_path, n_pairs=4, study="s1")
    dispose_engines()
    done = run_annotate(
        "mark-gold", "p1", "p2", "--study", "s1", "--answer", "chosen", "--db", db_url, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "2 pair(s)" in done.stdout
    assert gold_marks(db_url) == {"p1": "chosen", "p2": "chosen"}
    dispose_engines()
    done = run_annotate(
        "mark-gold", "p2", "--study", "s1", "--unmark", "--db", db_url, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert gold_marks(db_url) == {"p1": "chosen"}


def test_mark_gold_refuses_unknown_pairs_studies_and_answers_in_one_sentence(db_url, tmp_path):
    make_study(get_engine(db_url), tmp_path, n_pairs=2, study="s1")
    dispose_engines()
    cases = [
        (["p9", "--study", "s1", "--answer", "tie"], "no pair with id 'p9'"),
        (["p1", "--study", "nope", "--answer", "tie"], "s1"),
        (["p1", "--study", "s1", "--answer", "maybe"], "invalid choice"),
        (["p1", "--study", "s1"], "--answer"),
    ]
    for args, said in cases:
        done = run_annotate("mark-gold", *args, "--db", db_url, cwd=tmp_path)
        assert done.returncode != 0
        assert said in done.stderr
        assert "Traceback" not in done.stderr
    assert gold_marks(db_url) == {}


def test_mark_gold_cuts_a_long_id_in_its_refusal(db_url, tmp_path):
    make_study(get_engine(db_url), tmp_path, n_pairs=2, study="s1")
    dispose_engines()
    done = run_annotate(
        "mark-gold", "y" * 100_000, "--study", "s1", "--answer", "tie", "--db", db_url, cwd=tmp_path
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no pair with id 'yyyy" in done.stderr and "…" in done.stderr
    assert len(done.stderr) < 500


def test_a_pair_not_queued_for_labelling_cannot_be_marked_gold(db_url, tmp_path):
    # a sampled study queues only some pairs: a gold mark on another would never be served
    engine = get_engine(db_url)
    make_study(engine, tmp_path, n_pairs=3, study="s1")
    with session(engine) as s:
        s.exec(select(Pair).where(Pair.pair_key == "p2")).one().queued = False
    dispose_engines()
    done = run_annotate(
        "mark-gold", "p1", "p2", "--study", "s1", "--answer", "chosen", "--db", db_url, cwd=tmp_path
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "'p2' is not queued for labelling" in done.stderr
    assert gold_marks(db_url) == {}
    done = run_annotate(
        "mark-gold", "p2", "--study", "s1", "--unmark", "--db", db_url, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr  # taking a mark off is always allowed
