"""The ASGI app that `annotate serve` runs: the Streamlit script plus login and health routes,
behind the middleware that keeps Streamlit's internal endpoints for maintainers (annotate/web/guard.py)
and the one that tells the page where the app is (annotate/web/page_base.py)."""

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware
from streamlit import config

from annotate.engine import get_engine
from annotate.web.drafts import draft_routes
from annotate.web.guard import UPLOAD_LIMIT_MB, StreamlitEndpointGuard, check_upload_store
from annotate.web.health import health_routes
from annotate.web.login import LoginLinkMiddleware, login_routes
from annotate.web.page_base import PageBaseHint
from annotate.web.paths import url_prefix
from annotate.web.views.admin import url_paths
from annotate.web.widget_state import check_session_state

# The upload quota reads Streamlit's upload store: refuse to start where it cannot.
check_upload_store()
# Sessions forget the widgets they no longer show by reading Streamlit's session state: the same.
check_session_state()

# The uploader shows this limit and Streamlit enforces it while reading; a larger configured
# value (an old config.toml said 1,024) is lowered to what a console pairs file needs.
if config.get_option("server.maxUploadSize") > UPLOAD_LIMIT_MB:
    config.set_option("server.maxUploadSize", UPLOAD_LIMIT_MB, "annotate/web/guard.py")


def _base_path() -> str:
    return config.get_option("server.baseUrlPath") or ""


# Streamlit serves its page and endpoints under server.baseUrlPath (read once, when it builds its
# routes; `streamlit run` has loaded the configuration before importing this file): ours go there
# too, so that a reverse proxy passing only /annotate/ reaches sign-in, sign-out and /healthz.
PREFIX = url_prefix(_base_path())

app = st.App(
    str(Path(__file__).with_name("app.py")),
    routes=[
        *login_routes(get_engine, prefix=PREFIX),
        *draft_routes(get_engine, prefix=PREFIX),
        *health_routes(get_engine, path=f"{PREFIX}/healthz"),
    ],
    middleware=[
        Middleware(StreamlitEndpointGuard, get_engine=get_engine, base_path=_base_path),
        Middleware(LoginLinkMiddleware, get_engine=get_engine, prefix=PREFIX),
        Middleware(PageBaseHint, page_paths=url_paths()),
    ],
)
