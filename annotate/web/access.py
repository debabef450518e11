"""Who may see a page, checked on every run of every page (who is signed in is decided by
annotate/web/identity.py)."""

from __future__ import annotations

import contextlib

import streamlit as st
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import get_script_run_ctx

from annotate.database import get_engine
from annotate.store.db import resolve_url
from annotate.store.models import Annotator
from annotate.web import guard as web_guard
from annotate.web.identity import (
    COOKIE,
    ENTRY_ERROR_KEY,
    OIDC_COOKIE_PREFIX,
    SESSION_KEY,
    auth_configured,
    current_user,
    ended_message,
    invalid_link_opened,
)

LABEL_PAGE = "views/label.py"  # relative to the entry script (app.py)
INVALID_LINK_MESSAGE = (
    "The link you opened is not valid: it may be cut short or mistyped, or a newer link has "
    "replaced it. Ask the study's maintainer for your current link."
)


def engine():
    """The engine for the configured database, shared by every session of the process."""
    return _engine_for(resolve_url())


@st.cache_resource(show_spinner=False)
def _engine_for(url: str):
    # Cache the engine, never a Session: sessions are opened per action.
    return get_engine(url)


def sign_in_message(*, admin: bool = False) -> None:
    what = "the maintainer console" if admin else "the labelling page"
    st.title("Please sign in")
    if invalid_link_opened():
        st.error(INVALID_LINK_MESSAGE)
    problem = st.session_state.get(ENTRY_ERROR_KEY)
    if problem:
        st.error(f"This link could not sign you in: {problem}.")
    ended = ended_message()
    if ended:
        st.warning(ended)
    st.info(
        f"To open {what}, use the personal link you were given "
        "(it looks like `http://…/?token=…`). If your link does not work any more, "
        "ask the study's maintainer for a new one."
    )
    if admin and auth_configured():
        logged_in = False
        with contextlib.suppress(Exception):
            logged_in = st.user.to_dict().get("is_logged_in") is True
        if logged_in:
            st.warning(
                "You are signed in with your organisation, but your email is not that of a "
                "maintainer account of this tool."
            )
            if st.button("Sign out of your organisation", key="oidc_logout"):
                st.logout()
        elif st.button("Sign in with your organisation", key="oidc_login", type="primary"):
            try:
                st.login()
            except StreamlitAPIException as exc:  # e.g. Authlib missing, [auth] incomplete
                st.error(f"Signing in with your organisation is not set up correctly: {exc}")


def signed_in_despite_invalid_link(user: Annotator) -> str | None:
    """What to tell someone already signed in who opened a link that is not valid."""
    if not invalid_link_opened():
        return None
    return (
        "The link you opened is not valid, so it changed nothing: you are still signed in as "
        f"{user.name}."
    )


def annotator_at_console() -> None:
    """What a signed-in annotator sees at /admin...: not a sign-in prompt (they are signed in),
    but where the console is for and the way back to their pairs."""
    st.title("For maintainers only")
    st.info(
        "This console is for the study's maintainers. You are signed in as an annotator: "
        "your pairs are on the labelling page."
    )
    with contextlib.suppress(Exception):  # the labelling page is the app's default page
        st.page_link(LABEL_PAGE, label="Back to labelling", icon=":material/rule:")


def require_user() -> Annotator:
    user = current_user()
    if user is None:
        sign_in_message()
        st.stop()
    return user


def require_admin() -> Annotator:
    user = current_user()
    session_id = _session_id()
    if user is None or not user.is_admin:
        if session_id is not None:
            web_guard.forget_session(session_id)
        if user is None:
            sign_in_message(admin=True)
        else:
            annotator_at_console()
        st.stop()
    if session_id is not None:
        # Uploads and downloads of this session are a maintainer's from now on (web_guard).
        cookies = {}
        with contextlib.suppress(Exception):  # no request context in a bare script run
            cookies = dict(st.context.cookies)
        # Only the cookies that proved this maintainer: the login cookie when their token
        # signed them in, else st.login's (a browser may also hold someone else's link).
        token = st.session_state.get(SESSION_KEY)
        proof = {
            name: value
            for name, value in cookies.items()
            if (name == COOKIE and value == token)
            or (token is None and name.startswith(OIDC_COOKIE_PREFIX))
        }
        web_guard.register_maintainer_session(session_id, annotator_id=user.id, cookies=proof)
    return user


def _session_id() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None
