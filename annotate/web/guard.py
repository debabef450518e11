"""Who may reach Streamlit's own endpoints: the ASGI middleware in front of the whole app.

Streamlit serves more than the page. Left alone, any visitor, signed in or not, could

- `PUT /_stcore/upload_file/<session>/<file>`: store files in the server's memory for the
  visitor's own session, however many, up to `server.maxUploadSize` each;
- `GET /_stcore/metrics` (and the other internal routes): read the server's counters;
- `GET /media/<file>`: fetch a console download (an annotations export, a report) by its
  address, without any login.

This middleware lets every visitor reach what the page itself needs (the WebSocket, the health
probe, host configuration, components, static files, inline media) and keeps the rest for
maintainers:

- an upload is accepted only for a session that passed the console's maintainer check
  (`register_maintainer_session`, called by `identity.require_admin`), from a request carrying
  that session's own sign-in cookie (a session id alone, as seen in a proxy log, is not
  enough), at most
  `UPLOAD_LIMIT_MB` each, `MAX_UPLOADS_PER_SESSION` files and `SESSION_UPLOAD_LIMIT_MB` held
  at once, refused from the Content-Length before any of the body is read;
- other internal routes and downloadable media files need a maintainer request: the login
  cookie of an active maintainer, or the same sign-in cookies as an open console session
  (covers maintainers signed in with their organisation through `st.login`).

The page's WebSocket is open to every visitor, but one client (network prefix of its address,
annotate/people/clients.py; behind a reverse proxy listed in FORWARDED_ALLOW_IPS, of the
address it forwards) holds at most
`MAX_SOCKETS_PER_CLIENT` at once: each socket is a Streamlit session that keeps the widget
state it is sent (at most `server.maxWidgetStateSize` a message, which `annotate serve` sets
just above the labelling form's largest message), so a stranger's sockets cannot fill the
server's memory. A socket past the limit is closed before Streamlit sees it (code 1008).

Cookies and accounts are read as everywhere else in the app (annotate/web/proofs.py, with
Starlette's cookie parser); page sockets' frames pass annotate/web/socket_frames.py both ways.

Refusals are answered before Streamlit reads anything, so they cost no memory. A refused body
that is small enough is read and thrown away first (see `_refuse`), so that the client reads the
answer instead of a reset connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from annotate.people.clients import client_key
from annotate.web.paths import is_under, route_path, url_prefix
from annotate.web.proofs import COOKIE as LOGIN_COOKIE
from annotate.web.proofs import (
    OIDC_COOKIE_PREFIX,
    account_for_token,
    active_maintainer,
    request_cookies,
)
from annotate.web.socket_frames import hide_server_details, refuse_deep_values

if TYPE_CHECKING:
    from streamlit.runtime import Runtime

# A pairs file for the console: 200 MB holds about 2,000 records of 100 KB. Bigger files go
# through `annotate import-pairs`, which streams them. The server lowers any larger
# configured value to this one (server.py).
UPLOAD_LIMIT_MB = 200
# Files a console session may hold at once (the pairs file, a few model files on the Agreement
# page), and their total: a maintainer's stolen session cannot fill the server either.
MAX_UPLOADS_PER_SESSION = 8
SESSION_UPLOAD_LIMIT_MB = 400

# How much of a refused body is read (and thrown away) before the answer: a stranger's small
# request, or any file a maintainer's session may send; larger bodies are answered at once.
DRAIN_STRANGER_BYTES = 64 * 1024
DRAIN_SECONDS = 30


# Internal routes the page needs for every visitor; everything else under /_stcore/ is the
# maintainers'.
PUBLIC_CORE = ("stream", "health", "host-config", "bidi-components/")
UPLOAD_PREFIX = "upload_file/"
# Open page sockets (Streamlit sessions) per client: a few tabs, with room for a shared
# address (an office, a campus) and for reconnects that overlap the old socket's close.
MAX_SOCKETS_PER_CLIENT = 16
POLICY_VIOLATION = 1008  # WebSocket close code


class Access(enum.Enum):
    """Who may reach a path (tests/test_route_classes.py lists every route of the installed
    Streamlit with its class, so that an upgrade that adds one fails the suite)."""

    PUBLIC = "public"  # every visitor: the page, its socket and assets, sign-in, health
    MAINTAINER = "maintainer-only"  # a maintainer's request; everyone else gets 403
    UPLOAD = "maintainer session"  # uploads into a registered maintainer session, within quotas
    MEDIA = "inline public, downloads maintainer-only"  # a download is a 404 for others


def classify(path: str) -> Access:
    """The class of `path`, relative to server.baseUrlPath: the one rule the guard applies."""
    if path.startswith("/_stcore/"):
        core = path[len("/_stcore/") :]
        if core.startswith(UPLOAD_PREFIX):
            return Access.UPLOAD
        if core in PUBLIC_CORE or core.startswith(PUBLIC_CORE[-1]):
            return Access.PUBLIC
        return Access.MAINTAINER
    if path.startswith("/media/"):
        return Access.MEDIA
    return Access.PUBLIC


@dataclass(frozen=True)
class _MaintainerSession:
    annotator_id: int
    cookie_prints: frozenset[str]


_sessions: dict[str, _MaintainerSession] = {}
_lock = threading.Lock()
_sockets: dict[str, int] = {}  # open page sockets per client (people.clients.client_key)


def _cookie_prints(cookies: dict[str, str]) -> frozenset[str]:
    """Hashes of the sign-in cookies of a request or session (never the values themselves)."""
    prints = set()
    for name, value in cookies.items():
        if value and (name == LOGIN_COOKIE or name.startswith(OIDC_COOKIE_PREFIX)):
            prints.add(hashlib.sha256(f"{name}={value}".encode()).hexdigest())
    return frozenset(prints)


def register_maintainer_session(
    session_id: str, *, annotator_id: int, cookies: dict[str, str]
) -> None:
    """Remember that this Streamlit session belongs to a signed-in maintainer."""
    entry = _MaintainerSession(annotator_id, _cookie_prints(cookies))
    with _lock:
        _sessions[session_id] = entry
        _prune()


def forget_session(session_id: str) -> None:
    with _lock:
        _sessions.pop(session_id, None)


def _prune() -> None:
    runtime = _runtime()
    if runtime is None:
        return
    for session_id in [s for s in _sessions if not runtime.is_active_session(s)]:
        del _sessions[session_id]


def _runtime() -> Runtime | None:
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


def _live_maintainer_session(session_id: str) -> _MaintainerSession | None:
    with _lock:
        entry = _sessions.get(session_id)
    runtime = _runtime()
    if entry is None or runtime is None or not runtime.is_active_session(session_id):
        return None
    return entry


def _is_active_maintainer(engine: Engine, *, annotator_id: int | None, token: str | None) -> bool:
    if token is not None:
        user = account_for_token(engine, token)
        return bool(user is not None and user.is_admin)
    return annotator_id is not None and active_maintainer(engine, annotator_id=annotator_id)


class StreamlitEndpointGuard:
    """ASGI middleware: see the module docstring."""

    def __init__(
        self, app: ASGIApp, *, get_engine: Callable[[], Engine], base_path: Callable[[], str]
    ) -> None:
        self.app = app
        self.get_engine = get_engine
        self.base_path = base_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = self._relative_path(scope)
        access = classify(path)
        if access is Access.UPLOAD:
            await self._upload(scope, receive, send, path[len("/_stcore/" + UPLOAD_PREFIX) :])
            return
        if access is Access.MAINTAINER:
            if await self._maintainer_request(scope):
                await self.app(scope, receive, send)
                return
            await _refuse(scope, receive, send, 403, "Forbidden")
            return
        if access is Access.MEDIA:
            send = _no_size_in_range_errors(send)
            if not await self._maintainer_request(scope):
                await self.app(scope, receive, _no_downloads(send))
                return
        await self.app(scope, receive, send)

    async def _socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = client_key((scope.get("client") or (None,))[0])
        with _lock:
            if _sockets.get(client, 0) >= MAX_SOCKETS_PER_CLIENT:
                refused = True
            else:
                refused = False
                _sockets[client] = _sockets.get(client, 0) + 1
        if refused:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": POLICY_VIOLATION})
            return
        try:
            await self.app(scope, _checked_messages(receive, client=client), _plain_frames(send))
        finally:
            with _lock:
                _sockets[client] -= 1
                if not _sockets[client]:
                    del _sockets[client]

    def _relative_path(self, scope: Scope) -> str:
        """The path as Streamlit routes it: without the ASGI root_path (a server or parent app
        that mounts this one puts it in front of `path`) and without server.baseUrlPath."""
        path = route_path(scope)
        base = url_prefix(self.base_path())
        if base and is_under(path, base):
            path = path[len(base) :] or "/"
        return path

    async def _maintainer_request(self, scope: Scope) -> bool:
        cookies = request_cookies(scope)
        prints = _cookie_prints(cookies)
        if prints:
            with _lock:
                sessions = list(_sessions.items())
            for session_id, entry in sessions:
                if prints & entry.cookie_prints and _live_maintainer_session(session_id):
                    return await run_in_threadpool(
                        _is_active_maintainer,
                        self.get_engine(),
                        annotator_id=entry.annotator_id,
                        token=None,
                    )
        token = cookies.get(LOGIN_COOKIE)
        if not token:
            return False
        return await run_in_threadpool(
            _is_active_maintainer, self.get_engine(), annotator_id=None, token=token
        )

    async def _upload(self, scope: Scope, receive: Receive, send: Send, rest: str) -> None:
        method = scope.get("method")
        if method == "OPTIONS":  # CORS preflight: no body, no state
            await self.app(scope, receive, send)
            return
        session_id = rest.split("/", 1)[0]
        entry = _live_maintainer_session(session_id)
        # The session id appears in addresses (proxy logs): the request must also carry the
        # sign-in cookie that session was opened with, so only the maintainer's own browser
        # can upload into it.
        if entry is not None and not (_cookie_prints(request_cookies(scope)) & entry.cookie_prints):
            entry = None
        if entry is None or not await run_in_threadpool(
            _is_active_maintainer, self.get_engine(), annotator_id=entry.annotator_id, token=None
        ):
            await _refuse(
                scope,
                receive,
                send,
                403,
                "Uploads are for maintainers only.",
                drain_up_to=DRAIN_STRANGER_BYTES,
            )
            return
        if method == "PUT":
            length = _content_length(scope)
            if length is None or length > UPLOAD_LIMIT_MB * 1024 * 1024 + 64 * 1024:
                await _refuse(
                    scope,
                    receive,
                    send,
                    413,
                    f"An upload is limited to {UPLOAD_LIMIT_MB} MB.",
                    drain_up_to=DRAIN_STRANGER_BYTES,
                )
                return
            count, held = _files_held(session_id)
            if held + length > SESSION_UPLOAD_LIMIT_MB * 1024 * 1024:
                await _refuse(
                    scope,
                    receive,
                    send,
                    413,
                    f"The uploads of one session are limited to {SESSION_UPLOAD_LIMIT_MB} MB "
                    "held at once: remove one first.",
                    drain_up_to=length,
                )
                return
            if count >= MAX_UPLOADS_PER_SESSION:
                await _refuse(
                    scope,
                    receive,
                    send,
                    429,
                    f"At most {MAX_UPLOADS_PER_SESSION} uploaded files at once: remove one first.",
                    drain_up_to=length,
                )
                return
        await self.app(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None  # chunked bodies are refused: the browser's uploader always sends a length


def _files_held(session_id: str) -> tuple[int, int]:
    """(files, bytes) the session holds in Streamlit's upload store."""
    runtime = _runtime()
    return _held_in(runtime.uploaded_file_mgr, session_id) if runtime else (0, 0)


def _held_in(manager: object, session_id: str) -> tuple[int, int]:
    # Streamlit has no public call for "what does this session hold"; its memory store keeps
    # the files in `file_storage`. Missing, that would silently turn the quota off: refuse.
    storage = getattr(manager, "file_storage", None)
    if not isinstance(storage, dict):
        raise RuntimeError(
            f"{type(manager).__name__} keeps no file_storage: this Streamlit version stores "
            "uploads elsewhere and the per-session upload quota cannot be enforced "
            "(annotate/web/guard.py, _held_in)"
        )
    files = list(storage.get(session_id, {}).values())
    return len(files), sum(len(f.data) for f in files)


def check_upload_store() -> None:
    """Fail at start-up, loudly, unless the quota can see what a session holds: one file added
    through Streamlit's own upload manager must count as one file of its size."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    manager.add_file("probe-session", UploadedFileRec("f", "probe.txt", "text/plain", b"12345"))
    if _held_in(manager, "probe-session") != (1, 5):
        raise RuntimeError(
            "Streamlit's upload store changed: the per-session upload quota cannot see a "
            "session's files (annotate/web/guard.py, check_upload_store)"
        )


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, text: str, *, drain_up_to: int = 0
) -> None:
    """Answer `status` and close. A body of at most `drain_up_to` bytes is read and thrown away
    first: closing a connection with unread bytes, or with bytes still on their way, makes the
    kernel reset it, and the client then loses the answer (a browser shows a network error
    instead of the reason). The drain keeps one chunk at a time and gives up after
    `DRAIN_SECONDS`, so a slow or silent client costs neither memory nor a stuck task."""
    length = _content_length(scope)
    if length and length <= drain_up_to:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_discard_body(receive), DRAIN_SECONDS)
    response = PlainTextResponse(
        text, status_code=status, headers={"Cache-Control": "no-store", "Connection": "close"}
    )
    await response(scope, receive, send)


async def _discard_body(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return


def _checked_messages(receive: Receive, *, client: str) -> Receive:
    """Wrap a socket's `receive`: component values nested too deep are dropped (socket_frames)."""

    async def checked() -> Message:
        message = await receive()
        data = message.get("bytes") if message["type"] == "websocket.receive" else None
        if data:
            message = {**message, "bytes": refuse_deep_values(data, client=client)}
        return message

    return checked


def _plain_frames(send: Send) -> Send:
    """Wrap a socket's `send`: no script path or Python version in a page run's first frame."""

    async def plain(message: Message) -> None:
        data = message.get("bytes") if message["type"] == "websocket.send" else None
        if data:
            message = {**message, "bytes": hide_server_details(data)}
        await send(message)

    return plain


def _no_size_in_range_errors(send: Send) -> Send:
    """Wrap `send` so that a refused Range (416) does not tell the file's size
    (`Content-Range: bytes */SIZE`): a 416 without the header, as RFC 9110 allows."""

    async def sizeless(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 416:
            headers = [(k, v) for k, v in message.get("headers", []) if k != b"content-range"]
            message = {**message, "headers": headers}
        await send(message)

    return sizeless


def _no_downloads(send: Send) -> Send:
    """Wrap `send` so that a download (a response with `Content-Disposition: attachment`,
    which is how Streamlit serves download-button files) becomes a 404; inline media pass."""
    blocked = False

    async def guarded(message: Message) -> None:
        nonlocal blocked
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            if headers.get(b"content-disposition", b"").lower().startswith(b"attachment"):
                blocked = True
                body = b"Not found"
                await send(
                    {
                        "type": "http.response.start",
                        "status": 404,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        if blocked:
            return
        await send(message)

    return guarded
