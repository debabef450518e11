"""The server's side of the form's state machine (issue 19), driven by AppTest: every event that
carries a number is answered with it (`answered`), whatever the page then shows; "Previous pair"
is offered only where the earlier answers have a previous pair; skip on the last pair left says
so; an answer saved in another tab replaces the browser's (`reset`) with a warning.

tests/test_form_states_browser.py checks the same paths in Chromium.
"""

from __future__ import annotations

import pytest
import streamlit as st

from annotate.engine import get_engine
from annotate.queue.gold import set_gold
from annotate.store.db import ENV_VAR
from tests.factories import make_study
from tests.test_label_app import data, full_form, send, signed_in, submit_form


@pytest.fixture
def engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/app.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    yield get_engine(url)
    st.cache_resource.clear()


def test_every_numbered_event_is_answered_with_its_number(engine, tmp_path):
    _, [(_, token)] = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    at = signed_in(token)
    assert data(at)["answered"] is None
    send(at, "submit", {"form": {"slot": "A"}, "seconds": 1, "seq": 7})  # refused: incomplete
    assert data(at)["answered"] == 7 and data(at)["refused"]
    send(at, "submit", {"form": full_form("A"), "seconds": 1, "seq": 8})
    assert data(at)["answered"] == 8 and data(at)["flash"] == "Answer saved."
    send(at, "back", {"form": {}, "seconds": 0, "seq": 9})
    assert data(at)["answered"] == 9 and data(at)["editing"]
    send(at, "cancel", {"seq": 10})
    assert data(at)["answered"] == 10 and not data(at)["editing"]


def test_previous_pair_is_offered_only_where_one_exists(engine, tmp_path):
    _, [(_, token)] = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    at = signed_in(token)
    assert data(at)["can_go_back"] is False  # nothing answered yet
    submit_form(at, full_form("A"))
    assert data(at)["can_go_back"] is True
    send(at, "back", {"form": {}, "seconds": 0, "seq": 1})
    assert data(at)["editing"] and data(at)["can_go_back"] is False  # the oldest answer


def test_gold_checks_do_not_count_as_a_previous_pair(engine, tmp_path):
    study_id, [(_, token)] = make_study(
        engine, tmp_path, n_pairs=4, annotators=1, qualification_gold=2
    )
    set_gold(engine, study_id=study_id, pair_keys=["p0", "p1"], answer="tie")
    at = signed_in(token)
    submit_form(at, full_form("tie"))
    submit_form(at, full_form("tie"))
    assert data(at)["progress"]["done"] == 2
    assert data(at)["can_go_back"] is False  # the history leaves gold checks out


def test_skip_on_the_last_pair_left_says_so(engine, tmp_path):
    _, [(_, token)] = make_study(engine, tmp_path, n_pairs=1, annotators=1)
    at = signed_in(token)
    shown = data(at)["question_html"]
    send(at, "skip", {"form": {}, "seconds": 1, "seq": 3})
    assert data(at)["question_html"] == shown and data(at)["answered"] == 3
    assert "last pair left" in data(at)["flash"]


def test_an_answer_saved_in_another_tab_resets_the_form_with_a_warning(engine, tmp_path):
    _, [(_, token)] = make_study(engine, tmp_path, n_pairs=2, annotators=1)
    first_tab, second_tab = signed_in(token), signed_in(token)
    submit_form(first_tab, full_form("A", comment="first tab"))
    send(
        second_tab, "submit", {"form": full_form("B", comment="second tab"), "seconds": 1, "seq": 4}
    )
    shown = data(second_tab)
    assert shown["reset"] is True and shown["flash_tone"] == "warning"
    assert shown["answered"] == 4 and shown["initial"]["comment"] == "first tab"
    send(second_tab, "history", {"seq": 5})  # the next run does not reset again
    assert data(second_tab)["reset"] is False
