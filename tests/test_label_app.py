"""The labelling page driven by Streamlit's AppTest: sign in, refused incomplete submit,
submit, progress, go back and edit, finish."""

from __future__ import annotations

import pytest
import streamlit as st
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotate.db import ENV_VAR, get_engine, session
from annotate.models import Annotation, Assignment, Study
from tests.factories import make_study

APP = "../annotate/app.py"


@pytest.fixture
def study(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/app.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    engine = get_engine(url)
    _, people = make_study(engine, tmp_path, n_pairs=3, annotators=2)
    yield engine, people
    st.cache_resource.clear()


def signed_in(token: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = token
    return at.run()


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r} in {[b.label for b in at.button]}"
    return matches[0]


def answer_all(at: AppTest, *, slot: str, rating: int = 4, reason: str = "personal_fit") -> AppTest:
    button(at, {"A": "Response A", "B": "Response B", "tie": "No preference"}[slot]).click().run()
    for control in ratings(at):
        control.set_value(rating)
    reason_control(at).set_value(reason)
    return at.run()


def ratings(at: AppTest) -> list:
    return [g for g in at.button_group if g.key.startswith("rate_")]


def reason_control(at: AppTest):
    return next(g for g in at.button_group if g.key.startswith("reason_"))


def question(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("Question "))


def progress_text(at: AppTest) -> str:
    return at.get("progress")[0].proto.text


def stored(engine) -> list[Annotation]:
    with session(engine) as s:
        return s.exec(select(Annotation).order_by(Annotation.id)).all()


def test_without_a_valid_token_no_pair_is_shown(study):
    _engine, _ = study
    for at in (AppTest.from_file(APP, default_timeout=30).run(), signed_in("not-a-token")):
        assert not at.exception
        assert at.title[0].value == "Please sign in"
        assert not at.get("progress")
        assert "Question 0" not in str([m.value for m in at.markdown])


def test_label_flow_end_to_end(study):
    engine, [(_annotator_id, token), _] = study
    at = signed_in(token)
    assert not at.exception
    assert "token" not in at.query_params  # the token leaves the address bar
    assert progress_text(at) == "0 of 3 pairs"

    button(at, "Submit").click().run()
    assert "which response this user would prefer" in at.error[0].value
    assert stored(engine) == []

    answer_all(at, slot="B", rating=4)
    at.text_area[0].input("Clear winner for this user.").run()
    button(at, "Submit").click().run()
    assert not at.error
    assert progress_text(at) == "1 of 3 pairs"
    [first] = stored(engine)
    with session(engine) as s:
        position = s.exec(
            select(Assignment.chosen_position).where(Assignment.pair_id == first.pair_id)
        ).one()
    assert first.preference == ("chosen" if position == "B" else "rejected")
    assert first.correctness_chosen == 4 and first.helpfulness_rejected == 4
    assert first.main_reason == "personal_fit" and first.comment == "Clear winner for this user."
    assert first.seconds is not None and first.seconds >= 0

    # Keyboard-less double submit of the next pair still yields one row per pair.
    answer_all(at, slot="A", rating=5)
    button(at, "Submit").click().run()
    assert len(stored(engine)) == 2
    assert progress_text(at) == "2 of 3 pairs"

    # Go back and change the first answer.
    at.selectbox(key="history_choice").set_value(first.pair_id).run()
    button(at, "Open this pair").click().run()
    assert "You are changing an answer" in at.info[0].value
    assert any(b.label == "Response B" and b.proto.type == "primary" for b in at.button)
    button(at, "No preference").click().run()
    button(at, "Save change").click().run()
    rows = stored(engine)
    assert len(rows) == 2
    assert [r.preference for r in rows if r.pair_id == first.pair_id] == ["tie"]
    assert progress_text(at) == "2 of 3 pairs"

    answer_all(at, slot="A", rating=3, reason="general_quality")
    button(at, "Submit").click().run()
    assert len(stored(engine)) == 3
    assert "labelled every pair" in at.success[0].value
    assert progress_text(at) == "3 of 3 pairs"


def test_skip_moves_on_and_the_pair_returns_at_the_end(study):
    _engine, [(_, token), _] = study
    at = signed_in(token)
    first_question = question(at)
    button(at, "Skip for now").click().run()
    assert question(at) != first_question
    for _ in range(2):
        answer_all(at, slot="A")
        button(at, "Submit").click().run()
    assert question(at) == first_question


def test_reload_keeps_the_pair_order_and_draft(study):
    _engine, [(_annotator_id, token), _] = study
    at = signed_in(token)
    shown = question(at)
    button(at, "Response A").click().run()
    ratings(at)[0].set_value(2).run()
    reloaded = signed_in(token)  # a new session: nothing survives but the database
    assert question(reloaded) == shown
    assert any(b.label == "Response A" and b.proto.type == "primary" for b in reloaded.button)
    assert ratings(reloaded)[0].value == 2


def test_time_on_item_continues_after_a_reload(study):
    engine, [(annotator_id, token), _] = study
    at = signed_in(token)
    button(at, "Response A").click().run()  # the first change saves a draft with its seconds
    with session(engine) as s:
        assignment = s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.status == "active"
            )
        ).one()
        assert assignment.draft["slot"] == "A" and 0 <= assignment.draft["seconds"] < 30
        # as if the annotator had spent 100 seconds on the pair before the reload
        assignment.draft = {**assignment.draft, "seconds": 100.0}
        s.add(assignment)
    reloaded = answer_all(signed_in(token), slot="A")
    button(reloaded, "Submit").click().run()
    with session(engine) as s:
        stored = s.exec(select(Annotation).where(Annotation.annotator_id == annotator_id)).one()
    assert 100 <= stored.seconds < 130


def test_guidelines_come_first_and_on_demand(study):
    engine, [(_, token), _] = study
    with session(engine) as s:
        study_row = s.exec(select(Study)).one()
        study_row.guidelines = "Judge for **this** user. ![x](http://127.0.0.1:9/x.png)"
        s.add(study_row)
    at = signed_in(token)
    assert at.title[0].value == "Guidelines"
    assert not at.get("progress")
    assert "\\!\\[x\\]" in at.markdown[0].value  # inert even in guidelines
    button(at, "Start labelling").click().run()
    assert progress_text(at) == "0 of 3 pairs"
    assert signed_in(token).get("progress")  # seen once: not shown again


def test_no_ties_and_fewer_dimensions_when_the_study_says_so(study):
    engine, [(_, token), _] = study
    with session(engine) as s:
        study_row = s.exec(select(Study)).one()
        study_row.allow_ties = False
        study_row.dimensions = ["relevance"]
        s.add(study_row)
    at = signed_in(token)
    assert "No preference" not in [b.label for b in at.button]
    assert len(ratings(at)) == 2
