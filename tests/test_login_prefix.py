"""The login link, sign-in and sign-out when the app is served under a path prefix.

Two ways put the app under `/annotate/`: Streamlit's `server.baseUrlPath = "annotate"` (the
app's own routes then live at `/annotate/...`; how `annotate serve --base-url-path` runs it)
and an ASGI `root_path` (a server or a parent app that mounts this one there). Either way every
address the login pages give, and every redirect, stays inside the prefix and on this site
(annotate/web/login.py; tests/test_login.py covers the app at the root).
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
from annotate.web.health import health_routes
from annotate.web.login import LoginLinkMiddleware, app_path, login_routes
from annotate.web.paths import url_prefix
from annotate.web.proofs import COOKIE

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def people(db_url):
    engine = get_engine(db_url)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        _, alice = create_annotator(s, name="alice", study_id=study.id)
        _, bob = create_annotator(s, name="bob", study_id=study.id)
    return engine, alice, bob


def served(engine, *, base_url_path: str = "", root_path: str = "") -> TestClient:
    """The login middleware and routes as annotate/web/server.py wires them, in front of a stand-in
    for Streamlit's page (which, like Streamlit's, answers under the base path only)."""
    prefix = url_prefix(base_url_path)

    async def page(request):
        return PlainTextResponse("the app")

    app = Starlette(
        routes=[
            *login_routes(lambda: engine, prefix=prefix),
            *health_routes(lambda: engine, path=f"{prefix}/healthz"),
            Route(f"{prefix}/{{path:path}}", page),
        ],
        middleware=[Middleware(LoginLinkMiddleware, get_engine=lambda: engine, prefix=prefix)],
    )
    return TestClient(
        app, base_url="http://annotate.test", root_path=root_path, follow_redirects=False
    )


def valid(engine, token: str) -> bool:
    with read_session(engine) as s:
        return annotator_for_token(s, token) is not None


PREFIXED = [
    pytest.param({"base_url_path": "annotate"}, id="baseUrlPath"),
    pytest.param({"base_url_path": "/annotate/"}, id="baseUrlPath-slashes"),
    pytest.param({"root_path": "/annotate"}, id="root_path"),
]


@pytest.mark.parametrize("where", PREFIXED)
def test_a_prefixed_login_link_signs_in_and_stays_in_the_prefix(people, where):
    engine, alice, _ = people
    client = served(engine, **where)
    response = client.get(f"/annotate/?token={alice}&x=1")
    assert response.status_code == 303
    assert response.headers["location"] == "/annotate/?x=1"
    assert client.cookies.get(COOKIE) == alice
    assert client.get("/annotate/admin?token=" + alice).headers["location"] == "/annotate/admin"


# Under a root_path every path the app receives is inside it (a path without it is read as the
# app's own, as Starlette's routing reads it): only server.baseUrlPath has an outside.
@pytest.mark.parametrize("where", PREFIXED[:2])
@pytest.mark.parametrize(
    "path",
    ["/?token={t}", "/other/?token={t}", "//evil.example/?token={t}", "/annotate/../x?token={t}"],
)
def test_a_link_outside_the_prefix_lands_on_the_apps_front_page(people, where, path):
    engine, alice, _ = people
    client = served(engine, **where)
    response = client.get("http://annotate.test" + path.format(t=alice))
    assert response.status_code == 303
    assert response.headers["location"] == "/annotate/"


@pytest.mark.parametrize("where", PREFIXED)
def test_sign_out_under_the_prefix(people, where):
    engine, alice, bob = people
    client = served(engine, **where)
    client.get(f"/annotate/?token={alice}")
    asked = client.get("/annotate/logout", headers=SAME_SITE)
    assert asked.status_code == 200 and "Sign out?" in asked.text
    assert "<form method='post' action='/annotate/logout'>" in asked.text
    assert "href='/annotate/'>Cancel" in asked.text  # back to the pair, inside the prefix
    assert valid(engine, alice)
    done = client.post("/annotate/logout", headers=SAME_SITE)
    assert done.status_code == 200 and "signed out" in done.text
    assert client.cookies.get(COOKIE) is None
    assert not valid(engine, alice) and valid(engine, bob)


@pytest.mark.parametrize("where", PREFIXED)
def test_switching_accounts_under_the_prefix(people, where):
    engine, alice, bob = people
    client = served(engine, **where)
    client.get(f"/annotate/?token={alice}")
    asked = client.get(f"/annotate/label?token={bob}")
    assert "Switch accounts?" in asked.text
    assert "<form method='post' action='/annotate/login'>" in asked.text
    assert "name='next' value='/annotate/label'" in asked.text
    switched = client.post(
        "/annotate/login", data={"token": bob, "next": "/annotate/label"}, headers=SAME_SITE
    )
    assert switched.status_code == 303 and switched.headers["location"] == "/annotate/label"
    assert client.cookies.get(COOKIE) == bob


@pytest.mark.parametrize("where", PREFIXED)
@pytest.mark.parametrize(
    "next_", ["/", "//evil.example/", "/\\evil.example/", "/annotate/../x", "/annotatex/", ""]
)
def test_the_switch_never_sends_the_browser_out_of_the_prefix(people, where, next_):
    engine, _, bob = people
    client = served(engine, **where)
    switched = client.post("/annotate/login", data={"token": bob, "next": next_}, headers=SAME_SITE)
    assert switched.status_code == 303 and switched.headers["location"] == "/annotate/"


@pytest.mark.parametrize("where", PREFIXED)
def test_the_health_check_answers_under_the_prefix(people, where):
    engine, _, _ = people
    response = served(engine, **where).get("/annotate/healthz")
    assert response.status_code == 200 and response.text == "ok"


def test_app_path_keeps_inside_the_prefix():
    assert app_path("/annotate/label?x=1", prefix="/annotate") == "/annotate/label?x=1"
    assert app_path("/annotate", prefix="/annotate") == "/annotate"
    for outside in [
        "/",
        "/annotatex",
        "//evil/annotate/",
        "/annotate/../evil",
        "/annotate/..\\evil",
        "/annotate/%2e%2E/evil",
        "/annotate/./../evil",
    ]:
        assert app_path(outside, prefix="/annotate") == "/annotate/", outside
    # without a prefix the rule is local_path's, as before
    assert app_path("//evil/x", prefix="") == "/evil/x"


def test_url_prefix_is_streamlits_base_url_path_as_a_path():
    assert url_prefix("") == "" and url_prefix(None) == "" and url_prefix("/") == ""
    assert url_prefix("annotate") == url_prefix("/annotate/") == "/annotate"
    assert url_prefix("tools/annotate") == "/tools/annotate"


@pytest.mark.parametrize("where", PREFIXED)
def test_the_login_cookie_belongs_to_the_prefix(people, where):
    """Another app on the same host (another study under /other/, say) neither receives the
    token nor replaces it with its own; a cookie left at / by an earlier sign-in is cleared, so
    that it cannot shadow the new one."""
    engine, alice, _ = people
    client = served(engine, **where)
    response = client.get(f"/annotate/?token={alice}")
    cookies = response.headers.get_list("set-cookie")
    signed = [c for c in cookies if c.startswith(f"{COOKIE}={alice}")]
    assert len(signed) == 1 and "Path=/annotate;" in signed[0] + ";"
    cleared = [c for c in cookies if "Path=/;" in c + ";"]
    assert len(cleared) == 1 and "Max-Age=0" in cleared[0]
    done = client.post("/annotate/logout", headers=SAME_SITE)
    removed = done.headers.get_list("set-cookie")
    assert {("Path=/annotate;" in c + ";", "Max-Age=0" in c) for c in removed} == {
        (True, True),
        (False, True),
    }


def test_at_the_root_the_cookie_is_the_hosts_as_before(people):
    engine, alice, _ = people
    response = served(engine).get(f"/?token={alice}")
    [cookie] = response.headers.get_list("set-cookie")
    assert cookie.startswith(f"{COOKIE}={alice}") and "Path=/;" in cookie + ";"
