"""PostgreSQL drops every connection mid-study (pg_terminate_backend, as in a restart or a
failover): the storage layer reconnects (pool_pre_ping) and re-runs the interrupted
transactions (retrying), and not one submitted answer is lost or doubled."""

from __future__ import annotations

import itertools
import threading

import psycopg
import pytest
from sqlalchemy.engine import make_url

from annotate.engine import get_engine
from tests.scale_helpers import check_complete_study, make_study, run_annotators

pytestmark = pytest.mark.postgres


def _terminate_all(url: str) -> int:
    """Kill every server process serving this database (except ours), waiting up to 5 s for
    each to exit; returns how many."""
    name = make_url(url).database
    admin = make_url(url).set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) "
            "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    assert row is not None  # an aggregate: one row
    return int(row[0])


def test_labelling_survives_connections_dropped_mid_study(pg_url, tmp_path):
    """Four times during the study (after the 40th, 90th, 140th and 190th of 240 answers) the
    next statement an annotator's thread runs inside a transaction first kills every
    connection, its own included: that transaction is interrupted for certain, the others
    wherever they are. The engine reports each interrupted statement (handle_error)."""
    from sqlalchemy import event

    engine = get_engine(pg_url)
    n_pairs, overlap = 80, 3
    kill_after = {40, 90, 140, 190}  # of the n_pairs * overlap acknowledged answers
    study_id, annotators = make_study(
        engine, tmp_path, n_pairs=n_pairs, n_annotators=16, overlap=overlap
    )
    lock = threading.Lock()
    answers = itertools.count(1)
    kill_now = threading.Event()
    kills: list[int] = []  # connections killed, per round
    interrupted: list[str] = []  # statements that found their connection gone

    def count_answer(*_):
        with lock:
            if next(answers) in kill_after:
                kill_now.set()

    def kill_inside_a_transaction(conn, cursor, statement, *_):
        if not kill_now.is_set() or not conn.in_transaction():
            return
        with lock:
            if not kill_now.is_set():
                return
            kills.append(_terminate_all(pg_url))
            kill_now.clear()

    def note_lost_connection(context):
        if context.is_disconnect and not context.is_pre_ping:
            interrupted.append(context.statement or "")

    event.listen(engine, "before_cursor_execute", kill_inside_a_transaction)
    event.listen(engine, "handle_error", note_lost_connection)
    try:
        acknowledged = run_annotators(engine, annotators, seed=5, on_commit=count_answer)
    finally:
        event.remove(engine, "before_cursor_execute", kill_inside_a_transaction)
        event.remove(engine, "handle_error", note_lost_connection)
    assert len(kills) == len(kill_after) and all(kills), kills
    assert len(interrupted) >= len(kill_after), interrupted
    print(f"dropped {sum(kills)} server connections in {len(kills)} rounds")
    # nothing lost, nothing doubled, no pair over its target
    check_complete_study(
        engine, study_id, n_pairs=n_pairs, overlap=overlap, acknowledged=acknowledged
    )


def test_idle_pool_reconnects_after_all_connections_were_dropped(pg_url, tmp_path):
    """Pooled connections killed while idle: the next call gets a fresh one (pre-ping)."""
    from annotate.labelling.step import submit_answer
    from annotate.queue.assignment import next_assignment
    from tests.labelling_helpers import get_answer
    from tests.scale_helpers import make_answer

    engine = get_engine(pg_url)
    _, [annotator] = make_study(engine, tmp_path, n_pairs=3, n_annotators=1, overlap=1)
    assignment = next_assignment(engine, annotator_id=annotator)
    assert _terminate_all(pg_url) >= 1
    answer = make_answer(annotator, assignment.pair_id, 1, assignment.chosen_position)
    submit_answer(engine, annotator_id=annotator, pair_id=assignment.pair_id, answer=answer)
    _terminate_all(pg_url)
    stored = get_answer(engine, annotator_id=annotator, pair_id=assignment.pair_id)
    assert stored.comment == answer.comment and stored.preference == answer.preference


def test_a_submit_during_a_database_restart_waits_and_is_stored_once(pg_url, tmp_path):
    """PostgreSQL away (tests/tcp_relay.py: connections dropped, new ones closed at once):
    the pool's pre-ping finds its connection dead and the reconnect fails with psycopg's own
    OperationalError, unwrapped. The Submit waits (retried) and is stored once it is back."""
    from annotate.labelling.step import Loaded, submit_and_next
    from annotate.queue.assignment import next_assignment
    from annotate.store.models import Annotation
    from tests.scale_helpers import make_answer
    from tests.tcp_relay import TcpRelay, relay_url, target_of

    _, [annotator] = make_study(get_engine(pg_url), tmp_path, n_pairs=3, n_annotators=1, overlap=1)
    with TcpRelay(target_of(pg_url)) as relay:
        engine = get_engine(relay_url(pg_url, relay))
        shown = next_assignment(engine, annotator_id=annotator)
        answer = make_answer(annotator, shown.pair_id, 1, shown.chosen_position)
        outcome: list = []

        def submit():
            try:
                outcome.append(
                    submit_and_next(
                        engine,
                        annotator_id=annotator,
                        pair_id=shown.pair_id,
                        answer=answer,
                        loaded=Loaded(submitted_at=None),
                    )
                )
            except BaseException as exc:
                outcome.append(exc)

        relay.cut()
        worker = threading.Thread(target=submit)
        worker.start()
        relay.wait_for_refused(3, timeout=30)  # the Submit met the outage and tried again
        assert not outcome, f"the Submit ended while the database was away: {outcome}"
        relay.restore()
        worker.join(timeout=60)
    [following] = outcome
    assert not isinstance(following, BaseException), repr(following)
    assert following is not None and following.pair_id != shown.pair_id
    from sqlmodel import Session, select

    with Session(get_engine(pg_url)) as s:
        stored = s.exec(select(Annotation).where(Annotation.annotator_id == annotator)).all()
    assert [(a.pair_id, a.comment) for a in stored] == [(shown.pair_id, answer.comment)]
