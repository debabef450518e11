"""A tab left open acts only while its sign-in lasts (#21 N8, annotate/web/identity.py).

After Sign out, a new link or deactivation, an event of a page shown earlier (Submit, skip,
open, a draft) stores nothing and reserves nothing; the tab says why. A Prolific participant
who opens the study's link twice works in both tabs (the address is their sign-in; the second
tab does not end the first). Both databases.
"""

from __future__ import annotations

import pytest
import streamlit as st
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotate.engine import get_engine
from annotate.people.auth import reissue_token
from annotate.store.db import ENV_VAR, session
from annotate.store.models import Annotation, Annotator, Assignment, Study
from annotate.studies.catalog import update_study_options
from tests.factories import make_study
from tests.test_label_app import APP, data, full_form, send, signed_in, submit_form


@pytest.fixture
def study(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, db_url)
    st.cache_resource.clear()
    engine = get_engine(db_url)
    study_id, people = make_study(engine, tmp_path, n_pairs=4, annotators=1)
    with session(engine) as s:
        update_study_options(s, s.get(Study, study_id), allow_prolific=True)
    yield engine, people[0]
    st.cache_resource.clear()


def answers(engine) -> list[Annotation]:
    with session(engine) as s:
        return list(s.exec(select(Annotation)).all())


def reservations(engine, annotator_id: int) -> list[tuple[int, str]]:
    with session(engine) as s:
        rows = s.exec(
            select(Assignment.pair_id, Assignment.status).where(
                Assignment.annotator_id == annotator_id
            )
        ).all()
        return sorted((pair, status) for pair, status in rows)


def sign_out(engine, annotator_id: int) -> None:
    """What `POST /logout` and the console's "New link" do: the account gets a new token."""
    with session(engine) as s:
        reissue_token(s, s.get_one(Annotator, annotator_id))


def warnings(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


@pytest.mark.parametrize(
    "event",
    [
        ("submit", {"form": full_form("A"), "seconds": 3.0, "seq": 1}),
        ("skip", {"form": {}, "seconds": 1.0, "seq": 1}),
        ("draft", {"form": {"slot": "B"}, "seconds": 2.0}),
    ],
    ids=lambda e: e[0],
)
def test_an_open_tab_stores_and_reserves_nothing_after_sign_out(study, event):
    engine, (annotator_id, token) = study
    at = signed_in(token)
    assert data(at)["question_html"]
    before = reservations(engine, annotator_id)
    sign_out(engine, annotator_id)
    name, value = event
    at = send(at, name, value)
    assert not at.exception
    assert answers(engine) == []
    assert reservations(engine, annotator_id) == before  # no pair released or reserved
    with session(engine) as s:
        assert s.exec(select(Assignment.draft).where(Assignment.draft.is_not(None))).all() in (
            [],
            [None],
        )
    assert not at.get("bidi_component")  # no pair shown
    assert at.title[0].value == "Please sign in"
    assert "sign-in has ended" in warnings(at) and "not saved" in warnings(at)


def test_an_open_tab_cannot_open_an_earlier_answer_after_sign_out(study):
    engine, (annotator_id, token) = study
    at = signed_in(token)
    first = data(at)
    at = submit_form(at, full_form("A"))
    [answer] = answers(engine)
    sign_out(engine, annotator_id)
    at = send(at, "open", {"pair_id": answer.pair_id, "seq": 2})
    assert not at.exception and not at.get("bidi_component")
    assert first["question_html"] not in str([m.value for m in at.markdown])


def prolific_tab(pid: str = "P1", session_id: str = "S1") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"PROLIFIC_PID": pid, "STUDY_ID": "ANY", "SESSION_ID": session_id})
    return at.run()


def test_a_participant_who_opens_the_link_twice_works_in_both_tabs(study):
    engine, _ = study
    first_tab = prolific_tab()
    second_tab = prolific_tab()  # the same address again: the same participant
    assert data(first_tab)["question_html"] == data(second_tab)["question_html"]
    submit_form(first_tab, full_form("A", comment="first tab"))
    assert not first_tab.exception
    assert [a.comment for a in answers(engine)] == ["first tab"]
    # the second tab still holds the pair the first answered: told, nothing replaced
    submit_form(second_tab, full_form("B", comment="second tab"))
    assert "answered in another tab" in data(second_tab)["flash"]
    assert [a.comment for a in answers(engine)] == ["first tab"]
    # and both tabs go on with the next pair
    submit_form(first_tab, full_form("A", comment="first tab again"))
    assert sorted(a.comment for a in answers(engine)) == ["first tab", "first tab again"]


def test_a_deactivated_participants_open_tab_stores_nothing(study):
    engine, _ = study
    tab = prolific_tab()
    with session(engine) as s:
        person = s.exec(select(Annotator).where(Annotator.external_id == "P1")).one()
        person.active = False
        s.add(person)
    submit_form(tab, full_form("A"))
    assert not tab.exception and answers(engine) == []
    assert not tab.get("bidi_component")
