"""Watching a study: progress and time to finish, each pair's coverage, each annotator's
activity and the flags that make one look unusual.

Numbers here ignore gold pairs unless they say otherwise: gold pairs are quality checks, not
part of the study's coverage (see annotate/queue/gold.py). A pair's coverage counts the answers
to its current version (a revised pair starts again); an annotator's activity counts every
answer they gave.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func
from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine, Row
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from annotate.queue import gold
from annotate.store import db
from annotate.store.clock import as_utc
from annotate.store.models import (
    Annotation,
    Annotator,
    Assignment,
    Pair,
    Study,
    id_of,
    table_of,
    utcnow,
)

# The rate and the estimated time to finish look at the annotations of this many last hours
# (a day: a crowd study's burst and a lab's working day alike, night included).
RECENT_HOURS = 24

# The console's progress words, each meaning one thing on every page (Progress, Agreement,
# the studies table): label -> what it counts.
# Side by side on the Progress page: two words that cannot be read as the same thing ("pairs
# annotated 15 / 15" beside "pairs complete 0 / 15" read as a contradiction).
PAIRS_ANNOTATED = "Pairs started"
PAIRS_COMPLETE = "Pairs finished"
RECENT_RATE = f"Rate, last {RECENT_HOURS} h"
TERMS = {
    PAIRS_ANNOTATED: "Real pairs (gold checks left out) with at least one annotation; "
    "finished or not.",
    PAIRS_COMPLETE: "Real pairs (gold checks left out) with all the annotations they are to "
    "get: the overlap target, or in an adaptive study the count its stopping rule expects.",
    RECENT_RATE: f"Annotations of real pairs per hour over the last {RECENT_HOURS} hours (over "
    "the time since the first annotation, at least an hour, in a younger study).",
}

_PAIR, _ANNOTATION = table_of(Pair), table_of(Annotation)
Rows = Sequence[Row[Any]]
# What study_progress reads in one snapshot: the study, (is_gold, annotations) per pair,
# (day, annotations) per day, real annotations lately and the first one, annotators, the
# first annotation, and for an adaptive study each pair's key with its answers per preference.
_ProgressRead = tuple[
    Study,
    Sequence[tuple[bool, int]],
    Sequence[tuple[Any, int]],
    int,
    datetime | None,
    int,
    datetime | None,
    tuple[list[str], Sequence[tuple[str, str, int]]] | None,
]

# Outlier rules for annotators (each needs enough items to mean something).
MIN_ITEMS = 5
LOW_GOLD_ACCURACY = 0.7
MIN_GOLD = 3
PEER_GAP = 0.25
LABEL_GAP = 0.3
FAST_FACTOR = 1 / 3
POSITION_P = 0.01
MIN_SLOT_ITEMS = 10


def annotator_activity(engine: Engine, *, study_id: int) -> pd.DataFrame:
    """One row per annotator of the study: account, progress and speed (gold included in
    `done`; `real_done` counts real pairs only)."""

    def read(s: Session) -> tuple[Sequence[Annotator], dict[int, int], dict[int, int], Rows]:
        people = s.exec(
            select(Annotator).where(Annotator.study_id == study_id).order_by(col(Annotator.name))
        ).all()
        done = dict(
            s.exec(
                select(Assignment.annotator_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status == "done")
                .group_by(col(Assignment.annotator_id))
            ).all()
        )
        open_ = dict(
            s.exec(
                select(Assignment.annotator_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status == "active")
                .group_by(col(Assignment.annotator_id))
            ).all()
        )
        rows = s.execute(
            select_columns(
                _ANNOTATION.c.annotator_id,
                _PAIR.c.is_gold,
                _ANNOTATION.c.seconds,
                _ANNOTATION.c.submitted_at,
            )
            .join(_PAIR, _PAIR.c.id == _ANNOTATION.c.pair_id)
            .where(_ANNOTATION.c.study_id == study_id)
        ).all()
        return people, done, open_, rows

    people, done, open_, rows = db.read(engine, read)
    answers = pd.DataFrame(rows, columns=["aid", "is_gold", "seconds", "submitted_at"])
    answers["seconds"] = pd.to_numeric(answers["seconds"], errors="coerce")
    answers["real"] = ~answers["is_gold"].astype(bool)
    per_person = answers.groupby("aid")  # one pass, not a filter per annotator
    real_done = per_person["real"].sum()
    median_seconds = per_person["seconds"].median().dropna()
    last_answer = per_person["submitted_at"].max().dropna()
    out = []
    for person in people:
        aid = id_of(person)
        out.append(
            {
                "id": aid,
                "annotator": person.name,
                "role": "maintainer" if person.is_admin else "annotator",
                "source": "Prolific" if person.external_id else "link",
                "email": person.email or "",
                "active": person.active,
                "done": int(done.get(aid, 0)),
                "real_done": int(real_done.get(aid, 0)),
                "open": int(open_.get(aid, 0)),
                "median_seconds": (float(median_seconds[aid]) if aid in median_seconds else None),
                "last_answer": last_answer.get(aid),
            }
        )
    return pd.DataFrame(
        out,
        columns=[
            "id",
            "annotator",
            "role",
            "source",
            "email",
            "active",
            "done",
            "real_done",
            "open",
            "median_seconds",
            "last_answer",
        ],
    )


def annotator_quality(
    activity: pd.DataFrame, report_annotators: list[dict[str, Any]], gold_table: pd.DataFrame
) -> pd.DataFrame:
    """Activity joined with the report's per-annotator figures and gold accuracy, with flags."""
    figures = pd.DataFrame(report_annotators)
    wanted = [
        "annotator",
        "n",
        "label_agreement",
        "peer_agreement",
        "n_peer",
        "n_decisive",
        "first_slot_rate",
        "first_slot_p",
        "n_slot",
        "straight_lining",
        "balanced_accuracy",
        "model_flag",
        "model_accuracy",
        "model_accuracy_ci95",
    ]
    if "accuracy" in figures:  # the model of annotation's {value, ci95}
        figures["model_accuracy"] = [
            a.get("value") if isinstance(a, dict) else None for a in figures["accuracy"]
        ]
        figures["model_accuracy_ci95"] = [
            _interval_text(a.get("ci95")) if isinstance(a, dict) else ""
            for a in figures["accuracy"]
        ]
    figures = figures.reindex(columns=wanted)
    table = activity.merge(figures, on="annotator", how="left")
    table = table.merge(
        gold_table[["annotator", "n_gold", "gold_accuracy", "qualification"]],
        on="annotator",
        how="left",
    )
    table["flags"] = outlier_flags(table)
    return table


def _interval_text(ci: Any) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"{100 * ci[0]:.0f}-{100 * ci[1]:.0f}%"


def _num(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


FLAG_RULES = (
    f"gold accuracy below {LOW_GOLD_ACCURACY:.0%} (at least {MIN_GOLD} gold answers) or a "
    f"failed qualification; peer agreement more than {PEER_GAP} below the study's median (at "
    f"least {MIN_ITEMS} pairs with peers); label agreement more than {LABEL_GAP} below the "
    f"median (at least {MIN_ITEMS} decisive answers); first-slot rate significantly off 1/2 "
    f"(p < {POSITION_P}, at least {MIN_SLOT_ITEMS} answers); the same ratings on every pair, "
    f"by response or by slot (straight-lining); median time under a third of the study's median (at least "
    f"{MIN_ITEMS} answers); the model of annotation finds them near random or adversarial (their "
    "balanced accuracy's interval reaches chance and stays below the pool's median, or lies "
    "below chance; docs/annotation-model.md)."
)


def outlier_flags(table: pd.DataFrame) -> list[str]:
    """Why each annotator looks unusual ('' when nothing does), by the rules in FLAG_RULES."""
    real = table[table.get("role", "annotator") != "maintainer"] if len(table) else table

    def median(column: str, minimum_column: str | None = None) -> float | None:
        if column not in real:
            return None
        values = real[column]
        if minimum_column is not None and minimum_column in real:
            values = values[pd.to_numeric(real[minimum_column], errors="coerce") >= MIN_ITEMS]
        values = pd.to_numeric(values, errors="coerce").dropna()
        return float(values.median()) if len(values) else None

    peer_median = median("peer_agreement", "n_peer")
    label_median = median("label_agreement", "n_decisive")
    speed_median = median("median_seconds", "real_done")
    flags = []
    for _, row in table.iterrows():
        found = []
        n_gold = _num(row.get("n_gold")) or 0
        accuracy = _num(row.get("gold_accuracy"))
        if row.get("qualification") == gold.FAILED:
            found.append("failed qualification")
        elif accuracy is not None and n_gold >= MIN_GOLD and accuracy < LOW_GOLD_ACCURACY:
            found.append(f"gold accuracy {accuracy:.0%}")
        for name, column, count, typical, gap in (
            ("peer", "peer_agreement", "n_peer", peer_median, PEER_GAP),
            ("label", "label_agreement", "n_decisive", label_median, LABEL_GAP),
        ):
            value = _num(row.get(column))
            if (
                value is not None
                and typical is not None
                and (_num(row.get(count)) or 0) >= MIN_ITEMS
                and value < typical - gap
            ):
                found.append(f"low {name} agreement ({value:.0%} vs median {typical:.0%})")
        p = _num(row.get("first_slot_p"))
        if p is not None and p < POSITION_P and (_num(row.get("n_slot")) or 0) >= MIN_SLOT_ITEMS:
            rate = _num(row.get("first_slot_rate")) or 0
            found.append(f"position bias (picks A {rate:.0%})")
        if row.get("straight_lining") is True or row.get("straight_lining") == 1.0:
            found.append("straight-lining")
        model_flag = row.get("model_flag")
        if isinstance(model_flag, str) and model_flag:
            found.append(f"{model_flag.replace('_', ' ')} (model of annotation)")
        seconds = _num(row.get("median_seconds"))
        if (
            seconds is not None
            and speed_median
            and (_num(row.get("real_done")) or 0) >= MIN_ITEMS
            and seconds < speed_median * FAST_FACTOR
        ):
            found.append(f"very fast ({seconds:.0f}s vs median {speed_median:.0f}s)")
        flags.append("; ".join(found))
    return flags


@dataclass(frozen=True)
class StudyProgress:
    pairs: int  # real pairs (gold left out)
    gold_pairs: int
    target: int
    complete: int  # real pairs with at least `target` annotations (PAIRS_COMPLETE)
    annotated: int  # real pairs with at least one annotation (PAIRS_ANNOTATED)
    collected: int  # annotations that count towards the target (at most `target` per pair)
    needed: int  # pairs x target
    annotations: int  # every annotation of real pairs
    gold_annotations: int
    annotators: int  # annotators with at least one annotation
    per_day: pd.DataFrame  # day, annotations (real and gold)
    rate_per_hour: float | None  # annotations of real pairs per hour (RECENT_RATE)
    remaining: int
    eta_days: float | None
    started: datetime | None
    # adaptive overlap: `needed` is the annotations expected (analysis.design.stopping), `target`
    # the typical expected count a pair, `complete` the pairs that have theirs
    adaptive: bool = False

    @property
    def fraction(self) -> float:
        return self.collected / self.needed if self.needed else 0.0

    @property
    def finished(self) -> bool:
        return self.needed > 0 and self.remaining == 0

    def eta_short(self) -> str:
        if self.finished:
            return "done"
        if self.eta_days is None:
            return "–"
        if self.eta_days < 1:
            return f"about {max(1, round(self.eta_days * 24))} h"
        return f"about {self.eta_days:.1f} days"

    def eta_text(self, now: datetime | None = None) -> str:
        if self.finished:
            return "done"
        if self.eta_days is None:
            return "not enough recent activity to estimate"
        when = (now or utcnow()) + timedelta(days=self.eta_days)
        if self.eta_days < 1:
            return f"about {max(1, round(self.eta_days * 24))} h (by {when:%Y-%m-%d %H:%M} UTC)"
        return f"about {self.eta_days:.1f} days (by {when:%Y-%m-%d})"


def recent_rate(
    n_recent: int, first: datetime | None, *, now: datetime, hours: int = RECENT_HOURS
) -> float | None:
    """Annotations per hour: the `n_recent` made in the last `hours` hours, over those hours
    or, for a younger study, since the first annotation (`first`), counting at least one
    hour. None when there were none."""
    if not n_recent or first is None:
        return None
    span_start = max(now - timedelta(hours=hours), first)
    return n_recent / max((now - span_start).total_seconds() / 3600, 1.0)


def _day(column: ColumnElement[Any], dialect: str) -> ColumnElement[Any]:
    """The UTC calendar day of a timestamp column, in SQL."""
    if dialect == "postgresql":
        return func.date(func.timezone("UTC", column))
    return func.date(column)  # SQLite keeps UTC wall time as text


def _current() -> ColumnElement[bool]:
    """The join of a pair with the answers to its current version."""
    return (col(Annotation.pair_id) == Pair.id) & (col(Annotation.pair_version) == Pair.version)


def study_progress(engine: Engine, *, study_id: int, now: datetime | None = None) -> StudyProgress:
    """The study's numbers, aggregated in the database (a few rows per pair and per day)."""
    now = now or utcnow()
    start = now - timedelta(hours=RECENT_HOURS)

    def read(s: Session) -> _ProgressRead:
        dialect = s.get_bind().dialect.name
        study = s.get_one(Study, study_id)
        counts = s.exec(
            select(Pair.is_gold, func.count(col(Annotation.id)))
            .join(Annotation, _current(), isouter=True)
            # a sampled study's progress is its sample's (import-pairs --sample)
            .where(Pair.study_id == study_id, Pair.queued == True)  # noqa: E712
            .group_by(col(Pair.id), col(Pair.is_gold))
        ).all()
        day = _day(_ANNOTATION.c.submitted_at, dialect)
        days = s.exec(
            select(day, func.count(col(Annotation.id)))
            .where(Annotation.study_id == study_id, col(Annotation.submitted_at).is_not(None))
            .group_by(day)
            .order_by(day)
        ).all()
        real = (col(Annotation.study_id) == study_id) & (col(Pair.is_gold) == False)  # noqa: E712
        n_recent, first_real = s.exec(
            select(
                func.count(col(Annotation.id)).filter(col(Annotation.submitted_at) >= start),
                func.min(Annotation.submitted_at),
            )
            .join(Pair, col(Pair.id) == Annotation.pair_id)
            .where(real)
        ).one()
        annotators, started = s.exec(
            select(
                func.count(func.distinct(Annotation.annotator_id)),
                func.min(Annotation.submitted_at),
            ).where(Annotation.study_id == study_id)
        ).one()
        answers = None
        if study.adaptive_min is not None:  # each pair's answers: its expected final count
            rows = s.exec(
                select(Pair.pair_key, Annotation.preference, func.count(col(Annotation.id)))
                .join(Annotation, _current())
                .where(Pair.study_id == study_id, Pair.is_gold == False)  # noqa: E712
                .group_by(col(Pair.pair_key), col(Annotation.preference))
            ).all()
            keys = s.exec(
                select(Pair.pair_key).where(Pair.study_id == study_id, Pair.is_gold == False)  # noqa: E712
            ).all()
            answers = (list(keys), rows)
        return study, counts, days, n_recent, first_real, annotators, started, answers

    study, counts, days, n_recent, first_real, annotators, started, answers = db.read(engine, read)
    target = study.overlap_target
    per_pair = pd.DataFrame(counts, columns=["is_gold", "n"])
    per_pair["is_gold"] = per_pair["is_gold"].astype(bool)
    real_n = per_pair.loc[~per_pair["is_gold"], "n"].to_numpy()
    per_day = pd.DataFrame(days, columns=["day", "annotations"])
    if len(per_day):  # days without annotations show as zero
        per_day["day"] = pd.to_datetime(per_day["day"].astype(str), utc=True)
        every_day = pd.date_range(per_day["day"].min(), per_day["day"].max(), freq="D")
        per_day = per_day.set_index("day").reindex(every_day, fill_value=0).rename_axis("day")
        per_day = per_day.reset_index()
    collected = int(np.minimum(real_n, target).sum())
    needed = int(len(real_n) * target)
    complete = int((real_n >= target).sum())
    if answers is not None:  # adaptive: expected annotations, not pairs x overlap
        collected, needed, complete, target = _adaptive_progress(study, *answers)
    remaining = max(needed - collected, 0)
    rate = recent_rate(int(n_recent or 0), as_utc(first_real), now=now)
    eta = remaining / rate / 24 if rate and remaining else (0.0 if remaining == 0 else None)
    return StudyProgress(
        pairs=len(real_n),
        gold_pairs=int(per_pair["is_gold"].sum()),
        target=target,
        complete=complete,
        annotated=int((real_n > 0).sum()),
        collected=collected,
        needed=needed,
        annotations=int(real_n.sum()),
        gold_annotations=int(per_pair.loc[per_pair["is_gold"], "n"].sum()),
        annotators=int(annotators or 0),
        per_day=per_day,
        rate_per_hour=rate,
        remaining=remaining,
        eta_days=eta,
        started=as_utc(started),
        adaptive=answers is not None,
    )


def _adaptive_progress(
    study: Study, keys: list[str], rows: Sequence[tuple[str, str, int]]
) -> tuple[int, int, int, int]:
    """(collected, needed, complete, typical target) of an adaptive study: each pair's expected
    final count from analysis.design.stopping (annotate/queue/targets.py's design)."""
    from analysis.design.stopping import expected_annotations
    from analysis.vocabulary import PREFERENCES
    from annotate.queue.targets import Design

    index = {key: i for i, key in enumerate(keys)}
    counts = np.zeros((len(keys), len(PREFERENCES)), dtype=np.int64)
    for key, preference, n in rows:
        if key in index and preference in PREFERENCES:
            counts[index[key], PREFERENCES.index(preference)] += n
    design = Design.of(study)
    overlap = design.report_design(keys)
    in_sample = np.array([key in overlap.sample for key in keys], dtype=bool)
    expected = expected_annotations(counts, in_sample=in_sample, design=overlap)
    have = counts.sum(axis=1)
    needed = int(np.ceil(expected.sum()))
    collected = int(np.minimum(have, expected).sum())
    complete = int((have >= expected).sum())
    typical = round(float(expected.mean())) if len(expected) else design.bounds[0]
    return collected, needed, complete, typical


def pair_coverage(engine: Engine, *, study_id: int) -> pd.DataFrame:
    """One row per pair: id, category, gold (and expected answer), annotations vs target."""

    def read(s: Session) -> Rows:
        study = s.get_one(Study, study_id)
        return s.execute(
            select_columns(
                _PAIR.c.pair_key,
                _PAIR.c.category,
                _PAIR.c.is_gold,
                _PAIR.c.gold_answer,
                _PAIR.c.n_assigned,
                func.coalesce(_PAIR.c.target, study.overlap_target),
                func.count(_ANNOTATION.c.id),
                _PAIR.c.version,
            )
            .join(
                _ANNOTATION,
                (_ANNOTATION.c.pair_id == _PAIR.c.id)
                & (_ANNOTATION.c.pair_version == _PAIR.c.version),
                isouter=True,
            )
            .where(_PAIR.c.study_id == study_id)
            .group_by(_PAIR.c.id)
            .order_by(_PAIR.c.position)
        ).all()

    rows = db.read(engine, read)
    frame = pd.DataFrame(
        rows,
        columns=[
            "pair_id",
            "category",
            "gold",
            "expected",
            "reserved",
            "target",
            "annotations",
            "version",
        ],
    )
    frame["gold"] = frame["gold"].astype(bool)
    # a pair's own target in an adaptive study (annotate/queue/targets.py), else the study's
    frame["target"] = frame["target"].astype(object).where(~frame["gold"], None)
    frame["open"] = (frame["reserved"] - frame["annotations"]).clip(lower=0)
    target = frame["target"].fillna(0).astype(int)
    frame["status"] = np.select(
        [frame["gold"], frame["annotations"] >= target, frame["annotations"] > 0],
        ["gold check", "complete", "in progress"],
        "not started",
    )
    return frame[
        [
            "pair_id",
            "version",
            "category",
            "gold",
            "expected",
            "annotations",
            "target",
            "open",
            "status",
        ]
    ]


def pair_record(engine: Engine, *, study_id: int, pair_key: str) -> Pair | None:
    def read(s: Session) -> Pair | None:
        return s.exec(
            select(Pair).where(Pair.study_id == study_id, Pair.pair_key == pair_key)
        ).first()

    return db.read(engine, read)
