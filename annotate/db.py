"""Engine creation, connection settings and write retries for SQLite and PostgreSQL.

SQLite: WAL journal (readers never block the writer), a 30 s busy timeout, and every write
transaction opened with BEGIN IMMEDIATE, so two writers queue on the lock instead of
deadlocking when a read transaction tries to become a write one. A durable commit survives a
power cut, not only a killed process (labels are paid for): the storage layer's transactions
fsync the WAL after their commit by group commit (`_GroupCommit`), anything else through the
engine commits with `synchronous=FULL`. Pure reads use `read_session`, which opens a deferred
transaction: in WAL mode it never waits for a writer.

PostgreSQL: a connection pool that checks connections before use (`pool_pre_ping`), so a
database restart costs one reconnect instead of an error; the `retrying` decorator re-runs a
whole transaction on serialization failures, deadlocks and dropped connections. Every storage
function wrapped by it is idempotent (upserts, conditional updates), so a re-run after a commit
whose acknowledgement was lost does no harm.
"""

from __future__ import annotations

import functools
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlmodel import Session, create_engine

from annotate.errors import UserError

ENV_VAR = "ANNOTATE_DATABASE_URL"
DEFAULT_URL = "sqlite:///annotate.db"
# Pool size per process (PostgreSQL). Every app replica and CLI process holds up to
# POOL_SIZE + MAX_OVERFLOW connections: keep replicas x that below max_connections.
POOL_SIZE = int(os.environ.get("ANNOTATE_DB_POOL_SIZE", "10"))
MAX_OVERFLOW = int(os.environ.get("ANNOTATE_DB_MAX_OVERFLOW", "20"))
# How long a storage call keeps retrying a transaction the database refused for a transient
# reason (locked, serialization failure, deadlock, connection lost while the server restarts).
RETRY_SECONDS = float(os.environ.get("ANNOTATE_DB_RETRY_SECONDS", "30"))

_READ_ONLY = "annotate_read_only"
_DURABLE = "annotate_durable"
_LOCK_HELD = "annotate_write_lock"
_BIG_CACHE = "annotate_big_cache"
_BEGIN_WITH = "annotate_begin_with"  # the statements that begin the next transaction
_SYNCHRONOUS = "annotate_synchronous"  # the connection's PRAGMA synchronous, when known
_SYNCHRONOUS_NEXT = "annotate_synchronous_next"
SQLITE_DEFAULT_CACHE = -2000  # KiB, SQLite's default
WRITE_LOCK_WAIT = 5.0  # then fall back to SQLite's busy timeout

T = TypeVar("T")


def resolve_url(cli_value: str | None = None) -> str:
    """--db beats $ANNOTATE_DATABASE_URL beats the embedded SQLite file in the working directory."""
    url = cli_value or os.environ.get(ENV_VAR) or DEFAULT_URL
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    elif url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgres://")
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise UserError(f"{url!r} is not a database URL ({exc})") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise UserError(
            f"unsupported database {backend!r} in {parsed.render_as_string(hide_password=True)!r}; "
            "use sqlite:///FILE or postgresql+psycopg://USER@HOST/DBNAME"
        )
    if backend == "postgresql" and parsed.get_driver_name() != "psycopg":
        raise UserError(
            f"PostgreSQL URLs must use the psycopg driver: postgresql+psycopg://... "
            f"(got {parsed.drivername!r})"
        )
    return url


def is_sqlite(engine_or_url: Engine | str) -> bool:
    url = engine_or_url.url if isinstance(engine_or_url, Engine) else make_url(engine_or_url)
    return url.get_backend_name() == "sqlite"


def _configure_sqlite(engine: Engine) -> None:
    # pysqlite's own transaction handling defers BEGIN and ignores our isolation needs;
    # take control so writers start with BEGIN IMMEDIATE and never deadlock on upgrade.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, record):
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
        record.info[_SYNCHRONOUS] = "FULL"

    # Writers of this process queue on a lock before BEGIN IMMEDIATE. SQLite's own busy
    # handler polls with sleeps of up to 100 ms, which leaves the database idle while 32
    # threads wait; a lock hands it over at once. (Other processes still meet the busy
    # timeout; the lock only orders this process's writers, it guards no data.)
    write_lock = _write_locks[engine] = threading.Lock()

    # The event decides how the transaction begins; the dialect's do_begin (a no-op for
    # pysqlite) runs the statements on the driver's connection, so that a refusal ("database
    # is locked") leaves as SQLAlchemy's OperationalError, which `retrying` re-runs, and the
    # BEGIN costs no trip through SQLAlchemy's statement execution (a third of a short
    # transaction's time).
    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        options = conn.get_execution_options()
        info = conn.info
        if options.get(_READ_ONLY):
            info[_BEGIN_WITH] = ("BEGIN",)  # deferred: a snapshot, no write lock
            return
        if not info.get(_LOCK_HELD):  # a second transaction on this connection keeps it
            info[_LOCK_HELD] = write_lock.acquire(timeout=WRITE_LOCK_WAIT)
        # FULL: the commit itself fsyncs the WAL. NORMAL: it does not; either the caller makes
        # it durable afterwards (group commit, see _GroupCommit), or it is work whose loss in a
        # power cut is harmless (not in a crash: WAL keeps its order, and the next durable
        # commit makes it durable too).
        synchronous = "FULL" if options.get(_DURABLE, True) is True else "NORMAL"
        statements = ("BEGIN IMMEDIATE",)
        if info.get(_SYNCHRONOUS) != synchronous:
            statements = (f"PRAGMA synchronous={synchronous}", *statements)
            info.pop(_SYNCHRONOUS, None)  # unknown until the PRAGMA has run
            info[_SYNCHRONOUS_NEXT] = synchronous
        info[_BEGIN_WITH] = statements

    def _do_begin(dbapi_connection):
        info = dbapi_connection.info
        for statement in info.pop(_BEGIN_WITH, ("BEGIN IMMEDIATE",)):
            dbapi_connection.execute(statement)
            if statement.startswith("PRAGMA"):
                info[_SYNCHRONOUS] = info.pop(_SYNCHRONOUS_NEXT)

    engine.dialect.do_begin = _do_begin

    def _release(info) -> None:
        if info.pop(_LOCK_HELD, False):
            write_lock.release()

    # Released when the connection goes back to the pool (a Session does that right after its
    # commit; the commit event itself fires before the commit has happened) or rolls back.
    @event.listens_for(engine, "rollback")
    def _on_rollback(conn):
        _release(conn.info)

    @event.listens_for(engine.pool, "checkin")
    def _on_checkin(dbapi_connection, record):
        _release(record.info)
        if record.info.pop(_BIG_CACHE, False) and dbapi_connection is not None:
            dbapi_connection.execute(f"PRAGMA cache_size={SQLITE_DEFAULT_CACHE}")

    @event.listens_for(engine.pool, "invalidate")
    def _on_invalidate(_dbapi_connection, record, _exception):
        _release(record.info)


class _GroupCommit:
    """SQLite group commit for one database file, shared by the threads of this process.

    With synchronous=FULL every commit fsyncs the WAL while it holds the write lock, so 32
    annotators submitting at once queue on 32 fsyncs one after the other. Instead a durable
    transaction commits with synchronous=NORMAL (the WAL frames reach the operating system, no
    fsync), releases the write lock, and then waits in `wait_durable` until an fdatasync of the
    WAL file that *started after its commit* has returned: exactly what FULL guarantees (the
    WAL is synced after the transaction is committed), but one fsync now covers every commit
    made while the previous one ran. The caller returns (and the annotator sees the next pair)
    only after that, so an acknowledged answer survives a power cut as before."""

    def __init__(self, database: str):
        self._paths = (database + "-wal", database)
        self._cond = threading.Condition()
        self._committed = 0  # commits counted so far (by wait_durable, after each commit)
        self._synced = 0  # commits covered by a finished fsync
        self._syncing = False

    def wait_durable(self) -> None:
        with self._cond:
            self._committed += 1
            mine = self._committed
            while self._synced < mine:
                if self._syncing:  # a sync that may have started before this commit
                    self._cond.wait()
                    continue
                self._syncing = True
                covers = self._committed  # every commit counted so far happened before this
                self._cond.release()
                try:
                    self._sync()
                finally:
                    self._cond.acquire()
                    self._syncing = False
                    self._cond.notify_all()
                self._synced = max(self._synced, covers)

    def _sync(self) -> None:
        # A fresh descriptor each time: the WAL file is deleted and made anew when every
        # connection to the database closes, and an old descriptor would sync the old file.
        # No WAL file means it was checkpointed into the database file (which SQLite syncs).
        for path in self._paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                getattr(os, "fdatasync", os.fsync)(fd)
            finally:
                os.close(fd)
            return


_group_commits: weakref.WeakKeyDictionary[Engine, _GroupCommit] = weakref.WeakKeyDictionary()
_write_locks: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()


class _SQLiteReaders:
    """SQLite: driver connections for single-statement reads (the labelling page's current
    pair), kept apart from SQLAlchemy's pool, whose checkout and checkin cost several times
    the read itself and which 32 annotators' writes already contend for. `query_only`: nothing
    can be written through them. In WAL mode such a read never waits for a writer."""

    def __init__(self, database: str):
        self._database = database
        self._free: list[sqlite3.Connection] = []  # append and pop are atomic

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._database, timeout=30, check_same_thread=False, isolation_level=None
        )
        conn.execute("PRAGMA query_only=ON")
        return conn

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._free.pop()
        except IndexError:
            conn = self._connect()
        try:
            yield conn
        except BaseException:
            conn.close()  # it may be broken; a new one costs little
            raise
        self._free.append(conn)

    def close(self) -> None:
        while self._free:
            self._free.pop().close()


_sqlite_readers: weakref.WeakKeyDictionary[Engine, _SQLiteReaders] = weakref.WeakKeyDictionary()


def sqlite_reader(engine: Engine) -> _SQLiteReaders | None:
    """The engine's read connections outside the pool (None: not a SQLite file, use the pool)."""
    return _sqlite_readers.get(engine)


def create_db_engine(url: str) -> Engine:
    if is_sqlite(url):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _configure_sqlite(engine)
        database = engine.url.database
        if database and database != ":memory:" and not database.startswith("file:"):
            _group_commits[engine] = _GroupCommit(os.path.abspath(database))
            if not engine.url.query:
                _sqlite_readers[engine] = _SQLiteReaders(os.path.abspath(database))
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


def use_large_cache(s: Session, mebibytes: int = 64) -> None:
    """SQLite: a larger page cache for this session's connection until it goes back to the
    pool, for one very large transaction (an import). A fixed size: memory stays bounded."""
    if s.get_bind().dialect.name != "sqlite":
        return
    conn = s.connection()
    conn.exec_driver_sql(f"PRAGMA cache_size=-{mebibytes * 1024}")
    conn.info[_BIG_CACHE] = True


def reader(engine: Engine) -> Engine:
    """The same engine, but transactions opened through it only read (deferred on SQLite)."""
    return engine.execution_options(**{_READ_ONLY: True})


_engines: dict[str, Engine] = {}
_ready: set[str] = set()
_lock = threading.Lock()


def get_engine(url: str | None = None, *, upgrade: bool = True) -> Engine:
    """One engine per URL per process, with the schema created or upgraded on first use."""
    url = resolve_url(url)
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_db_engine(url)
        if upgrade and url not in _ready:
            from annotate.schema import ensure_schema

            try:
                _retry_call(ensure_schema, engine, _seconds=3)
            except DBAPIError as exc:  # unreachable, no such database, no right to create
                _engines.pop(url, None)
                engine.dispose()
                shown = engine.url.render_as_string(hide_password=True)
                reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
                raise UserError(f"cannot open the database {shown!r}: {reason}") from None
            _ready.add(url)
    return engine


def dispose_engines() -> None:
    """Forget cached engines (tests, and processes that fork)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
            if engine in _sqlite_readers:
                _sqlite_readers[engine].close()
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


def is_retryable(exc: BaseException) -> bool:
    """True when the database refused for a transient reason and the same work may be re-run."""
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


def _retry_call(fn: Callable[..., T], *args, _seconds: float | None = None, **kwargs) -> T:
    deadline = time.monotonic() + (RETRY_SECONDS if _seconds is None else _seconds)
    attempt = 0
    while True:
        try:
            return fn(*args, **kwargs)
        except DBAPIError as exc:
            if not is_retryable(exc) or time.monotonic() >= deadline:
                raise
        delay = min(0.02 * 2**attempt, 1.0) * (0.5 + random.random())
        time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        attempt += 1


def retrying(fn: Callable[..., T]) -> Callable[..., T]:
    """Re-run a whole transaction when the database asks for it (lock, serialization, lost
    connection), for up to RETRY_SECONDS. The wrapped function must open its own session and be
    safe to run twice."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _retry_call(fn, *args, **kwargs)

    return wrapper


_lazy_writers: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


_group_writers: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def _writer(engine: Engine, durable: bool) -> Engine:
    """The engine to write through: on SQLite, one whose commits skip the fsync when the
    transaction need not be durable, or when `_made_durable` will sync it afterwards."""
    if not is_sqlite(engine):
        return engine
    if durable:
        if engine not in _group_commits:
            return engine  # synchronous=FULL
        cache, mode = _group_writers, "group"
    else:
        cache, mode = _lazy_writers, False
    bind = cache.get(engine)
    if bind is None:
        bind = cache[engine] = engine.execution_options(**{_DURABLE: mode})
    return bind


def _made_durable(engine: Engine) -> None:
    """After a durable transaction has committed (and released SQLite's write lock): wait for
    the group commit's fsync that covers it."""
    group = _group_commits.get(engine)
    if group is not None:
        group.wait_durable()


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
    if durable:
        _made_durable(engine)


@contextmanager
def transaction(engine: Engine, *, durable: bool = True) -> Iterator[Connection]:
    """As `session`, on a Core connection without the ORM's bookkeeping: for the labelling
    step's hot path (annotate/queue_sql.py). An ORM Session for a rare path can join it with
    `Session(bind=conn)`."""
    with _writer(engine, durable).begin() as conn:
        yield conn
    if durable:
        _made_durable(engine)


def has_sqlite_write(engine: Engine) -> bool:
    """Whether `sqlite_write` can be used (a SQLite database file)."""
    return engine in _group_commits


@contextmanager
def sqlite_write(engine: Engine) -> Iterator[sqlite3.Connection]:
    """SQLite: a durable write transaction on the driver's connection, for the labelling
    Submit's common case. SQLAlchemy's Connection (its begin, commit, close and checkin) took
    over half of the time the write lock was held, and the lock is what 32 annotators queue
    on. The same as `transaction` otherwise: a pooled connection (checked out before the lock
    is taken), this process's write lock, BEGIN IMMEDIATE, rolled back if the body raises, then
    the group commit's fsync. Driver errors leave as SQLAlchemy's DBAPIError, so `retrying`
    re-runs a transaction that met "database is locked"."""
    pooled = engine.raw_connection()
    try:
        driver = pooled.dbapi_connection
        held = _write_locks[engine].acquire(timeout=WRITE_LOCK_WAIT)
        try:
            if pooled.info.get(_SYNCHRONOUS) != "NORMAL":
                pooled.info.pop(_SYNCHRONOUS, None)
                _driver_execute(engine, driver, "PRAGMA synchronous=NORMAL")
                pooled.info[_SYNCHRONOUS] = "NORMAL"
            _driver_execute(engine, driver, "BEGIN IMMEDIATE")
            try:
                yield driver
                _driver_execute(engine, driver, "COMMIT")
            except BaseException:
                if driver.in_transaction:
                    driver.execute("ROLLBACK")
                raise
        finally:
            if held:
                _write_locks[engine].release()
    finally:
        pooled.close()
    _made_durable(engine)


def _driver_execute(engine: Engine, driver: sqlite3.Connection, statement: str) -> None:
    try:
        driver.execute(statement)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(statement, (), exc, sqlite3.Error) from exc


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A unit of work that only reads: on SQLite a deferred transaction (a WAL snapshot that
    never queues behind writers); on PostgreSQL the same as `session`."""
    with session(reader(engine) if is_sqlite(engine) else engine) as s:
        yield s
