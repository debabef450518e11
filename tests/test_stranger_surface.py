"""What the served app (`annotate serve`) tells a stranger and takes from a page (#21 N13, N11).

Over Streamlit's own WebSocket protocol and plain HTTP (no browser needed): a stranger's first
frame names no script path or Python version; a stranger's and an annotator's navigation list
no console page but the console's front door; JSON nested 1,000 deep from a signed-in page
gives no error page and no traceback; a bad Range on `/media` does not tell the file's size.
In Chromium: names in the console keep no live link (GFM autolinks).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from websockets.sync.client import connect
from websockets.typing import Origin, Subprotocol

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.studies.catalog import get_or_create_study
from annotate.web.inert import WORD_JOINER, md_literal
from annotate.web.socket_frames import SCRIPT_DIR, json_depth_exceeds
from annotate.web.views.admin import PAGES
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    new_page_fixture,
)
from tests.factories import make_study

HOSTILE_STUDY = "www.evil.example"
RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN  # a newer run replaced this one: keep reading


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stranger")
    db_url = f"sqlite:///{folder / 'stranger.db'}"
    engine = get_engine(db_url)
    _, [(_, annotator)] = make_study(engine, folder, n_pairs=3, annotators=1, study=HOSTILE_STUDY)
    with session(engine) as s:
        study = get_or_create_study(s, HOSTILE_STUDY)
        _, boss = create_annotator(s, name="boss", study_id=study.id, is_admin=True)
    with AppServer(db_url) as running:
        yield running, {"annotator": annotator, "maintainer": boss}


def page_run(
    server: AppServer, *, token: str | None = None, widgets=None
) -> list[tuple[bytes, ForwardMsg]]:
    """One page run on a new socket (with the login cookie of `token`), every frame of it;
    with `widgets`, a second run that sends them (a component's event) and its frames."""
    headers = {"Cookie": f"annotate_token={token}"} if token else {}
    url = server.app_url.replace("http://", "ws://") + "/_stcore/stream"
    with connect(
        url,
        subprotocols=[Subprotocol("streamlit")],
        origin=Origin(server.url),
        additional_headers=headers,
        max_size=None,
        open_timeout=60,
    ) as ws:
        frames = _run(ws, WidgetStates())
        if widgets is not None:
            frames += _run(ws, widgets(frames))
        return frames


def _run(ws, states: WidgetStates) -> list[tuple[bytes, ForwardMsg]]:
    ws.send(BackMsg(rerun_script=ClientState(widget_states=states)).SerializeToString())
    frames = []
    while True:
        raw = ws.recv(timeout=90)
        frames.append((raw, ForwardMsg.FromString(raw)))
        msg = frames[-1][1]
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished != RERUN:
            return frames  # (raw, parsed) pairs


def parsed(frames) -> list[ForwardMsg]:
    return [msg for _, msg in frames]


def test_a_strangers_first_frame_names_no_path_or_python_version(server):
    running, _ = server
    frames = page_run(running)
    python = ".".join(map(str, sys.version_info)).encode()
    for raw, _ in frames:
        assert SCRIPT_DIR not in raw and python not in raw
    [new_session] = [m.new_session for m in parsed(frames) if m.WhichOneof("type") == "new_session"]
    assert not new_session.main_script_path.startswith("/")
    assert new_session.initialize.environment_info.python_version == ""


@pytest.mark.parametrize("who", [None, "annotator"])
def test_the_navigation_of_strangers_and_annotators_lists_no_console_page(server, who):
    running, tokens = server
    frames = page_run(running, token=tokens[who] if who else None)
    listed = {
        page.url_pathname
        for m in parsed(frames)
        if m.WhichOneof("type") == "navigation"
        for page in m.navigation.app_pages
    }
    console = {url_path for *_, url_path in PAGES}
    assert listed and listed & console <= {"admin"}, listed  # the front door, nothing more


def test_json_nested_1000_deep_from_a_page_gives_no_error_and_no_traceback(server):
    running, tokens = server
    logged = len(running.logs())

    def deep_event(frames):
        [form] = [
            m.delta.new_element.bidi_component
            for m in parsed(frames)
            if m.WhichOneof("type") == "delta"
            and m.delta.new_element.WhichOneof("type") == "bidi_component"
        ]
        states = WidgetStates()
        trigger = states.widgets.add()
        trigger.id = f"$$STREAMLIT_INTERNAL_KEY_{form.id}__events"
        trigger.json_trigger_value = "[" * 1000 + "]" * 1000
        return states

    frames = page_run(running, token=tokens["annotator"], widgets=deep_event)
    kinds = [
        m.delta.new_element.WhichOneof("type")
        for m in parsed(frames)
        if m.WhichOneof("type") == "delta"
    ]
    assert "exception" not in kinds
    said = running.logs()[logged:]
    assert "Traceback" not in said and "RecursionError" not in said
    assert "nested deeper than" in said  # one sentence in the log instead


def test_json_depth_rule():
    assert not json_depth_exceeds(json.dumps({"form": {"ratings": {"a": [1, 2]}}, "x": "[[[["}))
    assert json_depth_exceeds("[" * 40 + "]" * 40)
    assert not json_depth_exceeds(json.dumps(["[" * 100]))  # brackets inside a string


def test_a_bad_range_on_media_does_not_tell_the_files_size(server):
    running, _ = server
    favicon = next(
        m.page_config_changed.favicon
        for m in parsed(page_run(running))
        if m.WhichOneof("type") == "page_config_changed" and m.page_config_changed.favicon
    )
    assert favicon.startswith("/media/") or "/media/" in favicon
    url = running.url + favicon[favicon.index("/media/") :]
    request = urllib.request.Request(url, headers={"Range": "bytes=999999999-"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code in (400, 416)
    assert "content-range" not in {k.lower() for k in refused.value.headers}


def test_md_literal_breaks_every_autolink():
    for name in ("www.evil.example", "https://evil.example/x", "a@evil.example"):
        out = md_literal(name)
        assert WORD_JOINER in out
        assert out.replace(WORD_JOINER, "").replace("\\", "") == name


@pytest.mark.browser
def test_names_in_the_console_keep_no_live_link(server, new_page):
    from playwright.sync_api import expect

    from tests.browser import goto, require_browser

    require_browser()
    running, tokens = server
    page = new_page(viewport={"width": 1440, "height": 1200})
    goto(page, running.login_url(tokens["maintainer"]))
    goto(page, f"{running.url}/admin-studies")  # the only study is the hostile one
    expect(page.get_by_text("Options of").first).to_be_visible(timeout=30_000)
    assert page.locator("a[href*='evil.example']").count() == 0
