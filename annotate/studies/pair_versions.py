"""Versions of a pair's content: a changed pair gets a new version, the earlier one is kept.

A pair row holds its current content and version (1 first); `pair_version` keeps each earlier
version whole. `add_version` is the one way a pair's content changes (import-pairs --update,
a reviewer's revision, annotate/review/decisions.py). In the caller's write transaction it:

- keeps the current content as an earlier version (pair_version), and writes the new one;
- closes the earlier version's open and skipped assignments as 'revised': nobody is served
  the earlier text again, a Submit still showing it is refused (annotate/queue/rules.py,
  PairRevised) and its draft is never applied to the new text;
- queues the pair for its full overlap again: n_assigned (which counts the current version's
  reservations and answers) starts at zero, and an adaptive study's target follows the new
  version's answers (none yet).

Answers and assignments keep the version they showed, so the earlier answers stay with the
text they judged (exports carry `pair_version`; the report counts each pair's latest version
by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, func, insert, type_coerce, update
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.types import TypeDecorator
from sqlmodel import Session, col, select

from annotate.queue import targets
from annotate.store import db
from annotate.store.models import (
    PAIR_CONTENT,
    Annotation,
    Assignment,
    Pair,
    PairVersion,
    table_of,
    utcnow,
)
from annotate.store.text import nul_problem
from annotate.studies.catalog import get_study
from annotate.studies.pairs_files import ValidPair

_PAIR = table_of(Pair)
_VERSION = table_of(PairVersion)
_ASSIGNMENT = table_of(Assignment)
_ANNOTATION = table_of(Annotation)

IMPORT = "import"  # what replaced a version: import-pairs --update
REVIEW = "review"  # ... or a reviewer's revision
REVISED = "revised"  # the status of an earlier version's closed assignments


class EncodedJSON(TypeDecorator[Any]):
    """A JSON column's value given as JSON text already: bound as it is, not encoded again.

    `validate_record` gives the profile and rubric as written in the file (Parquet: encoded
    once, for the record hash) and the extra fields encoded once; storing that text saves
    encoding 100 KB records again. SQLite stores the text; PostgreSQL gets it with a ::JSON
    cast, so the `json` columns hold the same values as before and the ORM reads them back as
    lists and dicts. Only the text differs: the file's own layout, or canonical (sorted keys,
    non-ASCII not escaped).
    """

    impl = JSON
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> None:
        return None


JSON_COLUMNS = ("profile", "rubric_aspects", "extra")


def content_row(pair: ValidPair) -> dict[str, Any]:
    """A validated record's content columns (PAIR_CONTENT), the JSON ones as the pre-encoded
    text validation made (bound through EncodedJSON by the caller's statement)."""
    encoded = pair.encoded
    assert encoded is not None  # always set by validate_record
    return {
        "question": pair.question,
        "profile": encoded.profile,
        "rubric_aspects": encoded.rubric_aspects,
        "narrative": pair.narrative,
        "category": pair.category,
        "chosen": pair.chosen,
        "rejected": pair.rejected,
        "extra": encoded.extra,
        "record_hash": pair.record_hash,
    }


def nul_field(pair: ValidPair) -> str | None:
    """Text with a NUL is refused (annotate/store/text.py), naming the field."""
    for field, value in (
        ("id", pair.key),
        ("question", pair.question),
        ("narrative", pair.narrative),
        ("category", pair.category),
        ("chosen", pair.chosen),
        ("rejected", pair.rejected),
    ):
        problem = nul_problem(value, where=f"field '{field}'")
        if problem is not None:
            return problem
    return None


@dataclass(frozen=True)
class VersionAdded:
    pair_id: int
    version: int  # the new version
    earlier_answers: int  # answers to the version it replaced (kept, no longer counted)
    closed: int  # open or skipped assignments of that version closed as 'revised'


def add_version(
    conn: Connection,
    *,
    pair_id: int,
    content: ValidPair,
    replaced_by: str,
    now: datetime | None = None,
) -> VersionAdded:
    """Inside the caller's write transaction: `content` (a validated record; its id is not
    read) becomes the pair's new version, as the module docstring says."""
    now = now or utcnow()
    locked = select(_PAIR.c.version, _PAIR.c.study_id).where(_PAIR.c.id == pair_id)
    if conn.dialect.name == "postgresql":  # NO KEY UPDATE: answers' foreign keys not blocked
        locked = locked.with_for_update(key_share=True)
    old, study_id = conn.execute(locked).one()
    earlier = conn.execute(
        select(*(_PAIR.c[name] for name in PAIR_CONTENT)).where(_PAIR.c.id == pair_id)
    ).one()
    conn.execute(
        insert(_VERSION).values(
            pair_id=pair_id,
            version=old,
            replaced_at=now,
            replaced_by=replaced_by,
            **earlier._asdict(),
        )
    )
    values = {
        name: type_coerce(value, EncodedJSON()) if name in JSON_COLUMNS else value
        for name, value in content_row(content).items()
    }
    conn.execute(
        update(_PAIR)
        .where(_PAIR.c.id == pair_id)
        .values(version=old + 1, n_assigned=0, target=None, **values)
    )
    closed = conn.execute(
        update(_ASSIGNMENT)
        .where(
            _ASSIGNMENT.c.pair_id == pair_id,
            _ASSIGNMENT.c.pair_version == old,
            _ASSIGNMENT.c.status.in_(("active", "skipped")),
        )
        .values(status=REVISED, completed_at=now, away_since=None)
    ).rowcount
    answers = conn.execute(
        select(func.count())
        .select_from(_ANNOTATION)
        .where(_ANNOTATION.c.pair_id == pair_id, _ANNOTATION.c.pair_version == old)
    ).scalar_one()
    targets.after_answer(conn, study_id=study_id, pair_id=pair_id)  # adaptive: from no answers
    return VersionAdded(
        pair_id=pair_id, version=old + 1, earlier_answers=int(answers), closed=int(closed)
    )


def version_record(conn: Connection, *, pair_id: int, version: int) -> dict[str, Any] | None:
    """The content of one version of a pair as a record of a pairs file (its id included),
    current or earlier; None when the pair has no such version."""
    pair = conn.execute(
        select(_PAIR.c.pair_key, _PAIR.c.version).where(_PAIR.c.id == pair_id)
    ).first()
    if pair is None or not 1 <= version <= pair.version:
        return None
    table = _PAIR if version == pair.version else _VERSION
    where = (
        table.c.id == pair_id
        if table is _PAIR
        else (table.c.pair_id == pair_id) & (table.c.version == version)
    )
    row = conn.execute(select(*(table.c[name] for name in PAIR_CONTENT)).where(where)).one()
    content = row._asdict()
    content.pop("record_hash")
    extra = content.pop("extra") or {}
    content["profile"] = content["profile"] or []
    content["rubric_aspects"] = content["rubric_aspects"] or []
    return {"id": pair.pair_key, **content, **extra}


def all_versions(engine: Engine, *, study: str) -> list[dict[str, Any]]:
    """Every version of the study's pairs as pairs-file records with their `pair_version`, in
    the study's order, each pair's earlier versions before its current one."""

    def read(s: Session) -> list[dict[str, Any]]:
        study_id = get_study(s, study).id
        pairs = s.exec(
            select(Pair).where(Pair.study_id == study_id).order_by(col(Pair.position))
        ).all()
        earlier: dict[int, list[PairVersion]] = {}
        for row in s.exec(
            select(PairVersion)
            .join(Pair, col(Pair.id) == PairVersion.pair_id)
            .where(Pair.study_id == study_id)
            .order_by(col(PairVersion.version))
        ).all():
            earlier.setdefault(row.pair_id, []).append(row)
        out = []
        for pair in pairs:
            for old in earlier.get(pair.id or 0, []):
                out.append({"id": pair.pair_key, **old.record(), "pair_version": old.version})
            out.append({**pair.record(), "pair_version": pair.version})
        return out

    return db.read(engine, read)
