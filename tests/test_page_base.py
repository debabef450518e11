"""The page is told where the app is (annotate/web/page_base.py): Streamlit's HTML page gets
the small script in front of its own, compressed or not; nothing else changes."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from annotate.web.page_base import PageBaseHint, hint_script

PAGE = (
    "<!doctype html><html><head><script>window.prerenderReady = false</script>"
    '<script type="module" crossorigin src="./static/js/index.js"></script>'
    "</head><body>" + "<div></div>" * 200 + "</body></html>"
)
BROWSER = {"Accept": "text/html,application/xhtml+xml", "Accept-Encoding": "gzip"}


def client() -> TestClient:
    async def page(request):
        return HTMLResponse(PAGE, headers={"ETag": '"file"'})

    async def health(request):
        return PlainTextResponse("ok")

    app = Starlette(
        routes=[Route("/_stcore/health", health), Route("/{path:path}", page)],
        # as in Streamlit: the compression inside, this middleware outside it
        middleware=[
            Middleware(PageBaseHint, page_paths=["admin", "label"]),
            Middleware(GZipMiddleware, minimum_size=10),
        ],
    )
    return TestClient(app)


def test_the_page_carries_the_hint_in_front_of_streamlits_script():
    response = client().get("/admin", headers=BROWSER)
    assert response.status_code == 200
    body = response.text
    hint = hint_script(["admin", "label"])
    assert body.index(hint) < body.index('<script type="module"')
    assert body.count(hint) == 1
    assert int(response.headers["content-length"]) == len(response.content)
    assert "etag" not in response.headers  # the file's validator does not describe this page


def test_other_answers_pass_untouched():
    done = client().get("/_stcore/health", headers=BROWSER)
    assert done.text == "ok"
    fetched = client().get("/admin", headers={"Accept": "*/*", "Accept-Encoding": "gzip"})
    assert fetched.headers.get("content-encoding") == "gzip"  # not a page a browser opens
    assert "BACKEND_BASE_URL" not in fetched.text and fetched.headers.get("etag") == '"file"'


def test_the_script_strips_only_a_known_page_from_the_address():
    script = hint_script(["admin", "label"])
    assert '["admin", "label"]' in script
    assert "BACKEND_BASE_URL:location.origin+path+" in script
