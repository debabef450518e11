"""A labelling session keeps what its page shows now, not every pair it ever showed.

Each pair mounts the form afresh under a key of its own (views/label.py), and Streamlit 1.67
keeps a widget's metadata, with the callbacks that close over the pair shown, for the whole
session, also after the widget is gone: in a 10-minute crowd run that was about 0.15 MB per
annotator and the replica's RSS grew 13-14 % after warm-up (issue 22, benchmarks/
bench_crowd.py). annotate/web/widget_state.py drops what Streamlit itself has let go of.
"""

from __future__ import annotations

import gc

import pytest
import streamlit as st

from annotate.engine import get_engine
from annotate.labelling.page import Item
from annotate.store.db import ENV_VAR
from tests.factories import make_study
from tests.test_label_app import data, full_form, signed_in, submit_form

PAIRS = 8


@pytest.fixture
def token(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/app.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    _, [(_, token)] = make_study(get_engine(url), tmp_path, n_pairs=PAIRS, annotators=1)
    yield token
    st.cache_resource.clear()


def live_items() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Item))


def test_pairs_shown_before_are_not_held_by_the_session(token):
    at = signed_in(token)
    for n in range(PAIRS - 2):
        assert data(at)["progress"]["done"] == n
        submit_form(at, full_form("A" if n % 2 else "B"))
        assert not at.exception
    # the pair on screen, and the one before it until the next run lets it go
    assert live_items() <= 2


def test_a_streamlit_that_moved_its_session_state_is_refused_loudly():
    from annotate.web import widget_state

    class Moved:
        _lock = None

    with pytest.raises(RuntimeError, match="session state changed"):
        widget_state._parts(Moved())
    widget_state.check_session_state()  # the installed Streamlit: where it is read
