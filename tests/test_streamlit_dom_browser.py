"""Streamlit's page structure as the app names it (annotate/web/streamlit_dom.py), checked in
Chromium against the running Streamlit: each name the labelling form, the pages' CSS and the
focus script rely on is there, and the connection attribute the form watches says CONNECTED
while the server answers and something else once it is gone (the form then says so)."""

from __future__ import annotations

import pytest

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.web import streamlit_dom as dom
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

FORM = '[data-part="question"]:visible'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    folder = tmp_path_factory.mktemp("streamlit-dom")
    db_url = f"sqlite:///{folder / 'dom.db'}"
    engine = get_engine(db_url)
    study_id, [(_, token)] = make_study(engine, folder, n_pairs=3, annotators=1)
    with session(engine) as s:
        _, maintainer = create_annotator(s, name="dom-boss", study_id=study_id, is_admin=True)
    with AppServer(db_url) as server:
        yield server, token, maintainer


def test_the_labelling_page_has_what_the_form_and_its_css_rely_on(site, new_page):
    server, token, _ = site
    page = new_page()
    goto(page, server.login_url(token))
    expect(page.locator(FORM)).to_be_visible()
    wait_idle(page)
    found = page.evaluate(
        """([app, attribute, mainBlock, keyPrefix]) => ({
            apps: document.querySelectorAll(app).length,
            state: document.querySelector(app)?.getAttribute(attribute) ?? null,
            mainBlocks: document.querySelectorAll(mainBlock).length,
            keyedForms: document.querySelectorAll(`[class*="${keyPrefix}label_form_"]`).length,
        })""",
        [dom.APP, dom.CONNECTION_STATE, dom.MAIN_BLOCK, dom.KEY_CLASS_PREFIX],
    )
    assert found == {"apps": 1, "state": dom.CONNECTED, "mainBlocks": 1, "keyedForms": 1}
    # the page's own CSS took: the form starts where PAGE_CSS puts it
    padding = page.evaluate(
        "(block) => getComputedStyle(document.querySelector(block)).paddingTop", dom.MAIN_BLOCK
    )
    assert padding == "57.6px"  # 3.6rem


def test_the_console_has_captions_and_streamlit_marks_retained_elements(site, new_page):
    server, _, maintainer = site
    page = new_page()
    goto(page, server.login_url(maintainer))
    expect(page.get_by_role("heading", name="Progress")).to_be_visible()
    wait_idle(page)
    assert page.locator(dom.CAPTION).count() >= 1
    # the caption rule of CONSOLE_CSS applies: full opacity
    assert (
        page.evaluate("(c) => getComputedStyle(document.querySelector(c)).opacity", dom.CAPTION)
        == "1"
    )
    # An element retained from the previous run exists only for a moment: the attribute is
    # looked for in the frontend code the running server sent this page.
    sent = page.evaluate(
        """async (name) => {
            const scripts = performance.getEntriesByType("resource")
                .map((e) => e.name).filter((u) => u.endsWith(".js"));
            for (const url of scripts) {
                const text = await (await fetch(url)).text();
                if (text.includes(JSON.stringify(name).slice(1, -1))) return true;
            }
            return false;
        }""",
        dom.RETAINED,
    )
    assert sent, f"no script the server sent names {dom.RETAINED!r}"


def test_the_connection_attribute_changes_when_the_server_goes_and_the_form_says_so(
    tmp_path, new_page
):
    require_browser()
    db_url = f"sqlite:///{tmp_path / 'gone.db'}"
    _, [(_, token)] = make_study(get_engine(db_url), tmp_path, n_pairs=2, annotators=1)
    server = AppServer(db_url).start()
    try:
        page = new_page()
        goto(page, server.login_url(token))
        expect(page.locator(FORM)).to_be_visible()
        wait_idle(page)
    finally:
        server.stop()
    page.wait_for_function(
        "([app, attribute, connected]) =>"
        " document.querySelector(app)?.getAttribute(attribute) !== connected",
        arg=[dom.APP, dom.CONNECTION_STATE, dom.CONNECTED],
        timeout=30_000,
    )
    expect(page.get_by_text("Connection to the server lost")).to_be_visible()
