"""Database tables. One study holds pairs; annotators label pairs; one annotation per
(study, pair, annotator, pair version); one assignment per (study, pair, annotator, pair
version) records the A/B order that annotator saw and reserves the pair against the study's
overlap target.

A pair's content is versioned: `pair` holds the current version (pair.version, 1 first) and
`pair_version` the earlier ones, each kept whole when a later one replaced it
(annotate/studies/pair_versions.py). Every assignment, draft and annotation records the
version it showed, so answers stay with the text they judged."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Table, Text, UniqueConstraint, text, true
from sqlmodel import Field, SQLModel

from analysis.vocabulary import DIMENSIONS, REASONS
from annotate.store.clock import utcnow as utcnow  # its home is clock; many read it from here

DEFAULT_DIMENSIONS = list(DIMENSIONS)
DEFAULT_REASONS = list(REASONS)


def table_of(model: type[SQLModel]) -> Table:
    """A table model's Core table, for statements built once (SQLModel sets `__table__` on
    every `table=True` class, but its stubs do not declare it)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def id_of(row: Study | Pair | Annotator | Annotation | Assignment) -> int:
    """A stored row's primary key. The tables declare `id: int | None` (None until the row is
    first flushed); a row read from the database, or flushed, always has one."""
    if row.id is None:
        raise ValueError(f"this {type(row).__name__} has no id: it was never flushed")
    return row.id


class Study(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    overlap_target: int = 3
    allow_ties: bool = True
    scale_min: int = 1
    scale_max: int = 5
    scale_min_label: str = "very poor"
    scale_max_label: str = "excellent"
    dimensions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DIMENSIONS), sa_column=Column(JSON)
    )
    reasons: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REASONS), sa_column=Column(JSON)
    )
    show_narrative: bool = True
    show_profile: bool = True
    guidelines: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    qualification_gold: int = 0
    allow_prolific: bool = False
    prolific_completion_code: str | None = None
    # Prolific's "screened out" code: shown instead of the completion code after a failed
    # qualification (None: such a participant is shown no code at all).
    prolific_screened_out_code: str | None = None
    prolific_study_id: str | None = None  # Prolific's STUDY_ID (entry links must name it)
    items_per_annotator: int | None = None
    # Seconds a shown pair stays reserved for an annotator who does not answer it.
    reservation_timeout: int = 1800
    # Ask a 0-2 match score per rubric aspect and response (the benchmark's scorer's scale).
    aspect_check: bool = False
    # Key of the A/B and gold coins: without it the order shown is predictable from ids.
    coin_secret: str | None = Field(default_factory=lambda: secrets.token_hex(16))
    # Adaptive overlap (both set, or neither: the fixed overlap_target): every pair gets at
    # least adaptive_min answers, and more, up to adaptive_max, while analysis.design.stopping says
    # its answers leave it undecided. A keyed random share (agreement_sample) of the pairs
    # gets exactly agreement_overlap answers instead; agreement statistics use those pairs.
    adaptive_min: int | None = None
    adaptive_max: int | None = None
    agreement_sample: float = 0.2
    agreement_overlap: int = 3
    created_at: datetime = Field(default_factory=utcnow)


class Pair(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("study_id", "pair_key", name="uq_pair_study_key"),
        Index("ix_pair_queue", "study_id", "is_gold", "n_assigned", "position"),
    )
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    pair_key: str
    position: int
    question: str = Field(sa_column=Column(Text, nullable=False))
    profile: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    rubric_aspects: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    narrative: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    category: str = ""
    chosen: str = Field(sa_column=Column(Text, nullable=False))
    rejected: str = Field(sa_column=Column(Text, nullable=False))
    extra: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    record_hash: str
    # Reservations (assignments not skipped): kept in step with Assignment in the same
    # transaction, so choosing the next pair never has to count annotations.
    n_assigned: int = 0
    # How many reservations the pair may have in an adaptive study (annotate/queue/targets.py
    # keeps it in step with its answers); None: the study's overlap_target.
    target: int | None = None
    is_gold: bool = False
    gold_answer: str | None = None
    # Sampled studies (import-pairs --sample, analysis/population/sampling.py): the whole benchmark is
    # stored, only queued pairs are served for labelling (annotate/queue/rules.py, rule 5);
    # each pair's inclusion probability and stratum are kept for the report's estimates.
    # A study imported without --sample has every pair queued and no probabilities.
    queued: bool = Field(default=True, sa_column_kwargs={"server_default": true()})
    inclusion_probability: float | None = None
    stratum: str | None = None
    imported_at: datetime = Field(default_factory=utcnow)
    # The content's version (1 first): import-pairs --update and a reviewer's revision add one
    # (the earlier content moves to pair_version); n_assigned counts this version's
    # reservations and answers only.
    version: int = Field(default=1, sa_column_kwargs={"server_default": text("1")})

    def record(self) -> dict[str, Any]:
        """The pair as a record of a pairs file, its extra fields included."""
        return {
            "id": self.pair_key,
            "question": self.question,
            "profile": self.profile or [],
            "rubric_aspects": self.rubric_aspects or [],
            "narrative": self.narrative,
            "category": self.category,
            "chosen": self.chosen,
            "rejected": self.rejected,
            **(self.extra or {}),
        }


# A pair's content: what a version is made of (and what pair_version keeps of each earlier one).
PAIR_CONTENT = (
    "question",
    "profile",
    "rubric_aspects",
    "narrative",
    "category",
    "chosen",
    "rejected",
    "extra",
    "record_hash",
)


class PairVersion(SQLModel, table=True):
    """An earlier version of a pair's content, kept whole when a later version replaced it
    (the current version is the pair row itself)."""

    __tablename__ = "pair_version"
    __table_args__ = (UniqueConstraint("pair_id", "version", name="uq_pair_version"),)
    id: int | None = Field(default=None, primary_key=True)
    pair_id: int = Field(foreign_key="pair.id")
    version: int
    question: str = Field(sa_column=Column(Text, nullable=False))
    profile: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    rubric_aspects: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    narrative: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    category: str = ""
    chosen: str = Field(sa_column=Column(Text, nullable=False))
    rejected: str = Field(sa_column=Column(Text, nullable=False))
    extra: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    record_hash: str
    replaced_at: datetime = Field(default_factory=utcnow)
    # what replaced it: "import" (import-pairs --update) or "review" (a reviewer's revision)
    replaced_by: str = "import"

    def record(self) -> dict[str, Any]:
        """This version as a record of a pairs file (its pair's id is the caller's)."""
        return {
            "question": self.question,
            "profile": self.profile or [],
            "rubric_aspects": self.rubric_aspects or [],
            "narrative": self.narrative,
            "category": self.category,
            "chosen": self.chosen,
            "rejected": self.rejected,
            **(self.extra or {}),
        }


class Annotator(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    study_id: int | None = Field(default=None, foreign_key="study.id")
    is_admin: bool = False
    active: bool = True
    token_hash: str | None = Field(default=None, index=True, unique=True)
    email: str | None = Field(default=None, index=True)
    external_id: str | None = Field(default=None, index=True)  # e.g. Prolific participant id
    external_session: str | None = None  # e.g. Prolific SESSION_ID of their submission
    created_at: datetime = Field(default_factory=utcnow)
    guidelines_seen: bool = False


class Assignment(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint(
            "study_id", "pair_id", "annotator_id", "pair_version", name="uq_assignment"
        ),
        Index("ix_assignment_annotator", "annotator_id", "status", "assigned_at"),
        # open reservations by study and age (expiry, "come back at"): migration 0005_storage
        Index(
            "ix_assignment_open",
            "study_id",
            "assigned_at",
            sqlite_where=text("status = 'active'"),
            postgresql_where=text("status = 'active'"),
        ),
    )
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    pair_id: int = Field(foreign_key="pair.id")
    annotator_id: int = Field(foreign_key="annotator.id")
    chosen_position: str  # "A" or "B": where the chosen response is shown to this annotator
    # active | done | skipped | revised (the pair got a new version while it was open or
    # skipped: closed, its draft never applied to the new text)
    status: str = "active"
    assigned_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    # Answers given so far but not yet submitted, so a reload restores them.
    draft: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # When the page showing this open reservation went away (closed or hidden), None while it
    # is shown: the reservation is released AWAY_HOLD seconds later (annotate/queue/rules.py).
    away_since: datetime | None = None
    # When the page showing this open reservation last said it is there (a draft, a heartbeat,
    # its return), None until then (the reservation's own time counts): the reservation is
    # released GONE_HOLD seconds after the page stopped talking (annotate/queue/rules.py).
    seen_at: datetime | None = None
    pair_version: int = Field(default=1, sa_column_kwargs={"server_default": text("1")})


class Annotation(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint(
            "study_id", "pair_id", "annotator_id", "pair_version", name="uq_annotation"
        ),
    )
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    preference: str
    chosen_position: str | None = None
    correctness_chosen: int | None = None
    relevance_chosen: int | None = None
    helpfulness_chosen: int | None = None
    correctness_rejected: int | None = None
    relevance_rejected: int | None = None
    helpfulness_rejected: int | None = None
    main_reason: str | None = None
    comment: str | None = Field(default=None, sa_column=Column(Text))
    seconds: float | None = None
    submitted_at: datetime | None = None
    source: str = "app"  # app | import
    # Aspect check only: one {"chosen": 0-2, "rejected": 0-2} per rubric aspect, in the pair's order.
    aspects: list[dict[str, int]] | None = Field(default=None, sa_column=Column(JSON))
    # The version of the pair that was shown (pair.version when it was answered).
    pair_version: int = Field(default=1, sa_column_kwargs={"server_default": text("1")})


class ReviewDecision(SQLModel, table=True):
    """A maintainer's decision on one version of a pair (annotate/review/decisions.py): keep it
    (whatever the crowd's verdict), drop it (with a verdict name as its category), or revise it
    (a new version was made). Decisions are kept as a history; a pair's decision is its latest."""

    __tablename__ = "review_decision"
    __table_args__ = (Index("ix_review_decision_pair", "study_id", "pair_id", "id"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    pair_id: int = Field(foreign_key="pair.id")
    pair_version: int
    decision: str  # keep | drop | revise
    category: str | None = None  # drops: a verdict name
    note: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    reviewer: str  # the maintainer's name (or the name an imported file gives)
    decided_at: datetime = Field(default_factory=utcnow)
