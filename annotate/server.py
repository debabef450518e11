"""The ASGI app that `annotate serve` runs: the Streamlit script plus login and health routes."""

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from annotate.login import LoginLinkMiddleware, login_routes

_routes = login_routes()
try:
    from annotate.db import get_engine
    from annotate.health import health_routes

    _routes += health_routes(get_engine)
except ImportError:  # pragma: no cover - health routes land with the scale-out work
    pass

app = st.App(
    str(Path(__file__).with_name("app.py")),
    routes=_routes,
    middleware=[Middleware(LoginLinkMiddleware)],
)
