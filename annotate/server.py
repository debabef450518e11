"""The ASGI app that `annotate serve` runs: the Streamlit script plus login and health routes."""

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from annotate.db import get_engine
from annotate.health import health_routes
from annotate.login import LoginLinkMiddleware, login_routes

app = st.App(
    str(Path(__file__).with_name("app.py")),
    routes=[*login_routes(), *health_routes(get_engine)],
    middleware=[Middleware(LoginLinkMiddleware)],
)
