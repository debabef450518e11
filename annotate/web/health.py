"""A health endpoint for the app process: GET /healthz answers 200 "ok" when the database
answers `SELECT 1`, 503 otherwise. Load balancers probe it (Streamlit's own /_stcore/health
only says the web server is up, not that the database is reachable).

    from annotate.web.health import health_routes
    st.App(..., routes=health_routes(lambda: get_engine()))
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from annotate.store.db import reader

log = logging.getLogger(__name__)


def database_ok(get_engine_callable: Callable[[], Engine]) -> bool:
    """True when the database answers SELECT 1 (a read: never waits for SQLite's write lock)."""
    try:
        engine = get_engine_callable()
        with reader(engine).connect() as conn:
            conn.execute(text("SELECT 1")).scalar_one()
        return True
    except Exception as exc:  # any failure means unhealthy; the reason goes to the log only
        log.warning("health check failed: %s: %s", type(exc).__name__, exc)
        return False


def health_routes(get_engine_callable: Callable[[], Engine], path: str = "/healthz") -> list[Route]:
    async def healthz(request: Request) -> PlainTextResponse:
        ok = await run_in_threadpool(database_ok, get_engine_callable)
        headers = {"Cache-Control": "no-store"}
        if ok:
            return PlainTextResponse("ok", headers=headers)
        return PlainTextResponse("database unavailable", status_code=503, headers=headers)

    return [Route(path, healthz, methods=["GET", "HEAD"])]
