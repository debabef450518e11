"""Small builders for test data: pairs records, files, studies with annotators."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.engine import Engine

from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import id_of
from annotate.studies.catalog import get_or_create_study, update_study_options
from annotate.studies.pair_import import import_pairs


def pair_record(n: int | str, **overrides) -> dict:
    record = {
        "id": f"p{n}",
        "question": f"Question {n}: which camera bag should I buy?",
        "profile": [{"id": f"post-{n}", "category": "Lifestyle", "text": "I hike a lot."}],
        "rubric_aspects": [
            {"aspect": "Budget under $50", "evidence": "I'm a student", "reason": "money is tight"}
        ],
        "narrative": "I need something light for day hikes.",
        "category": "Lifestyle_and_Personal_Development",
        "chosen": f"A light, cheap bag for pair {n}.",
        "rejected": f"A premium leather bag for pair {n}.",
    }
    record.update(overrides)
    return record


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def make_study(
    engine: Engine,
    tmp_path: Path,
    *,
    n_pairs: int,
    annotators: int = 0,
    study: str = "default",
    **options,
) -> tuple[int, list[tuple[int, str]]]:
    """A study with n_pairs pairs and annotators; returns (study id, [(annotator id, token)])."""
    import_pairs(
        engine,
        write_jsonl(tmp_path / f"{study}-pairs.jsonl", [pair_record(i) for i in range(n_pairs)]),
        study_name=study,
    )
    people = []
    with session(engine) as s:
        study_row = get_or_create_study(s, study)
        if options:
            update_study_options(s, study_row, **options)
        for i in range(annotators):
            annotator, token = create_annotator(s, name=f"{study}-ann-{i}", study_id=study_row.id)
            people.append((id_of(annotator), token))
        return id_of(study_row), people


def fast_path_of(engine) -> str:
    """The path (annotations.submit_and_next's `served` tag) the common Submit must take on
    this engine's database."""
    from annotate.labelling.step import DRIVER_CONNECTION, SUBMIT_FUNCTION

    return SUBMIT_FUNCTION if engine.dialect.name == "postgresql" else DRIVER_CONNECTION
