"""Every route the served app has (annotate/web/server.py: Streamlit's own plus ours) with who
may reach it, as the guard classifies it (annotate/web/guard.py, `classify`).

A Streamlit upgrade that adds a route fails here until someone decides its class: a new internal
endpoint must neither reach strangers by accident nor block annotators. The table below is the
reviewed list for the installed Streamlit (pyproject.toml bounds it below the next minor).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import streamlit

from annotate.web import guard
from annotate.web.guard import Access, classify

ROOT = Path(__file__).resolve().parents[1]

PUBLIC, MAINTAINER, UPLOAD, MEDIA = Access.PUBLIC, Access.MAINTAINER, Access.UPLOAD, Access.MEDIA

# (route kind, path template) -> class, for streamlit 1.67 and annotate's own routes
ROUTES = {
    ("Route", "/login"): PUBLIC,  # annotate: sign in with a personal link's token
    ("Route", "/logout"): PUBLIC,  # annotate
    ("Route", "/healthz"): PUBLIC,  # annotate: the app and its database
    ("Route", "/draft"): PUBLIC,  # annotate: the form's draft (checks the annotator's login)
    ("Route", "/_stcore/health"): PUBLIC,  # the page polls it
    ("Route", "/_stcore/metrics"): MAINTAINER,  # the server's counters
    ("Route", "/_stcore/host-config"): PUBLIC,  # the page reads it on load
    ("Route", "/media/{file_id:path}"): MEDIA,  # inline images; console downloads
    ("Route", "/_stcore/upload_file/{session_id}/{file_id}"): UPLOAD,  # the console's uploads
    ("Route", "/component/{path:path}"): PUBLIC,  # components v1 assets
    ("Route", "/_stcore/bidi-components/{path:path}"): PUBLIC,  # the labelling form (v2)
    ("WebSocketRoute", "/_stcore/stream"): PUBLIC,  # the page's socket
    ("Route", "/auth/login"): PUBLIC,  # st.login (organisation sign-in)
    ("Route", "/auth/logout"): PUBLIC,  # st.logout
    ("Route", "/oauth2callback"): PUBLIC,  # st.login's identity provider answers here
    ("Route", "/_stcore/agent/interact"): MAINTAINER,  # the agent API (1.67)
    ("Route", "/_stcore/agent/openapi.json"): MAINTAINER,
    ("Route", "/_stcore/agent/mcp"): MAINTAINER,
    ("Mount", ""): PUBLIC,  # the page and Streamlit's static assets
}

_LIST_ROUTES = """
import json, os
from starlette.testclient import TestClient
from annotate.web import server
with TestClient(server.app) as client:
    assert client.get("/_stcore/health").status_code == 200  # the app and its routes are built
    built = getattr(server.app, "_starlette_app", None)
    assert built is not None, "streamlit's App no longer keeps its Starlette app in _starlette_app"
    print(json.dumps([
        [type(r).__name__, getattr(r, "path", ""), sorted(getattr(r, "methods", None) or [])]
        for r in built.routes
    ]))
"""


def served_routes(tmp_path) -> list[tuple[str, str, list[str]]]:
    """The routes of the ASGI app `annotate serve` runs, built in a process of its own (the
    Streamlit runtime is one per process)."""
    done = subprocess.run(
        [sys.executable, "-c", _LIST_ROUTES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "ANNOTATE_DATABASE_URL": f"sqlite:///{tmp_path / 'routes.db'}",
        },
    )
    assert done.returncode == 0, done.stderr
    return [tuple(route) for route in json.loads(done.stdout.strip().splitlines()[-1])]


def _example(template: str) -> str:
    """A concrete path for a route template: each {name} or {name:path} becomes `x`."""
    return re.sub(r"\{[^}]+\}", "x", template) or "/"


def test_every_route_of_the_served_app_has_its_class(tmp_path):
    routes = served_routes(tmp_path)
    print(f"streamlit {streamlit.__version__}: {len(routes)} routes")
    unknown = []
    for kind, path, methods in routes:
        expected = ROUTES.get((kind, path))
        if expected is None:
            unknown.append(f"{kind} {path} {methods}")
            continue
        print(f"{expected.value:45} {kind:15} {path or '/'} {' '.join(methods)}")
        assert classify(_example(path)) is expected, (kind, path)
    assert not unknown, (
        f"streamlit {streamlit.__version__} serves routes nobody classified: {unknown}; decide "
        "who may reach each (annotate/web/guard.py, classify) and add it to ROUTES"
    )
    # and the table holds nothing that is no longer served (a renamed route would hide there)
    assert {(kind, path) for kind, path, _ in routes} == set(ROUTES)


def test_a_new_internal_route_is_maintainer_only_until_classified():
    assert classify("/_stcore/something-new") is MAINTAINER
    assert classify("/_stcore/upload_file/s/f") is UPLOAD
    assert classify("/_stcore/bidi-components/form/index.js") is PUBLIC
    assert classify("/media/abc.png") is MEDIA


def test_the_upload_quota_sees_the_installed_streamlits_store():
    guard.check_upload_store()  # what server.py runs at start-up


def test_an_upload_store_the_quota_cannot_read_is_refused_loudly():
    class RenamedStore:  # a Streamlit whose upload manager keeps its files under another name
        def __init__(self):
            self.files_by_session = {}

    with pytest.raises(RuntimeError, match="quota cannot be enforced"):
        guard._held_in(RenamedStore(), "session")
