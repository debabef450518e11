"""Who a page run belongs to and which pages it may see: the one place a page decides it (#18).

Three kinds of sign-in, each with its proof:

- a personal link (`/?token=`), kept by the browser in the HttpOnly login cookie
  (annotate/web/proofs.py's `COOKIE`) and by a page session as the token it signed in with: the
  proof is the token, valid while it is an active account's (sign-out and "New link" give the
  account a new token);
- a Prolific entry (`/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`): the proof is the address
  itself, valid while that participant's account is active and still in that Prolific session;
- an organisation login (`st.login`, when `[auth]` is configured): the proof is the verified
  e-mail of an active maintainer.

The ASGI side (login link, sign-out, the endpoint guard, the draft route) reads the same proofs
from a request without Streamlit (annotate/web/proofs.py). A page run resolves the session's
identity once (`current_user`), and re-checks it before it acts on any event of a page shown
earlier (`still_signed_in`): a tab left open after Sign out, a new link or a deactivation
stores nothing and reserves nothing. Every page asks `require_user` or `require_admin` first.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import get_script_run_ctx

from annotate.engine import get_engine
from annotate.errors import UserError
from annotate.people import prolific
from annotate.store.db import read, resolve_url
from annotate.store.models import Annotator, id_of
from annotate.web import guard
from annotate.web.proofs import (
    COOKIE,
    INVALID_LINK,
    OIDC_COOKIE_PREFIX,
    account_for_token,
    maintainer_for_identity,
)

SESSION_KEY = "annotate_token"  # a page session's proof: the token it signed in with
PROLIFIC_KEY = "annotate_prolific_entry"  # a page session's proof: its Prolific entry
ENDED_KEY = "annotate_sign_in_ended"  # why this tab's last event was not acted on
ENTRY_ERROR_KEY = "annotate_entry_error"
INVALID_LINK_KEY = "annotate_invalid_link"  # the link this tab was opened with is no account's
_RUN_KEY = "annotate_identity_run"  # (this run's marker, the identity resolved in it)


# --- who is signed in -------------------------------------------------------------------


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
    message: str | None = st.session_state.pop(ENDED_KEY, None)
    return message


def _run_marker() -> object | None:
    """An object that is new for every script run of this session (Streamlit resets the run
    context, including its `cursors`, before the run's callbacks), None outside a run. Should
    a Streamlit upgrade drop it, every call resolves afresh: slower, never wrong."""
    return getattr(get_script_run_ctx(), "cursors", None)


def _this_run() -> Identity | None:
    marker = _run_marker()
    cached = st.session_state.get(_RUN_KEY)
    if marker is not None and cached is not None and cached[0] is marker:
        resolved: Identity | None = cached[1]
        return resolved
    identity = _resolve()
    if marker is not None:
        st.session_state[_RUN_KEY] = (marker, identity)
    return identity


def _resolve() -> Identity | None:
    """The session's identity from its proofs, in order: a Prolific entry in the address, a
    login link reaching the script directly (tests, or a server without the login middleware;
    taken out of the address bar), the token this session signed in with, the login cookie,
    an organisation login."""
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
    candidates: list[object] = []  # tokens, or what a cookie or the address holds instead
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
        user = account_for_token(engine(), token)
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
    pid, study_id, session_id = params
    database = engine()
    user = read(
        database,
        lambda s: prolific.returning(s, pid=pid, study_id=study_id, session_id=session_id),
    )
    if user is None:
        try:
            entry = prolific.enter(
                database, pid=pid, study_id=study_id, session_id=session_id, client=client_address()
            )
        except UserError as exc:
            st.session_state[ENTRY_ERROR_KEY] = str(exc)
            return None
        user = read(database, lambda s: s.get(Annotator, entry.annotator_id))
    st.session_state.pop(ENTRY_ERROR_KEY, None)
    return user if user is not None and user.active else None


def auth_configured() -> bool:
    """True when `[auth]` (OIDC for st.login) is configured in .streamlit/secrets.toml."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def _organisation_maintainer() -> Annotator | None:
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


# --- who may see a page ------------------------------------------------------------------

LABEL_PAGE = "views/label.py"  # relative to the entry script (app.py)
INVALID_LINK_MESSAGE = (
    "The link you opened is not valid: it may be cut short or mistyped, or a newer link has "
    "replaced it. Ask the study's maintainer for your current link."
)


def engine() -> Engine:
    """The engine for the configured database, shared by every session of the process."""
    return _engine_for(resolve_url())


@st.cache_resource(show_spinner=False)
def _engine_for(url: str) -> Engine:
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
            guard.forget_session(session_id)
        if user is None:
            sign_in_message(admin=True)
        else:
            annotator_at_console()
        st.stop()
    if session_id is not None:
        # Uploads and downloads of this session are a maintainer's from now on (guard.py).
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
        guard.register_maintainer_session(session_id, annotator_id=id_of(user), cookies=proof)
    return user


def _session_id() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None
