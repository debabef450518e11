"""Reservations and gold checks against careless workers and hostile visitors (#10, #11), on
SQLite and PostgreSQL: deactivation releases atomically, reservations expire, nobody gets a
completion code for no work, a gold pair's first answer is final, gold checks do not show in
the progress count and are spread out, a deactivated tab can do nothing, the A/B coin is keyed.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from datetime import timedelta
from itertools import pairwise

import pytest
from sqlalchemy import func
from sqlmodel import col, select

from annotate.engine import get_engine
from annotate.errors import UserError
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_and_next, submit_answer
from annotate.people import accounts
from annotate.queue import gold
from annotate.queue.assignment import next_assignment, progress, skip
from annotate.queue.rules import GivenAway, gone_hold
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair, Study, id_of, utcnow
from tests.factories import make_study


@pytest.fixture
def engine(db_url):
    return get_engine(db_url)


def answer(preference="chosen") -> Answer:
    return Answer(preference=preference, chosen_position="A")


def counters_match_reservations(engine) -> list[tuple[str, int, int]]:
    """(pair key, n_assigned, open or done assignments) for every pair where they differ."""
    with session(engine) as s:
        held = dict(
            s.exec(
                select(Assignment.pair_id, func.count())
                .where(col(Assignment.status).in_(["active", "done"]))
                .group_by(col(Assignment.pair_id))
            ).all()
        )
        pairs = s.exec(select(Pair)).all()
    return [
        (p.pair_key, p.n_assigned, held.get(id_of(p), 0))
        for p in pairs
        if p.n_assigned != held.get(id_of(p), 0)
    ]


def hold(engine, *, annotator_id: int, study_id: int, pair_ids) -> None:
    """Reservations as a worker who opened many tabs would hold them."""
    with session(engine) as s:
        for pair_id in pair_ids:
            s.add(
                Assignment(
                    study_id=study_id,
                    pair_id=pair_id,
                    annotator_id=annotator_id,
                    chosen_position="A",
                )
            )
            s.get_one(Pair, pair_id).n_assigned += 1


# --- deactivation: an atomic release --------------------------------------------------------


def test_deactivation_releases_reservations_while_others_reserve(engine, tmp_path):
    """accounts.set_active read each pair's n_assigned and wrote n - 1 back: a reservation
    committed in between was lost, and the pair could then be served beyond its target. Ten
    workers label while three accounts holding every pair are deactivated; the first
    deactivation is held just before it writes a pair's counter until a worker has reserved a
    pair since (PostgreSQL) or begun a Submit since (SQLite, where it waits for the
    deactivation's write lock), so the race is made to happen, not hoped for."""
    from sqlalchemy import event

    study_id, people = make_study(engine, tmp_path, n_pairs=24, annotators=13, overlap_target=4)
    leaving = [a for a, _ in people[:3]]
    workers = [a for a, _ in people[3:]]
    with session(engine) as s:
        pair_ids = s.exec(select(Pair.id).order_by(Pair.id)).all()
    for annotator_id in leaving:
        hold(engine, annotator_id=annotator_id, study_id=study_id, pair_ids=pair_ids)
    errors: list[BaseException] = []
    everyone_holds_a_pair = threading.Barrier(len(workers) + 1)
    began = threading.Event()  # the first deactivation read everything, is about to write
    asked = threading.Event()  # a worker began a Submit after that
    reserved = threading.Event()  # a worker reserved a pair after that
    overlapped: list[bool] = []

    def work(annotator_id: int, *, together: bool = False) -> None:
        try:
            item = next_assignment(engine, annotator_id=annotator_id)
            if together:  # every worker holds a pair, then waits for the deactivation
                everyone_holds_a_pair.wait(timeout=60)
                began.wait(timeout=60)
            while item is not None:
                asked.set()
                submit_answer(
                    engine, annotator_id=annotator_id, pair_id=item.pair_id, answer=answer()
                )
                item = next_assignment(engine, annotator_id=annotator_id)
                if item is not None:
                    reserved.set()
        except BaseException as exc:
            errors.append(exc)

    deactivating = threading.get_ident()

    def hold_the_deactivation(conn, cursor, statement, *_):
        if threading.get_ident() != deactivating or overlapped:
            return
        if statement.lstrip().upper().startswith("UPDATE PAIR"):
            began.set()
            wanted = reserved if engine.dialect.name == "postgresql" else asked
            overlapped.append(wanted.wait(timeout=60))

    threads = [threading.Thread(target=work, args=(a,), kwargs={"together": True}) for a in workers]
    for t in threads:
        t.start()
    everyone_holds_a_pair.wait(timeout=60)
    event.listen(engine, "before_cursor_execute", hold_the_deactivation)
    try:
        for annotator_id in leaving:
            accounts.set_active(engine, annotator_id=annotator_id, active=False)
    finally:
        event.remove(engine, "before_cursor_execute", hold_the_deactivation)
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    assert overlapped == [True], "no worker reserved while the deactivation was under way"
    assert counters_match_reservations(engine) == []
    for annotator_id in workers:  # the pairs released after a worker found nothing left
        work(annotator_id)
    assert not errors, errors[0]
    with session(engine) as s:
        per_pair = s.exec(
            select(func.count()).select_from(Annotation).group_by(Annotation.pair_id)
        ).all()
    assert max(per_pair) <= 4  # never beyond the overlap target
    assert sorted(per_pair) == [4] * 24  # and every pair reached it


def test_a_reservation_made_during_a_deactivation_is_not_lost(engine, tmp_path):
    """The interleaving that lost an update, made to happen: another annotator reserves the
    pair after the deactivation started and before it writes the pair's counter."""
    from sqlalchemy import event

    study_id, [(leaving, _), (other, _), (third, _)] = make_study(
        engine, tmp_path, n_pairs=1, annotators=3, overlap_target=2
    )
    hold(engine, annotator_id=leaving, study_id=study_id, pair_ids=[1])
    deactivating = threading.get_ident()
    reserved = []

    def reserve_now(conn, cursor, statement, *_):
        if threading.get_ident() != deactivating or reserved:
            return
        if statement.lstrip().upper().startswith("UPDATE PAIR"):
            worker = threading.Thread(
                target=lambda: reserved.append(next_assignment(engine, annotator_id=other))
            )
            worker.start()
            worker.join(timeout=2)  # PostgreSQL: done; SQLite: waits for our write lock
            reserved.append(worker)

    event.listen(engine, "before_cursor_execute", reserve_now)
    try:
        accounts.set_active(engine, annotator_id=leaving, active=False)
    finally:
        event.remove(engine, "before_cursor_execute", reserve_now)
    for item in reserved:
        if isinstance(item, threading.Thread):
            item.join(timeout=30)
    assert any(getattr(item, "pair_id", None) == 1 for item in reserved)
    assert counters_match_reservations(engine) == []
    # one place is left on the pair (target 2, one reservation): the third annotator takes it,
    # and nobody after that
    assert next_assignment(engine, annotator_id=third) is not None
    with session(engine) as s:
        assert s.get(Pair, 1).n_assigned == 2


# --- reservations expire ------------------------------------------------------------------


def age(engine, *, annotator_id: int, seconds: int) -> None:
    with session(engine) as s:
        for a in s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.status == "active"
            )
        ).all():
            a.assigned_at = utcnow() - timedelta(seconds=seconds)
            a.seen_at = utcnow()  # its page is still open and says so (rules.py, rule 8)
            s.add(a)


def test_an_expired_reservation_goes_back_and_its_late_answer_is_kept_only_with_room(
    engine, tmp_path
):
    _, people = make_study(
        engine, tmp_path, n_pairs=3, annotators=4, overlap_target=1, reservation_timeout=600
    )
    (a, _), (b, _), (c, _), (d, _) = people
    held = [next_assignment(engine, annotator_id=x).pair_id for x in (a, b, c)]
    assert next_assignment(engine, annotator_id=d) is None  # every pair is reserved
    # not yet expired: 30 s short of the timeout, as the clock runs on until the check reads it
    age(engine, annotator_id=a, seconds=570)
    assert next_assignment(engine, annotator_id=d) is None
    age(engine, annotator_id=a, seconds=601)
    taken = next_assignment(engine, annotator_id=d)
    assert taken is not None and taken.pair_id == held[0]
    # a's tab was still open, but d holds the pair now (overlap 1): a's late answer would be
    # one beyond the target, so it is refused (rules.py, rule 8), d's is stored
    with pytest.raises(GivenAway):
        submit_answer(engine, annotator_id=a, pair_id=held[0], answer=answer("tie"))
    submit_answer(engine, annotator_id=d, pair_id=held[0], answer=answer())
    # b's reservation expires too and goes to d, who skips it: the pair has room again, so
    # b's late answer is kept (the pair reserved for b again), one row per pair and annotator
    age(engine, annotator_id=b, seconds=601)
    assert next_assignment(engine, annotator_id=d).pair_id == held[1]
    skip(engine, annotator_id=d, pair_id=held[1])
    submit_answer(engine, annotator_id=b, pair_id=held[1], answer=answer("tie"))
    submit_answer(engine, annotator_id=b, pair_id=held[1], answer=answer("rejected"))
    with session(engine) as s:
        rows = s.exec(select(Annotation.annotator_id, Annotation.preference)).all()
    assert sorted(rows) == sorted([(b, "rejected"), (d, "chosen")])
    assert counters_match_reservations(engine) == []


def test_nobody_gets_the_completion_code_for_pairs_others_hold(engine, tmp_path):
    from annotate.queue.assignment import queue_status

    _, people = make_study(
        engine, tmp_path, n_pairs=3, annotators=4, overlap_target=1, reservation_timeout=600
    )
    for x, _ in people[:3]:
        next_assignment(engine, annotator_id=x)
    (d, _) = people[3]
    before = utcnow()
    assert next_assignment(engine, annotator_id=d) is None
    status = queue_status(engine, annotator_id=d)
    assert status.answered == 0 and not status.earns_completion
    # nothing said by the pages since the pairs were reserved: free once GONE_HOLD passes
    # (rule 8), well before the 600 s timeout
    hold = min(600, gone_hold())
    assert before + timedelta(seconds=hold - 10) < status.busy_until
    assert status.busy_until < utcnow() + timedelta(seconds=hold + 1)
    # someone who finished real work with nothing held by others does get it
    (a, _) = people[0]
    item = next_assignment(engine, annotator_id=a)
    assert submit_and_next(engine, annotator_id=a, pair_id=item.pair_id, answer=answer()) is None
    status = queue_status(engine, annotator_id=a)
    assert status.answered == 1 and status.busy_until is not None  # b and c still hold pairs
    for x, _ in people[1:3]:
        item = next_assignment(engine, annotator_id=x)
        submit_and_next(engine, annotator_id=x, pair_id=item.pair_id, answer=answer())
    status = queue_status(engine, annotator_id=a)
    assert status.busy_until is None and status.earns_completion  # nothing left to wait for


# --- gold checks ----------------------------------------------------------------------------


def test_the_first_answer_to_a_qualification_check_is_final(engine, tmp_path):
    study_id, [(a, _)] = make_study(engine, tmp_path, n_pairs=4, annotators=1, qualification_gold=1)
    gold.set_gold(engine, study_id=study_id, pair_keys=["p3"], answer="chosen")
    check = next_assignment(engine, annotator_id=a)
    # two tabs show the same check; the first submits a wrong answer
    assert (
        submit_and_next(engine, annotator_id=a, pair_id=check.pair_id, answer=answer("rejected"))
        is None
    )
    # the second tab's right answer changes nothing
    submit_and_next(engine, annotator_id=a, pair_id=check.pair_id, answer=answer("chosen"))
    submit_answer(engine, annotator_id=a, pair_id=check.pair_id, answer=answer("chosen"))
    with session(engine) as s:
        assert s.exec(select(Annotation.preference)).all() == ["rejected"]
    assert gold.qualification_of(engine, annotator_id=a).state == gold.FAILED
    assert next_assignment(engine, annotator_id=a) is None


def _spread_secret(annotator_id: int) -> str:
    """A coin secret under which this annotator's gold checks (three) would come at positions
    that are not next to one another, the first after some real pairs."""
    from annotate.queue.rules import Coins

    for n in range(10_000):
        coins = Coins(f"spread-{n}")
        due = [p for p in range(1, 40) if coins.gold_due(annotator_id=annotator_id, position=p)]
        if len(due) >= 3 and due[0] > 2 and all(y - x > 1 for x, y in pairwise(due)):
            return f"spread-{n}"
    raise AssertionError("no secret found")


def test_gold_checks_do_not_show_in_the_progress_count_and_are_spread_out(engine, tmp_path):
    study_id, [(a, _)] = make_study(engine, tmp_path, n_pairs=33, annotators=1)
    gold.set_gold(engine, study_id=study_id, pair_keys=["p30", "p31", "p32"], answer="chosen")
    with session(engine) as s:
        s.get(Study, study_id).coin_secret = _spread_secret(a)
        gold_ids = set(s.exec(select(Pair.id).where(Pair.is_gold == True)).all())  # noqa: E712
    served, totals = [], []
    item = next_assignment(engine, annotator_id=a)
    while item is not None:
        served.append(item.pair_id in gold_ids)
        shown = progress(engine, annotator_id=a)
        totals.append(shown.total)
        assert shown.done == len(served) - 1
        item = submit_and_next(engine, annotator_id=a, pair_id=item.pair_id, answer=answer())
    assert served.count(True) == 3
    assert set(totals) == {33}  # the same total all along, gold shown or not
    assert progress(engine, annotator_id=a).finished
    gold_at = [n for n, is_gold in enumerate(served) if is_gold]
    assert all(y - x > 1 for x, y in pairwise(gold_at)), gold_at


# --- a deactivated annotator's open tab -----------------------------------------------------


def test_a_deactivated_annotators_open_tab_can_neither_submit_nor_reserve(engine, tmp_path):
    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=4, annotators=1)
    item = next_assignment(engine, annotator_id=a)
    accounts.set_active(engine, annotator_id=a, active=False)
    with pytest.raises(UserError, match="deactivated"):
        submit_and_next(engine, annotator_id=a, pair_id=item.pair_id, answer=answer())
    with pytest.raises(UserError, match="deactivated"):
        submit_answer(engine, annotator_id=a, pair_id=item.pair_id, answer=answer())
    assert next_assignment(engine, annotator_id=a) is None
    with session(engine) as s:
        assert s.exec(select(Annotation)).all() == []
        assert s.exec(select(func.sum(Pair.n_assigned))).one() == 0


# --- the keyed A/B coin ----------------------------------------------------------------------


def test_the_ab_order_is_keyed_with_the_studys_secret(engine, tmp_path):
    """HMAC-SHA256 with study.coin_secret (computed here with the standard library, not with
    the app's code): without the secret the order cannot be predicted from the ids."""
    study_id, [(a, _)] = make_study(engine, tmp_path, n_pairs=30, annotators=1)
    with session(engine) as s:
        secret = s.get(Study, study_id).coin_secret
    assert secret and len(secret) >= 32  # every new study gets one

    def expected(pair_id: int) -> str:
        digest = hmac.new(secret.encode(), f"ab:{pair_id}:{a}".encode(), hashlib.sha256).digest()
        return "A" if digest[0] & 1 else "B"

    item = next_assignment(engine, annotator_id=a)
    seen = []
    while item is not None:
        seen.append(item.chosen_position == expected(item.pair_id))
        item = submit_and_next(engine, annotator_id=a, pair_id=item.pair_id, answer=answer())
    assert len(seen) == 30 and all(seen)
