"""Engine creation, connection settings, retries and units of work for SQLite and PostgreSQL.

Units of work: the one way to open one
----------------------------------------
Code outside the storage modules opens a unit of work with one of two calls, both retried as a
whole when the database refuses for a transient reason (locked, serialization failure,
deadlock, dropped connection), for up to RETRY_SECONDS:

    value = db.read(engine, lambda s: s.get(Study, study_id))       # reads only, one snapshot
    value = db.write(engine, lambda s: change(s, ...))              # committed, or rolled back

`work` receives a SQLModel Session and may run several times, so it must do nothing outside the
database that cannot be repeated (or must make sure itself that it happens once: see
annotate/people/prolific.py). `read` is one snapshot: on SQLite a deferred transaction (a WAL snapshot
that never waits for a writer), on PostgreSQL a REPEATABLE READ, READ ONLY transaction, so every
query inside sees the same committed data.

The labelling step's hot paths write the same way on lighter handles:

    value = db.write_connection(engine, lambda conn: ...)  # a Core Connection, no ORM
    value = db.write_statement(engine, lambda conn: ...)   # the same, for one statement
    value = db.write_driver(engine, lambda driver: ...)    # the driver's own connection

`write_driver` is for the Submit's common case (annotate/labelling/step.py): on a SQLite file a
durable write transaction on the sqlite3 connection; on PostgreSQL a pooled connection in
autocommit, where each statement is a transaction of its own, so there `work` writes in one
statement (the generated submit function). A commit whose acknowledgement was lost is re-run
too: the work must be safe to run again after it committed (the Submit's is: its re-run finds
the assignment closed and hands over to the full rules, whose upsert stores the same answer).

Storage modules with hot paths build on the same pieces: `@retrying` around a function that
opens `session` / `read_session` (ORM) or `transaction` (Core, the labelling step).

SQLite: settings, write lock, group commit and the labelling step's driver-level paths are in
annotate/store/sqlite_engine.py.

PostgreSQL: a connection pool that checks connections before use (`pool_pre_ping`), so a
database restart costs one reconnect instead of an error. Every storage function wrapped by
`retrying` is idempotent (upserts, conditional updates), so a re-run after a commit whose
acknowledgement was lost does no harm.

The schema is checked (created, or refused when older or newer) by `open_engine`, as
annotate/store/schema.py says; the app calls it through annotate/engine.py.
"""

from __future__ import annotations

import functools
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlalchemy.pool import PoolProxiedConnection
from sqlmodel import Session, create_engine

from annotate.errors import UserError
from annotate.store import sqlite_engine
from annotate.store.schema import Generated, Mode, ensure_schema

ENV_VAR = "ANNOTATE_DATABASE_URL"
DEFAULT_URL = "sqlite:///annotate.db"
# Pool size per process (PostgreSQL). Every app replica and CLI process holds up to
# POOL_SIZE + MAX_OVERFLOW connections: keep replicas x that below max_connections.
POOL_SIZE = int(os.environ.get("ANNOTATE_DB_POOL_SIZE", "10"))
MAX_OVERFLOW = int(os.environ.get("ANNOTATE_DB_MAX_OVERFLOW", "20"))
# How long a storage call keeps retrying a transaction the database refused for a transient
# reason (locked, serialization failure, deadlock, connection lost while the server restarts).
RETRY_SECONDS = float(os.environ.get("ANNOTATE_DB_RETRY_SECONDS", "30"))

T = TypeVar("T")
P = ParamSpec("P")


def resolve_url(cli_value: str | None = None) -> str:
    """--db beats $ANNOTATE_DATABASE_URL beats the embedded SQLite file in the working directory.
    A URL that cannot be used is refused in one sentence naming where it came from."""
    if cli_value:
        url, source = cli_value, "--db"
    elif os.environ.get(ENV_VAR):
        url, source = os.environ[ENV_VAR], f"${ENV_VAR}"
    else:
        url, source = DEFAULT_URL, "the default database"
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    elif url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgres://")
    if "://" not in url:
        raise UserError(
            f"{source} {url!r} is not a database URL; for a SQLite file write "
            f"sqlite:///{url}, for PostgreSQL postgresql+psycopg://USER@HOST/DBNAME"
        )
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UserError(
            f"{source} {url!r} is not a database URL; use sqlite:///FILE or "
            "postgresql+psycopg://USER@HOST/DBNAME"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise UserError(
            f"{source} names an unsupported database {backend!r} "
            f"({parsed.render_as_string(hide_password=True)!r}); "
            "use sqlite:///FILE or postgresql+psycopg://USER@HOST/DBNAME"
        )
    if backend == "postgresql" and parsed.get_driver_name() != "psycopg":
        raise UserError(
            f"{source}: PostgreSQL URLs must use the psycopg driver, postgresql+psycopg://... "
            f"(got {parsed.drivername!r})"
        )
    return url


def is_sqlite(engine_or_url: Engine | str) -> bool:
    url = engine_or_url.url if isinstance(engine_or_url, Engine) else make_url(engine_or_url)
    return url.get_backend_name() == "sqlite"


def create_db_engine(url: str) -> Engine:
    if is_sqlite(url):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        sqlite_engine.configure(engine)
    else:
        engine = create_engine(
            url,
            pool_pre_ping=True,
            pool_size=POOL_SIZE,
            max_overflow=MAX_OVERFLOW,
            pool_timeout=60,
            pool_recycle=1800,
            connect_args={"connect_timeout": 10, "application_name": "annotate"},
        )
    return engine


_engines: dict[str, Engine] = {}
_ready: set[str] = set()  # URLs whose schema this process found at the newest revision
_lock = threading.Lock()


def open_engine(
    url: str | None = None, *, generated: Sequence[Generated], schema: Mode = Mode.CURRENT
) -> Engine:
    """One engine per URL per process, the schema checked on first use as `schema` says
    (annotate.store.schema: CURRENT creates an empty database's schema but refuses an older one,
    UPGRADE also upgrades, AS_IS uses an older one as it is) with the `generated` objects.

    The app opens its engines through annotate/engine.py's `get_engine`, which hands over the
    objects the layers above generate (tests/test_engine_door.py: nothing else calls this)."""
    url = resolve_url(url)
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_db_engine(url)
        if url not in _ready:
            try:
                current = _retry_call(
                    ensure_schema, engine, mode=schema, generated=generated, _seconds=3
                )
            except DBAPIError as exc:  # unreachable, no such database, no right to create
                _engines.pop(url, None)
                engine.dispose()
                shown = engine.url.render_as_string(hide_password=True)
                reason = (
                    _missing_folder(engine)
                    or (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
                )
                raise UserError(f"cannot open the database {shown!r}: {reason}") from None
            if current:
                _ready.add(url)
    return engine


def _missing_folder(engine: Engine) -> str | None:
    """Why a SQLite file could not be opened when its folder is missing (SQLite itself only
    says "unable to open database file"); None otherwise."""
    database = engine.url.database if is_sqlite(engine) else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    folder = Path(database).parent
    if folder.is_dir():
        return None
    return (
        f"the folder {folder} does not exist; create it first (SQLite creates the database "
        "file, not its folder)"
    )


def dispose_engines() -> None:
    """Forget cached engines (tests, and processes that fork)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
            sqlite_engine.close_readers(engine)
        _engines.clear()
        _ready.clear()


# SQLSTATEs worth re-running the whole transaction for.
_RETRY_SQLSTATES = {
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "55P03",  # lock_not_available
    "57P01",  # admin_shutdown (server restarting, or pg_terminate_backend)
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now (server starting up)
    "53300",  # too_many_connections
}


def _is_psycopg_operational(exc: BaseException) -> bool:
    """psycopg's OperationalError (named, not imported: SQLite installs need no psycopg)."""
    return any(
        cls.__name__ == "OperationalError" and cls.__module__.startswith("psycopg")
        for cls in type(exc).__mro__
    )


def is_retryable(exc: BaseException) -> bool:
    """True when the database refused for a transient reason and the same work may be re-run."""
    if _is_psycopg_operational(exc):
        # Raised unwrapped by the pool when a pre-ping found the connection dead and the
        # reconnect failed too (the server is restarting: refused, or closed while starting).
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    code = getattr(orig, "sqlstate", None)
    if code is not None:
        return code in _RETRY_SQLSTATES or code.startswith("08")  # 08: connection exception
    text = str(orig).lower()
    if "database is locked" in text or "database is busy" in text or "table is locked" in text:
        return True
    # psycopg raises OperationalError without a SQLSTATE when it cannot reach the server
    # (refused, reset, closed unexpectedly): transient while PostgreSQL restarts.
    return isinstance(exc, OperationalError) and type(orig).__module__.startswith("psycopg")


def _retry_call(
    fn: Callable[..., T], *args: Any, _seconds: float | None = None, **kwargs: Any
) -> T:
    # Kept by hand rather than with tenacity (#18): the part that needs care is which refusals
    # are transient (is_retryable, ours either way); the loop around it is these few lines,
    # which never sleep past the deadline and add nothing per call on the Submit path, and a
    # dependency for them would be one more pin in requirements.lock to keep in step.
    deadline = time.monotonic() + (RETRY_SECONDS if _seconds is None else _seconds)
    attempt = 0
    while True:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # is_retryable says which: DBAPIError, or the driver's own
            if not is_retryable(exc) or time.monotonic() >= deadline:
                raise
        delay = min(0.02 * 2**attempt, 1.0) * (0.5 + random.random())
        time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        attempt += 1


def retrying(fn: Callable[P, T]) -> Callable[P, T]:
    """Re-run a whole transaction when the database asks for it (lock, serialization, lost
    connection), for up to RETRY_SECONDS. The wrapped function must open its own session and be
    safe to run twice."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return _retry_call(functools.partial(fn, *args, **kwargs))

    return wrapper


def reader(engine: Engine) -> Engine:
    """The same engine, but transactions opened through it only read (on SQLite a deferred
    BEGIN: a snapshot that takes no write lock)."""
    return sqlite_engine.read_only(engine) if is_sqlite(engine) else engine


def _writer(engine: Engine, durable: bool) -> Engine:
    return sqlite_engine.writer(engine, durable=durable) if is_sqlite(engine) else engine


@contextmanager
def session(engine: Engine, *, durable: bool = True) -> Iterator[Session]:
    """A short unit of work: committed on success, rolled back on error.

    durable=False is for work whose loss in a power cut is harmless and repaired by later
    work (a pair reservation): on SQLite its commit skips the fsync. Its order is kept, and
    the next durable commit (an answer) makes it durable as well. No effect on PostgreSQL."""
    with Session(_writer(engine, durable), expire_on_commit=False) as s:
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
    if durable and is_sqlite(engine):
        sqlite_engine.made_durable(engine)


@contextmanager
def transaction(engine: Engine, *, durable: bool = True) -> Iterator[Connection]:
    """As `session`, on a Core connection without the ORM's bookkeeping: for the labelling
    step's hot path (annotate/queue/sql.py). An ORM Session for a rare path can join it with
    `Session(bind=conn)`."""
    with _writer(engine, durable).begin() as conn:
        yield conn
    if durable and is_sqlite(engine):
        sqlite_engine.made_durable(engine)


_autocommit: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


@contextmanager
def one_statement(engine: Engine, *, durable: bool = True) -> Iterator[Connection]:
    """As `transaction`, for work that is a single statement (atomic by itself): on PostgreSQL
    it runs in autocommit, one round trip instead of three (BEGIN, the statement, COMMIT),
    which is most of a draft's database work (labelling.save_draft). Never for two statements:
    each would commit on its own."""
    if is_sqlite(engine):
        with transaction(engine, durable=durable) as conn:
            yield conn
        return
    alone = _autocommit.get(engine)
    if alone is None:
        alone = _autocommit.setdefault(
            engine, engine.execution_options(isolation_level="AUTOCOMMIT")
        )
    with alone.connect() as conn:
        yield conn


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A unit of work that only reads: on SQLite a deferred transaction (a WAL snapshot that
    never queues behind writers); on PostgreSQL the same as `session`."""
    with session(reader(engine)) as s:
        yield s


@contextmanager
def snapshot_session(engine: Engine) -> Iterator[Session]:
    """A read-only unit of work in which every query sees the same committed data: on SQLite
    the deferred transaction of `read_session` (one WAL snapshot from its first read); on
    PostgreSQL REPEATABLE READ, READ ONLY (the default READ COMMITTED takes a new snapshot per
    statement)."""
    if is_sqlite(engine):
        with read_session(engine) as s:
            yield s
        return
    snap = engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    with Session(snap, expire_on_commit=False) as s:
        try:
            yield s
            s.commit()  # not rollback(), which would expire the objects read
        except BaseException:
            s.rollback()
            raise


def read(engine: Engine, work: Callable[[Session], T]) -> T:
    """Run `work(session)` in one read-only snapshot, retried as a whole (module docstring)."""

    def once() -> T:
        with snapshot_session(engine) as s:
            return work(s)

    return _retry_call(once)


def write(engine: Engine, work: Callable[[Session], T], *, durable: bool = True) -> T:
    """Run `work(session)` in one write unit of work, committed on success and retried as a
    whole (module docstring)."""

    def once() -> T:
        with session(engine, durable=durable) as s:
            return work(s)

    return _retry_call(once)


def write_connection(engine: Engine, work: Callable[[Connection], T], *, durable: bool = True) -> T:
    """As `write`, with `work` given a Core Connection (`transaction`): no ORM bookkeeping, for
    the labelling step's Submit and drafts."""

    def once() -> T:
        with transaction(engine, durable=durable) as conn:
            return work(conn)

    return _retry_call(once)


def write_statement(engine: Engine, work: Callable[[Connection], T], *, durable: bool = True) -> T:
    """As `write_connection`, for work that is one statement (atomic by itself): on PostgreSQL
    it runs in autocommit (`one_statement`), one round trip instead of three; for the drafts."""

    def once() -> T:
        with one_statement(engine, durable=durable) as conn:
            return work(conn)

    return _retry_call(once)


def has_driver_writes(engine: Engine) -> bool:
    """Whether `write_driver` can be used: PostgreSQL, or a SQLite file (not one in memory)."""
    return engine.dialect.name != "sqlite" or sqlite_engine.has_write_transaction(engine)


def write_driver(engine: Engine, work: Callable[[Any], T]) -> T:
    """As `write`, with `work` given the driver's connection (module docstring): on a SQLite file
    a sqlite3.Connection inside a durable write transaction (sqlite_engine.write_transaction);
    on PostgreSQL a pooled connection in autocommit (`autocommit`), each statement committed on
    its own. Check `has_driver_writes` first."""

    def once() -> T:
        if engine.dialect.name == "sqlite":
            with sqlite_engine.write_transaction(engine) as driver:
                return work(driver)
        with autocommit(engine) as pooled:
            return work(pooled)

    return _retry_call(once)


@contextmanager
def autocommit(engine: Engine) -> Iterator[PoolProxiedConnection]:
    """A pooled driver connection, on PostgreSQL in autocommit (each statement its own
    transaction) until it goes back to the pool: without SQLAlchemy's Connection and its begin
    and commit, which cost more than a one-statement read or the Submit function. Not retried:
    for `write_driver` and the labelling step's one-statement reads (annotate/queue/sql.py)."""
    pooled = engine.raw_connection()
    postgres = engine.dialect.name == "postgresql"
    try:
        if postgres:
            pooled.dbapi_connection.autocommit = True  # type: ignore[union-attr]
        yield pooled
    finally:
        raw: Any = pooled.dbapi_connection  # None once invalidated
        if postgres and raw is not None and not raw.closed:
            raw.autocommit = False
        pooled.close()
