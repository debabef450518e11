"""ASGI pieces around the Streamlit app: a login link becomes an HttpOnly cookie.

`GET /?token=...` answers with a redirect to the same address without the token and sets the
token in an HttpOnly cookie, so the token leaves the address bar (and browser history) at once
and the annotator stays signed in across reloads. `/logout` clears it.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.responses import RedirectResponse
from starlette.routing import Route

COOKIE = "annotate_token"
COOKIE_MAX_AGE = 60 * 60 * 24 * 60  # sixty days: a study can run for weeks


class LoginLinkMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("method") == "GET":
            params = parse_qsl(
                scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            )
            token = next((value for key, value in params if key == "token"), None)
            if token is not None:
                rest = urlencode([(k, v) for k, v in params if k != "token"])
                target = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(
                    COOKIE,
                    token,
                    max_age=COOKIE_MAX_AGE,
                    httponly=True,
                    samesite="lax",
                    secure=scope.get("scheme") == "https",
                    path="/",
                )
                response.headers["Cache-Control"] = "no-store"
                response.headers["Referrer-Policy"] = "no-referrer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def logout(request):
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def login_routes() -> list[Route]:
    return [Route("/logout", logout, methods=["GET"])]
