"""Annotations per second sustained by the storage layer with 32 concurrent writers.

Each writer is an annotator labelling through the real functions the app calls for every item
until the study is complete: Submit stores the answer and reserves the next pair in one commit
(`submit_and_next`, what `labelling.submit` calls), then the next page run finds that pair
(`next_assignment`, a read-only transaction when a pair is already reserved). The baseline is the same
number of bare single-row INSERTs, each in its own transaction, from the same number of threads
through the same engine (same driver, pool and connection settings: on SQLite WAL,
synchronous=FULL and BEGIN IMMEDIATE), run just before and just after the storage run; the
faster of the two counts. (The storage layer's own SQLite transactions get the same durability
by group commit instead of FULL: annotate/store/sqlite_engine.py.) The ratio storage/baseline is printed;
goal >= 0.5.

    python benchmarks/bench_storage.py                 # SQLite, and PostgreSQL if reachable
    python benchmarks/bench_storage.py --pairs 100 --backend postgresql
    python benchmarks/bench_storage.py --repeat 3   # backends alternate: sqlite, pg, sqlite, ...
    ANNOTATE_BENCH_PG=postgresql+psycopg://postgres@127.0.0.1:5432/postgres (server to use)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, insert
from sqlalchemy.engine import make_url

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.slots import preference_from_slot
from annotate.labelling.step import submit_and_next
from annotate.people.auth import create_annotator
from annotate.queue.assignment import next_assignment
from annotate.store.db import dispose_engines, session
from annotate.store.models import id_of
from annotate.studies.catalog import get_or_create_study, update_study_options
from annotate.studies.pair_import import import_pairs

WRITERS = 32
PG_ADMIN = os.environ.get(
    "ANNOTATE_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def _record(n: int) -> dict:
    return {
        "id": f"bench-{n}",
        "question": f"Question {n}: what should I cook tonight?",
        "profile": [{"id": "1", "category": "food", "text": "I cook for two."}],
        "chosen": f"A quick pasta for two, variant {n}.",
        "rejected": f"A banquet for twelve, variant {n}.",
    }


def _setup(url: str, pairs: int, workdir: Path) -> list[int]:
    engine = get_engine(url)
    path = workdir / "bench-pairs.jsonl"
    path.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(pairs)))
    import_pairs(engine, path, study_name="bench")
    with session(engine) as s:
        study = get_or_create_study(s, "bench")
        # every annotator labels every pair: pairs x 32 annotations, all writers busy to the end
        update_study_options(s, study, overlap_target=WRITERS)
        return [
            id_of(create_annotator(s, name=f"bench-{i}", study_id=study.id)[0])
            for i in range(WRITERS)
        ]


def _in_threads(work, items) -> float:
    barrier = threading.Barrier(len(items) + 1)
    errors: list[BaseException] = []

    def run(item):
        barrier.wait()
        try:
            work(item)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed


def storage_rate(url: str, pairs: int, workdir: Path) -> tuple[int, float]:
    annotators = _setup(url, pairs, workdir)
    engine = get_engine(url)
    counts = dict.fromkeys(annotators, 0)

    def label(annotator_id: int) -> None:
        # The labelling step as the app runs it: the page's first run finds (reserves) a pair;
        # each Submit stores the answer and reserves the next pair in one commit
        # (labelling.submit -> submit_and_next), and the page run that follows finds that pair
        # with a read-only next_assignment.
        assignment = next_assignment(engine, annotator_id=annotator_id)
        while assignment is not None:
            slot = "A" if assignment.pair_id % 3 else "tie"
            reserved = submit_and_next(
                engine,
                annotator_id=annotator_id,
                pair_id=assignment.pair_id,
                answer=Answer(
                    preference=preference_from_slot(slot, assignment.chosen_position),
                    chosen_position=assignment.chosen_position,
                    ratings={"correctness_chosen": 4, "helpfulness_rejected": 2},
                    main_reason="personal_fit",
                    comment="benchmark",
                    seconds=12.5,
                ),
                version=assignment.pair_version,  # the version the page showed, as it says
            )
            counts[annotator_id] += 1
            assignment = next_assignment(engine, annotator_id=annotator_id)
            # the pair the submit reserved is the one the next page shows
            assert getattr(assignment, "id", None) == getattr(reserved, "id", None)

    elapsed = _in_threads(label, annotators)
    total = sum(counts.values())
    assert total == pairs * WRITERS, (total, pairs * WRITERS)
    return total, elapsed


def baseline_rate(url: str, rows: int) -> tuple[int, float]:
    engine = get_engine(url)
    table = Table(
        "bench_baseline",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("writer", Integer, nullable=False),
        Column("n", Integer, nullable=False),
        Column("preference", String, nullable=False),
        Column("comment", Text),
    )
    table.create(engine, checkfirst=True)
    per_writer = rows // WRITERS

    def write(writer: int) -> None:
        for n in range(per_writer):
            with engine.begin() as conn:  # one row, one transaction, like each answer
                conn.execute(
                    insert(table),
                    {"writer": writer, "n": n, "preference": "chosen", "comment": "benchmark"},
                )

    elapsed = _in_threads(write, list(range(WRITERS)))
    return per_writer * WRITERS, elapsed


def _pg_database() -> str | None:
    try:
        import psycopg

        admin = make_url(PG_ADMIN).set(drivername="postgresql")
        name = f"annotate_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(
            admin.render_as_string(hide_password=False), autocommit=True, connect_timeout=3
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return make_url(PG_ADMIN).set(database=name).render_as_string(hide_password=False)
    except Exception as exc:
        print(f"PostgreSQL skipped: {exc}", file=sys.stderr)
        return None


def _drop_pg(url: str) -> None:
    import psycopg

    dispose_engines()
    admin = make_url(PG_ADMIN).set(drivername="postgresql")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


def bench(backend: str, pairs: int) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if backend == "sqlite":
            url = f"sqlite:///{workdir / 'bench.db'}"
        else:
            database = _pg_database()
            if database is None:
                return None
            url = database
        try:
            # The baseline just before and just after the storage run; the faster of the two
            # counts (it swings by up to a factor of two between runs on a shared machine, and
            # the faster one makes the goal harder, not easier).
            rows = pairs * WRITERS
            m, before_s = baseline_rate(url, rows)
            n, storage_s = storage_rate(url, pairs, workdir)
            _, after_s = baseline_rate(url, rows)
            baseline_s = min(before_s, after_s)
        finally:
            dispose_engines()
            if backend == "postgresql":
                _drop_pg(url)
    result: dict[str, Any] = {
        "backend": backend,
        "writers": WRITERS,
        "annotations": n,
        "storage_per_s": n / storage_s,
        "baseline_rows": m,
        "baseline_per_s": m / baseline_s,
        "baseline_runs_per_s": (m / before_s, m / after_s),
    }
    result["ratio"] = result["storage_per_s"] / result["baseline_per_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="pairs (x32 annotations)")
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per backend, alternating backends"
    )
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    print(
        f"{'backend':<11} {'writers':>7} {'annotations':>11} {'storage/s':>10} "
        f"{'baseline/s':>10} {'ratio':>6}  goal >= 0.5"
    )
    ratios: dict[str, list[float]] = {b: [] for b in backends}
    for _ in range(args.repeat):
        for backend in backends:
            r = bench(backend, args.pairs)
            if r is None:
                continue
            ratios[backend].append(r["ratio"])
            verdict = "ok" if r["ratio"] >= 0.5 else "MISSED"
            print(
                f"{r['backend']:<11} {r['writers']:>7} {r['annotations']:>11} "
                f"{r['storage_per_s']:>10.0f} {r['baseline_per_s']:>10.0f} {r['ratio']:>6.2f}  "
                f"{verdict:<6}  (baseline before/after: "
                + " / ".join(f"{x:.0f}" for x in r["baseline_runs_per_s"])
                + ")",
                flush=True,
            )
    if args.repeat > 1:
        for backend, values in ratios.items():
            if values:
                print(f"median ratio {backend}: {statistics.median(values):.2f}")


if __name__ == "__main__":
    main()
