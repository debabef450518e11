"""The guard's rules (annotate/web/guard.py) in front of a stand-in app: which requests count as a maintainer's.

The served-app tests (test_guard.py) cover maintainers who sign in with their link; these
cover the organisation login (st.login's cookies) and the session registry, on both databases.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.studies.catalog import get_or_create_study
from annotate.web import guard

OIDC = {"_streamlit_user": "signed-identity-of-the-maintainer"}


def cookie_header(cookies: dict[str, str]) -> dict[str, str]:
    """The request's cookies as a header (per-request `cookies=` is deprecated in Starlette's
    test client)."""
    return {"Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items())}


class LiveSessions:
    """The Streamlit runtime's answer to "is this session open?" for the registered ids."""

    def __init__(self, live: set[str]):
        self.live = live

    def is_active_session(self, session_id: str) -> bool:
        return session_id in self.live


@pytest.fixture
def guarded(db_url, monkeypatch):
    engine = get_engine(db_url)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        boss, boss_token = create_annotator(s, name="boss", study_id=study.id, is_admin=True)
        _, ann_token = create_annotator(s, name="ann", study_id=study.id)
    live = LiveSessions({"console-session"})
    monkeypatch.setattr(guard, "_runtime", lambda: live)
    monkeypatch.setattr(guard, "_sessions", {})

    async def metrics(request):
        return PlainTextResponse("counters")

    async def download(request):
        return Response(b"secret,export", headers={"Content-Disposition": "attachment"})

    async def image(request):
        return Response(b"png", media_type="image/png")

    app = Starlette(
        routes=[
            Route("/_stcore/metrics", metrics),
            Route("/media/export.csv", download),
            Route("/media/picture.png", image),
        ],
        middleware=[
            Middleware(
                guard.StreamlitEndpointGuard, get_engine=lambda: engine, base_path=lambda: ""
            )
        ],
    )
    return TestClient(app), boss, boss_token, ann_token, live


def test_an_organisation_login_counts_while_its_console_session_is_open(guarded):
    client, boss, _, _, live = guarded
    assert client.get("/_stcore/metrics", headers=cookie_header(OIDC)).status_code == 403
    guard.register_maintainer_session("console-session", annotator_id=boss.id, cookies=OIDC)
    assert client.get("/_stcore/metrics", headers=cookie_header(OIDC)).status_code == 200
    assert client.get("/media/export.csv", headers=cookie_header(OIDC)).status_code == 200
    other = {"_streamlit_user": "someone-else"}
    assert client.get("/media/export.csv", headers=cookie_header(other)).status_code == 404
    live.live.clear()  # the console tab closed
    assert client.get("/media/export.csv", headers=cookie_header(OIDC)).status_code == 404


def test_downloads_need_a_maintainer_and_inline_media_do_not(guarded):
    client, _, boss_token, ann_token, _ = guarded
    assert client.get("/media/export.csv").status_code == 404
    assert (
        client.get(
            "/media/export.csv", headers=cookie_header({"annotate_token": ann_token})
        ).status_code
        == 404
    )
    response = client.get(
        "/media/export.csv", headers=cookie_header({"annotate_token": boss_token})
    )
    assert response.status_code == 200 and response.content == b"secret,export"
    assert client.get("/media/picture.png").status_code == 200


def test_the_guard_reads_cookies_as_the_login_link_does(guarded):
    # #18: one cookie parser (Starlette's) for login, guard and pages. The guard's own parser
    # dropped every cookie when another app on the host had set one with a space or quotes, so
    # the maintainer signed in by the login middleware was refused here.
    client, _, boss_token, _, _ = guarded
    for other_app in ('tracker={"a":1}', "pref=dark mode", 'q="x'):
        header = {"Cookie": f"{other_app}; annotate_token={boss_token}"}
        assert client.get("/media/export.csv", headers=header).status_code == 200, other_app
        assert client.get("/_stcore/metrics", headers=header).status_code == 200, other_app


def test_a_deactivated_maintainer_loses_access(guarded, db_url):
    client, boss, boss_token, _, _ = guarded
    guard.register_maintainer_session("console-session", annotator_id=boss.id, cookies=OIDC)
    with session(get_engine(db_url)) as s:
        boss = s.merge(boss)
        boss.active = False
    assert client.get("/_stcore/metrics", headers=cookie_header(OIDC)).status_code == 403
    assert (
        client.get(
            "/_stcore/metrics", headers=cookie_header({"annotate_token": boss_token})
        ).status_code
        == 403
    )


def test_uploads_only_into_a_registered_maintainer_session(guarded):
    client, boss, _, _, _ = guarded
    put = "/_stcore/upload_file/{}/file-1"
    assert client.put(put.format("console-session"), content=b"x").status_code == 403
    guard.register_maintainer_session("console-session", annotator_id=boss.id, cookies=OIDC)
    assert client.put(put.format("stranger-session"), content=b"x").status_code == 403
    # the session id alone (as a proxy log shows it) is not enough: its own cookie is needed
    assert client.put(put.format("console-session"), content=b"x").status_code == 403
    big = {"Content-Length": str((guard.UPLOAD_LIMIT_MB + 1) * 1024 * 1024)}
    too_big = client.put(
        put.format("console-session"), headers={**big, **cookie_header(OIDC)}, content=b""
    )
    assert too_big.status_code == 413


@pytest.mark.parametrize(
    ("base_path", "root_path"), [("annotate", ""), ("/annotate/", ""), ("", "/annotate")]
)
def test_the_guard_holds_under_a_path_prefix(db_url, monkeypatch, base_path, root_path):
    """Under `server.baseUrlPath` Streamlit's routes are at /annotate/_stcore/...; under an ASGI
    root_path the request's path carries the prefix too. A stranger is refused either way."""
    engine = get_engine(db_url)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        boss, boss_token = create_annotator(s, name="boss", study_id=study.id, is_admin=True)
    live = LiveSessions({"console-session"})
    live.uploaded_file_mgr = SimpleNamespace(file_storage={})  # no files held yet
    monkeypatch.setattr(guard, "_runtime", lambda: live)
    monkeypatch.setattr(guard, "_sessions", {})
    stcore = "/annotate/_stcore" if base_path else "/_stcore"
    media = "/annotate/media" if base_path else "/media"

    async def metrics(request):
        return PlainTextResponse("counters")

    async def download(request):
        return Response(b"secret,export", headers={"Content-Disposition": "attachment"})

    async def stored(request):
        return PlainTextResponse("stored")

    app = Starlette(
        routes=[
            Route(f"{stcore}/metrics", metrics),
            Route(f"{stcore}/health", metrics),
            Route(f"{media}/export.csv", download),
            Route(f"{stcore}/upload_file/{{session}}/{{file}}", stored, methods=["PUT"]),
        ],
        middleware=[
            Middleware(
                guard.StreamlitEndpointGuard,
                get_engine=lambda: engine,
                base_path=lambda: base_path,
            )
        ],
    )
    client = TestClient(app, root_path=root_path)
    assert client.get("/annotate/_stcore/metrics").status_code == 403
    assert client.get("/annotate/media/export.csv").status_code == 404
    upload = "/annotate/_stcore/upload_file/stranger-session/file-1"
    assert client.put(upload, content=b"x").status_code == 403
    assert client.get("/annotate/_stcore/health").status_code == 200  # what the page needs
    maintainer = {"annotate_token": boss_token}
    assert (
        client.get("/annotate/_stcore/metrics", headers=cookie_header(maintainer)).status_code
        == 200
    )
    assert (
        client.get("/annotate/media/export.csv", headers=cookie_header(maintainer)).status_code
        == 200
    )
    guard.register_maintainer_session("console-session", annotator_id=boss.id, cookies=maintainer)
    upload = "/annotate/_stcore/upload_file/console-session/file-1"
    assert client.put(upload, content=b"x").status_code == 403  # the session id alone: no
    ok = client.put(upload, content=b"x", headers=cookie_header(maintainer))
    assert ok.status_code == 200
