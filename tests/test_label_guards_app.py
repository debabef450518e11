"""The labelling page against careless workers and hostile visitors (#11): a Prolific study
cannot be drained by visitors who answer nothing, and a deactivated annotator's open tab saves
nothing."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from annotate.engine import get_engine
from annotate.store.db import ENV_VAR, session
from annotate.store.models import Study
from annotate.studies.catalog import update_study_options
from tests.factories import make_study
from tests.test_label_app import data

APP = "../annotate/web/app.py"
CODE = "C0DE42"


@pytest.fixture
def engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/prolific.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    engine = get_engine(url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=3, overlap_target=1)
    with session(engine) as s:
        update_study_options(
            s,
            s.get(Study, study_id),
            allow_prolific=True,
            prolific_study_id="PSTUDY",
            prolific_completion_code=CODE,
        )
    yield engine
    st.cache_resource.clear()


def visitor(pid: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"PROLIFIC_PID": pid, "STUDY_ID": "PSTUDY", "SESSION_ID": "S1"})
    return at.run()


def page_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.code]
    parts += [e.value for e in at.info] + [e.value for e in at.success]
    return "\n".join(str(p) for p in parts)


def test_the_fourth_visitor_of_a_three_pair_study_gets_no_completion_code(engine):
    for n in range(3):
        at = visitor(f"visitor{n}")
        assert not at.exception
        assert data(at)["question_html"], "each of the first three is shown a pair"
    fourth = visitor("visitor3")
    assert not fourth.exception
    shown = page_text(fourth)
    assert CODE not in shown
    assert "labelled every pair" not in shown
    assert "come back by" in shown and "looks again every" in shown


def test_an_open_tab_of_a_deactivated_annotator_saves_nothing(engine):
    from sqlmodel import select

    from annotate.people import accounts
    from annotate.people.auth import create_annotator
    from annotate.store.models import Annotation
    from tests.test_label_app import full_form, signed_in, submit_form

    with session(engine) as s:
        person, token = create_annotator(s, name="leaving", study_id=1)
    at = signed_in(token)
    accounts.set_active(engine, annotator_id=person.id, active=False)
    at = submit_form(at, full_form("A"))
    assert not at.exception
    assert not at.get("bidi_component")  # signed out: no pair shown
    with session(engine) as s:
        assert s.exec(select(Annotation)).all() == []
