"""Streamlit's own endpoints against a stranger, on the served app (`annotate serve`).

A stranger gets a Streamlit session from the sign-in page. Before the guard (annotate/web/guard.py)
that was enough to store files in the server's memory through
`PUT /_stcore/upload_file/<session>/<file>`, to read `/_stcore/metrics` and to fetch a console
download from its `/media/` address. These tests do what the stranger did, with a real browser
for the session and raw HTTP for the rest, and watch the server process's memory.
"""

from __future__ import annotations

import http.client
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.studies.catalog import get_or_create_study
from annotate.web.guard import MAX_UPLOADS_PER_SESSION, UPLOAD_LIMIT_MB
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    require_browser,
    rerun,
)
from tests.factories import make_study, pair_record, write_jsonl

pytestmark = pytest.mark.browser

MB = 1024 * 1024


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    folder = tmp_path_factory.mktemp("guard")
    db_url = f"sqlite:///{folder / 'guard.db'}"
    engine = get_engine(db_url)
    _, people = make_study(engine, folder, n_pairs=3, annotators=1)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        _, boss = create_annotator(s, name="boss", study_id=study.id, is_admin=True)
    with AppServer(db_url) as server:
        yield {"server": server, "annotator": people[0][1], "maintainer": boss, "folder": folder}


def streamlit_pid(server: AppServer) -> int:
    """The process that holds the sessions: `annotate serve` itself, which runs Streamlit in
    its own process (annotate/web/serve_process.py)."""
    assert server._process is not None  # started
    return server._process.pid


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field}")


def reset_peak_rss(pid: int) -> None:
    """Start the process's peak resident size (VmHWM) afresh at its current size (Linux)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def open_session(page, url: str) -> tuple[str, dict[str, str]]:
    """Open `url` in the browser; return its Streamlit session id and the page's cookies."""
    found: list[str] = []

    def frames(ws):
        def read(payload):
            if isinstance(payload, bytes | bytearray):
                msg = ForwardMsg.FromString(bytes(payload))
                if msg.WhichOneof("type") == "new_session":
                    found.append(msg.new_session.initialize.session_id)

        ws.on("framereceived", read)

    page.on("websocket", frames)
    goto(page, url)
    deadline = time.monotonic() + 10
    while not found and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert found, "no session id seen on the WebSocket"
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    return found[-1], cookies


def request(
    server: AppServer,
    method: str,
    path: str,
    *,
    cookies: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    body_size: int = 0,
    pause: float = 0,
) -> tuple[int | None, bytes]:
    """A raw HTTP request; a multipart upload of `body_size` zero bytes when given, sent
    `pause` seconds after the headers (as a browser on a slow link does). Returns (status,
    body), status None when the server hung up before answering."""
    netloc = urlsplit(server.url).netloc
    host, port = netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    head = tail = b""
    if body_size:
        boundary = "annotate-test-boundary"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            'filename="pairs.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", **(headers or {})}
    conn.putrequest(method, path, skip_accept_encoding=True)
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    if cookies:
        conn.putheader("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()))
    if body_size or method in ("PUT", "POST"):
        conn.putheader("Content-Length", str(len(head) + body_size + len(tail)))
    conn.endheaders()
    try:
        time.sleep(pause)
        if body_size:
            conn.send(head)
            chunk = b"\0" * MB
            for start in range(0, body_size, MB):
                conn.send(chunk[: min(MB, body_size - start)])
            conn.send(tail)
        response = conn.getresponse()
        return response.status, response.read()
    except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
        return None, b""
    finally:
        conn.close()


def upload(
    server, session_id: str, cookies: dict[str, str], size: int, *, pause: float = 0
) -> int | None:
    xsrf = cookies.get("_streamlit_xsrf", "")
    status, _ = request(
        server,
        "PUT",
        f"/_stcore/upload_file/{session_id}/{uuid.uuid4().hex}",
        cookies=cookies,
        headers={"X-Xsrftoken": xsrf},
        body_size=size,
        pause=pause,
    )
    return status


def test_a_strangers_uploads_are_refused_and_the_server_keeps_its_memory(site, new_page):
    server = site["server"]
    pid = streamlit_pid(server)
    visitors = [open_session(new_page(), server.url + "/") for _ in range(2)]
    reset_peak_rss(pid)
    before = rss_mb(pid)
    statuses = []
    for session_id, cookies in visitors:
        for _ in range(3):
            statuses.append(upload(server, session_id, cookies, 60 * MB))
    # the peak since the reset: a body held even for a moment shows, however soon it is freed
    grown = rss_mb(pid, "VmHWM") - before
    # 360 MB sent; before the guard every upload was kept (204) and the process grew by more.
    assert all(status in (403, None) for status in statuses), statuses
    assert grown < 60, f"the server grew by {grown:.0f} MB"


def test_an_annotators_uploads_are_refused_too(site, new_page):
    server = site["server"]
    session_id, cookies = open_session(new_page(), server.login_url(site["annotator"]))
    assert "annotate_token" in cookies
    assert upload(server, session_id, cookies, 1024) == 403
    # a small body that arrives late still gets the answer, not a reset
    assert upload(server, session_id, cookies, 1024, pause=0.5) == 403


def test_a_maintainer_uploads_pairs_in_the_console_within_the_limits(site, new_page):
    server = site["server"]
    page = new_page()
    session_id, cookies = open_session(page, server.login_url(site["maintainer"]))
    goto(page, server.url + "/admin-pairs")
    # the console's own uploader, through the guard
    pairs = write_jsonl(site["folder"] / "more.jsonl", [pair_record(f"new-{i}") for i in range(2)])
    page.get_by_text("Upload pairs").click()
    with rerun(page):
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(pairs))
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    expect(page.get_by_text("2 pairs added")).to_be_visible()

    session_id, cookies = open_session(page, server.url + "/admin-pairs")
    statuses = [upload(server, session_id, cookies, 1024) for _ in range(MAX_UPLOADS_PER_SESSION)]
    assert statuses == [204] * MAX_UPLOADS_PER_SESSION
    # too many files held at once; the maintainer's browser reads why, even when the body comes
    # after the server has decided (it used to answer and hang up, and the client then got a
    # reset instead of the answer)
    assert upload(server, session_id, cookies, 1024) == 429
    assert upload(server, session_id, cookies, 1024, pause=0.5) == 429
    assert upload(server, session_id, cookies, 5 * MB, pause=0.5) == 429
    # past the size limit the server answers at once and closes: the client may only see that
    assert upload(server, session_id, cookies, (UPLOAD_LIMIT_MB + 1) * MB) in (413, None)


def test_a_maintainers_session_id_alone_does_not_let_a_stranger_upload(site, new_page):
    server = site["server"]
    page = new_page()
    open_session(page, server.login_url(site["maintainer"]))
    boss_session, boss_cookies = open_session(page, server.url + "/admin-pairs")
    _, stranger_cookies = open_session(new_page(), server.url)
    # the stranger learned the maintainer's session id (a proxy log): own cookies, its id
    assert upload(server, boss_session, stranger_cookies, 1024) == 403
    assert upload(server, boss_session, boss_cookies, 1024) in (204, 429)


def test_metrics_and_other_internal_routes_are_for_maintainers(site, new_page):
    server = site["server"]
    assert request(server, "GET", "/_stcore/health")[0] == 200
    assert request(server, "GET", "/_stcore/host-config")[0] == 200
    assert request(server, "GET", "/_stcore/metrics")[0] == 403
    annotator = {"annotate_token": site["annotator"]}
    assert request(server, "GET", "/_stcore/metrics", cookies=annotator)[0] == 403
    maintainer = {"annotate_token": site["maintainer"]}
    assert request(server, "GET", "/_stcore/metrics", cookies=maintainer)[0] == 200


def test_console_downloads_are_unreachable_without_a_maintainer_login(site, new_page):
    server = site["server"]
    page = new_page(accept_downloads=True)
    goto(page, server.login_url(site["maintainer"]))
    goto(page, server.url + "/admin-exports")
    with page.expect_download() as caught:
        page.get_by_role("button", name="JSONL").click()
    address = urlsplit(caught.value.url).path
    assert address.startswith("/media/")
    maintainer = {"annotate_token": site["maintainer"]}
    assert request(server, "GET", address, cookies=maintainer)[0] == 200
    assert request(server, "GET", address)[0] == 404
    assert request(server, "GET", address, cookies={"annotate_token": site["annotator"]})[0] == 404
    assert request(server, "HEAD", address)[0] == 404


def login_cookie(server: AppServer, token: str, **headers: str) -> str:
    netloc = urlsplit(server.url).netloc
    host, port = netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"/?token={token}", headers=headers)
    response = conn.getresponse()
    cookie = response.getheader("set-cookie") or ""
    conn.close()
    return cookie


def test_the_login_cookie_is_secure_behind_a_trusted_proxy_only(site):
    server = site["server"]
    token = site["annotator"]
    https = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
    # 127.0.0.1 is trusted by default (uvicorn's FORWARDED_ALLOW_IPS)
    assert "Secure" in login_cookie(server, token, **https)
    assert "Secure" not in login_cookie(server, token)
    # a proxy that is not listed cannot claim HTTPS
    db_url = server.db_url
    with AppServer(db_url, env={"FORWARDED_ALLOW_IPS": "10.9.8.7"}) as untrusting:
        assert "Secure" not in login_cookie(untrusting, token, **https)


def test_open_redirect_through_the_served_app(site):
    server = site["server"]
    netloc = urlsplit(server.url).netloc
    host, port = netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"//evil.example/?token={site['annotator']}")
    response = conn.getresponse()
    assert response.status == 303
    assert response.getheader("location") == "/evil.example/"
    conn.close()


def test_sign_out_from_the_labelling_page_retires_the_link(site, new_page):
    server = site["server"]
    engine = get_engine(server.db_url)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        _, token = create_annotator(s, name="leaving", study_id=study.id)
    page = new_page()
    goto(page, server.login_url(token))
    # one click on "Sign out" only asks; Cancel goes back to the pair with the link intact
    page.get_by_text("Sign out").first.click()
    expect(page.get_by_role("heading", name="Sign out?")).to_be_visible()
    expect(page.get_by_text("stops working on every device")).to_be_visible()
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(server.url + "/")
    assert "annotate_token" in {c["name"] for c in page.context.cookies()}
    page.get_by_text("Sign out").first.click()
    page.get_by_role("button", name="Sign out and retire my link").click()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()
    assert "annotate_token" not in {c["name"] for c in page.context.cookies()}
    # the link from the history no longer signs anyone in
    goto(page, server.login_url(token))
    expect(page.get_by_role("heading", name="Please sign in")).to_be_visible()


def test_a_link_for_another_account_asks_before_switching(site, new_page):
    server = site["server"]
    engine = get_engine(server.db_url)
    with session(engine) as s:
        study = get_or_create_study(s, "default")
        _, first = create_annotator(s, name="first-person", study_id=study.id)
        _, second = create_annotator(s, name="second-person", study_id=study.id)
    page = new_page()
    goto(page, server.login_url(first))
    page.goto(server.login_url(second))
    expect(page.get_by_role("heading", name="Switch accounts?")).to_be_visible()
    cookie = {c["name"]: c["value"] for c in page.context.cookies()}["annotate_token"]
    assert cookie == first
    page.get_by_role("button", name="Switch to the link's account").click()
    page.wait_for_url(server.url + "/")
    cookie = {c["name"]: c["value"] for c in page.context.cookies()}["annotate_token"]
    assert cookie == second
