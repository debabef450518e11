"""Storing annotations: one row per (study, pair, annotator), written by an upsert so that a
double click, a rerun or a second tab can never create a second row or lose the first."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, select

from analysis.aspect_scores import parse_aspects
from analysis.vocabulary import ANSWER_COLUMNS, COLUMNS, RATING_COLUMNS, SIDES, SLOTS, TIE
from annotate.queue import targets
from annotate.queue.assignment import close_answered, next_assignment, reserve_next
from annotate.queue.rules import (
    AccountClosed,
    AssignmentRow,
    Coins,
    NeedsFullRules,
    StudyRules,
    choose_next,
)
from annotate.queue.sql import ANSWER_FIELDS, Cursor
from annotate.store import db
from annotate.store.clock import naive_utc
from annotate.store.models import Annotation, Annotator, Pair, utcnow
from annotate.store.text import nul_problem, visible_nul
from annotate.studies import get_study

if TYPE_CHECKING:  # pandas for the tables of the report and exports only: a Submit runs without it
    import pandas as pd


def preference_from_slot(slot: str, chosen_position: str) -> str:
    """Map the slot the annotator picked (A, B or tie) back to chosen/rejected/tie."""
    if slot == TIE:
        return TIE
    if slot not in SLOTS or chosen_position not in SLOTS:
        raise ValueError(f"unknown slot {slot!r} or position {chosen_position!r}")
    chosen, rejected = SIDES
    return chosen if slot == chosen_position else rejected


def other_slot(slot: str) -> str:
    """The other response slot: B for A, A for B."""
    first, second = SLOTS
    return second if slot == first else first


def slot_from_preference(preference: str, chosen_position: str) -> str:
    if preference == TIE:
        return TIE
    same = preference == SIDES[0]
    return chosen_position if same else other_slot(chosen_position)


@dataclass
class Answer:
    preference: str
    chosen_position: str | None
    ratings: dict[str, int | None] = field(default_factory=dict)  # e.g. {"correctness_chosen": 4}
    main_reason: str | None = None
    comment: str | None = None
    seconds: float | None = None
    submitted_at: datetime | None = None
    # Aspect check: one {"chosen": 0-2, "rejected": 0-2} per rubric aspect, in the pair's order.
    aspects: list[dict[str, int]] | None = None

    def values(self) -> dict:
        unknown = set(self.ratings) - set(RATING_COLUMNS)
        if unknown:
            raise ValueError(f"unknown rating columns: {sorted(unknown)}")
        return {
            "preference": self.preference,
            "chosen_position": self.chosen_position,
            **{column: self.ratings.get(column) for column in RATING_COLUMNS},
            "main_reason": self.main_reason,
            # typed text: a NUL is kept as a visible mark (annotate/store/text.py says why)
            "comment": visible_nul(self.comment or "") or None,
            "seconds": self.seconds,
            "submitted_at": self.submitted_at or utcnow(),
            "aspects": parse_aspects(self.aspects),  # refuses a malformed list (ValueError)
        }


@dataclass(frozen=True)
class Loaded:
    """What the form being submitted was loaded with: the stored answer's submitted_at, or
    None for a pair that was unanswered then."""

    submitted_at: datetime | None


class StaleAnswer(Exception):
    """The pair's answer changed after the form was loaded (another tab answered it):
    nothing was stored. `submitted_at` is when the answer kept was given."""

    def __init__(self, submitted_at: datetime):
        super().__init__(f"answered elsewhere at {submitted_at:%H:%M}")
        self.submitted_at = submitted_at


_COMPARED = tuple(name for name in ANSWER_FIELDS if name not in ("seconds", "submitted_at"))
_ANNOTATION = Annotation.__table__


def _check_loaded(
    conn: Connection,
    *,
    study_id: int,
    annotator_id: int,
    pair_id: int,
    values: dict,
    loaded: Loaded,
) -> None:
    """Refuse (StaleAnswer) an answer whose form was loaded before another one was stored:
    a second tab must not silently replace the first tab's answer. The same answer again (a
    double Submit, a retried commit) is no conflict."""
    stored = conn.execute(
        core_select(*(_ANNOTATION.c[name] for name in ANSWER_FIELDS))
        .where(
            _ANNOTATION.c.study_id == study_id,
            _ANNOTATION.c.annotator_id == annotator_id,
            _ANNOTATION.c.pair_id == pair_id,
        )
        .with_for_update()
    ).first()
    if stored is None:
        return
    at = naive_utc(stored.submitted_at)
    if at in (naive_utc(loaded.submitted_at), naive_utc(values["submitted_at"])):
        return
    if all(getattr(stored, name) == values[name] for name in _COMPARED):
        return
    raise StaleAnswer(stored.submitted_at)


_UPSERTS: dict[str, object] = {}


def _upsert_statement(dialect: str):
    """INSERT ... ON CONFLICT (study, pair, annotator) DO UPDATE, built once per dialect: a new
    statement per call was compiled anew every time (a third of a submit's time)."""
    statement = _UPSERTS.get(dialect)
    if statement is None:
        module = postgresql if dialect == "postgresql" else sqlite
        insert = module.insert(Annotation.__table__)
        statement = insert.on_conflict_do_update(
            index_elements=["study_id", "pair_id", "annotator_id"],
            set_={name: insert.excluded[name] for name in ANSWER_FIELDS},
        )
        _UPSERTS[dialect] = statement
    return statement


def _upsert(s: Session, rows: list[dict]) -> None:
    # Core execution with the rows as parameters (same keys in every row)
    s.connection().execute(_upsert_statement(s.get_bind().dialect.name), rows)


def _store_answer(
    conn: Connection, *, annotator_id: int, pair_id: int, values: dict, loaded: Loaded | None
) -> StudyRules:
    """Inside the caller's write transaction: upsert the answer and close the annotator's
    assignment for the pair (repairing it when there was none open); the study's rules.
    A deactivated annotator's answer is refused (AccountClosed), and so is one whose form was
    loaded before another answer was stored (StaleAnswer; `loaded` None: not checked)."""
    cursor = Cursor(conn)
    study = cursor.study_of(annotator_id=annotator_id, submitting=pair_id)
    if not study.annotator_active:
        raise AccountClosed
    keys = {"study_id": study.id, "annotator_id": annotator_id, "pair_id": pair_id}
    if loaded is not None:
        _check_loaded(conn, **keys, values=values, loaded=loaded)
    if not cursor.store_answer(**keys, values=values, now=utcnow()):
        close_answered(conn, **keys)
    if study.adaptive:
        targets.after_answer(conn, study_id=study.id, pair_id=pair_id)
    return study


def submit_answer(
    engine: Engine, *, annotator_id: int, pair_id: int, answer: Answer, loaded: Loaded | None = None
) -> None:
    """Store (or replace) this annotator's answer for this pair and close its assignment.
    With `loaded` (what the form showed), an answer stored since then is not replaced."""
    values = {**answer.values(), "source": "app"}  # refuses unknown rating columns first
    keys = {"annotator_id": annotator_id, "pair_id": pair_id}
    db.write_connection(
        engine, lambda conn: _store_answer(conn, **keys, values=values, loaded=loaded)
    )


# The keyed coins of each annotator's study, for PostgreSQL's submit function (which gets the
# padded keys from here): a study's coin_secret is made with the study and never changes.
_coins: weakref.WeakKeyDictionary[Engine, dict[int, Coins]] = weakref.WeakKeyDictionary()


def _coins_of(engine: Engine, cursor: Cursor, annotator_id: int) -> Coins | None:
    known = _coins.setdefault(engine, {})
    coins = known.get(annotator_id)
    if coins is None:
        coins = cursor.coins_of(annotator_id=annotator_id)
        if coins is not None:
            known[annotator_id] = coins
    return coins


# The paths a Submit can be served by (submit_and_next's `served`), fast ones first.
SUBMIT_FUNCTION = "submit function"  # PostgreSQL: the generated function, one round trip
DRIVER_CONNECTION = "driver connection"  # SQLite: the common case on the driver's connection
FULL_RULES = "full rules"  # the rules in Python through SQLAlchemy (annotate/queue/assignment.py)


def submit_and_next(
    engine: Engine,
    *,
    annotator_id: int,
    pair_id: int,
    answer: Answer,
    loaded: Loaded | None = None,
    fast: bool = True,
    served: list[str] | None = None,
) -> AssignmentRow | None:
    """The labelling step in one commit: store the answer as submit_answer does and reserve
    the annotator's next pair as next_assignment would (returned; None when nothing is left).
    Safe to re-run: the upsert and the close are idempotent, and a re-run finds the pair the
    first run reserved still open. Every path applies assignment_rules; the fast ones hand
    over to the full rules when they meet a rare case. The fast ones only ever close an open
    assignment, which no answer exists for yet (an answer closes it), so `loaded` needs no check
    there unless the form showed an earlier answer.

    `fast=False` applies the full rules only; `served`, when given, receives the path that
    committed the answer (SUBMIT_FUNCTION, DRIVER_CONNECTION or FULL_RULES; a fast path that
    left the next pair to the full rules gets " + full rules"): how the parity test knows which
    path it ran."""
    # Three units of work at most, each retried as a whole on its own (db.write_driver,
    # db.write_connection, next_assignment) and each safe to re-run after a commit whose
    # acknowledgement was lost. The answer's values (its submitted_at) are made once, so
    # every attempt stores the same answer.
    values = {**answer.values(), "source": "app"}
    keys = {"annotator_id": annotator_id, "pair_id": pair_id}
    if fast and (loaded is None or loaded.submitted_at is None) and db.has_driver_writes(engine):
        fast_path = SUBMIT_FUNCTION if engine.dialect.name == "postgresql" else DRIVER_CONNECTION
        fast_step = _submit_function if fast_path == SUBMIT_FUNCTION else _submit_common_sqlite
        try:
            done, reserved = db.write_driver(
                engine, lambda driver: fast_step(engine, driver, **keys, values=values)
            )
        except NeedsFullRules:  # rolled back: nothing was done
            done, reserved = False, None
        if done:  # the answer is committed; with no pair reserved, the full rules pick one
            path = fast_path
            if reserved is None:
                path = f"{fast_path} + {FULL_RULES}"
                reserved = next_assignment(engine, annotator_id=annotator_id)
            if served is not None:
                served.append(path)
            return reserved

    def full_rules(conn: Connection) -> AssignmentRow | None:
        study = _store_answer(conn, **keys, values=values, loaded=loaded)
        return reserve_next(conn, study=study, annotator_id=annotator_id)

    reserved = db.write_connection(engine, full_rules)
    if served is not None:
        served.append(FULL_RULES)
    return reserved


def _submit_function(
    engine: Engine, driver: Any, *, annotator_id: int, pair_id: int, values: dict
) -> tuple[bool, AssignmentRow | None]:
    """PostgreSQL's common Submit in one round trip (the generated submit function), on
    db.write_driver's autocommit connection: (True, the pair reserved or None) once committed,
    (False, None) when nothing was done and the full rules must run."""
    cursor = Cursor(driver, dialect=engine.dialect)
    coins = _coins_of(engine, cursor, annotator_id)
    if coins is None:
        return False, None
    return cursor.submit_in_one_call(
        pair_id=pair_id, annotator_id=annotator_id, values=values, now=utcnow(), coins=coins
    )


def _submit_common_sqlite(
    engine: Engine, driver: Any, *, annotator_id: int, pair_id: int, values: dict
) -> tuple[bool, AssignmentRow | None]:
    """SQLite's common Submit inside db.write_driver's transaction on the driver's connection:
    the answer stored and assignment_rules.choose_next applied to the driver's Cursor, whose
    rare operations raise NeedsFullRules (as PostgreSQL's function returns no pair). Returns
    (True, the pair reserved or None) to be committed; NeedsFullRules when the full rules must
    run instead (it leaves the unit, which rolls back: nothing is done)."""
    now = utcnow()
    cursor = Cursor(driver, dialect=engine.dialect)
    try:
        study = cursor.study_of(annotator_id=annotator_id, submitting=pair_id)
    except LookupError:
        raise NeedsFullRules from None
    if not study.annotator_active:
        raise NeedsFullRules  # the full rules refuse it
    if study.adaptive:
        raise NeedsFullRules  # the answer moves its pair's target (_store_answer)
    keys = {"study_id": study.id, "annotator_id": annotator_id, "pair_id": pair_id}
    if not cursor.store_answer(**keys, values=values, now=now):
        raise NeedsFullRules  # no open assignment: a stale tab or a re-run
    # The answer is kept whatever the rules need; a rare case rolls back only what they did,
    # and next_assignment's full rules pick the pair after the commit.
    driver.execute("SAVEPOINT rules")
    try:
        reserved = choose_next(cursor, study=study, annotator_id=annotator_id, now=now)
    except NeedsFullRules:
        driver.execute("ROLLBACK TO rules")
        reserved = None
    driver.execute("RELEASE rules")
    return True, reserved


def get_answer(engine: Engine, *, annotator_id: int, pair_id: int) -> Annotation | None:
    mine = select(Annotation).where(
        Annotation.annotator_id == annotator_id, Annotation.pair_id == pair_id
    )
    return db.read(engine, lambda s: s.exec(mine).first())


T = TypeVar("T")


def _in_read(source: Engine | Session, work: Callable[[Session], T]) -> T:
    """`work` in the caller's session (part of a larger snapshot), else in a read of its own."""
    return work(source) if isinstance(source, Session) else db.read(source, work)


def annotations_frame(source: Engine | Session, *, study: str) -> pd.DataFrame:
    """The study's annotations in the contract's table layout (section 3); `source` is an
    engine (one read of its own) or the session of a larger snapshot."""
    import pandas as pd

    def query(s: Session) -> Sequence[tuple[str, str, Annotation]]:
        study_row = get_study(s, study)
        return s.exec(
            select(Pair.pair_key, Annotator.name, Annotation)
            .join(Pair, Pair.id == Annotation.pair_id)
            .join(Annotator, Annotator.id == Annotation.annotator_id)
            .where(Annotation.study_id == study_row.id)
            .order_by(Pair.position, Annotator.name)
        ).all()

    rows = _in_read(source, query)
    records = []
    for pair_key, name, a in rows:
        record = {"pair_id": pair_key, "annotator": name}
        record.update((column, getattr(a, column)) for column in ANSWER_COLUMNS)
        if a.submitted_at:
            record["submitted_at"] = a.submitted_at.isoformat()
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=COLUMNS)  # contract section 3
    for column in RATING_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    frame["seconds"] = frame["seconds"].astype("Float64")
    return frame


def pairs_frame(source: Engine | Session, *, study: str, content: bool = True) -> pd.DataFrame:
    """The study's pairs for analysis: pair_id, category, is_gold, n_aspects (how many rubric
    aspects it has: the aspect check's scores per answer) and (with `content`) the original
    record; `source` as for annotations_frame. Without content a pair costs a few bytes
    instead of its full text (about 100 KB)."""
    import pandas as pd

    if not isinstance(source, Session):  # one snapshot, retried as a whole
        return db.read(source, lambda s: pairs_frame(s, study=study, content=content))
    s = source
    study_row = get_study(s, study)
    if not content:
        light = s.exec(
            select(
                Pair.pair_key,
                Pair.category,
                Pair.is_gold,
                Pair.rubric_aspects,
                *(getattr(Pair, name) for name in SAMPLE_COLUMNS),
            )
            .where(Pair.study_id == study_row.id)
            .order_by(Pair.position)
        ).all()
        frame = pd.DataFrame(
            light, columns=["pair_id", "category", "is_gold", "n_aspects", *SAMPLE_COLUMNS]
        )
        frame["is_gold"] = frame["is_gold"].astype(bool)
        frame["n_aspects"] = [len(aspects or []) for aspects in frame["n_aspects"]]
        return _sample_design(frame)
    pairs = s.exec(select(Pair).where(Pair.study_id == study_row.id).order_by(Pair.position)).all()
    frame = pd.DataFrame.from_records(
        [
            {
                "pair_id": p.pair_key,
                "category": p.category,
                "is_gold": p.is_gold,
                "n_aspects": len(p.rubric_aspects or []),
                **{name: getattr(p, name) for name in SAMPLE_COLUMNS},
                "record": p.record(),
            }
            for p in pairs
        ],
        columns=["pair_id", "category", "is_gold", "n_aspects", *SAMPLE_COLUMNS, "record"],
    )
    return _sample_design(frame)


# A sampled study's design per pair (import-pairs --sample): queued = in the sample.
SAMPLE_COLUMNS = ("queued", "inclusion_probability", "stratum")


def _sample_design(frame: pd.DataFrame) -> pd.DataFrame:
    """The design columns as the report reads them; dropped for a study that was not sampled
    (no pair has an inclusion probability), so its report has no `population` key."""

    if frame["inclusion_probability"].isna().all():
        return frame.drop(columns=list(SAMPLE_COLUMNS))
    frame["queued"] = frame["queued"].astype(bool)
    frame["inclusion_probability"] = frame["inclusion_probability"].astype(float)
    return frame


def _annotator_ids(s: Session, *, names: Iterable[str], study_id: int) -> dict[str, int]:
    names = sorted(set(names))
    found = dict(
        s.exec(select(Annotator.name, Annotator.id).where(Annotator.name.in_(names))).all()
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
            s.exec(select(Annotator.name, Annotator.id).where(Annotator.name.in_(names))).all()
        )
    return found


def _nul_problems(rows: list[dict]) -> list[str]:
    """Text with a NUL is refused (annotate/store/text.py), naming its row and column."""
    found = (
        nul_problem(value, where=f"row {number}, column '{column}'")
        for number, row in enumerate(rows, start=1)
        for column, value in row.items()
    )
    return [problem for problem in found if problem is not None]


def import_annotation_rows(engine: Engine, *, study_id: int, rows: list[dict]) -> int:
    """Upsert already validated contract rows (pair_id = pair key) in one transaction."""
    problems = _nul_problems(rows)
    if problems:
        from annotate.errors import InputError

        raise InputError("annotations", problems)
    return db.write(engine, lambda s: _import_annotation_rows(s, study_id=study_id, rows=rows))


def _import_annotation_rows(s: Session, *, study_id: int, rows: list[dict]) -> int:
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
