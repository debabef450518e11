"""Annotations collected elsewhere, stored by an upsert: one row per (study, pair, annotator)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.sql.dml import Insert
from sqlmodel import Session, col, select

from analysis.vocabulary import ANSWER_COLUMNS
from annotate.queue import targets
from annotate.queue.sql import ANSWER_FIELDS
from annotate.store import db
from annotate.store.models import Annotation, Annotator, Pair, table_of, utcnow
from annotate.store.text import nul_problem

_UPSERTS: dict[str, Insert] = {}


def _upsert_statement(dialect: str) -> Insert:
    """INSERT ... ON CONFLICT (study, pair, annotator) DO UPDATE, built once per dialect: a new
    statement per call was compiled anew every time (a third of a submit's time)."""
    statement = _UPSERTS.get(dialect)
    if statement is None:
        module = postgresql if dialect == "postgresql" else sqlite
        insert = module.insert(table_of(Annotation))
        statement = insert.on_conflict_do_update(
            index_elements=["study_id", "pair_id", "annotator_id"],
            set_={name: insert.excluded[name] for name in ANSWER_FIELDS},
        )
        _UPSERTS[dialect] = statement
    return statement


def _upsert(s: Session, rows: list[dict[str, Any]]) -> None:
    # Core execution with the rows as parameters (same keys in every row)
    s.connection().execute(_upsert_statement(s.get_bind().dialect.name), rows)


def _annotator_ids(s: Session, *, names: Iterable[str], study_id: int) -> dict[str, int]:
    names = sorted(set(names))
    found = dict(
        s.exec(select(Annotator.name, Annotator.id).where(col(Annotator.name).in_(names))).all()
    )
    missing = [n for n in names if n not in found]
    if missing:
        dialect = s.get_bind().dialect.name
        module = postgresql if dialect == "postgresql" else sqlite
        s.execute(
            module.insert(Annotator)
            .values(
                [
                    {
                        "name": n,
                        "study_id": study_id,
                        "is_admin": False,
                        "active": True,
                        "created_at": utcnow(),
                        "guidelines_seen": False,
                    }
                    for n in missing
                ]
            )
            .on_conflict_do_nothing(index_elements=["name"])
        )
        found = dict(
            s.exec(select(Annotator.name, Annotator.id).where(col(Annotator.name).in_(names))).all()
        )
    return {name: annotator_id for name, annotator_id in found.items() if annotator_id is not None}


def _nul_problems(rows: list[dict[str, Any]]) -> list[str]:
    """Text with a NUL is refused (annotate/store/text.py), naming its row and column."""
    found = (
        nul_problem(value, where=f"row {number}, column '{column}'")
        for number, row in enumerate(rows, start=1)
        for column, value in row.items()
    )
    return [problem for problem in found if problem is not None]


def import_annotation_rows(engine: Engine, *, study_id: int, rows: list[dict[str, Any]]) -> int:
    """Upsert already validated contract rows (pair_id = pair key) in one transaction."""
    problems = _nul_problems(rows)
    if problems:
        from annotate.errors import InputError

        raise InputError("annotations", problems)
    return db.write(engine, lambda s: _import_annotation_rows(s, study_id=study_id, rows=rows))


def _import_annotation_rows(s: Session, *, study_id: int, rows: list[dict[str, Any]]) -> int:
    pair_ids = dict(s.exec(select(Pair.pair_key, Pair.id).where(Pair.study_id == study_id)).all())
    annotators = _annotator_ids(s, names=(r["annotator"] for r in rows), study_id=study_id)
    values = []
    for row in rows:
        values.append(
            {
                "study_id": study_id,
                "pair_id": pair_ids[row["pair_id"]],
                "annotator_id": annotators[row["annotator"]],
                **{c: row.get(c) for c in ANSWER_COLUMNS},
                "source": "import",
            }
        )
    # Sorted so concurrent imports take row locks in one order (no deadlocks on PostgreSQL).
    values.sort(key=lambda v: (v["pair_id"], v["annotator_id"]))
    for start in range(0, len(values), 500):
        _upsert(s, values[start : start + 500])
    targets.refresh_targets(s.connection(), study_id=study_id)  # adaptive studies
    return len(values)
