"""A tab left open after Sign out in another tab of the same browser (#21 N8), in Chromium
against `annotate serve`: its Submit stores nothing and reserves nothing, and the tab says its
sign-in has ended. (tests/test_open_tab_identity.py covers every event on both databases.)"""

from __future__ import annotations

import pytest
from sqlmodel import select

from annotate.engine import get_engine
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    require_browser,
    wait_idle,
)
from tests.factories import make_study

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    folder = tmp_path_factory.mktemp("open-tab")
    db_url = f"sqlite:///{folder / 'open-tab.db'}"
    engine = get_engine(db_url)
    _, [(annotator_id, token)] = make_study(engine, folder, n_pairs=3, annotators=1)
    with AppServer(db_url) as server:
        yield server, engine, annotator_id, token


def held(engine, annotator_id: int) -> list[tuple[int, str]]:
    with session(engine) as s:
        rows = s.exec(
            select(Assignment.pair_id, Assignment.status).where(
                Assignment.annotator_id == annotator_id
            )
        ).all()
        return sorted((pair, status) for pair, status in rows)


def test_submit_in_a_tab_left_open_after_sign_out_stores_nothing(site, new_page):
    server, engine, annotator_id, token = site
    page = new_page()
    goto(page, server.login_url(token))
    expect(page.locator('[data-part="question"]:visible')).to_be_visible()
    wait_idle(page)
    for key in ["a", "4", "4", "4", "4", "4", "4", "p"]:  # a complete answer, not yet sent
        page.keyboard.press(key)
    before = held(engine, annotator_id)

    other = page.context.new_page()  # another tab of the same browser signs out
    other.goto(f"{server.app_url}/logout")  # our own page, not a Streamlit one
    other.get_by_role("button", name="Sign out and retire my link").click()
    expect(other.get_by_text("You are signed out")).to_be_visible()

    page.keyboard.press("s")
    expect(page.get_by_text("sign-in has ended")).to_be_visible()
    expect(page.get_by_text("Please sign in")).to_be_visible()
    with session(engine) as s:
        assert s.exec(select(Annotation)).all() == []
    assert held(engine, annotator_id) == before
