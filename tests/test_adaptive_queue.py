"""Adaptive overlap through the real labelling step (annotate.labelling.step.submit_and_next and
the queue), on SQLite and PostgreSQL: a pair whose annotators agree stops at MIN, a split pair
gets more but never more than MAX (also with 10 annotators submitting at once), a pair of the
agreement sample gets exactly K, and a late answer the decided pair no longer needs is refused."""

from __future__ import annotations

import threading
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import update
from sqlmodel import col, select

from analysis.design.stopping import AT_MAX, DECIDED
from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_and_next
from annotate.queue.assignment import next_assignment
from annotate.queue.rules import Coins, GivenAway
from annotate.queue.targets import Design
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair, Study, id_of, utcnow
from tests.factories import make_study
from tests.statistics_helpers import stopping_state


def _answer(preference: str) -> Answer:
    return Answer(preference=preference, chosen_position="A")


def _keys(engine, study_id: int) -> dict[int, str]:
    with session(engine) as s:
        return {
            id_of(pair): pair.pair_key
            for pair in s.exec(select(Pair).where(Pair.study_id == study_id)).all()
        }


def _label_until_done(engine, annotator_id: int, choose) -> list[int]:
    """The annotator labels every pair the queue gives; `choose(pair_id, annotator_id)` is
    the preference. Returns the pairs answered, in order."""
    done = []
    row = next_assignment(engine, annotator_id=annotator_id)
    while row is not None:
        done.append(row.pair_id)
        preference = choose(row.pair_id, annotator_id)
        row = submit_and_next(
            engine, annotator_id=annotator_id, pair_id=row.pair_id, answer=_answer(preference)
        )
        assert len(done) < 100
    return done


def _answers(engine, study_id: int) -> dict[int, list[str]]:
    """{pair id: preferences in the order they were submitted}."""
    with session(engine) as s:
        rows = s.exec(
            select(Annotation.pair_id, Annotation.preference)
            .where(Annotation.study_id == study_id)
            .order_by(col(Annotation.submitted_at), col(Annotation.id))
        ).all()
    out: dict[int, list[str]] = {}
    for pair_id, preference in rows:
        out.setdefault(pair_id, []).append(preference)
    return out


def test_agreeing_pair_stops_at_min_and_a_split_pair_gets_more_up_to_max(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, people = make_study(
        engine,
        tmp_path,
        n_pairs=2,
        annotators=5,
        allow_ties=False,
        adaptive_min=2,
        adaptive_max=4,
        agreement_sample=0.0,
    )
    keys = _keys(engine, study_id)
    order = {a: i for i, (a, _) in enumerate(people)}

    def choose(pair_id, annotator_id):  # p0: everyone agrees; p1: chosen, rejected, ...
        if keys[pair_id] == "p0":
            return "chosen"
        return "chosen" if order[annotator_id] % 2 == 0 else "rejected"

    served = [_label_until_done(engine, a, choose) for a, _ in people]
    answers = _answers(engine, study_id)
    by_key = {keys[p]: v for p, v in answers.items()}
    assert by_key["p0"] == ["chosen", "chosen"]  # decided at MIN
    assert by_key["p1"] == ["chosen", "rejected", "chosen", "rejected"]  # 2-2 at MAX
    assert [len(s) for s in served] == [2, 2, 1, 1, 0]  # the fifth annotator gets nothing
    with session(engine) as s:
        n_assigned = dict(s.exec(select(Pair.pair_key, Pair.n_assigned)).all())
    assert n_assigned == {"p0": 2, "p1": 4}


def test_the_agreement_sample_gets_exactly_k_whatever_the_answers(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, people = make_study(
        engine,
        tmp_path,
        n_pairs=16,
        annotators=6,
        adaptive_min=2,
        adaptive_max=5,
        agreement_sample=0.5,
        agreement_overlap=3,
    )
    keys = _keys(engine, study_id)
    for annotator_id, _ in people:
        _label_until_done(engine, annotator_id, lambda p, a: "chosen")  # all agree
    with session(engine) as s:
        design = Design.of(s.get(Study, study_id))
    sample = {p for p, k in keys.items() if design.in_sample(k)}
    assert 0 < len(sample) < len(keys)  # both kinds present under this study's secret
    answers = _answers(engine, study_id)
    for pair_id in keys:
        assert len(answers[pair_id]) == (3 if pair_id in sample else 2), keys[pair_id]


def test_agreement_sample_coin_is_keyed_and_near_its_fraction():
    coins = Coins("a secret")
    drawn = [coins.in_agreement_sample(pair_key=f"p{i}", fraction=0.2) for i in range(5000)]
    assert 0.18 < np.mean(drawn) < 0.22
    again = [coins.in_agreement_sample(pair_key=f"p{i}", fraction=0.2) for i in range(5000)]
    assert drawn == again  # reproducible from the secret
    other = [
        Coins("another").in_agreement_sample(pair_key=f"p{i}", fraction=0.2) for i in range(5000)
    ]
    assert drawn != other


def test_ten_annotators_submitting_at_once_never_take_a_pair_past_max(db_url, tmp_path):
    engine = get_engine(db_url)
    n_annotators, low, high = 10, 2, 4
    study_id, people = make_study(
        engine,
        tmp_path,
        n_pairs=12,
        annotators=n_annotators,
        allow_ties=False,
        adaptive_min=low,
        adaptive_max=high,
        agreement_sample=0.25,
        agreement_overlap=3,
    )
    keys = _keys(engine, study_id)
    order = {a: i for i, (a, _) in enumerate(people)}

    def choose(pair_id, annotator_id):  # splits most pairs, in an order set by who comes
        return "chosen" if (order[annotator_id] + pair_id) % 3 else "rejected"

    first = {a: next_assignment(engine, annotator_id=a) for a, _ in people}
    start = threading.Barrier(n_annotators)
    errors: list[BaseException] = []

    def work(annotator_id: int) -> None:
        try:
            row = first[annotator_id]
            start.wait()  # all ten submit their first pair at once
            while row is not None:
                preference = choose(row.pair_id, annotator_id)
                row = submit_and_next(
                    engine,
                    annotator_id=annotator_id,
                    pair_id=row.pair_id,
                    answer=_answer(preference),
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(a,)) for a, _ in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    # An annotator the queue gave nothing while a contested pair was held by someone else is
    # told to come back (queue_status); coming back, they get what the answer opened up.
    while True:
        served = [_label_until_done(engine, a, choose) for a, _ in people]
        if not any(served):
            break
    with session(engine) as s:
        design = Design.of(s.get(Study, study_id))
        n_assigned = dict(s.exec(select(Pair.id, Pair.n_assigned)).all())
        open_rows = s.exec(select(Assignment).where(Assignment.status == "active")).all()
    assert open_rows == []
    answers = _answers(engine, study_id)
    for pair_id, key in keys.items():
        got = answers[pair_id]
        assert n_assigned[pair_id] == len(got)
        if design.in_sample(key):
            assert len(got) == 3, key
            continue
        assert low <= len(got) <= high, (key, got)
        # exact: it stopped at the first answer after which the rule said stop
        states = [
            stopping_state(got[:k], minimum=low, maximum=high, ties=False)
            for k in range(1, len(got) + 1)
        ]
        assert states[-1] in (DECIDED, AT_MAX), (key, got)
        assert all(s not in (DECIDED, AT_MAX) for s in states[low - 1 : -1]), (key, got)


def test_a_late_answer_after_the_pair_is_decided_is_refused(db_url, tmp_path):
    """Rule 8 (queue/rules.py): a released reservation's late answer is stored only while the
    pair has room. Here the two others' answers decided the pair at 2 (its target fell to 2),
    so the late third answer is refused: nothing beyond the target, nobody else served."""
    engine = get_engine(db_url)
    study_id, people = make_study(
        engine,
        tmp_path,
        n_pairs=1,
        annotators=3,
        adaptive_min=2,
        adaptive_max=3,
        agreement_sample=0.0,
        reservation_timeout=60,
    )
    (late, _), (b, _), (c, _) = people
    held = next_assignment(engine, annotator_id=late)
    with session(engine) as s:  # the reservation is long past its timeout
        s.execute(
            update(Assignment)
            .where(Assignment.id == held.id)
            .values(assigned_at=utcnow() - timedelta(seconds=120))
        )
    first = next_assignment(engine, annotator_id=b)
    assert first is not None and first.pair_id == held.pair_id  # (the other seat was free)
    assert (
        submit_and_next(engine, annotator_id=b, pair_id=first.pair_id, answer=_answer("chosen"))
        is None
    )
    second = next_assignment(engine, annotator_id=c)  # expiry frees the late one's seat
    assert second is not None and second.pair_id == held.pair_id
    submit_and_next(engine, annotator_id=c, pair_id=second.pair_id, answer=_answer("chosen"))
    # decided at 2; the late answer arrives and is not needed
    with pytest.raises(GivenAway):
        submit_and_next(engine, annotator_id=late, pair_id=held.pair_id, answer=_answer("rejected"))
    answers = _answers(engine, study_id)
    assert answers[held.pair_id] == ["chosen", "chosen"]
    with session(engine) as s:
        pair = s.get(Pair, held.pair_id)
        assert (pair.n_assigned, pair.target) == (2, 2)  # decided; nobody else is served
