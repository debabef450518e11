"""The proofs of who a request is, read without Streamlit: the login cookie's name, the cookies
of an ASGI request (Starlette's parser), the accounts a token or an organisation login belongs
to, and whether a request comes from this site's own pages.

The ASGI side (login link, sign-out, the endpoint guard, the draft route) asks here directly;
a page run asks annotate/web/identity.py, which builds on these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import Scope

from annotate.people.auth import annotator_for_token
from annotate.store.db import read
from annotate.store.models import Annotator

COOKIE = "annotate_token"  # the login cookie: HttpOnly, set by annotate/web/login.py
# The address parameter by which the login middleware tells the page that the link it was
# given is no active account's (the token itself leaves the address either way).
INVALID_LINK = ("link", "invalid")
OIDC_COOKIE_PREFIX = "_streamlit_user"  # st.login's signed identity cookies (maybe chunked)


def request_cookies(scope: Scope) -> dict[str, str]:
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


def maintainer_for_identity(s: Session, identity: Mapping[str, Any]) -> Annotator | None:
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


def same_origin(headers: Headers) -> bool:
    """True for a request made by this site's own pages (or typed into the address bar).

    Browsers send `Sec-Fetch-Site`; without it, the `Origin` (or `Referer`) must name this
    host. A request that proves neither is treated as coming from another site."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    host = headers.get("host")
    source = headers.get("origin") or headers.get("referer")
    if not host or not source or source == "null":
        return False
    return urlsplit(source).netloc == host
