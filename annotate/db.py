"""Engine creation, connection settings and write retries for SQLite and PostgreSQL."""

from __future__ import annotations

import functools
import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlmodel import Session, create_engine

from annotate.errors import UserError

ENV_VAR = "ANNOTATE_DATABASE_URL"
DEFAULT_URL = "sqlite:///annotate.db"

T = TypeVar("T")


def resolve_url(cli_value: str | None = None) -> str:
    """--db beats $ANNOTATE_DATABASE_URL beats the embedded SQLite file in the working directory."""
    url = cli_value or os.environ.get(ENV_VAR) or DEFAULT_URL
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    try:
        make_url(url)
    except ArgumentError as exc:
        raise UserError(f"{url!r} is not a database URL ({exc})") from None
    return url


def is_sqlite(engine_or_url: Engine | str) -> bool:
    url = engine_or_url.url if isinstance(engine_or_url, Engine) else make_url(engine_or_url)
    return url.get_backend_name() == "sqlite"


def _configure_sqlite(engine: Engine) -> None:
    # pysqlite's own transaction handling defers BEGIN and ignores our isolation needs;
    # take control so writers start with BEGIN IMMEDIATE and never deadlock on upgrade.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def create_db_engine(url: str) -> Engine:
    if is_sqlite(url):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _configure_sqlite(engine)
    else:
        engine = create_engine(
            url, pool_pre_ping=True, pool_size=10, max_overflow=20, pool_recycle=1800
        )
    return engine


_engines: dict[str, Engine] = {}


def get_engine(url: str | None = None, *, upgrade: bool = True) -> Engine:
    """One engine per URL per process, with the schema created or upgraded on first use."""
    url = resolve_url(url)
    engine = _engines.get(url)
    if engine is None:
        engine = create_db_engine(url)
        try:
            if upgrade:
                from annotate.schema import ensure_schema

                ensure_schema(engine)
        except OperationalError as exc:
            engine.dispose()
            raise UserError(f"cannot open the database {engine.url!r}: {exc.orig}") from None
        _engines[url] = engine
    return engine


def dispose_engines() -> None:
    """Forget cached engines (tests, and processes that fork)."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()


def _is_retryable(exc: DBAPIError) -> bool:
    text = str(exc.orig).lower()
    code = getattr(exc.orig, "sqlstate", None)
    return (
        "database is locked" in text
        or "database is busy" in text
        or code in {"40001", "40P01"}  # serialization failure, deadlock
        or (exc.connection_invalidated and code is None)
    )


def retrying(fn: Callable[..., T]) -> Callable[..., T]:
    """Re-run a whole write transaction when the database asks for it (lock, serialization)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for attempt in range(8):
            try:
                return fn(*args, **kwargs)
            except DBAPIError as exc:
                if attempt == 7 or not _is_retryable(exc):
                    raise
                time.sleep(min(0.05 * 2**attempt, 1.0) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    return wrapper


@contextmanager
def session(engine: Engine) -> Iterator[Session]:
    """A short unit of work: committed on success, rolled back on error."""
    with Session(engine, expire_on_commit=False) as s:
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
