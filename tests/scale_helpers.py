"""Shared by the scale and reliability tests: a study to label, simulated annotators that label it
through the real storage functions, and the exact end-state checks."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from pathlib import Path

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.slots import preference_from_slot
from annotate.labelling.step import submit_answer
from annotate.people.auth import create_annotator
from annotate.queue.assignment import next_assignment, skip
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair, id_of
from annotate.studies.catalog import get_or_create_study, update_study_options
from annotate.studies.pair_import import import_pairs


def pair_record(n: int) -> dict:
    return {
        "id": f"p{n}",
        "question": f"Question {n}: which stove should I take on a winter trek?",
        "profile": [{"id": f"post-{n}", "category": "Outdoors", "text": "I camp in snow."}],
        "rubric_aspects": [{"aspect": "weight", "evidence": "ultralight posts", "reason": "pack"}],
        "narrative": "I carry everything myself.",
        "category": "Outdoors",
        "chosen": f"A light canister stove with an inverted feed, pair {n}.",
        "rejected": f"A heavy car-camping stove, pair {n}.",
    }


def make_study(
    engine: Engine, tmp_path: Path, *, n_pairs: int, n_annotators: int, overlap: int, name="scale"
) -> tuple[int, list[int]]:
    """A study of n_pairs pairs with the given overlap target; returns (study id, annotator ids)."""
    path = tmp_path / f"{name}-pairs.jsonl"
    path.write_text("".join(json.dumps(pair_record(i)) + "\n" for i in range(n_pairs)))
    import_pairs(engine, path, study_name=name)
    with session(engine) as s:
        study = get_or_create_study(s, name)
        update_study_options(s, study, overlap_target=overlap)
        ids = [
            id_of(create_annotator(s, name=f"{name}-annotator-{i}", study_id=study.id)[0])
            for i in range(n_annotators)
        ]
        return id_of(study), ids


def make_answer(annotator_id: int, pair_id: int, version: int, chosen_position: str) -> Answer:
    """A recognisable answer: the comment names who, what and which version."""
    rng = random.Random(annotator_id * 100_003 + pair_id * 31 + version)
    slot = rng.choice(["A", "B", "tie"])
    return Answer(
        preference=preference_from_slot(slot, chosen_position),
        chosen_position=chosen_position,
        ratings={
            "correctness_chosen": rng.randint(1, 5),
            "helpfulness_rejected": rng.randint(1, 5),
        },
        main_reason=rng.choice(["personal_fit", "general_quality", "both", "unsure"]),
        comment=f"a{annotator_id} p{pair_id} v{version}",
        seconds=rng.uniform(5, 90),
    )


def label_until_done(
    engine: Engine,
    annotator_id: int,
    *,
    seed: int,
    skip_rate: float = 0.1,
    resubmit_rate: float = 0.15,
    twin_rate: float = 0.1,
    on_commit=None,
) -> dict[int, tuple[str, str | None]]:
    """Label until no pair is left for this annotator. Some pairs are skipped once (they come
    back later), some answers are changed by a second submit, some are submitted twice at the
    same moment (a double click). Returns {pair_id: (preference, comment)} of the latest
    answer this annotator got acknowledged for every pair."""
    rng = random.Random(seed)
    latest: dict[int, tuple[str, str | None]] = {}
    skipped: set[int] = set()
    while True:
        assignment = next_assignment(engine, annotator_id=annotator_id)
        if assignment is None:
            return latest
        pair_id = assignment.pair_id
        if pair_id not in skipped and rng.random() < skip_rate:
            skipped.add(pair_id)
            skip(engine, annotator_id=annotator_id, pair_id=pair_id)
            continue
        versions = [1, 2] if rng.random() < resubmit_rate else [1]
        for version in versions:
            answer = make_answer(annotator_id, pair_id, version, assignment.chosen_position)
            if rng.random() < twin_rate:
                errors: list[BaseException] = []

                def twin(answer=answer, pair_id=pair_id, errors=errors):
                    try:
                        submit_answer(
                            engine, annotator_id=annotator_id, pair_id=pair_id, answer=answer
                        )
                    except BaseException as exc:  # re-raised below, in this thread
                        errors.append(exc)

                other = threading.Thread(target=twin)
                other.start()
                submit_answer(engine, annotator_id=annotator_id, pair_id=pair_id, answer=answer)
                other.join()
                if errors:
                    raise errors[0]
            else:
                submit_answer(engine, annotator_id=annotator_id, pair_id=pair_id, answer=answer)
            latest[pair_id] = (answer.preference, answer.comment)
            if on_commit is not None:
                on_commit(annotator_id, pair_id, answer)


def run_annotators(
    engine: Engine, annotator_ids: list[int], *, seed: int = 0, **options
) -> dict[tuple[int, int], tuple[str, str | None]]:
    """Every annotator labels in its own thread, all at once; returns the merged acknowledgements
    {(pair_id, annotator_id): (preference, comment)}. A thread's exception is re-raised."""
    results: dict[tuple[int, int], tuple[str, str | None]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(annotator_ids))
    lock = threading.Lock()

    def work(annotator_id: int) -> None:
        try:
            start.wait()
            mine = label_until_done(engine, annotator_id, seed=seed + annotator_id, **options)
            with lock:
                results.update({(p, annotator_id): v for p, v in mine.items()})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(a,)) for a in annotator_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def run_annotators_in_process(url: str, annotator_ids: list[int], seed: int) -> dict:
    """Entry point for a worker process (multiprocessing, spawn): its own engine and threads."""
    engine = get_engine(url)
    results = run_annotators(engine, annotator_ids, seed=seed)
    return {f"{p},{a}": v for (p, a), v in results.items()}


def check_complete_study(
    engine: Engine,
    study_id: int,
    *,
    n_pairs: int,
    overlap: int,
    acknowledged: dict[tuple[int, int], tuple[str, str | None]],
) -> None:
    """Exact end state of a study labelled to completion."""
    with session(engine) as s:
        rows = s.exec(
            select(
                Annotation.pair_id,
                Annotation.annotator_id,
                Annotation.preference,
                Annotation.comment,
            ).where(Annotation.study_id == study_id)
        ).all()
        pairs = s.exec(select(Pair.id, Pair.n_assigned).where(Pair.study_id == study_id)).all()
        done = dict(
            s.exec(
                select(Assignment.pair_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status == "done")
                .group_by(col(Assignment.pair_id))
            ).all()
        )
        active = s.exec(
            select(func.count())
            .select_from(Assignment)
            .where(Assignment.study_id == study_id, Assignment.status == "active")
        ).one()
    keys = Counter((p, a) for p, a, _, _ in rows)
    duplicates = [k for k, n in keys.items() if n > 1]
    assert not duplicates, f"duplicate (pair, annotator) rows: {duplicates[:5]}"
    assert len(rows) == n_pairs * overlap, f"{len(rows)} annotations, want {n_pairs * overlap}"
    per_pair = Counter(p for p, _, _, _ in rows)
    assert len(pairs) == n_pairs
    for pair_id, n_assigned in pairs:
        assert pair_id is not None
        assert per_pair[pair_id] == overlap, (pair_id, per_pair[pair_id])
        assert n_assigned == overlap, (pair_id, n_assigned)
        assert done.get(pair_id, 0) == overlap, (pair_id, done.get(pair_id))
    assert active == 0, f"{active} assignments left open"
    stored = {(p, a): (pref, comment) for p, a, pref, comment in rows}
    assert set(stored) == set(acknowledged), "stored and acknowledged answers differ in keys"
    lost = {k: v for k, v in acknowledged.items() if stored[k] != v}
    assert not lost, f"{len(lost)} answers not stored with their latest value: {list(lost)[:5]}"
