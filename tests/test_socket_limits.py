"""Anonymous WebSocket sessions against the served app (`annotate serve`, #21 N2): a stranger's
sockets cannot park widget state in the server's memory, and one client holds a bounded number
of sessions. The sockets speak Streamlit's protocol directly (docs in shared notes): no browser."""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin, Subprotocol

from annotate.commands.serve import STREAMLIT_FLAGS
from annotate.engine import get_engine
from annotate.labelling.answers import MAX_COMMENT
from annotate.web.guard import MAX_SOCKETS_PER_CLIENT
from tests.browser import AppServer
from tests.factories import make_study
from tests.test_web_guard import rss_mb, streamlit_pid

MB = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sockets")
    db_url = f"sqlite:///{folder / 'sockets.db'}"
    make_study(get_engine(db_url), folder, n_pairs=3, annotators=1)
    with AppServer(db_url) as running:
        yield running


def socket_url(server: AppServer) -> str:
    return server.app_url.replace("http://", "ws://") + "/_stcore/stream"


def open_socket(server: AppServer):
    return connect(
        socket_url(server),
        subprotocols=[Subprotocol("streamlit")],
        origin=Origin(server.url),
        max_size=None,
        open_timeout=30,
    )


def rerun_message(widget_bytes: int, *, events: object = None) -> bytes:
    """A page run as a browser asks for it, carrying `widget_bytes` of widget state."""
    states = WidgetStates()
    if widget_bytes:
        filler = states.widgets.add()
        filler.id = "$$STREAMLIT_INTERNAL_KEY_filler"
        filler.string_value = "x" * widget_bytes
    if events is not None:
        trigger = states.widgets.add()
        trigger.id = "$$STREAMLIT_INTERNAL_KEY_label_form_1_new__events"
        trigger.json_trigger_value = json.dumps(events)
    msg = BackMsg(rerun_script=ClientState(query_string="", widget_states=states))
    return msg.SerializeToString()


def drain(ws, seconds: float) -> bool:
    """Read until the server closes the socket (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ws.recv(timeout=max(0.05, deadline - time.monotonic()))
        except TimeoutError:
            return False
        except ConnectionClosed:
            return True
    return False


def until_the_run_finished(ws, seconds: float) -> None:
    """Read until the page run the socket asked for has finished."""
    deadline = time.monotonic() + seconds
    while True:
        message = ForwardMsg.FromString(ws.recv(timeout=max(0.05, deadline - time.monotonic())))
        if message.WhichOneof("type") == "script_finished":
            return


def test_the_largest_legitimate_form_message_fits_the_limit():
    limit = int(STREAMLIT_FLAGS["server.maxWidgetStateSize"]) * 1_000_000
    ratings = {f"{d}_{s}": 5 for d in ("correctness", "relevance", "helpfulness") for s in "AB"}
    form = {
        "slot": "A",
        "ratings": ratings,
        "reason": "personal_fit",
        "comment": "\U0001f600" * MAX_COMMENT,  # 4 bytes each, escaped by JSON to 12
        "aspects": [{"A": 2, "B": 2} for _ in range(200)],
    }
    largest = len(rerun_message(0, events=[{"event": "submit", "value": {"form": form}}]))
    assert largest < limit / 4, f"{largest} bytes: raise server.maxWidgetStateSize"
    assert limit <= 1_000_000  # and the limit stays small: see the next test


def test_ten_anonymous_sockets_sending_20_mb_each_leave_the_servers_memory(server):
    pid = streamlit_pid(server)
    with open_socket(server) as warm:  # the app's script loaded once, as for any visitor
        warm.send(rerun_message(0))
        until_the_run_finished(warm, 30)
    before = rss_mb(pid)
    peak = [before]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            stop.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    closed = 0
    with contextlib.ExitStack() as sockets:
        for _ in range(10):
            ws = sockets.enter_context(open_socket(server))
            with contextlib.suppress(ConnectionClosed):
                ws.send(rerun_message(20 * MB))
            closed += drain(ws, 10)
        held = rss_mb(pid)  # the attacker keeps its sockets open
        stop.set()
        watcher.join()
    print(f"server RSS {before:.0f} MB, peak {peak[0]:.0f} MB, held {held:.0f} MB")
    assert closed == 10, "every oversized message closes its socket"
    assert held - before < 100, f"grew by {held - before:.0f} MB"


def test_sockets_just_under_the_limit_are_accepted_and_bounded_per_client(server):
    pid = streamlit_pid(server)
    before = rss_mb(pid)
    with contextlib.ExitStack() as sockets:
        opened = []
        for _ in range(MAX_SOCKETS_PER_CLIENT):
            ws = sockets.enter_context(open_socket(server))
            ws.send(rerun_message(900_000))
            opened.append(ws)
        # a message under the limit is taken: its page run finishes on the open socket (a
        # socket the server closed raises ConnectionClosed here, however late it closed)
        for ws in opened:
            until_the_run_finished(ws, 30)
        with pytest.raises(InvalidStatus):  # one more from the same client is refused
            open_socket(server)
        held = rss_mb(pid)
    print(f"{MAX_SOCKETS_PER_CLIENT} sockets x 0.9 MB: server RSS {before:.0f} -> {held:.0f} MB")
    assert held - before < 100
    # the sockets' slots are free again once they closed
    deadline = time.monotonic() + 30
    while True:
        try:
            with open_socket(server):
                break
        except InvalidStatus:
            assert time.monotonic() < deadline, "closed sockets still count"
            time.sleep(0.1)  # poll: the server notices the closes on its own time
