"""What the page's WebSocket carries, made safe in both directions (#21 N13).

- **To the browser**: Streamlit's first frame of every page run (`new_session`) names the
  server's absolute script path and its Python version and operating system. Nobody's page
  needs them and every stranger gets them: `hide_server_details` blanks them (the Streamlit
  version stays: the page checks it against its own).
- **From the browser**: a component's event is JSON that Streamlit decodes before any code of
  ours runs; JSON nested 1,000 deep ends in a RecursionError, a generic error page and a
  traceback in the log. `refuse_deep_values` drops such a value (the page run sees no event)
  and logs one sentence. The labelling form's deepest message is 4 levels.

Both parse only what they must: a frame to the browser is decoded only when it contains the
script's directory, a message from the browser only when it has more brackets than the limit.
"""

from __future__ import annotations

import logging
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

MAX_JSON_DEPTH = 32
SCRIPT_DIR = str(Path(__file__).parent).encode()
SHOWN_SCRIPT_PATH = "app.py"
_log = logging.getLogger("annotate.web")


def hide_server_details(frame: bytes) -> bytes:
    """`frame` (a serialized ForwardMsg) without the script's path and the Python version."""
    if SCRIPT_DIR not in frame:
        return frame
    msg = ForwardMsg.FromString(frame)
    if msg.WhichOneof("type") != "new_session":
        return frame
    msg.new_session.main_script_path = SHOWN_SCRIPT_PATH
    info = msg.new_session.initialize.environment_info
    info.python_version = ""
    info.server_os = ""
    shown: bytes = msg.SerializeToString()
    return shown


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON `text` nests arrays and objects deeper than `limit` (strings are
    skipped; malformed text is judged by its brackets, Streamlit refuses it anyway)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def refuse_deep_values(message: bytes, *, client: str) -> bytes:
    """`message` (a serialized BackMsg) without widget values nested deeper than the limit."""
    if message.count(b"[") + message.count(b"{") <= MAX_JSON_DEPTH:
        return message
    try:
        msg = BackMsg.FromString(message)
    except Exception:  # not a BackMsg: Streamlit refuses it itself
        return message
    if msg.WhichOneof("type") != "rerun_script":
        return message
    widgets = msg.rerun_script.widget_states.widgets
    deep = [
        i
        for i, widget in enumerate(widgets)
        if widget.WhichOneof("value") in ("json_value", "json_trigger_value")
        and json_depth_exceeds(getattr(widget, widget.WhichOneof("value")))
    ]
    if not deep:
        return message
    for i in reversed(deep):
        del widgets[i]
    _log.warning(
        "Refused a page message from %s: its data is nested deeper than %d levels.",
        client,
        MAX_JSON_DEPTH,
    )
    kept: bytes = msg.SerializeToString()
    return kept
