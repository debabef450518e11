"""The labelling step's commit: a Submit stores the answer (an upsert: a double click, a rerun
or a second tab can never create a second row or lose the first) and reserves the next pair."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection, Engine

from annotate.labelling.answers import Answer, FormState, to_answer
from annotate.labelling.drafts import save_draft
from annotate.labelling.page import Item
from annotate.queue import targets
from annotate.queue.assignment import (
    close_answered,
    next_assignment,
    reserve_next,
)
from annotate.queue.rules import (
    AccountClosed,
    AssignmentRow,
    Coins,
    GivenAway,
    NeedsFullRules,
    PairRevised,
    StudyRules,
    choose_next,
)
from annotate.queue.sql import ANSWER_FIELDS, Cursor
from annotate.store import db
from annotate.store.clock import naive_utc
from annotate.store.models import Annotation, Pair, table_of, utcnow


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


_ANNOTATION = table_of(Annotation)


def _check_loaded(
    conn: Connection,
    *,
    study_id: int,
    annotator_id: int,
    pair_id: int,
    version: int,
    values: dict[str, Any],
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
            _ANNOTATION.c.pair_version == version,
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


_PAIR = table_of(Pair)
_CURRENT_VERSION = core_select(_PAIR.c.version)


def _store_answer(
    conn: Connection,
    *,
    annotator_id: int,
    pair_id: int,
    version: int | None,
    values: dict[str, Any],
    loaded: Loaded | None,
) -> StudyRules:
    """Inside the caller's write transaction: upsert the answer to the pair's `version` (the
    one the page showed; None: its current one) and close the annotator's assignment for it
    (repairing it when there was none open); the study's rules. A deactivated annotator's
    answer is refused (AccountClosed), so is one to a version a later one has replaced
    (PairRevised), and one whose form was loaded before another answer was stored
    (StaleAnswer; `loaded` None: not checked)."""
    cursor = Cursor(conn)
    study = cursor.study_of(annotator_id=annotator_id, submitting=pair_id)
    if not study.annotator_active:
        raise AccountClosed
    current = conn.execute(_CURRENT_VERSION.where(_PAIR.c.id == pair_id)).scalar_one()
    if version is not None and version != current:
        raise PairRevised
    keys = {"study_id": study.id, "annotator_id": annotator_id, "pair_id": pair_id}
    if loaded is not None:
        _check_loaded(conn, **keys, version=current, values=values, loaded=loaded)
    if not cursor.store_answer(**keys, values=values, now=utcnow(), version=current):
        close_answered(conn, **keys, pair_version=current)
    if study.adaptive:
        targets.after_answer(conn, study_id=study.id, pair_id=pair_id)
    return study


def submit_answer(
    engine: Engine,
    *,
    annotator_id: int,
    pair_id: int,
    answer: Answer,
    loaded: Loaded | None = None,
    version: int | None = None,
) -> None:
    """Store (or replace) this annotator's answer for this pair and close its assignment.
    With `loaded` (what the form showed), an answer stored since then is not replaced;
    `version`: the version of the pair the form showed (None: its current one)."""
    values = {**answer.values(), "source": "app"}  # refuses unknown rating columns first
    db.write_connection(
        engine,
        lambda conn: _store_answer(
            conn,
            annotator_id=annotator_id,
            pair_id=pair_id,
            version=version,
            values=values,
            loaded=loaded,
        ),
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
    version: int | None = None,
) -> AssignmentRow | None:
    """The labelling step in one commit: store the answer as submit_answer does and reserve
    the annotator's next pair as next_assignment would (returned; None when nothing is left).
    Safe to re-run: the upsert and the close are idempotent, and a re-run finds the pair the
    first run reserved still open. Every path applies annotate/queue/rules.py; the fast ones hand
    over to the full rules when they meet a rare case. The fast ones only ever close an open
    assignment, which no answer exists for yet (an answer closes it), so `loaded` needs no check
    there unless the form showed an earlier answer.

    `version` is the version of the pair the page showed (None: the pair's current one): an
    answer to a version that a later one replaced is refused (PairRevised), on every path (a
    fast path finds no open assignment of that version and hands over to the full rules).

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
                engine,
                lambda driver: fast_step(engine, driver, **keys, version=version, values=values),
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
        study = _store_answer(conn, **keys, version=version, values=values, loaded=loaded)
        return reserve_next(conn, study=study, annotator_id=annotator_id)

    reserved = db.write_connection(engine, full_rules)
    if served is not None:
        served.append(FULL_RULES)
    return reserved


def _submit_function(
    engine: Engine,
    driver: Any,
    *,
    annotator_id: int,
    pair_id: int,
    version: int | None,
    values: dict[str, Any],
) -> tuple[bool, AssignmentRow | None]:
    """PostgreSQL's common Submit in one round trip (the generated submit function), on
    db.write_driver's autocommit connection: (True, the pair reserved or None) once committed,
    (False, None) when nothing was done and the full rules must run."""
    cursor = Cursor(driver, dialect=engine.dialect)
    coins = _coins_of(engine, cursor, annotator_id)
    if coins is None:
        return False, None
    return cursor.submit_in_one_call(
        pair_id=pair_id,
        annotator_id=annotator_id,
        values=values,
        now=utcnow(),
        coins=coins,
        version=version,
    )


def _submit_common_sqlite(
    engine: Engine,
    driver: Any,
    *,
    annotator_id: int,
    pair_id: int,
    version: int | None,
    values: dict[str, Any],
) -> tuple[bool, AssignmentRow | None]:
    """SQLite's common Submit inside db.write_driver's transaction on the driver's connection:
    the answer stored and rules.choose_next applied to the driver's Cursor, whose
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
    if not cursor.store_answer(**keys, values=values, now=now, version=version):
        raise NeedsFullRules  # no open assignment of that version: a stale tab, a re-run, a revision
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


def submit(
    engine: Engine, *, item: Item, form: FormState, seconds: float | None
) -> AssignmentRow | None:
    """Commit the answer (replacing the earlier one the form showed; StaleAnswer when another
    was stored after the form was loaded). For a new pair the same commit reserves
    the annotator's next pair (returned), so the page that follows only reads; an edit of an
    earlier answer leaves the queue alone (returns None)."""
    if item.annotation is not None and item.annotation.seconds is not None and seconds is not None:
        seconds += item.annotation.seconds  # time spent on an earlier visit still counts
    answer = to_answer(form, chosen_position=item.assignment.chosen_position, seconds=seconds)
    # the version the form showed: a later one since (a revision) refuses it (PairRevised)
    annotator_id, pair_id = item.assignment.annotator_id, item.assignment.pair_id
    version = item.assignment.pair_version
    if item.annotation is not None:  # an edit
        # what this form showed: an answer stored since (another tab) is not replaced (StaleAnswer)
        loaded = Loaded(submitted_at=item.annotation.submitted_at)
        submit_answer(
            engine,
            annotator_id=annotator_id,
            pair_id=pair_id,
            version=version,
            answer=answer,
            loaded=loaded,
        )
        return None
    try:
        return submit_and_next(
            engine,
            annotator_id=annotator_id,
            pair_id=pair_id,
            version=version,
            answer=answer,
            loaded=Loaded(None),
        )
    except GivenAway:
        # released while the page was away and filled by others: the answer stays the draft
        # of the released reservation (it is shown again if the pair comes back)
        save_draft(
            engine,
            assignment_id=item.assignment.id,
            form=form,
            seconds=seconds,
            statuses=("active", "skipped"),
        )
        raise
