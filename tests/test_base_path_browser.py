"""The app served under a path prefix (`annotate serve --base-url-path annotate`), in Chromium:
an annotator's prefixed link signs in and lands on the labelling page, sign-out asks, cancels
back and retires the link without leaving the prefix, the maintainer's link lands on the
console, and Streamlit's internal endpoints under the prefix stay guarded.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.studies.catalog import get_or_create_study
from annotate.wording import PREFERENCE_QUESTION
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    require_browser,
    save_screenshot,
)
from tests.factories import make_study

pytestmark = pytest.mark.browser

SCREEN = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    folder = tmp_path_factory.mktemp("prefix")
    db_url = f"sqlite:///{folder / 'prefix.db'}"
    engine = get_engine(db_url)
    _, people = make_study(engine, folder, n_pairs=3, annotators=2)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        _, boss = create_annotator(s, name="boss", study_id=study.id, is_admin=True)
    with AppServer(db_url, base_url_path="annotate") as server:
        yield {"server": server, "annotators": [t for _, t in people], "maintainer": boss}


def cookie_names(page) -> set[str]:
    return {c["name"] for c in page.context.cookies()}


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_an_annotator_signs_in_and_out_through_the_prefixed_link(site, new_page):
    server = site["server"]
    token = site["annotators"][0]
    assert server.login_url(token) == f"{server.url}/annotate/?token={token}"
    page = new_page(viewport=SCREEN)
    goto(page, server.login_url(token))
    assert page.url == f"{server.url}/annotate/"  # the token left the address bar
    expect(page.get_by_role("radiogroup", name=PREFERENCE_QUESTION)).to_be_visible()
    assert "annotate_token" in cookie_names(page)
    save_screenshot(page, "prefix-label-1440x900.png")

    # Sign out asks first, on the prefix's own page; Cancel goes back to the pair
    page.get_by_text("Sign out").first.click()
    expect(page.get_by_role("heading", name="Sign out?")).to_be_visible()
    assert page.url == f"{server.url}/annotate/logout"
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"{server.url}/annotate/")
    expect(page.get_by_role("radiogroup", name=PREFERENCE_QUESTION)).to_be_visible()

    page.get_by_text("Sign out").first.click()
    page.get_by_role("button", name="Sign out and retire my link").click()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()
    assert page.url == f"{server.url}/annotate/logout"
    assert "annotate_token" not in cookie_names(page)
    goto(page, server.login_url(token))  # the link from the history is retired
    expect(page.get_by_role("heading", name="Please sign in")).to_be_visible()


def test_the_maintainer_lands_on_the_console_under_the_prefix(site, new_page):
    server = site["server"]
    page = new_page(viewport=SCREEN)
    goto(page, server.login_url(site["maintainer"]))
    page.wait_for_url(re.compile(re.escape(f"{server.url}/annotate/admin") + r"$"))
    expect(page.get_by_role("heading", name="Progress").first).to_be_visible()


def test_internal_endpoints_under_the_prefix_stay_guarded(site):
    server = site["server"]
    base = f"{server.url}/annotate"
    assert status(f"{base}/_stcore/health") == 200
    assert status(f"{base}/healthz") == 200
    assert status(f"{base}/_stcore/metrics") == 403
    # a link with the prefix left out still lands inside it
    with urllib.request.urlopen(
        urllib.request.Request(f"{server.url}/?token=x"), timeout=30
    ) as response:
        assert response.url == f"{base}/?link=invalid"  # the page says the link is not valid
