"""Assignment: coverage grows evenly, no pair beyond the overlap target, A/B order stable."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlalchemy import func
from sqlmodel import col, select

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_answer
from annotate.queue.assignment import (
    history_in,
    next_assignment,
    progress,
    skip,
)
from annotate.queue.rules import Coins
from annotate.store import db
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair
from tests.factories import make_study


@pytest.fixture
def engine(db_url):
    return get_engine(db_url)


def answer(assignment, preference="chosen") -> Answer:
    return Answer(preference=preference, chosen_position=assignment.chosen_position)


def label_one(engine, annotator_id: int):
    assignment = next_assignment(engine, annotator_id=annotator_id)
    if assignment is not None:
        submit_answer(
            engine, annotator_id=annotator_id, pair_id=assignment.pair_id, answer=answer(assignment)
        )
    return assignment


def annotation_counts(engine) -> Counter:
    with session(engine) as s:
        return Counter(
            dict(
                s.exec(
                    select(Annotation.pair_id, func.count()).group_by(col(Annotation.pair_id))
                ).all()
            )
        )


def test_coverage_grows_evenly_and_never_exceeds_target(engine, tmp_path):
    _, people = make_study(engine, tmp_path, n_pairs=6, annotators=5, overlap_target=2)
    ids = [a for a, _ in people]
    # Round-robin: after every annotator labels one pair, the least-covered pairs were served.
    for _ in range(2):
        for annotator_id in ids:
            label_one(engine, annotator_id)
        counts = annotation_counts(engine)
        spread = [counts.get(pair_id, 0) for pair_id in range(1, 7)]
        assert max(spread) - min(spread) <= 1, spread
    while any(label_one(engine, a) for a in ids):
        pass
    counts = annotation_counts(engine)
    assert sorted(counts.values()) == [2] * 6  # exactly the target, nothing above
    with session(engine) as s:
        assert s.exec(select(func.max(Pair.n_assigned))).one() == 2
    for annotator_id in ids:
        assert next_assignment(engine, annotator_id=annotator_id) is None
        done = progress(engine, annotator_id=annotator_id)
        assert done.done == done.total
    assert sum(progress(engine, annotator_id=a).done for a in ids) == 12


def test_open_pair_is_served_again_until_answered(engine, tmp_path):
    _, [(annotator_id, _)] = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    first = next_assignment(engine, annotator_id=annotator_id)
    again = next_assignment(engine, annotator_id=annotator_id)
    assert (again.id, again.pair_id, again.chosen_position) == (
        first.id,
        first.pair_id,
        first.chosen_position,
    )
    submit_answer(engine, annotator_id=annotator_id, pair_id=first.pair_id, answer=answer(first))
    assert next_assignment(engine, annotator_id=annotator_id).pair_id != first.pair_id


def test_ab_order_is_deterministic_and_balanced():
    coins = Coins("0f" * 16)
    positions = [
        coins.chosen_position(pair_id=p, annotator_id=a) for p in range(200) for a in range(5)
    ]
    assert positions == [
        Coins("0f" * 16).chosen_position(pair_id=p, annotator_id=a)
        for p in range(200)
        for a in range(5)
    ]
    share_a = positions.count("A") / len(positions)
    assert 0.45 < share_a < 0.55
    # Not the same for every annotator of one pair: order is per annotator and pair.
    assert len({coins.chosen_position(pair_id=7, annotator_id=a) for a in range(20)}) == 2


def test_skip_releases_the_pair_and_returns_it_last(engine, tmp_path):
    _, people = make_study(engine, tmp_path, n_pairs=3, annotators=2, overlap_target=1)
    (a, _), (b, _) = people
    first = next_assignment(engine, annotator_id=a)
    skip(engine, annotator_id=a, pair_id=first.pair_id)
    # Released: another annotator can take it although the target is 1.
    taken_by_b = next_assignment(engine, annotator_id=b)
    assert taken_by_b.pair_id == first.pair_id
    served = []
    while (item := label_one(engine, a)) is not None:
        served.append(item.pair_id)
    assert first.pair_id not in served  # b holds it; a's skipped pair has no room left
    assert len(served) == 2
    assert progress(engine, annotator_id=a).finished


def test_skipped_pair_comes_back_after_the_others(engine, tmp_path):
    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    first = next_assignment(engine, annotator_id=a)
    skip(engine, annotator_id=a, pair_id=first.pair_id)
    order = []
    while (item := label_one(engine, a)) is not None:
        order.append(item.pair_id)
    assert order[-1] == first.pair_id and len(order) == 3
    assert [
        pid for pid, _ in db.read(engine, lambda s: history_in(s, annotator_id=a, limit=None))
    ] == list(reversed(order))


def test_twenty_skips_on_fifteen_pairs_do_not_show_every_pair(engine, tmp_path):
    # Skip walked the whole queue in file order and wrapped: a worker could choose which
    # pairs to answer. Past MAX_PENDING_SKIPS skipped pairs, the earliest comes back.
    from annotate.queue.rules import MAX_PENDING_SKIPS

    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=15, annotators=1)
    shown = []
    for _ in range(20):
        item = next_assignment(engine, annotator_id=a)
        shown.append(item.pair_id)
        skip(engine, annotator_id=a, pair_id=item.pair_id)
    assert len(set(shown)) == MAX_PENDING_SKIPS < 15
    # after the first skips, the earliest skipped pair comes back each time
    assert shown[MAX_PENDING_SKIPS] == shown[0]
    # an answer lets the queue move on: the one answered is done, a new pair comes next
    assert label_one(engine, a) is not None
    assert len(set(shown) | {next_assignment(engine, annotator_id=a).pair_id}) == 4


def test_quota_per_annotator(engine, tmp_path):
    _, [(a, _)] = make_study(engine, tmp_path, n_pairs=5, annotators=1, items_per_annotator=2)
    assert progress(engine, annotator_id=a).total == 2
    assert label_one(engine, a) and label_one(engine, a)
    assert label_one(engine, a) is None
    assert progress(engine, annotator_id=a).finished


def test_concurrent_annotators_never_exceed_target(engine, tmp_path):
    _, people = make_study(engine, tmp_path, n_pairs=10, annotators=8, overlap_target=3)
    errors = []

    def work(annotator_id):
        try:
            while label_one(engine, annotator_id) is not None:
                pass
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(a,)) for a, _ in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(annotation_counts(engine).values()) == [3] * 10
    with session(engine) as s:
        assert (
            s.exec(
                select(func.count()).select_from(Assignment).where(Assignment.status == "done")
            ).one()
            == 30
        )
