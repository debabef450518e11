"""Annotations collected elsewhere, stored by an upsert: one row per (study, pair, annotator,
pair version).

Each imported answer also gets a done assignment of its version (unless its annotator already
has one), as an answer given here has: the queue counts the answers the study holds for a
pair's current version, imported or given here, and never gives an annotator a version they
have answered (annotate/queue/rules.py). Counted by relative updates of pair.n_assigned, for
the assignments this import made or closed only, so imports and Submits at the same time
never lose a count."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy import select as select_columns
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.sql.dml import Insert, ReturningInsert
from sqlmodel import Session, col, select

from analysis.vocabulary import ANSWER_COLUMNS
from annotate.queue import targets
from annotate.queue.rules import coins_of
from annotate.queue.sql import ANSWER_FIELDS
from annotate.store import db
from annotate.store.clock import as_utc
from annotate.store.models import (
    Annotation,
    Annotator,
    Assignment,
    Pair,
    Study,
    table_of,
    utcnow,
)
from annotate.store.text import nul_problem

_ASSIGNMENT = table_of(Assignment)
_PAIR = table_of(Pair)
CHUNK = 500

_UPSERTS: dict[str, Insert] = {}


def _upsert_statement(dialect: str) -> Insert:
    """INSERT ... ON CONFLICT (study, pair, annotator) DO UPDATE, built once per dialect: a new
    statement per call was compiled anew every time (a third of a submit's time)."""
    statement = _UPSERTS.get(dialect)
    if statement is None:
        module = postgresql if dialect == "postgresql" else sqlite
        insert = module.insert(table_of(Annotation))
        statement = insert.on_conflict_do_update(
            index_elements=["study_id", "pair_id", "annotator_id", "pair_version"],
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
    """Upsert already validated annotation rows (pair_id = pair key) in one transaction."""
    problems = _nul_problems(rows)
    if problems:
        from annotate.errors import InputError

        raise InputError("annotations", problems)
    return db.write(engine, lambda s: _import_annotation_rows(s, study_id=study_id, rows=rows))


def _import_annotation_rows(s: Session, *, study_id: int, rows: list[dict[str, Any]]) -> Imported:
    pairs: dict[str, tuple[int, int]] = {
        key: (pair_id, version)
        for key, pair_id, version in s.exec(
            select(Pair.pair_key, Pair.id, Pair.version).where(Pair.study_id == study_id)
        ).all()
        if pair_id is not None
    }
    annotators = _annotator_ids(s, names=(r["annotator"] for r in rows), study_id=study_id)
    stored = _stored_answers(s, study_id=study_id, annotator_ids=set(annotators.values()))
    values = []
    new = unchanged = 0
    for row in rows:
        pair_id, current = pairs[row["pair_id"]]
        # an empty version is the pair's latest (docs/reference/file-formats.md)
        key = (pair_id, annotators[row["annotator"]], row.get("pair_version") or current)
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
                "pair_version": key[2],
                **answer,
                "source": "import",
            }
        )
    # Sorted so concurrent imports take row locks in one order (no deadlocks on PostgreSQL).
    values.sort(key=lambda v: (v["pair_id"], v["annotator_id"], v["pair_version"]))
    for start in range(0, len(values), CHUNK):
        _upsert(s, values[start : start + CHUNK])
    _assign_answered(s.connection(), study_id=study_id, answers=values)
    targets.refresh_targets(s.connection(), study_id=study_id)  # adaptive studies
    # Counted from what this transaction read: an import running at the same moment may turn
    # a "new" row into a replacement (the upsert keeps one row per pair and annotator).
    return Imported(new=new, replaced=len(values) - new, unchanged=unchanged)


def _stored_answers(
    s: Session, *, study_id: int, annotator_ids: set[int]
) -> dict[tuple[int, int, int], dict[str, Any]]:
    """The study's stored answers of these annotators, by (pair id, annotator id, version)."""
    if not annotator_ids:
        return {}
    columns = [getattr(Annotation, c) for c in ANSWER_COLUMNS]
    found = s.exec(
        select(
            Annotation.pair_id, Annotation.annotator_id, Annotation.pair_version, *columns
        ).where(
            Annotation.study_id == study_id, col(Annotation.annotator_id).in_(sorted(annotator_ids))
        )
    ).all()
    return {
        (row[0], row[1], row[2]): dict(zip(ANSWER_COLUMNS, row[3:], strict=True)) for row in found
    }


def _same_answer(stored: dict[str, Any], given: dict[str, Any]) -> bool:
    """The same answer, times compared as instants (SQLite gives them back without a zone)."""
    for column in ANSWER_COLUMNS:
        a, b = stored.get(column), given.get(column)
        if isinstance(a, datetime) and isinstance(b, datetime):
            a, b = as_utc(a), as_utc(b)
        if a != b:
            return False
    return True


def _assignment_statement(dialect: str) -> ReturningInsert[int, int]:
    module = postgresql if dialect == "postgresql" else sqlite
    statement: ReturningInsert[int, int] = (
        module.insert(_ASSIGNMENT)
        .on_conflict_do_nothing(
            index_elements=["study_id", "pair_id", "annotator_id", "pair_version"]
        )
        .returning(_ASSIGNMENT.c.pair_id, _ASSIGNMENT.c.pair_version)
    )
    return statement


_COUNT = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("b_pair"), _PAIR.c.version == bindparam("b_version"))
    .values(n_assigned=_PAIR.c.n_assigned + bindparam("b_count"))
)


def _close(
    conn: Connection, ids: list[int], *, statuses: tuple[str, ...], now: datetime
) -> Sequence[Row[int, int]]:
    """Close these assignments (those still in `statuses`) as done; (pair, version) of each."""
    if not ids:
        return []
    return conn.execute(
        update(_ASSIGNMENT)
        .where(_ASSIGNMENT.c.id.in_(ids), _ASSIGNMENT.c.status.in_(statuses))
        .values(status="done", completed_at=now, away_since=None)
        .returning(_ASSIGNMENT.c.pair_id, _ASSIGNMENT.c.pair_version)
    ).all()


def _assign_answered(conn: Connection, *, study_id: int, answers: list[dict[str, Any]]) -> None:
    """Inside the import's transaction: a done assignment for each imported answer (module
    docstring). A new one, or a released (skipped) one closed by the answer, counts towards its
    pair when it is of the pair's current version; an open one closed by it was counted."""
    coins = coins_of(conn.execute(select(Study.coin_secret).where(Study.id == study_id)).scalar())
    now = utcnow()
    counted: dict[tuple[int, int], int] = {}
    statement = _assignment_statement(conn.dialect.name)
    for start in range(0, len(answers), CHUNK):
        chunk = answers[start : start + CHUNK]
        rows = [
            {
                "study_id": study_id,
                "pair_id": a["pair_id"],
                "annotator_id": a["annotator_id"],
                "pair_version": a["pair_version"],
                "chosen_position": a["chosen_position"]
                or coins.chosen_position(pair_id=a["pair_id"], annotator_id=a["annotator_id"]),
                "status": "done",
                "assigned_at": _when(a, now),
                "completed_at": _when(a, now),
            }
            for a in chunk
        ]
        made = conn.execute(statement, rows).all()
        keys = {(a["pair_id"], a["annotator_id"], a["pair_version"]) for a in chunk}
        existing = conn.execute(
            select_columns(
                _ASSIGNMENT.c.id,
                _ASSIGNMENT.c.pair_id,
                _ASSIGNMENT.c.annotator_id,
                _ASSIGNMENT.c.pair_version,
                _ASSIGNMENT.c.status,
            ).where(
                _ASSIGNMENT.c.study_id == study_id,
                _ASSIGNMENT.c.pair_id.in_(sorted({a["pair_id"] for a in chunk})),
                _ASSIGNMENT.c.annotator_id.in_(sorted({a["annotator_id"] for a in chunk})),
                _ASSIGNMENT.c.status != "done",
            )
        ).all()
        mine = [row for row in existing if (row[1], row[2], row[3]) in keys]
        skipped = sorted(row.id for row in mine if row.status == "skipped")
        # a released reservation taken back by its answer counts again
        taken_back = _close(conn, skipped, statuses=("skipped",), now=now)
        others = sorted(row.id for row in mine if row.status != "skipped")
        _close(conn, others, statuses=("active", "revised"), now=now)
        for pair_id, version in [*made, *taken_back]:
            counted[pair_id, version] = counted.get((pair_id, version), 0) + 1
    updates = [
        {"b_pair": pair_id, "b_version": version, "b_count": n}
        for (pair_id, version), n in sorted(counted.items())
    ]
    if updates:  # only the current version's count moves (b_version must match)
        conn.execute(_COUNT, updates)


def _when(answer: dict[str, Any], now: datetime) -> datetime:
    return as_utc(answer.get("submitted_at")) or now
