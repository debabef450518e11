"""The Review page (/admin-review) and the labelling page around a revision, driven by
Streamlit's AppTest: the queue and a pair's answers, a decision recorded, two maintainers at
once (the later refused, naming the first), a revision made in the page, and an annotator
whose open pair was revised (their Submit refused with a message, their draft dropped)."""

from __future__ import annotations

import json

import pytest
import streamlit as st
from sqlmodel import select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import ENV_VAR, read_session, session
from annotate.store.models import Annotation, Assignment, Pair, ReviewDecision
from annotate.studies.pair_import import import_pairs
from tests.factories import pair_record, write_jsonl
from tests.test_console_app import as_token, open_page
from tests.test_label_app import data, full_form, signed_in, submit_form
from tests.test_pair_versions import _answers, _cli
from tests.test_review import ANSWERS


@pytest.fixture
def db(tmp_path, monkeypatch, capsys):
    """Five pairs with three imported answers on four of them (test_review.ANSWERS), two
    maintainers and an annotator."""
    url = f"sqlite:///{tmp_path}/review.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    st.cache_data.clear()
    engine = get_engine(url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(5)]))
    rows = [
        (pair, f"ann{i}", preference)
        for pair, answers in ANSWERS.items()
        for i, preference in enumerate(answers)
    ]
    _cli(capsys, "import-annotations", str(_answers(tmp_path / "a.jsonl", rows)), "--db", url)
    with session(engine) as s:
        _, alice = create_annotator(s, name="alice", study_id=1, is_admin=True)
        _, bob = create_annotator(s, name="bob", study_id=1, is_admin=True)
        worker, worker_token = create_annotator(s, name="worker", study_id=1)
        worker_id = worker.id
    yield {
        "engine": engine,
        "url": url,
        "alice": alice,
        "bob": bob,
        "worker": (worker_id, worker_token),
        "tmp": tmp_path,
    }
    st.cache_resource.clear()
    st.cache_data.clear()


def review_page(token: str):
    return open_page(as_token(token), "admin-review")


def texts(at) -> str:
    return " ".join(
        str(e.value)
        for kind in ("markdown", "success", "warning", "error", "info")
        for e in getattr(at, kind)
    )


def choose_pair(at, key: str):
    at.selectbox(key="review_pair").set_value(key).run()
    assert not at.exception, at.exception
    return at


def decision_radio(at):
    (radio,) = [r for r in at.radio if r.key and r.key.startswith("review_decision_")]
    return radio


def record_button(at):
    (button,) = [b for b in at.button if b.key and b.key.startswith("review_record_")]
    return button


def test_the_queue_and_a_pairs_answers(db):
    at = review_page(db["alice"])
    assert not at.exception
    table = at.dataframe[0].value
    # the most contested first: no consensus, then the flip, then the split valid pair
    assert list(table["pair"]) == ["p3", "p2", "p1"]
    assert next(iter(table["why"])) == "not valid, no consensus, split"
    assert at.selectbox(key="review_pair").value == "p3"
    choose_pair(at, "p2")
    answers = at.dataframe[1].value
    assert sorted(answers["annotator"]) == ["ann0", "ann1", "ann2"]
    assert sorted(answers["answer"]) == ["chosen", "rejected", "rejected"]
    assert {"reason", "comment", "seconds"} <= set(answers.columns)
    assert "verdict **preference\\_flip**" in texts(at)


def test_a_drop_is_recorded_with_its_category_and_the_reviewer(db):
    at = choose_pair(review_page(db["alice"]), "p2")
    decision_radio(at).set_value("drop").run()
    at.selectbox(
        key=next(s.key for s in at.selectbox if s.key.startswith("review_category_"))
    ).set_value("preference_flip").run()
    note = next(t for t in at.text_area if t.key.startswith("review_note_"))
    note.set_value("the annotators are right: it flips").run()
    record_button(at).click().run()
    assert not at.exception, at.exception
    assert "Pair p2 \\(version 1\\) dropped" in texts(at)
    with read_session(db["engine"]) as s:
        (decision,) = s.exec(select(ReviewDecision)).all()
    assert (decision.decision, decision.category, decision.reviewer, decision.note) == (
        "drop",
        "preference_flip",
        "alice",
        "the annotators are right: it flips",
    )


def test_two_maintainers_at_once_the_later_is_refused_naming_the_first(db):
    alice = choose_pair(review_page(db["alice"]), "p2")
    bob = choose_pair(review_page(db["bob"]), "p2")  # both have the pair open
    decision_radio(alice).set_value("keep").run()
    record_button(alice).click().run()
    assert "Pair p2 \\(version 1\\) kept" in texts(alice)
    decision_radio(bob).set_value("keep").run()
    record_button(bob).click().run()
    assert not bob.exception, bob.exception
    assert "alice decided this pair \\(keep\\) at" in texts(bob)
    assert "your decision was not recorded" in texts(bob)
    with read_session(db["engine"]) as s:
        assert [d.reviewer for d in s.exec(select(ReviewDecision)).all()] == ["alice"]


def test_a_revision_in_the_page_makes_a_new_version(db):
    at = choose_pair(review_page(db["alice"]), "p1")
    decision_radio(at).set_value("revise").run()
    rejected = next(t for t in at.text_area if t.key.startswith("review_r_"))
    rejected.set_value("A premium leather bag for 300 dollars, for collectors only.").run()
    record_button(at).click().run()
    assert not at.exception, at.exception
    assert "Pair p1 \\(version 1\\) revised" in texts(at)
    with read_session(db["engine"]) as s:
        p1 = s.exec(select(Pair).where(Pair.pair_key == "p1")).one()
    assert (p1.version, p1.n_assigned) == (2, 0)
    assert p1.rejected.startswith("A premium leather bag for 300 dollars")


def test_an_annotators_open_pair_revised_their_submit_is_refused_and_draft_dropped(db):
    worker_id, token = db["worker"]
    at = signed_in(token)
    shown = data(at)
    with read_session(db["engine"]) as s:
        held = s.exec(select(Assignment).where(Assignment.annotator_id == worker_id)).one()
        key = s.get(Pair, held.pair_id).pair_key
    records = [pair_record(i) for i in range(5)]
    records[int(key[1:])]["chosen"] = "A new chosen response written after review."
    import_pairs(db["engine"], write_jsonl(db["tmp"] / "new.jsonl", records), update_existing=True)
    submit_form(at, full_form("A", comment="about the old text"))
    assert not at.exception, at.exception
    after = data(at)
    assert "this pair was revised while you had it open" in after["flash"].lower()
    assert after["flash_tone"] == "warning"
    with read_session(db["engine"]) as s:
        assert s.exec(select(Annotation).where(Annotation.annotator_id == worker_id)).all() == []
    # the next pair shown is the new version (the least covered), with an empty form
    assert after["question_html"] == shown["question_html"]
    assert "A new chosen response written after review." in json.dumps(after)
    assert after["initial"]["comment"] == ""


def test_a_draft_on_a_revised_pair_is_dropped_with_a_message(db):
    worker_id, token = db["worker"]
    at = signed_in(token)
    from annotate.labelling.answers import FormState
    from annotate.labelling.drafts import save_draft

    with read_session(db["engine"]) as s:
        held = s.exec(select(Assignment).where(Assignment.annotator_id == worker_id)).one()
        key = s.get(Pair, held.pair_id).pair_key
    save_draft(db["engine"], assignment_id=held.id, form=FormState(slot="B", comment="half"))
    records = [pair_record(i) for i in range(5)]
    records[int(key[1:])]["rejected"] = "A new rejected response."
    import_pairs(db["engine"], write_jsonl(db["tmp"] / "new.jsonl", records), update_existing=True)
    at = signed_in(token)  # a reload
    shown = data(at)
    assert "your unsaved answers to its earlier text were dropped" in shown["flash"]
    assert shown["initial"]["comment"] == "" and shown["initial"]["slot"] is None
    with read_session(db["engine"]) as s:
        assert s.get(Assignment, held.id).draft is None
    assert data(signed_in(token))["flash"] is None  # said once


def test_any_pair_opens_by_its_id_and_can_be_decided(db):
    at = review_page(db["alice"])
    at.text_input(key="review_open").input("p0").run()  # valid and unanimous: in no queue
    assert not at.exception, at.exception
    assert at.selectbox(key="review_pair").value == "p0"
    assert "Pair p0, version 1" in " ".join(str(h.value) for h in at.subheader)
    decision_radio(at).set_value("keep").run()
    record_button(at).click().run()
    assert "Pair p0 \\(version 1\\) kept" in texts(at)
    at.text_input(key="review_open").input("nope").run()
    assert "No pair nope in this study" in texts(at)
