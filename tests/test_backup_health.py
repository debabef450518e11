"""`annotate backup` while annotators keep labelling, and the /healthz endpoint."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import threading

import pytest
from sqlalchemy import create_engine, text
from starlette.applications import Starlette

from annotate.engine import get_engine
from annotate.store.db import create_db_engine
from annotate.web.health import health_routes
from tests.processes import run_annotate
from tests.scale_helpers import make_study, run_annotators


def _keys(url: str) -> set[tuple[int, int]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT pair_id, annotator_id FROM annotation")).all()
    engine.dispose()
    keys = {tuple(r) for r in rows}
    assert len(keys) == len(rows)
    return keys


@pytest.mark.slow
def test_backup_while_annotators_label(db_url, db_backend, make_db_url, tmp_path):
    if db_backend == "postgresql" and shutil.which("pg_restore") is None:
        pytest.skip("pg_restore is not installed: cannot check the PostgreSQL dump")
    engine = get_engine(db_url)
    _, annotators = make_study(engine, tmp_path, n_pairs=60, n_annotators=16, overlap=3)
    labelling = threading.Thread(target=run_annotators, args=(engine, annotators))
    labelling.start()
    out = tmp_path / ("copy.db" if db_backend == "sqlite" else "copy.dump")
    done = run_annotate("backup", "--out", str(out), "--db", db_url, cwd=tmp_path)
    still_running = labelling.is_alive()
    labelling.join()
    assert done.returncode == 0, done.stderr
    assert "backup written to" in done.stdout
    if db_backend == "sqlite":
        con = sqlite3.connect(out)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        copy_url = f"sqlite:///{out}"
    else:
        copy_url = make_db_url("postgresql")
        restored = subprocess.run(
            ["pg_restore", "--no-owner", "-d", copy_url.replace("+psycopg", ""), str(out)],
            capture_output=True,
            text=True,
        )
        assert restored.returncode == 0, restored.stderr
    copied = _keys(copy_url)
    assert copied <= _keys(db_url)  # a consistent snapshot: nothing the source doesn't have
    assert len(_keys(db_url)) == 180
    # the copy opens as a database of this release
    assert get_engine(copy_url) is not None
    print(f"labelling still running when the backup finished: {still_running}")


def test_backup_refuses_to_overwrite_without_force(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    get_engine(url)
    out = tmp_path / "exists.db"
    out.write_text("keep me")
    done = run_annotate("backup", "--out", str(out), "--db", url, cwd=tmp_path)
    assert done.returncode != 0 and "already exists" in done.stderr
    assert out.read_text() == "keep me"
    done = run_annotate("backup", "--out", str(out), "--db", url, "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(out)
    assert con.execute("SELECT version_num FROM alembic_version").fetchone()
    con.close()


def _get(app, path: str) -> tuple[int, bytes]:
    """One GET through the ASGI app (no HTTP client needed)."""
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body


def test_healthz_ok_when_the_database_answers(db_url):
    app = Starlette(routes=health_routes(lambda: get_engine(db_url)))
    assert _get(app, "/healthz") == (200, b"ok")


def test_healthz_503_when_the_database_is_unreachable(tmp_path):
    unreachable = create_db_engine("postgresql+psycopg://postgres@127.0.0.1:1/none")
    app = Starlette(routes=health_routes(lambda: unreachable))
    status, body = _get(app, "/healthz")
    assert status == 503 and b"unavailable" in body

    def broken():
        raise RuntimeError("no engine")

    assert _get(Starlette(routes=health_routes(broken)), "/healthz")[0] == 503
