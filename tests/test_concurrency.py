"""Many annotators at once, on SQLite and PostgreSQL: exact end states, nothing lost or doubled."""

from __future__ import annotations

import json
import multiprocessing
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlmodel import col, select

from annotate.engine import get_engine
from annotate.store.db import session
from annotate.store.models import Annotation, Annotator, Pair
from annotate.studies.annotation_import import import_annotation_rows
from tests.scale_helpers import (
    check_complete_study,
    make_study,
    run_annotators,
    run_annotators_in_process,
)

N_PAIRS = 40
OVERLAP = 3
N_ANNOTATORS = 32


def test_32_annotator_threads_label_one_study_to_completion(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, annotators = make_study(
        engine, tmp_path, n_pairs=N_PAIRS, n_annotators=N_ANNOTATORS, overlap=OVERLAP
    )
    acknowledged = run_annotators(engine, annotators, seed=1)
    check_complete_study(
        engine, study_id, n_pairs=N_PAIRS, overlap=OVERLAP, acknowledged=acknowledged
    )


@pytest.mark.slow
def test_32_annotators_in_2_processes_label_one_study_to_completion(db_url, tmp_path):
    """Two processes (separate engines and pools) of 16 annotator threads each."""
    engine = get_engine(db_url)
    study_id, annotators = make_study(
        engine, tmp_path, n_pairs=N_PAIRS, n_annotators=N_ANNOTATORS, overlap=OVERLAP
    )
    groups = [annotators[i::2] for i in range(2)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        parts = pool.starmap(
            run_annotators_in_process, [(db_url, group, 100 * i) for i, group in enumerate(groups)]
        )
    acknowledged = {}
    for part in parts:
        for key, value in part.items():
            pair_id, annotator_id = map(int, key.split(","))
            acknowledged[(pair_id, annotator_id)] = tuple(value)
    check_complete_study(
        engine, study_id, n_pairs=N_PAIRS, overlap=OVERLAP, acknowledged=acknowledged
    )


# --- many imports of overlapping annotation files at once --------------------------------------

N_IMPORTS = 6


def _annotation_files(tmp_path: Path, pair_keys: list[str]) -> list[tuple[Path, list[dict]]]:
    """N_IMPORTS files in the section 3 layout; most (pair, annotator) rows appear in several
    files with different values, and some annotators exist only in the files."""
    rng = random.Random(7)
    files = []
    people = [f"imported-{i}" for i in range(12)]
    for n in range(N_IMPORTS):
        rows = []
        for key in pair_keys:
            for person in rng.sample(people, 4):
                rows.append(
                    {
                        "pair_id": key,
                        "annotator": person,
                        "preference": rng.choice(["chosen", "rejected", "tie"]),
                        "chosen_position": rng.choice(["A", "B", ""]),
                        "correctness_chosen": rng.randint(1, 5),
                        "relevance_chosen": "",
                        "helpfulness_chosen": rng.randint(1, 5),
                        "correctness_rejected": rng.randint(1, 5),
                        "relevance_rejected": "",
                        "helpfulness_rejected": rng.randint(1, 5),
                        "main_reason": rng.choice(["personal_fit", "both", ""]),
                        "comment": f"file {n}",
                        "seconds": round(rng.uniform(3, 60), 2),
                        "submitted_at": f"2026-11-0{1 + n % 9}T10:00:00+00:00",
                    }
                )
        rng.shuffle(rows)
        path = tmp_path / f"annotations-{n}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        files.append((path, rows))
    return files


def _storage_rows(rows: list[dict]) -> list[dict]:
    """The file rows as import_annotation_rows takes them (validated: empty -> None)."""
    from datetime import datetime

    out = []
    for row in rows:
        clean = {k: (None if v == "" else v) for k, v in row.items()}
        clean["submitted_at"] = datetime.fromisoformat(str(clean["submitted_at"]))
        out.append(clean)
    return out


def _check_one_row_per_pair_and_annotator(engine, study_id, files) -> None:
    wanted: dict[tuple[str, str], set[str]] = {}
    for _, rows in files:
        for row in rows:
            wanted.setdefault((row["pair_id"], row["annotator"]), set()).add(row["comment"])
    with session(engine) as s:
        stored = s.exec(
            select(Pair.pair_key, Annotator.name, Annotation.comment, Annotation.source)
            .join(Pair, col(Pair.id) == Annotation.pair_id)
            .join(Annotator, col(Annotator.id) == Annotation.annotator_id)
            .where(Annotation.study_id == study_id)
        ).all()
    keys = [(p, a) for p, a, _, _ in stored]
    assert len(keys) == len(set(keys)), "a (pair, annotator) has more than one row"
    assert set(keys) == set(wanted)
    for pair_key, name, comment, source in stored:
        # whichever import ran last for this row wins, with a value from one of the files
        assert comment in wanted[(pair_key, name)]
        assert source == "import"


def test_concurrent_annotation_imports_over_overlapping_rows(db_url, tmp_path):
    """Storage level: N_IMPORTS threads upsert overlapping rows at the same moment."""
    engine = get_engine(db_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=30, n_annotators=0, overlap=3)
    files = _annotation_files(tmp_path, [f"p{i}" for i in range(30)])
    start = threading.Barrier(N_IMPORTS)
    counts: list[int] = []
    errors: list[BaseException] = []

    def work(rows):
        try:
            start.wait()
            counts.append(
                import_annotation_rows(engine, study_id=study_id, rows=_storage_rows(rows)).total
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(rows,)) for _, rows in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(counts) == sorted(len(rows) for _, rows in files)
    _check_one_row_per_pair_and_annotator(engine, study_id, files)


@pytest.mark.slow
def test_concurrent_import_annotations_commands(db_url, tmp_path):
    """The command line: N_IMPORTS `annotate import-annotations` processes started together."""
    engine = get_engine(db_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=30, n_annotators=0, overlap=3, name="imp")
    files = _annotation_files(tmp_path, [f"p{i}" for i in range(30)])
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "annotate.cli",
                "import-annotations",
                str(path),
                "--study",
                "imp",
                "--db",
                db_url,
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path, _ in files[:4]  # four processes: each costs ~1.5 s of CPU to start
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    _check_one_row_per_pair_and_annotator(engine, study_id, files[:4])
