"""annotate/store/sqlite_engine.py: group commit (a durable transaction returns only after an fsync
of the WAL that started after its commit, and concurrent commits share fsyncs), the Submit's
driver-level transaction, and the page's read-only connections."""

from __future__ import annotations

import itertools
import os
import threading
import time

import pytest
from sqlalchemy import text

from annotate.engine import get_engine
from annotate.store.db import session, transaction
from annotate.store.sqlite_engine import GroupCommit


class _Recorded(GroupCommit):
    """Syncs that take a while and record when they started and ended."""

    def __init__(self, ticks):
        super().__init__("/nonexistent/annotate-test.db")
        self.ticks = ticks
        self.syncs: list[tuple[int, int]] = []

    def _sync(self) -> None:
        start = next(self.ticks)
        time.sleep(0.005)
        self.syncs.append((start, next(self.ticks)))


def test_every_commit_waits_for_a_sync_that_started_after_it_and_commits_share_syncs():
    ticks = itertools.count()
    tick_lock = threading.Lock()
    group = _Recorded(ticks)
    checks: list[tuple[int, int]] = []

    def committer():
        for _ in range(20):
            with tick_lock:
                committed = next(ticks)  # the commit has happened by now
            group.wait_durable()
            checks.append((committed, next(ticks)))

    threads = [threading.Thread(target=committer) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(checks) == 16 * 20
    for committed, returned in checks:
        assert any(committed < start and end < returned for start, end in group.syncs), (
            committed,
            returned,
        )
    # 16 writers, a 5 ms fsync: each fsync covers several commits
    assert len(group.syncs) < len(checks) / 2, len(group.syncs)


def _synced_paths(monkeypatch) -> list[str]:
    synced: list[str] = []
    real = getattr(os, "fdatasync", os.fsync)

    def recording(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", recording)
    monkeypatch.setattr(os, "fsync", recording)
    return synced


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name the file")
def test_a_durable_sqlite_transaction_syncs_the_wal_after_its_commit(tmp_path, monkeypatch):
    path = tmp_path / "group.db"
    engine = get_engine(f"sqlite:///{path}")
    with transaction(engine) as conn:
        conn.execute(text("CREATE TABLE note (body TEXT)"))
    synced = _synced_paths(monkeypatch)

    with transaction(engine) as conn:
        conn.execute(text("INSERT INTO note VALUES ('kept')"))
        # committed with synchronous=NORMAL: the fsync comes after, outside the write lock
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
        assert synced == []
    assert synced == [f"{path}-wal"]

    with session(engine) as s:  # the ORM unit of work too
        s.execute(text("INSERT INTO note VALUES ('also kept')"))
    assert synced == [f"{path}-wal"] * 2

    with transaction(engine, durable=False) as conn:  # a reservation: no fsync at all
        conn.execute(text("INSERT INTO note VALUES ('may go in a power cut')"))
    assert synced == [f"{path}-wal"] * 2

    with engine.begin() as conn:  # outside the storage layer: SQLite's own FULL fsync
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2


def test_a_submit_interrupted_mid_transaction_rolls_back_and_is_retried(tmp_path, monkeypatch):
    """SQLite's common Submit (sqlite_engine.write_transaction): a refusal after the answer was written but
    before the commit rolls everything back, and db.write_driver runs it again: one answer, one
    reservation, the pair counted once."""
    from sqlalchemy.exc import OperationalError
    from sqlmodel import select

    from annotate.labelling.answers import Answer
    from annotate.labelling.step import submit_and_next
    from annotate.queue.assignment import next_assignment
    from annotate.queue.sql import Cursor
    from annotate.store.models import Annotation, Assignment, Pair
    from tests.scale_helpers import make_study

    engine = get_engine(f"sqlite:///{tmp_path / 'retry.db'}")
    _, [annotator] = make_study(engine, tmp_path, n_pairs=3, n_annotators=1, overlap=1)
    first = next_assignment(engine, annotator_id=annotator)
    real = Cursor.reserve_least_covered
    failures = []

    def locked_once(self, **kwargs):
        if not failures:
            failures.append(1)
            raise OperationalError("BEGIN", {}, Exception("database is locked"))
        return real(self, **kwargs)

    monkeypatch.setattr(Cursor, "reserve_least_covered", locked_once)
    answer = Answer(preference="tie", chosen_position=None, comment="once")
    following = submit_and_next(
        engine, annotator_id=annotator, pair_id=first.pair_id, answer=answer
    )
    assert failures == [1] and following is not None and following.pair_id != first.pair_id
    with session(engine) as s:
        assert [a.comment for a in s.exec(select(Annotation)).all()] == ["once"]
        statuses = sorted(x.status for x in s.exec(select(Assignment)).all())
        assert statuses == ["active", "done"]
        assert sorted(s.exec(select(Pair.n_assigned)).all()) == [0, 1, 1]


def test_the_pages_read_connections_cannot_write(tmp_path):
    """Cursor.autocommit on SQLite hands out sqlite_engine.ReadConnections: query_only."""
    import sqlite3

    from annotate.queue.sql import Cursor

    engine = get_engine(f"sqlite:///{tmp_path / 'readers.db'}")
    with transaction(engine) as conn:
        conn.execute(text("CREATE TABLE note (body TEXT)"))
        conn.execute(text("INSERT INTO note VALUES ('written by the storage layer')"))
    with Cursor.autocommit(engine) as cursor:
        cursor._cursor.execute("SELECT body FROM note")
        assert cursor._cursor.fetchall() == [("written by the storage layer",)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            cursor._cursor.execute("INSERT INTO note VALUES ('through a reader')")
    with Cursor.autocommit(engine) as cursor:  # the same connection again, still usable
        cursor._cursor.execute("SELECT count(*) FROM note")
        assert cursor._cursor.fetchone() == (1,)
