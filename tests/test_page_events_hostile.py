"""Events a page sends that the labelling page must answer truthfully and in one sentence
(#21 N13): an `open` naming no pair (a list, a dict) and a gold pair answered in another tab.
Both databases."""

from __future__ import annotations

import pytest
import streamlit as st
from sqlmodel import select

from analysis.vocabulary import TIE
from annotate.engine import get_engine
from annotate.queue.gold import set_gold
from annotate.store.db import ENV_VAR, session
from annotate.store.models import Annotation, Pair, Study
from annotate.studies.catalog import update_study_options
from tests.factories import make_study
from tests.test_label_app import chosen_position, data, full_form, send, signed_in, submit_form


@pytest.fixture
def study(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, db_url)
    st.cache_resource.clear()
    engine = get_engine(db_url)
    study_id, people = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    yield engine, study_id, people[0]
    st.cache_resource.clear()


@pytest.mark.parametrize("pair_id", [[1], {"a": 1}, True])
def test_an_open_event_naming_no_pair_gets_one_sentence(study, pair_id):
    _, _, (_, token) = study
    at = signed_in(token)
    at = submit_form(at, full_form("A"))
    shown = data(at)["question_html"]
    at = send(at, "open", {"pair_id": pair_id, "seq": 5})
    assert not at.exception  # no generic error page
    assert data(at)["flash"] == (
        "That pair is not one of your earlier answers, so it cannot be opened."
    )
    assert data(at)["question_html"] == shown and not data(at)["editing"]


def test_a_gold_pair_answered_in_another_tab_says_the_first_answer_is_final(study):
    engine, study_id, (annotator_id, token) = study
    with session(engine) as s:
        update_study_options(s, s.get(Study, study_id), qualification_gold=1)
        gold_pair = s.exec(select(Pair.id).where(Pair.pair_key == "p0")).one()
    set_gold(engine, study_id=study_id, pair_keys=["p0"], answer="chosen")
    first_tab, second_tab = signed_in(token), signed_in(token)
    assert data(first_tab)["question_html"] == data(second_tab)["question_html"]  # the check
    right = chosen_position(engine, gold_pair, annotator_id)  # passes: real pairs follow
    submit_form(first_tab, full_form(right, comment="first"))
    submit_form(second_tab, full_form(TIE, comment="second"))
    shown = data(second_tab)
    assert "first answer is final" in shown["flash"] and "not saved" in shown["flash"]
    assert "change it" not in shown["flash"] and not shown["editing"]
    with session(engine) as s:
        assert [a.comment for a in s.exec(select(Annotation)).all()] == ["first"]
