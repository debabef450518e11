"""Where the app lives on its host: Streamlit's `server.baseUrlPath` as a path prefix.

With `server.baseUrlPath = "annotate"` Streamlit serves the page and its own endpoints under
`/annotate/`; our routes (sign-in, sign-out, /healthz) and every address we print or draw go
there too. The prefix is "" for an app at the root, else one leading slash and no trailing one
(`/annotate`, `/tools/annotate`), so that `prefix + "/logout"` and `prefix + "/"` are the
addresses. Nothing here imports Streamlit at module level: the CLI reads the configuration only
when it prints a link.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from annotate.errors import UserError

if TYPE_CHECKING:
    from starlette.types import Scope

_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


def url_prefix(base_url_path: str | None) -> str:
    """`server.baseUrlPath` as Streamlit applies it (slashes around it do not count), as a
    prefix: "" or "/annotate"."""
    path = (base_url_path or "").strip("/")
    return f"/{path}" if path else ""


def is_under(path: str, prefix: str) -> bool:
    """Whether `path` is `prefix` or below it ("/annotate/x" is under "/annotate",
    "/annotated" is not)."""
    return path == prefix or path.startswith(prefix + "/")


def root_path(scope: Scope) -> str:
    """Where a server or a parent app mounted this ASGI app (`root_path`), "" at the root."""
    root: str = scope.get("root_path", "")
    return root.rstrip("/")


def full_path(scope: Scope) -> str:
    """The request's path from the host's root. ASGI servers put the `root_path` in front of
    `path` (uvicorn does); older ones left it out, and it is added then."""
    root, path = root_path(scope), str(scope.get("path", ""))
    return path if not root or is_under(path, root) else root + path


def route_path(scope: Scope) -> str:
    """The request's path inside this app: `full_path` without the `root_path` ("/" at least)."""
    root, path = root_path(scope), full_path(scope)
    return path[len(root) :] or "/"


def checked_base_url_path(value: str) -> str:
    """A `--base-url-path` value without its outer slashes; refused unless it is a plain path:
    segments of letters, digits and `- . _ ~`, none of them `.` or `..`."""
    path = value.strip("/")
    segments = path.split("/") if path else []
    if any(not _SEGMENT.fullmatch(s) or s in (".", "..") for s in segments):
        raise UserError(
            f"--base-url-path {value!r} is not a plain path: use letters, digits and - . _ ~ "
            "between slashes, e.g. annotate or tools/annotate"
        )
    return path


def configured_prefix() -> str:
    """The prefix Streamlit's configuration gives the server started from this working
    directory: `STREAMLIT_SERVER_BASE_URL_PATH`, `.streamlit/config.toml` here or in the home
    folder (imports Streamlit, about a second: only for commands that print a link)."""
    from streamlit import config

    return url_prefix(config.get_option("server.baseUrlPath"))
