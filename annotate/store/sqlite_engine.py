"""SQLite as the storage layer runs it: connection settings, the write lock and BEGIN
IMMEDIATE, group commit, and the driver-level paths of the labelling step.

- WAL journal (readers never block the writer), a 30 s busy timeout, foreign keys on.
- Every write transaction opens with BEGIN IMMEDIATE, after this process's write lock, so
  writers queue instead of deadlocking when a read transaction tries to become a write one;
  read-only transactions (`read_only`) open a deferred one, a WAL snapshot that never waits.
- A durable commit survives a power cut, not only a killed process (labels are paid for):
  the storage layer's transactions fsync the WAL after their commit by group commit
  (`GroupCommit`); anything else through the engine commits with `synchronous=FULL`.
- The labelling Submit's common case and the page's read of the current pair run on driver
  connections (`write_transaction`, `ReadConnections`), without SQLAlchemy's Connection.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Session

_READ_ONLY = "annotate_read_only"
_DURABLE = "annotate_durable"
_LOCK_HELD = "annotate_write_lock"
_BIG_CACHE = "annotate_big_cache"
_BEGIN_WITH = "annotate_begin_with"  # the statements that begin the next transaction
_SYNCHRONOUS = "annotate_synchronous"  # the connection's PRAGMA synchronous, when known
_SYNCHRONOUS_NEXT = "annotate_synchronous_next"
SQLITE_DEFAULT_CACHE = -2000  # KiB, SQLite's default
WRITE_LOCK_WAIT = 5.0  # then fall back to SQLite's busy timeout

# Per engine; weak, so an engine that db.dispose_engines drops takes its entries along.
_write_locks: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()
_group_commits: weakref.WeakKeyDictionary[Engine, GroupCommit] = weakref.WeakKeyDictionary()
_readers: weakref.WeakKeyDictionary[Engine, ReadConnections] = weakref.WeakKeyDictionary()
_lazy_writers: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()
_group_writers: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def configure(engine: Engine) -> None:
    """Settings, events and registries for a new SQLite engine (db.create_db_engine)."""

    # pysqlite's own transaction handling defers BEGIN and ignores our isolation needs;
    # take control so writers start with BEGIN IMMEDIATE and never deadlock on upgrade.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
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
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        info = conn.info
        if options.get(_READ_ONLY):
            info[_BEGIN_WITH] = ("BEGIN",)  # deferred: a snapshot, no write lock
            return
        if not info.get(_LOCK_HELD):  # a second transaction on this connection keeps it
            info[_LOCK_HELD] = write_lock.acquire(timeout=WRITE_LOCK_WAIT)
        # FULL: the commit itself fsyncs the WAL. NORMAL: it does not; either the caller makes
        # it durable afterwards (group commit, see GroupCommit), or it is work whose loss in a
        # power cut is harmless (not in a crash: WAL keeps its order, and the next durable
        # commit makes it durable too).
        synchronous = "FULL" if options.get(_DURABLE, True) is True else "NORMAL"
        info[_BEGIN_WITH] = _write_begin(info, synchronous)

    def _do_begin(dbapi_connection: Any) -> None:
        info = dbapi_connection.info
        statements = info.pop(_BEGIN_WITH, ("BEGIN IMMEDIATE",))
        _run_begin(info, statements, dbapi_connection.execute)

    # (a per-engine replacement of the dialect's method: the point of the paragraph above)
    engine.dialect.do_begin = _do_begin  # type: ignore[method-assign]

    def _release(info: dict[Any, Any]) -> None:
        if info.pop(_LOCK_HELD, False):
            write_lock.release()

    # Released when the connection goes back to the pool (a Session does that right after its
    # commit; the commit event itself fires before the commit has happened) or rolls back.
    @event.listens_for(engine, "rollback")
    def _on_rollback(conn: Connection) -> None:
        _release(conn.info)

    @event.listens_for(engine.pool, "checkin")
    def _on_checkin(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        _release(record.info)
        if record.info.pop(_BIG_CACHE, False) and dbapi_connection is not None:
            dbapi_connection.execute(f"PRAGMA cache_size={SQLITE_DEFAULT_CACHE}")

    @event.listens_for(engine.pool, "invalidate")
    def _on_invalidate(
        _dbapi_connection: Any, record: ConnectionPoolEntry, _exception: Any
    ) -> None:
        _release(record.info)

    database = engine.url.database
    if database and database != ":memory:" and not database.startswith("file:"):
        _group_commits[engine] = GroupCommit(os.path.abspath(database))
        if not engine.url.query:
            _readers[engine] = ReadConnections(os.path.abspath(database))


def _write_begin(info: dict[Any, Any], synchronous: str) -> tuple[str, ...]:
    """The statements that begin a write transaction on a connection (`info`: its pool
    record's) with this `synchronous`: the PRAGMA only when the connection has another one."""
    if info.get(_SYNCHRONOUS) == synchronous:
        return ("BEGIN IMMEDIATE",)
    info.pop(_SYNCHRONOUS, None)  # unknown until the PRAGMA has run
    info[_SYNCHRONOUS_NEXT] = synchronous
    return (f"PRAGMA synchronous={synchronous}", "BEGIN IMMEDIATE")


def _run_begin(
    info: dict[Any, Any], statements: tuple[str, ...], execute: Callable[[str], object]
) -> None:
    for statement in statements:
        execute(statement)
        if statement.startswith("PRAGMA"):
            info[_SYNCHRONOUS] = info.pop(_SYNCHRONOUS_NEXT)


class GroupCommit:
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
        # Opened for writing (nothing is written): Windows flushes only such handles.
        for path in self._paths:
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue
            try:
                getattr(os, "fdatasync", os.fsync)(fd)
            finally:
                os.close(fd)
            return


class ReadConnections:
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


def readers(engine: Engine) -> ReadConnections | None:
    """The engine's read connections outside the pool (None: not a SQLite file, use the pool)."""
    return _readers.get(engine)


def close_readers(engine: Engine) -> None:
    if engine in _readers:
        _readers[engine].close()


def read_only(engine: Engine) -> Engine:
    """The same engine, but transactions opened through it only read (deferred BEGIN)."""
    return engine.execution_options(**{_READ_ONLY: True})


def use_large_cache(s: Session, mebibytes: int = 64) -> None:
    """SQLite: a larger page cache for this session's connection until it goes back to the
    pool, for one very large transaction (an import). A fixed size: memory stays bounded."""
    if s.get_bind().dialect.name != "sqlite":
        return
    conn = s.connection()
    conn.exec_driver_sql(f"PRAGMA cache_size=-{mebibytes * 1024}")
    conn.info[_BIG_CACHE] = True


def writer(engine: Engine, *, durable: bool) -> Engine:
    """The engine to write through: on SQLite, one whose commits skip the fsync when the
    transaction need not be durable, or when `made_durable` will sync it afterwards."""
    mode: str | bool
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


def made_durable(engine: Engine) -> None:
    """After a durable transaction has committed (and released SQLite's write lock): wait for
    the group commit's fsync that covers it."""
    group = _group_commits.get(engine)
    if group is not None:
        group.wait_durable()


def has_write_transaction(engine: Engine) -> bool:
    """Whether `write_transaction` can be used (a SQLite database file)."""
    return engine in _group_commits


@contextmanager
def write_transaction(engine: Engine) -> Iterator[sqlite3.Connection]:
    """SQLite: a durable write transaction on the driver's connection, for the labelling
    Submit's common case. SQLAlchemy's Connection (its begin, commit, close and checkin) took
    over half of the time the write lock was held, and the lock is what 32 annotators queue
    on. The same as db.transaction otherwise: a pooled connection (checked out before the lock
    is taken), this process's write lock, BEGIN IMMEDIATE, rolled back if the body raises, then
    the group commit's fsync. Driver errors leave as SQLAlchemy's DBAPIError, so db.write_driver
    (its one user) re-runs a transaction that met "database is locked"."""
    pooled = engine.raw_connection()
    try:
        driver = pooled.dbapi_connection
        assert isinstance(
            driver, sqlite3.Connection
        )  # a SQLite file's engine (has_write_transaction)
        held = _write_locks[engine].acquire(timeout=WRITE_LOCK_WAIT)
        try:
            statements = _write_begin(pooled.info, "NORMAL")  # the group commit syncs
            _run_begin(pooled.info, statements, lambda sql: _driver_execute(driver, sql))
            try:
                yield driver
                _driver_execute(driver, "COMMIT")
            except BaseException:
                if driver.in_transaction:
                    driver.execute("ROLLBACK")
                raise
        finally:
            if held:
                _write_locks[engine].release()
    finally:
        pooled.close()
    made_durable(engine)


def _driver_execute(driver: sqlite3.Connection, statement: str) -> None:
    try:
        driver.execute(statement)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(statement, (), exc, sqlite3.Error) from exc
