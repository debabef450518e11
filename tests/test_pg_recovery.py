"""PostgreSQL drops every connection mid-study (pg_terminate_backend, as in a restart or a
failover): the storage layer reconnects (pool_pre_ping) and re-runs the interrupted
transactions (retrying), and not one submitted answer is lost or doubled."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from sqlalchemy.engine import make_url

from annotate.store.db import get_engine
from tests.scale_helpers import check_complete_study, make_study, run_annotators

pytestmark = pytest.mark.postgres


def _terminate_all(url: str) -> int:
    """Kill every server process serving this database (except ours); returns how many."""
    name = make_url(url).database
    admin = make_url(url).set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    return int(row[0])


def test_labelling_survives_connections_dropped_mid_study(pg_url, tmp_path):
    engine = get_engine(pg_url)
    n_pairs, overlap = 150, 3  # big enough that labelling outlasts several rounds of kills
    study_id, annotators = make_study(
        engine, tmp_path, n_pairs=n_pairs, n_annotators=16, overlap=overlap
    )
    acknowledged: dict = {}
    errors: list[BaseException] = []

    def label():
        try:
            acknowledged.update(run_annotators(engine, annotators, seed=5))
        except BaseException as exc:
            errors.append(exc)

    labelling = threading.Thread(target=label)
    labelling.start()
    killed = rounds = 0
    while labelling.is_alive():
        time.sleep(0.1)
        killed += _terminate_all(pg_url)
        rounds += 1
    labelling.join()
    assert not errors, f"a storage call failed instead of recovering: {errors[0]!r}"
    assert killed > 0 and rounds >= 3, "the test never dropped a connection mid-study"
    print(f"dropped {killed} server connections in {rounds} rounds")
    # nothing lost, nothing doubled, no pair over its target
    check_complete_study(
        engine, study_id, n_pairs=n_pairs, overlap=overlap, acknowledged=acknowledged
    )


def test_idle_pool_reconnects_after_all_connections_were_dropped(pg_url, tmp_path):
    """Pooled connections killed while idle: the next call gets a fresh one (pre-ping)."""
    from annotate.annotations import get_answer, submit_answer
    from annotate.queue.assignment import next_assignment
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
