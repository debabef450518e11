"""The login link, the login cookie and sign-out, against other sites (annotate/web/login.py).

The middleware and routes run in front of a stand-in for the Streamlit app, on both databases.
"""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from annotate.engine import get_engine
from annotate.people.auth import annotator_for_token, create_annotator
from annotate.store.db import read_session, session
from annotate.studies.catalog import get_or_create_study
from annotate.web.login import LoginLinkMiddleware, local_path, login_routes
from annotate.web.proofs import COOKIE

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
OTHER_SITE = {"Sec-Fetch-Site": "cross-site"}


@pytest.fixture
def site(db_url):
    engine = get_engine(db_url)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        _, alice = create_annotator(s, name="alice", study_id=study.id)
        _, bob = create_annotator(s, name="bob <b>", study_id=study.id)

    async def page(request):
        return PlainTextResponse("the app")

    app = Starlette(
        routes=[*login_routes(lambda: engine), Route("/{path:path}", page)],
        middleware=[Middleware(LoginLinkMiddleware, get_engine=lambda: engine)],
    )
    client = TestClient(app, base_url="http://annotate.test", follow_redirects=False)
    return engine, client, alice, bob


def valid(engine, token: str) -> bool:
    with read_session(engine) as s:
        return annotator_for_token(s, token) is not None


def test_a_login_link_sets_the_cookie_and_leaves_the_address_bar(site):
    _, client, alice, _ = site
    response = client.get(f"/?token={alice}&x=1")
    assert response.status_code == 303
    assert response.headers["location"] == "/?x=1"
    assert client.cookies.get(COOKIE) == alice
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Secure" not in cookie


@pytest.mark.parametrize("path", ["//evil.example/", "///evil.example/", "/\\evil.example/"])
def test_the_redirect_stays_on_this_site(site, path):
    _, client, alice, _ = site
    response = client.get(f"http://annotate.test{path}?token={alice}")
    location = response.headers["location"]
    assert location.startswith("/") and not location.startswith(("//", "/\\"))
    assert location == "/evil.example/"


def test_local_path_never_names_another_host():
    for hostile in ["//evil", "\\\\evil", "/\\/evil", "///evil"]:
        assert local_path(hostile) == "/evil"


def test_a_wrong_token_changes_no_cookie_and_the_page_is_told(site):
    _, client, alice, _ = site
    client.get(f"/?token={alice}")
    response = client.get("/?token=not-a-token&x=1")
    # the page says the link is not valid (a bogus link looked like no link at all)
    assert response.status_code == 303 and response.headers["location"] == "/?x=1&link=invalid"
    assert "set-cookie" not in response.headers
    assert client.cookies.get(COOKIE) == alice


def test_the_cookie_is_secure_over_https(site):
    _, _, alice, _ = site
    client = TestClient(site[1].app, base_url="https://annotate.test", follow_redirects=False)
    response = client.get(f"/?token={alice}")
    assert "Secure" in response.headers["set-cookie"]


def test_a_link_does_not_switch_a_signed_in_browser_to_another_account(site):
    _, client, alice, bob = site
    client.get(f"/?token={alice}")
    response = client.get(f"/?token={bob}")  # e.g. planted by another site
    assert response.status_code == 200 and "set-cookie" not in response.headers
    assert client.cookies.get(COOKIE) == alice
    assert "Switch accounts?" in response.text and "alice" in response.text
    assert "<b>" not in response.text  # the names are shown inert
    assert response.headers["x-frame-options"] == "DENY"
    # another site posting the form is refused; the page's own button switches
    refused = client.post("/login", data={"token": bob, "next": "/"}, headers=OTHER_SITE)
    assert refused.status_code == 403 and client.cookies.get(COOKIE) == alice
    switched = client.post("/login", data={"token": bob, "next": "//evil/"}, headers=SAME_SITE)
    assert switched.status_code == 303 and switched.headers["location"] == "/evil/"
    assert client.cookies.get(COOKIE) == bob
    # the same account's link again: no question asked
    assert client.get(f"/?token={bob}").status_code == 303


def test_a_prolific_link_does_not_switch_a_signed_in_browser_either(site):
    # N7: a crowd entry link planted by another site must not silently replace the account
    engine, client, alice, _ = site
    entry = "/?PROLIFIC_PID=P1&STUDY_ID=S1&SESSION_ID=X1"
    assert client.get(entry).text == "the app"  # nobody signed in: the entry goes through
    client.get(f"/?token={alice}")
    response = client.get(entry)
    assert response.status_code == 200 and "Switch accounts?" in response.text
    assert "alice" in response.text and "another participant" in response.text
    assert "set-cookie" not in response.headers and client.cookies.get(COOKIE) == alice
    assert response.headers["x-frame-options"] == "DENY"
    assert "href='/'>Stay signed in as alice" in response.text  # without the entry
    refused = client.post("/login", data={"token": "", "next": entry}, headers=OTHER_SITE)
    assert refused.status_code == 403 and client.cookies.get(COOKIE) == alice
    switched = client.post("/login", data={"token": "", "next": entry}, headers=SAME_SITE)
    assert switched.status_code == 303 and switched.headers["location"] == entry
    assert client.cookies.get(COOKIE) is None  # the entry now signs its participant in
    assert valid(engine, alice)  # alice's own link still works
    assert client.get(entry).text == "the app"


def test_sign_out_from_another_site_only_asks(site):
    engine, client, alice, _ = site
    client.get(f"/?token={alice}")
    for method in ("GET", "POST"):
        response = client.request(method, "/logout", headers=OTHER_SITE)
        assert response.status_code == 200 and "Sign out?" in response.text
        assert client.cookies.get(COOKIE) == alice and valid(engine, alice)


def test_sign_out_asks_first_even_from_this_site(site):
    # The "Sign out" link sits next to the pair: one click must not lock the annotator out.
    engine, client, alice, _ = site
    client.get(f"/?token={alice}")
    response = client.get("/logout", headers=SAME_SITE)
    assert response.status_code == 200 and "Sign out?" in response.text
    assert client.cookies.get(COOKIE) == alice and valid(engine, alice)
    text = response.text
    assert "alice" in text
    assert "stops working on every device" in text
    assert "answers are kept" in text
    assert "maintainer for a new link" in text
    assert "<form method='post' action='/logout'>" in text
    assert "href='/'>Cancel" in text  # back to the pair
    assert response.headers["x-frame-options"] == "DENY"


def test_sign_out_retires_the_link_left_in_the_history(site):
    engine, client, alice, bob = site
    client.get(f"/?token={alice}")
    response = client.post("/logout", headers=SAME_SITE)
    assert response.status_code == 200 and "signed out" in response.text
    assert client.cookies.get(COOKIE) is None
    assert not valid(engine, alice) and valid(engine, bob)
    # the link from the browser's history signs nobody in any more
    again = client.get(f"/?token={alice}")
    assert "set-cookie" not in again.headers and client.cookies.get(COOKIE) is None


def test_an_oversized_login_form_is_refused_unread(site):
    client = site[1]
    response = client.post("/login", content=b"token=" + b"x" * 100_000, headers=SAME_SITE)
    assert response.status_code == 413
