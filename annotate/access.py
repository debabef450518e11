"""Who is signed in, checked on every run of every page."""

from __future__ import annotations

import contextlib

import streamlit as st

from annotate.auth import annotator_for_token
from annotate.db import get_engine, session
from annotate.login import COOKIE
from annotate.models import Annotator

SESSION_KEY = "annotate_token"


@st.cache_resource(show_spinner=False)
def engine():
    """One engine per process, shared by every session (never a Session: those are per action)."""
    return get_engine()


def _lookup(token: object) -> Annotator | None:
    if not isinstance(token, str) or not token:
        return None
    with session(engine()) as s:
        return annotator_for_token(s, token)


def current_user() -> Annotator | None:
    """The signed-in, active annotator or maintainer, or None.

    The token comes from `?token=` when a login link reaches the script directly (tests, or a
    server without the middleware; it is then taken out of the address bar), from this tab's
    session, or from the HttpOnly cookie that the served app sets from the login link.
    """
    candidates = []
    if "token" in st.query_params:
        candidates.append(st.query_params["token"])
        del st.query_params["token"]
    candidates.append(st.session_state.get(SESSION_KEY))
    with contextlib.suppress(Exception):  # no request context in a bare script run
        candidates.append(st.context.cookies.get(COOKIE))
    for token in candidates:
        user = _lookup(token)
        if user is not None:
            st.session_state[SESSION_KEY] = token
            return user
    st.session_state.pop(SESSION_KEY, None)
    return None


def sign_in_message(*, admin: bool = False) -> None:
    what = "the maintainer console" if admin else "the labelling page"
    st.title("Please sign in")
    st.info(
        f"To open {what}, use the personal link you were given "
        "(it looks like `http://…/?token=…`). If your link does not work any more, "
        "ask the study's maintainer for a new one."
    )


def require_user() -> Annotator:
    user = current_user()
    if user is None:
        sign_in_message()
        st.stop()
    return user


def require_admin() -> Annotator:
    user = current_user()
    if user is None or not user.is_admin:
        sign_in_message(admin=True)
        st.stop()
    return user
