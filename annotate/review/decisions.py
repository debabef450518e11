"""A maintainer's review of a pair: what the Review page shows of it, and the decisions taken.

A decision is taken on the version of the pair the reviewer read (annotate/studies/
pair_versions.py): `keep` (the pair ships whatever the crowd's verdict), `drop` (it does not;
its category a verdict name, with a note), or `revise` (the reviewer edited the responses or
the rubric: a new version, queued for its full overlap, and the decision recorded on the
version it replaced). Each decision stores who took it and when; decisions are kept as a
history and a pair's decision is its latest (analysis/review/decisions.py reads them into the
report).

Two reviewers deciding the same pair at once: each page remembers what it showed (`Seen`: the
pair's version and its latest decision then); a decision is recorded only if neither changed
since, checked under the pair's row lock, so the later of two is refused (DecidedMeanwhile,
naming the first reviewer and their decision) and nothing of it is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from analysis.review.decisions import DECISION_COLUMNS, DROP_CATEGORIES
from analysis.vocabulary import DECISIONS
from annotate.errors import InputError, UserError
from annotate.store import db
from annotate.store.clock import as_utc
from annotate.store.models import (
    Annotation,
    Annotator,
    Pair,
    PairVersion,
    ReviewDecision,
    Study,
    table_of,
    utcnow,
)
from annotate.store.text import nul_problem
from annotate.studies.catalog import get_study
from annotate.studies.pair_versions import REVIEW, add_version, nul_field
from annotate.studies.pairs_files import ValidPair, record_hash, validate_record

KEEP, DROP, REVISE = DECISIONS
MAX_NOTE_CHARS = 4_000


@dataclass(frozen=True)
class Seen:
    """What a reviewer's page showed of a pair: its version, and its latest decision then."""

    pair_version: int
    last_decision: int | None


@dataclass(frozen=True)
class Decision:
    id: int
    pair_key: str
    pair_version: int
    decision: str
    category: str | None
    note: str
    reviewer: str
    decided_at: datetime


class DecidedMeanwhile(UserError):
    """Another reviewer decided the pair (or it got a new version) after this page showed it:
    this decision was not recorded."""

    def __init__(self, message: str, *, latest: Decision | None):
        super().__init__(message)
        self.latest = latest


@dataclass(frozen=True)
class Revision:
    """A reviewer's edit of a pair: its responses and rubric as they should read now."""

    chosen: str
    rejected: str
    rubric_aspects: list[dict[str, Any]]


def decision_problems(
    *, decision: str, category: str | None, note: str, version: int, current: int
) -> list[str]:
    """What is wrong with a decision on `version` of a pair whose current version is `current`
    (the page's and the import's one rule; empty: nothing). A `revise` names the version it
    replaced, so it is on an earlier version, or on the current one with the new text."""
    problems = []
    if decision not in DECISIONS:
        problems.append(f"decision must be one of {', '.join(DECISIONS)} (got {decision!r})")
    if decision == DROP and not category:
        problems.append(f"a drop needs a category: one of {', '.join(DROP_CATEGORIES)}")
    elif category and decision == DROP and category not in DROP_CATEGORIES:
        problems.append(f"category must be one of {', '.join(DROP_CATEGORIES)} (got {category!r})")
    elif category and decision != DROP:
        problems.append(f"only a drop has a category (got {category!r} with {decision!r})")
    if not 1 <= version <= current:
        problems.append(f"the pair has no version {version} (its latest is {current})")
    if len(note) > MAX_NOTE_CHARS:
        problems.append(f"the note is longer than {MAX_NOTE_CHARS:,} characters")
    nul = nul_problem(note, where="the note")
    if nul:
        problems.append(nul)
    return problems


def _decision(row: ReviewDecision, pair_key: str) -> Decision:
    return Decision(
        id=row.id or 0,
        pair_key=pair_key,
        pair_version=row.pair_version,
        decision=row.decision,
        category=row.category,
        note=row.note,
        reviewer=row.reviewer,
        decided_at=as_utc(row.decided_at) or row.decided_at,
    )


def _latest(s: Session, pair_id: int) -> ReviewDecision | None:
    return s.exec(
        select(ReviewDecision)
        .where(ReviewDecision.pair_id == pair_id)
        .order_by(col(ReviewDecision.id).desc())
        .limit(1)
    ).first()


def _meanwhile(latest: ReviewDecision | None, pair: Pair, seen: Seen) -> DecidedMeanwhile | None:
    if latest is not None and latest.id != seen.last_decision:
        what = latest.decision + (f" ({latest.category})" if latest.category else "")
        when = as_utc(latest.decided_at)
        return DecidedMeanwhile(
            f"{latest.reviewer} decided this pair ({what}) at {when:%H:%M} UTC, after you "
            "opened it; your decision was not recorded. Their decision is shown now: decide "
            "again if you still disagree",
            latest=_decision(latest, pair.pair_key),
        )
    if pair.version != seen.pair_version:
        return DecidedMeanwhile(
            f"this pair got a new version (version {pair.version}) after you opened version "
            f"{seen.pair_version}; your decision was not recorded. The new version is shown now",
            latest=None if latest is None else _decision(latest, pair.pair_key),
        )
    return None


def _locked_pair(s: Session, *, study_id: int, pair_key: str) -> Pair:
    query = select(Pair).where(Pair.study_id == study_id, Pair.pair_key == pair_key)
    if s.get_bind().dialect.name == "postgresql":  # decisions on one pair, one at a time
        query = query.with_for_update(key_share=True)
    pair = s.exec(query).first()
    if pair is None:
        raise UserError(f"no pair with id {pair_key!r} in this study")
    return pair


def _revised_content(pair: Pair, revision: Revision) -> ValidPair:
    """The pair's record with the reviewer's edit, validated as an imported record is."""
    record = {
        **pair.record(),
        "chosen": revision.chosen,
        "rejected": revision.rejected,
        "rubric_aspects": revision.rubric_aspects,
    }
    try:
        content = validate_record(record)
    except ValueError as exc:
        raise InputError("the revision", str(exc).split("; ")) from None
    nul = nul_field(content)
    if nul:
        raise InputError("the revision", [nul])
    if content.canonical_hash() == record_hash(pair.record()):
        raise UserError("the revision changes nothing: edit a response or the rubric first")
    return content


def record_decision(
    engine: Engine,
    *,
    study_id: int,
    pair_key: str,
    decision: str,
    reviewer: str,
    seen: Seen,
    category: str | None = None,
    note: str = "",
    revision: Revision | None = None,
) -> Decision:
    """Record a reviewer's decision on the version of the pair their page showed (`seen`),
    as the module docstring says; a `revise` needs the `revision` (the new text). Refused
    (UserError, nothing written) when the decision is not valid, and (DecidedMeanwhile) when
    another decision or version came after the page showed the pair."""
    if (decision == REVISE) != (revision is not None):
        raise UserError("a revision comes with the new text, and only a revision does")
    category = category or None

    def work(s: Session) -> Decision:
        pair = _locked_pair(s, study_id=study_id, pair_key=pair_key)
        problem = _meanwhile(_latest(s, pair.id or 0), pair, seen)
        if problem is not None:
            raise problem
        problems = decision_problems(
            decision=decision,
            category=category,
            note=note,
            version=seen.pair_version,
            current=pair.version,
        )
        if problems:
            raise InputError(f"the decision on pair {pair_key!r}", problems)
        now = utcnow()
        if revision is not None:
            content = _revised_content(pair, revision)
            add_version(
                s.connection(), pair_id=pair.id or 0, content=content, replaced_by=REVIEW, now=now
            )
        row = ReviewDecision(
            study_id=study_id,
            pair_id=pair.id or 0,
            pair_version=seen.pair_version,
            decision=decision,
            category=category,
            note=note.strip(),
            reviewer=reviewer,
            decided_at=now,
        )
        s.add(row)
        s.flush()
        return _decision(row, pair_key)

    return db.write(engine, work)


# --- what the Review page shows of a pair -------------------------------------------------


@dataclass(frozen=True)
class AnswerShown:
    """One answer as the reviewer reads it (the annotator's A/B slots mapped back)."""

    annotator: str
    pair_version: int
    preference: str
    chosen_position: str | None
    ratings: dict[str, int | None]
    main_reason: str | None
    comment: str | None
    seconds: float | None
    submitted_at: datetime | None
    aspects: list[dict[str, int]] | None
    source: str


@dataclass(frozen=True)
class PairReview:
    pair_key: str
    version: int
    record: dict[str, Any]  # the current version, as a pairs-file record
    is_gold: bool
    answers: list[AnswerShown]  # to the current version
    earlier_answers: dict[int, int]  # earlier version -> how many answers it has
    decisions: list[Decision] = field(default_factory=list)  # oldest first
    seen: Seen = Seen(pair_version=1, last_decision=None)


def pair_review(engine: Engine, *, study_id: int, pair_key: str) -> PairReview | None:
    """The pair as the Review page shows it, in one snapshot (None: no such pair)."""
    from analysis.vocabulary import RATING_COLUMNS

    def read(s: Session) -> PairReview | None:
        pair = s.exec(
            select(Pair).where(Pair.study_id == study_id, Pair.pair_key == pair_key)
        ).first()
        if pair is None:
            return None
        rows = s.exec(
            select(Annotation, Annotator.name)
            .join(Annotator, col(Annotator.id) == Annotation.annotator_id)
            .where(Annotation.pair_id == pair.id)
            .order_by(col(Annotation.submitted_at), col(Annotator.name))
        ).all()
        answers: list[AnswerShown] = []
        earlier: dict[int, int] = {}
        for answer, name in rows:
            if answer.pair_version != pair.version:
                earlier[answer.pair_version] = earlier.get(answer.pair_version, 0) + 1
                continue
            answers.append(
                AnswerShown(
                    annotator=name,
                    pair_version=answer.pair_version,
                    preference=answer.preference,
                    chosen_position=answer.chosen_position,
                    ratings={c: getattr(answer, c) for c in RATING_COLUMNS},
                    main_reason=answer.main_reason,
                    comment=answer.comment,
                    seconds=answer.seconds,
                    submitted_at=as_utc(answer.submitted_at),
                    aspects=answer.aspects,
                    source=answer.source,
                )
            )
        decisions = [
            _decision(row, pair.pair_key)
            for row in s.exec(
                select(ReviewDecision)
                .where(ReviewDecision.pair_id == pair.id)
                .order_by(col(ReviewDecision.id))
            ).all()
        ]
        return PairReview(
            pair_key=pair.pair_key,
            version=pair.version,
            record=pair.record(),
            is_gold=pair.is_gold,
            answers=answers,
            earlier_answers=dict(sorted(earlier.items())),
            decisions=decisions,
            seen=Seen(
                pair_version=pair.version,
                last_decision=decisions[-1].id if decisions else None,
            ),
        )

    return db.read(engine, read)


def earlier_version(
    engine: Engine, *, study_id: int, pair_key: str, version: int
) -> dict[str, Any] | None:
    """An earlier version of the pair as a pairs-file record (None: no such version)."""

    def read(s: Session) -> dict[str, Any] | None:
        row = s.exec(
            select(PairVersion)
            .join(Pair, col(Pair.id) == PairVersion.pair_id)
            .where(
                Pair.study_id == study_id,
                Pair.pair_key == pair_key,
                PairVersion.version == version,
            )
        ).first()
        return None if row is None else {"id": pair_key, **row.record()}

    return db.read(engine, read)


# --- decisions as a table ------------------------------------------------------------------


def decisions_frame(source: Engine | Session, *, study: str) -> pd.DataFrame:
    """Every decision of the study, in the order taken (DECISION_COLUMNS); `source` an engine
    (one read of its own) or the session of a larger snapshot."""

    def read(s: Session) -> list[tuple[Any, ...]]:
        study_row: Study = get_study(s, study)
        pair, decision = table_of(Pair), table_of(ReviewDecision)
        return [
            tuple(row)
            for row in s.execute(
                select_columns(
                    pair.c.pair_key,
                    decision.c.pair_version,
                    decision.c.decision,
                    decision.c.category,
                    decision.c.note,
                    decision.c.reviewer,
                    decision.c.decided_at,
                )
                .join(pair, pair.c.id == decision.c.pair_id)
                .where(decision.c.study_id == study_row.id)
                .order_by(decision.c.id)
            ).all()
        ]

    rows = read(source) if isinstance(source, Session) else db.read(source, read)
    frame = pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
    frame["decided_at"] = [as_utc(value) for value in frame["decided_at"]]
    return frame
