"""Where the page finds the app: told in the page itself, so that no request is sent to guess.

Streamlit's page looks for the server at its own address first: opened at `/admin` (a reload, a
bookmark, a link to a console page), it asks `/admin/_stcore/health` and
`/admin/_stcore/host-config`, which are 404s, and only then tries `/`. Every console page the
browser opens that way logs two errors. Streamlit reads where the app is from
`window.__streamlit.BACKEND_BASE_URL` when a page sets it before its own script runs; this
middleware puts a small script in front of Streamlit's in the page's HTML that sets it to the
page's address without its last segment when that segment is one of the app's pages (so behind
a proxy that moves the app, it is still the address the browser used).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Streamlit's own page script tag (static/index.html): ours goes just in front of it.
_STREAMLIT_SCRIPT = b'<script type="module"'


def hint_script(page_paths: Iterable[str]) -> str:
    """The script that tells Streamlit's page where the app is (its address, less the page)."""
    pages = json.dumps(sorted(set(page_paths)))
    return (
        "<script>(function(){"
        f"var pages={pages};"
        'var path=location.pathname.replace(/\\/+$/,"");'
        'var at=path.lastIndexOf("/");'
        "if(pages.indexOf(path.slice(at+1))>=0)path=path.slice(0,at);"
        "window.__streamlit=Object.assign({},window.__streamlit,"
        '{BACKEND_BASE_URL:location.origin+path+"/"});'
        "})();</script>"
    )


class PageBaseHint:
    """ASGI middleware: Streamlit's HTML page gets `hint_script` in front of its own script.
    Any other response passes untouched."""

    def __init__(self, app: ASGIApp, *, page_paths: Iterable[str]) -> None:
        self.app = app
        self.script = hint_script(page_paths).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not _wants_html(scope):
            await self.app(scope, receive, send)
            return
        # The page uncompressed (Streamlit compresses inside this middleware): a few KB.
        scope = {
            **scope,
            "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"],
        }
        start: Message | None = None
        body: list[bytes] = []

        async def hinted(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if message.get("status") == 200 and _is_plain_html(message.get("headers", [])):
                    start = message  # held until the whole page is read
                    return
                await send(message)
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            page = b"".join(body)
            if _STREAMLIT_SCRIPT in page:
                page = page.replace(_STREAMLIT_SCRIPT, self.script + _STREAMLIT_SCRIPT, 1)
            await send({**start, "headers": _headers_for(start["headers"], len(page))})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, hinted)


def _wants_html(scope: Scope) -> bool:
    """A browser opening a page (its Accept names HTML), not a script fetching data."""
    accept = dict(scope.get("headers", [])).get(b"accept", b"")
    return b"text/html" in accept


def _is_plain_html(headers: list[tuple[bytes, bytes]]) -> bool:
    """An HTML answer whose bytes can be read as they are (not compressed)."""
    found = {key.lower(): value for key, value in headers}
    return found.get(b"content-type", b"").startswith(b"text/html") and (
        b"content-encoding" not in found
    )


def _headers_for(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    # The length changed; the validators described the file on disk, not this page, and a
    # browser's cached copy must not stand for it.
    dropped = {b"content-length", b"etag", b"last-modified"}
    kept = [(key, value) for key, value in headers if key.lower() not in dropped]
    return [*kept, (b"content-length", str(length).encode())]
