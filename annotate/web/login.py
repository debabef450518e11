"""ASGI pieces around the Streamlit app: a login link becomes an HttpOnly cookie.

`GET /?token=...` with the token of an active account answers with a redirect to the same
address without the token and sets the token in an HttpOnly cookie, so the token leaves the
address bar at once and the annotator stays signed in across reloads. The rules that keep
other sites out of it (docs/security.md):

- The redirect only ever goes to a path of this app (`//evil.example/?token=` is `/evil.example/`),
  and under a path prefix (Streamlit's `server.baseUrlPath`, or an ASGI `root_path`) only to a
  path inside it: anything else lands on the app's front page (`app_path`). Every address these
  pages give (forms, Cancel) carries the prefix; the routes are registered under it.
- A token that is no active account's changes nothing: no cookie is set or cleared; the
  redirect carries `link=invalid` instead, so that the page says the link is not valid.
- When the browser is already signed in as another account, a link does not switch accounts by
  itself (another site could otherwise sign a visitor in as an account of its choosing): the
  visitor gets a page saying so, and only its button, a same-origin POST to `/login`, switches.
  A Prolific entry link (`?PROLIFIC_PID=...`) gets the same question; its switch takes the
  login cookie off this browser (the account's link keeps working) and opens the entry.
- The cookie's Path is the prefix (`/annotate`; `/` at the root), so other apps on the host
  never receive it.
- The cookie is `Secure` when the request came over HTTPS, as seen through the reverse proxies
  trusted by uvicorn's `FORWARDED_ALLOW_IPS` (docs/deployment.md).
- Sign-out (`/logout`) is honoured only from the confirmation page's button (a same-origin
  POST); every link to it, this app's "Sign out" included, shows that page first. It ends the
  account's sign-in everywhere: the account gets a new token nobody knows, so the cookie and
  the link left in the browser's history stop working; the maintainer sends a new link.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from urllib.parse import parse_qs, parse_qsl, unquote, urlencode, urlsplit

from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from annotate.people.auth import annotator_for_token, reissue_token
from annotate.people.prolific import PARAMS
from annotate.store import db
from annotate.store.models import id_of
from annotate.web.paths import full_path, is_under, root_path
from annotate.web.proofs import COOKIE, INVALID_LINK, account_for_token, same_origin

PROLIFIC_PID = PARAMS[0]  # a crowd entry link (annotate/people/prolific.py)

COOKIE_MAX_AGE = 60 * 60 * 24 * 60  # sixty days: a study can run for weeks
MAX_FORM_BYTES = 4096  # the switch-accounts form: a token and a path
NO_STORE = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    # the confirmation pages must not be framed by another site and clicked through
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
}


def local_path(path: str) -> str:
    """`path` as a path of this site: one leading slash, so that no browser reads it as
    another host (`//host`, `/\\host`, `\\\\host`)."""
    return "/" + path.lstrip("/\\")


def app_path(path: str, *, prefix: str) -> str:
    """`path` (with its query, if any) as an address of this app: on this site (`local_path`)
    and, under `prefix` ("/annotate"), inside it as a browser resolves it (`\\` read as `/`,
    `.`, `..` and their `%2e` spellings resolved); anything else is the app's front page."""
    target = local_path(path)
    if not prefix:
        return target
    seen = unquote(urlsplit(target.replace("\\", "/")).path)
    resolved: list[str] = []
    for segment in seen.split("/")[1:]:
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    where = "/" + "/".join(resolved)
    inside = is_under(where, prefix)
    return target if inside else prefix + "/"


def _account(engine: Engine, token: str | None) -> tuple[int, str] | None:
    user = account_for_token(engine, token)
    return (id_of(user), user.name) if user is not None else None


def _secure(scope: Scope) -> bool:
    return scope.get("scheme") in ("https", "wss")


def _cookie_path(prefix: str) -> str:
    """The login cookie's Path: the app's prefix (another app on the host, another study under
    another prefix among them, neither receives the token nor replaces it; Streamlit scopes its
    own cookies the same way), the whole host at the root."""
    return prefix or "/"


def _signed_in(target: str, token: str, *, secure: bool, prefix: str) -> Response:
    response = RedirectResponse(target, status_code=303, headers=NO_STORE)
    response.set_cookie(
        COOKIE,
        token,
        max_age=COOKIE_MAX_AGE,
        httponly=True,
        samesite="lax",
        secure=secure,
        path=_cookie_path(prefix),
    )
    if prefix:
        # A cookie at / (set before the app had a prefix) would be sent after this one and
        # shadow it: servers read the last of two cookies with one name.
        response.delete_cookie(COOKIE, path="/", secure=secure, httponly=True)
    return response


def _signed_out(response: Response, *, secure: bool, prefix: str) -> Response:
    """`response` with the login cookie removed from this browser (the token stays valid)."""
    for path in dict.fromkeys((_cookie_path(prefix), "/")):
        response.delete_cookie(COOKIE, path=path, secure=secure, httponly=True)
    return response


def _page(title: str, body: str, *, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width'><title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;"
        "padding:0 1rem;line-height:1.5}button{font-size:1rem;padding:.4rem 1rem}</style>"
        f"</head><body><h1>{html.escape(title)}</h1>{body}</body></html>",
        status_code=status,
        headers=NO_STORE,
    )


def _switch_page(*, current: str, token: str, target: str, prefix: str) -> HTMLResponse:
    """The question a link for another account gets. `token` empty: a Prolific entry link
    (`target` carries its parameters); switching then signs this browser out of `current`
    (its link keeps working) and opens the entry."""
    at = html.escape(prefix, quote=True)
    stay = target if token else prefix + "/"  # without the entry's parameters
    what = "another account" if token else "a crowd study's entry for another participant"
    return _page(
        "Switch accounts?",
        f"<p>This browser is signed in as <strong>{html.escape(current)}</strong>. "
        f"The link you opened belongs to {what}. Switch only if the link was meant "
        "for you.</p>"
        f"<form method='post' action='{at}/login'>"
        f"<input type='hidden' name='token' value='{html.escape(token, quote=True)}'>"
        f"<input type='hidden' name='next' value='{html.escape(target, quote=True)}'>"
        "<button type='submit'>Switch to the link's account</button></form>"
        f"<p><a href='{html.escape(stay, quote=True)}'>Stay signed in as "
        f"{html.escape(current)}</a></p>",
    )


class LoginLinkMiddleware:
    """`prefix`: where the app's routes are, "/annotate" for `server.baseUrlPath = "annotate"`
    (annotate.web.paths.url_prefix), "" at the root."""

    def __init__(self, app: ASGIApp, *, get_engine: Callable[[], Engine], prefix: str = "") -> None:
        self.app = app
        self.get_engine = get_engine
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "GET":
            params = parse_qsl(
                scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            )
            token = next((value for key, value in params if key == "token"), None)
            if token is not None:
                await (await self._login_link(scope, params, token))(scope, receive, send)
                return
            pid = next((value for key, value in params if key == PROLIFIC_PID), None)
            if pid is not None:
                switch = await self._crowd_link(scope, pid)
                if switch is not None:
                    await switch(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _crowd_link(self, scope: Scope, pid: str) -> Response | None:
        """A Prolific entry link (`?PROLIFIC_PID=...`) in a browser signed in with a login
        link: like another account's link, it switches nobody by itself. None: let it through
        (nobody signed in here, or this very participant)."""
        user = await run_in_threadpool(
            account_for_token, self.get_engine(), Request(scope).cookies.get(COOKIE)
        )
        if user is None or (user.external_id is not None and user.external_id == pid.strip()):
            return None
        prefix = root_path(scope) + self.prefix
        query = scope.get("query_string", b"").decode("latin-1")
        target = app_path(full_path(scope), prefix=prefix) + (f"?{query}" if query else "")
        return _switch_page(current=user.name, token="", target=target, prefix=prefix)

    async def _login_link(
        self, scope: Scope, params: list[tuple[str, str]], token: str
    ) -> Response:
        rest = urlencode([(k, v) for k, v in params if k != "token"])
        prefix = root_path(scope) + self.prefix
        target = app_path(full_path(scope), prefix=prefix) + (f"?{rest}" if rest else "")
        engine = self.get_engine()
        account = await run_in_threadpool(_account, engine, token)
        if account is None:  # a wrong or retired link: change nothing, but say so on the page
            said = urlencode([*((k, v) for k, v in params if k != "token"), INVALID_LINK])
            bare = app_path(full_path(scope), prefix=prefix)
            return RedirectResponse(f"{bare}?{said}", status_code=303, headers=NO_STORE)
        current = await run_in_threadpool(_account, engine, Request(scope).cookies.get(COOKIE))
        if current is not None and current[0] != account[0]:
            return _switch_page(current=current[1], token=token, target=target, prefix=prefix)
        return _signed_in(target, token, secure=_secure(scope), prefix=prefix)


def login_routes(get_engine: Callable[[], Engine], *, prefix: str = "") -> list[Route]:
    """`POST {prefix}/login` and `{prefix}/logout`; `prefix` as for `LoginLinkMiddleware`."""

    async def login(request: Request) -> Response:
        """The switch-accounts page's button: a same-origin POST with the token."""
        if not same_origin(request.headers):
            return _page(
                "Not signed in", "<p>This sign-in did not come from this site.</p>", status=403
            )
        length = request.headers.get("content-length", "")
        if not length.isdigit() or int(length) > MAX_FORM_BYTES:
            return _page("Not signed in", "<p>This request is not a sign-in.</p>", status=413)
        form = await request.form(max_files=0, max_fields=4, max_part_size=MAX_FORM_BYTES)
        token = str(form.get("token") or "")
        here = root_path(request.scope) + prefix
        target = app_path(str(form.get("next") or "/"), prefix=here)
        if not token and PROLIFIC_PID in parse_qs(urlsplit(target).query):
            # a crowd entry: this browser leaves the login link's account, the entry signs in
            return _signed_out(
                RedirectResponse(target, status_code=303, headers=NO_STORE),
                secure=_secure(request.scope),
                prefix=here,
            )
        account = await run_in_threadpool(_account, get_engine(), token)
        if account is None:
            return RedirectResponse(target, status_code=303, headers=NO_STORE)
        return _signed_in(target, token, secure=_secure(request.scope), prefix=here)

    async def logout(request: Request) -> Response:
        # Only the confirmation page's own button (a same-origin POST) signs out: a link, from
        # this app or another site, only asks, because signing out retires the account's link.
        if request.method != "POST" or not same_origin(request.headers):
            account = await run_in_threadpool(_account, get_engine(), request.cookies.get(COOKIE))
            return _sign_out_page(
                account[1] if account else None, prefix=root_path(request.scope) + prefix
            )
        token = request.cookies.get(COOKIE)
        if token:
            await run_in_threadpool(_revoke, get_engine(), token)
        response = _page(
            "Signed out",
            "<p>You are signed out. Your personal link no longer works: ask the study's "
            "maintainer for a new one.</p>",
        )
        here = root_path(request.scope) + prefix
        return _signed_out(response, secure=_secure(request.scope), prefix=here)

    return [
        Route(f"{prefix}/login", login, methods=["POST"]),
        Route(f"{prefix}/logout", logout, methods=["GET", "POST"]),
    ]


def _sign_out_page(name: str | None, *, prefix: str) -> HTMLResponse:
    who = f" as <strong>{html.escape(name)}</strong>" if name else ""
    at = html.escape(prefix, quote=True)
    return _page(
        "Sign out?",
        f"<p>You are signed in{who}. If you sign out, your personal link stops working on "
        "every device, this one included. Your answers are kept. To label again, ask the "
        "study's maintainer for a new link.</p>"
        f"<form method='post' action='{at}/logout'>"
        "<button type='submit'>Sign out and retire my link</button></form>"
        f"<p><a href='{at}/'>Cancel</a> and go back to the pair.</p>",
    )


def _revoke(engine: Engine, token: str) -> None:
    """Give the token's account a new token that nobody is told: every copy of the old one (the
    cookie, the link in the history, another device) stops working."""
    db.write(engine, lambda s: _reissue(s, token))


def _reissue(s: Session, token: str) -> None:
    user = annotator_for_token(s, token)
    if user is not None:
        reissue_token(s, user)
