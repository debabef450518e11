"""Who a request or a page run belongs to: the one place the app decides it (#18).

Three kinds of sign-in, each with its proof:

- a personal link (`/?token=`), kept by the browser in the HttpOnly login cookie (`COOKIE`) and
  by a page session as the token it signed in with: the proof is the token, valid while it is
  an active account's (sign-out and "New link" give the account a new token);
- a Prolific entry (`/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`): the proof is the address
  itself, valid while that participant's account is active and still in that Prolific session;
- an organisation login (`st.login`, when `[auth]` is configured): the proof is the verified
  e-mail of an active maintainer.

The ASGI side (login link, sign-out, the endpoint guard, the draft route) reads cookies with
Starlette's parser (`request_cookies`) and asks `account_for_token`. A page run resolves the
session's identity once (`current_user`), and re-checks it before it acts on any event of a
page shown earlier (`still_signed_in`): a tab left open after Sign out, a new link or a
deactivation stores nothing and reserves nothing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from starlette.requests import cookie_parser

from annotate.people.auth import annotator_for_token
from annotate.store.db import read
from annotate.store.models import Annotator

COOKIE = "annotate_token"  # the login cookie: HttpOnly, set by annotate/web/login.py
OIDC_COOKIE_PREFIX = "_streamlit_user"  # st.login's signed identity cookies (maybe chunked)
SESSION_KEY = "annotate_token"  # a page session's proof: the token it signed in with
PROLIFIC_KEY = "annotate_prolific_entry"  # a page session's proof: its Prolific entry
ENDED_KEY = "annotate_sign_in_ended"  # why this tab's last event was not acted on
ENTRY_ERROR_KEY = "annotate_entry_error"
INVALID_LINK_KEY = "annotate_invalid_link"  # the link this tab was opened with is no account's
# The address parameter by which the login middleware tells the page that the link it was
# given is no active account's (the token itself leaves the address either way).
INVALID_LINK = ("link", "invalid")
_RUN_KEY = "annotate_identity_run"  # (this run's marker, the identity resolved in it)


# --- requests (ASGI) ---------------------------------------------------------------------


def request_cookies(scope) -> dict[str, str]:
    """The cookies of an HTTP or WebSocket request, as Starlette reads them (the last of two
    cookies with one name wins, as for `Request.cookies`)."""
    cookies: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            cookies.update(cookie_parser(value.decode("latin-1")))
    return cookies


def account_for_token(engine: Engine, token: object) -> Annotator | None:
    """The active account whose token this is, or None (a read, retried)."""
    if not isinstance(token, str) or not token:
        return None
    return read(engine, lambda s: annotator_for_token(s, token))


def active_maintainer(engine: Engine, *, annotator_id: int) -> bool:
    def check(s: Session) -> bool:
        user = s.get(Annotator, annotator_id)
        return bool(user is not None and user.active and user.is_admin)

    return read(engine, check)


def maintainer_for_identity(s: Session, identity: dict) -> Annotator | None:
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


# --- page runs (Streamlit) ---------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """The account a page run acts for, and how it proved it (`via`)."""

    user: Annotator
    via: str  # "link" | "prolific" | "organisation"


def current_user() -> Annotator | None:
    """The signed-in, active account of this page run, or None; resolved once per run (the
    entry script, the page and the event callbacks of the run share it)."""
    identity = _this_run()
    return identity.user if identity is not None else None


def still_signed_in(annotator_id: int) -> bool:
    """True when this session still acts for `annotator_id`: call it before acting on an event
    of a page shown earlier. When not, nothing may be stored or reserved; the page then says
    why (`ended_message`)."""
    identity = _this_run()
    if identity is not None and identity.user.id == annotator_id:
        return True
    import streamlit as st

    st.session_state[ENDED_KEY] = (
        "This tab's sign-in has ended (you signed out, or a newer link or another account was "
        "used), so what you did here last was not saved. Open your personal link again."
        if identity is None
        else "This tab is now signed in as another account: what you did last on the previous "
        "account's page was not saved."
    )
    return False


def invalid_link_opened() -> bool:
    """True once after this tab was opened with a link that is no active account's."""
    import streamlit as st

    return bool(st.session_state.pop(INVALID_LINK_KEY, False))


def ended_message() -> str | None:
    import streamlit as st

    return st.session_state.pop(ENDED_KEY, None)


def _run_marker() -> object | None:
    """An object that is new for every script run of this session (Streamlit resets the run
    context, including its `cursors`, before the run's callbacks), None outside a run. Should
    a Streamlit upgrade drop it, every call resolves afresh: slower, never wrong."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return getattr(get_script_run_ctx(), "cursors", None)


def _this_run() -> Identity | None:
    import streamlit as st

    marker = _run_marker()
    cached = st.session_state.get(_RUN_KEY)
    if marker is not None and cached is not None and cached[0] is marker:
        return cached[1]
    identity = _resolve()
    if marker is not None:
        st.session_state[_RUN_KEY] = (marker, identity)
    return identity


def _resolve() -> Identity | None:
    """The session's identity from its proofs, in order: a Prolific entry in the address, a
    login link reaching the script directly (tests, or a server without the login middleware;
    taken out of the address bar), the token this session signed in with, the login cookie,
    an organisation login."""
    import streamlit as st

    from annotate.people import prolific

    params = prolific.entry_params(st.query_params)
    if params is None and "token" not in st.query_params:
        # the session keeps its entry address when the parameters leave it (a rerun, a page)
        params = st.session_state.get(PROLIFIC_KEY)
    if params is not None:
        user = _participant(params)
        if user is None:
            st.session_state.pop(PROLIFIC_KEY, None)
            return None
        st.session_state[PROLIFIC_KEY] = params
        return Identity(user, "prolific")
    candidates = []
    key, invalid = INVALID_LINK
    if st.query_params.get(key) == invalid:
        del st.query_params[key]
        st.session_state[INVALID_LINK_KEY] = True
    linked = "token" in st.query_params
    if linked:
        candidates.append(st.query_params["token"])
        del st.query_params["token"]
    candidates.append(st.session_state.get(SESSION_KEY))
    with contextlib.suppress(Exception):  # no request context in a bare script run
        candidates.append(st.context.cookies.get(COOKIE))
    for i, token in enumerate(candidates):
        user = account_for_token(_engine(), token)
        if user is not None:
            st.session_state[SESSION_KEY] = token
            return Identity(user, "link")
        if i == 0 and linked:  # a link that reached the script (no login middleware in front)
            st.session_state[INVALID_LINK_KEY] = True
    st.session_state.pop(SESSION_KEY, None)
    user = _organisation_maintainer()
    return Identity(user, "organisation") if user is not None else None


def _participant(params: tuple[str, str, str]) -> Annotator | None:
    """The Prolific participant of this address: a returning one is read, a new one enters
    (`prolific.enter`, which creates the account within the per-client limits). Every tab with
    the same address is the same participant: a second tab does not end the first."""
    import streamlit as st

    from annotate.errors import UserError
    from annotate.people import prolific

    pid, study_id, session_id = params
    engine = _engine()
    user = read(
        engine,
        lambda s: prolific.returning(s, pid=pid, study_id=study_id, session_id=session_id),
    )
    if user is None:
        try:
            entry = prolific.enter(
                engine, pid=pid, study_id=study_id, session_id=session_id, client=client_address()
            )
        except UserError as exc:
            st.session_state[ENTRY_ERROR_KEY] = str(exc)
            return None
        user = read(engine, lambda s: s.get(Annotator, entry.annotator_id))
    st.session_state.pop(ENTRY_ERROR_KEY, None)
    return user if user is not None and user.active else None


def auth_configured() -> bool:
    """True when `[auth]` (OIDC for st.login) is configured in .streamlit/secrets.toml."""
    import streamlit as st

    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def _organisation_maintainer() -> Annotator | None:
    import streamlit as st

    if not auth_configured():
        return None
    try:
        identity = st.user.to_dict()
    except Exception:
        return None
    return read(_engine(), lambda s: maintainer_for_identity(s, identity))


def client_address() -> str | None:
    """The visitor's network address as the server saw it (behind a reverse proxy listed in
    FORWARDED_ALLOW_IPS: the address the proxy forwarded), None outside a request."""
    import streamlit as st

    try:
        return st.context.ip_address
    except Exception:  # no request context in a bare script run
        return None


def _engine() -> Engine:
    from annotate.web.access import engine

    return engine()
