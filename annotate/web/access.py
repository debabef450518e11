"""Who is signed in, checked on every run of every page."""

from __future__ import annotations

import contextlib

import streamlit as st
from sqlalchemy import func
from sqlmodel import select
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import get_script_run_ctx

from annotate import prolific
from annotate.auth import annotator_for_token
from annotate.database import get_engine
from annotate.errors import UserError
from annotate.store.db import read, resolve_url
from annotate.store.models import Annotator
from annotate.web import guard as web_guard
from annotate.web.login import COOKIE

SESSION_KEY = "annotate_token"
ENTRY_ERROR_KEY = "annotate_entry_error"
LABEL_PAGE = "views/label.py"  # relative to the entry script (app.py)


def engine():
    """The engine for the configured database, shared by every session of the process."""
    return _engine_for(resolve_url())


@st.cache_resource(show_spinner=False)
def _engine_for(url: str):
    # Cache the engine, never a Session: sessions are opened per action.
    return get_engine(url)


def _lookup(token: object) -> Annotator | None:
    if not isinstance(token, str) or not token:
        return None
    return read(engine(), lambda s: annotator_for_token(s, token))  # retried, as every read


def auth_configured() -> bool:
    """True when `[auth]` (OIDC for st.login) is configured in .streamlit/secrets.toml."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def maintainer_for_identity(s, identity: dict) -> Annotator | None:
    """The active maintainer account whose email is the OIDC identity's (case-insensitive).

    Only a completed login counts (`is_logged_in` true) and only a verified email when the
    provider says whether it is verified."""
    if identity.get("is_logged_in") is not True or identity.get("email_verified") is False:
        return None
    email = identity.get("email")
    if not isinstance(email, str) or "@" not in email:
        return None
    return s.exec(
        select(Annotator).where(
            func.lower(Annotator.email) == email.strip().lower(),
            Annotator.is_admin == True,  # noqa: E712
            Annotator.active == True,  # noqa: E712
        )
    ).first()


def _oidc_maintainer() -> Annotator | None:
    if not auth_configured():
        return None
    try:
        identity = st.user.to_dict()
    except Exception:
        return None
    return read(engine(), lambda s: maintainer_for_identity(s, identity))


def client_address() -> str | None:
    """The visitor's network address as the server saw it (behind a reverse proxy listed in
    FORWARDED_ALLOW_IPS: the address the proxy forwarded), None outside a request."""
    try:
        return st.context.ip_address
    except Exception:  # no request context in a bare script run
        return None


def _prolific_user() -> Annotator | None:
    """A Prolific participant arriving with ?PROLIFIC_PID=... (the parameters stay in the
    address, so a reload signs them in again; this tab also keeps a token in its session)."""
    params = prolific.entry_params(st.query_params)
    if params is None:
        return None
    pid, study_id, session_id = params
    user = _lookup(st.session_state.get(SESSION_KEY))
    if user is not None and user.external_id == pid and user.external_session == session_id:
        return user
    try:
        entry = prolific.enter(
            engine(), pid=pid, study_id=study_id, session_id=session_id, client=client_address()
        )
    except UserError as exc:
        st.session_state[ENTRY_ERROR_KEY] = str(exc)
        return None
    st.session_state[SESSION_KEY] = entry.token
    st.session_state.pop(ENTRY_ERROR_KEY, None)
    return _lookup(entry.token)


def current_user() -> Annotator | None:
    """The signed-in, active annotator or maintainer, or None.

    A Prolific entry link (?PROLIFIC_PID=...) signs its participant in first. Otherwise the
    token comes from `?token=` when a login link reaches the script directly (tests, or a
    server without the middleware; it is then taken out of the address bar), from this tab's
    session, or from the HttpOnly cookie that the served app sets from the login link. Last, a
    maintainer signed in with st.login (when `[auth]` is configured) is mapped by email.
    """
    participant = _prolific_user()
    if participant is not None:
        return participant
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
    return _oidc_maintainer()


def sign_in_message(*, admin: bool = False) -> None:
    what = "the maintainer console" if admin else "the labelling page"
    st.title("Please sign in")
    problem = st.session_state.get(ENTRY_ERROR_KEY)
    if problem:
        st.error(f"This link could not sign you in: {problem}.")
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
            or (token is None and name.startswith(web_guard.OIDC_COOKIE_PREFIX))
        }
        web_guard.register_maintainer_session(session_id, annotator_id=user.id, cookies=proof)
    return user


def _session_id() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None
