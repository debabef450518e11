"""Annotations collected elsewhere, stored by an upsert: one row per (study, pair, annotator)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.sql.dml import Insert
from sqlmodel import Session, col, select

from analysis.vocabulary import ANSWER_COLUMNS
from annotate.queue import targets
from annotate.queue.sql import ANSWER_FIELDS
from annotate.store import db
from annotate.store.clock import as_utc
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


@dataclass(frozen=True)
class Imported:
    """What an import did to the study's annotations, row by row of the file."""

    new: int  # a (pair, annotator) the study had no answer for
    replaced: int  # an existing answer, now the file's
    unchanged: int  # the file's answer was already stored as it is: nothing written

    @property
    def total(self) -> int:
        return self.new + self.replaced + self.unchanged


def import_annotation_rows(
    engine: Engine, *, study_id: int, rows: list[dict[str, Any]]
) -> Imported:
    """Upsert already validated contract rows (pair_id = pair key) in one transaction."""
    problems = _nul_problems(rows)
    if problems:
        from annotate.errors import InputError

        raise InputError("annotations", problems)
    return db.write(engine, lambda s: _import_annotation_rows(s, study_id=study_id, rows=rows))


def _import_annotation_rows(s: Session, *, study_id: int, rows: list[dict[str, Any]]) -> Imported:
    pair_ids: dict[str, int] = {
        key: id_
        for key, id_ in s.exec(select(Pair.pair_key, Pair.id).where(Pair.study_id == study_id))
        if id_ is not None
    }
    annotators = _annotator_ids(s, names=(r["annotator"] for r in rows), study_id=study_id)
    stored = _stored_answers(s, study_id=study_id, annotator_ids=set(annotators.values()))
    values = []
    new = unchanged = 0
    for row in rows:
        key = (pair_ids[row["pair_id"]], annotators[row["annotator"]])
        answer = {c: row.get(c) for c in ANSWER_COLUMNS}
        before = stored.get(key)
        if before is None:
            new += 1
        elif _same_answer(before, answer):
            unchanged += 1
            continue  # already stored as it is: not rewritten (its source stays as it was)
        values.append(
            {
                "study_id": study_id,
                "pair_id": key[0],
                "annotator_id": key[1],
                **answer,
                "source": "import",
            }
        )
    # Sorted so concurrent imports take row locks in one order (no deadlocks on PostgreSQL).
    values.sort(key=lambda v: (v["pair_id"], v["annotator_id"]))
    for start in range(0, len(values), 500):
        _upsert(s, values[start : start + 500])
    targets.refresh_targets(s.connection(), study_id=study_id)  # adaptive studies
    # Counted from what this transaction read: an import running at the same moment may turn
    # a "new" row into a replacement (the upsert keeps one row per pair and annotator).
    return Imported(new=new, replaced=len(values) - new, unchanged=unchanged)


def _stored_answers(
    s: Session, *, study_id: int, annotator_ids: set[int]
) -> dict[tuple[int, int], dict[str, Any]]:
    """The study's stored answers of these annotators, by (pair id, annotator id)."""
    if not annotator_ids:
        return {}
    columns = [getattr(Annotation, c) for c in ANSWER_COLUMNS]
    found = s.exec(
        select(Annotation.pair_id, Annotation.annotator_id, *columns).where(
            Annotation.study_id == study_id, col(Annotation.annotator_id).in_(sorted(annotator_ids))
        )
    ).all()
    return {(row[0], row[1]): dict(zip(ANSWER_COLUMNS, row[2:], strict=True)) for row in found}


def _same_answer(stored: dict[str, Any], given: dict[str, Any]) -> bool:
    """The same answer, times compared as instants (SQLite gives them back without a zone)."""
    for column in ANSWER_COLUMNS:
        a, b = stored.get(column), given.get(column)
        if isinstance(a, datetime) and isinstance(b, datetime):
            a, b = as_utc(a), as_utc(b)
        if a != b:
            return False
    return True
