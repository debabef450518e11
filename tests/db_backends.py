"""Database backends for tests: every test that takes `db_url` runs on SQLite (a temporary file)
and on PostgreSQL (a fresh database on 127.0.0.1:5432, created for the test and dropped after).

PostgreSQL tests skip, saying why, when the server is unreachable. Set
ANNOTATE_TEST_POSTGRES=require (CI) to make that a failure instead, or =off to skip them.
ANNOTATE_TEST_POSTGRES_URL points at another server's maintenance database
(default postgresql+psycopg://postgres@127.0.0.1:5432/postgres).
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy.engine import make_url

from annotate.store.db import dispose_engines
from tests.components import require_component

PG_ADMIN_URL = os.environ.get(
    "ANNOTATE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
PG_MODE = os.environ.get("ANNOTATE_TEST_POSTGRES", "auto").lower()  # auto | require | off


def _admin_conninfo() -> str:
    url = make_url(PG_ADMIN_URL)
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@functools.cache
def postgres_unavailable_reason() -> str | None:
    """None when the test server answers, else why not (one sentence)."""
    if PG_MODE == "off":
        return "PostgreSQL tests are turned off (ANNOTATE_TEST_POSTGRES=off)"
    try:
        import psycopg

        with psycopg.connect(_admin_conninfo(), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure to reach the server means: not available
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"PostgreSQL at {make_url(PG_ADMIN_URL).render_as_string()} is unreachable ({first})"
    return None


def require_postgres() -> None:
    """Skip (or fail, with ANNOTATE_TEST_POSTGRES=require) when PostgreSQL is missing."""
    reason = postgres_unavailable_reason()
    require_component(reason, switch="ANNOTATE_TEST_POSTGRES", mode=PG_MODE)


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(_admin_conninfo(), autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql)


def create_pg_database() -> str:
    """A new empty database; returns its postgresql+psycopg URL."""
    require_postgres()
    name = f"annotate_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    _admin(f'CREATE DATABASE "{name}"')
    return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(url: str) -> None:
    name = make_url(url).database
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def make_db_url(tmp_path) -> Iterator[Callable[[str], str]]:
    """Factory: make_db_url("sqlite" | "postgresql") -> URL of a new empty database."""
    created: list[str] = []
    counter = iter(range(1_000_000))

    def make(backend: str) -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / f'db{next(counter)}.sqlite'}"
        if backend == "postgresql":
            url = create_pg_database()
            created.append(url)
            return url
        raise ValueError(backend)

    yield make
    dispose_engines()
    for url in created:
        drop_pg_database(url)


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def db_backend(request) -> str:
    if request.param == "postgresql":
        require_postgres()
    return request.param


@pytest.fixture
def db_url(db_backend, make_db_url) -> str:
    """URL of a new, empty database on each backend (the schema is made on first use)."""
    return make_db_url(db_backend)


@pytest.fixture
def pg_url(make_db_url) -> str:
    """URL of a new, empty PostgreSQL database (skips or fails as described above)."""
    return make_db_url("postgresql")
