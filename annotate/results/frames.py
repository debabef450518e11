"""A study's annotations and pairs as the report's and the exports' tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from analysis.vocabulary import ANSWER_COLUMNS, COLUMNS, RATING_COLUMNS
from annotate.store import db
from annotate.store.models import Annotation, Annotator, Pair, table_of
from annotate.studies.catalog import get_study

if TYPE_CHECKING:  # pandas is imported where a table is made: importing this costs nothing
    import pandas as pd


T = TypeVar("T")


def _in_read(source: Engine | Session, work: Callable[[Session], T]) -> T:
    """`work` in the caller's session (part of a larger snapshot), else in a read of its own."""
    return work(source) if isinstance(source, Session) else db.read(source, work)


def annotations_frame(source: Engine | Session, *, study: str) -> pd.DataFrame:
    """The study's annotations in the annotations table's layout (docs/reference/file-formats.md); `source` is an
    engine (one read of its own) or the session of a larger snapshot."""
    import pandas as pd

    def query(s: Session) -> Sequence[tuple[str, str, Annotation]]:
        study_row = get_study(s, study)
        return s.exec(
            select(Pair.pair_key, Annotator.name, Annotation)
            .join(Pair, col(Pair.id) == Annotation.pair_id)
            .join(Annotator, col(Annotator.id) == Annotation.annotator_id)
            .where(Annotation.study_id == study_row.id)
            .order_by(col(Pair.position), col(Annotation.pair_version), col(Annotator.name))
        ).all()

    rows = _in_read(source, query)
    records = []
    for pair_key, name, a in rows:
        record = {"pair_id": pair_key, "annotator": name, "pair_version": a.pair_version}
        record.update((column, getattr(a, column)) for column in ANSWER_COLUMNS)
        if a.submitted_at:
            record["submitted_at"] = a.submitted_at.isoformat()
        records.append(record)
    frame = pd.DataFrame.from_records(
        records, columns=COLUMNS
    )  # docs/reference/file-formats.md, annotations table
    for column in (*RATING_COLUMNS, "pair_version"):
        frame[column] = frame[column].astype("Int64")
    frame["seconds"] = frame["seconds"].astype("Float64")
    return frame


def pairs_frame(source: Engine | Session, *, study: str, content: bool = True) -> pd.DataFrame:
    """The study's pairs for analysis: pair_id, pair_version (its current version), category,
    is_gold, n_aspects (how many rubric aspects it has: the aspect check's scores per answer)
    and (with `content`) the original record of its current version; `source` as for
    annotations_frame. Without content a pair costs a few bytes instead of its full text
    (about 100 KB)."""
    import pandas as pd

    if not isinstance(source, Session):  # one snapshot, retried as a whole
        return db.read(source, lambda s: pairs_frame(s, study=study, content=content))
    s = source
    study_row = get_study(s, study)
    if not content:
        pair = table_of(Pair)
        light = s.execute(
            select_columns(
                pair.c.pair_key,
                pair.c.version,
                pair.c.category,
                pair.c.is_gold,
                pair.c.rubric_aspects,
                *(pair.c[name] for name in SAMPLE_COLUMNS),
            )
            .where(pair.c.study_id == study_row.id)
            .order_by(pair.c.position)
        ).all()
        frame = pd.DataFrame(
            light,
            columns=[
                "pair_id",
                "pair_version",
                "category",
                "is_gold",
                "n_aspects",
                *SAMPLE_COLUMNS,
            ],
        )
        frame["is_gold"] = frame["is_gold"].astype(bool)
        frame["n_aspects"] = [len(aspects or []) for aspects in frame["n_aspects"]]
        return _sample_design(frame)
    pairs = s.exec(
        select(Pair).where(Pair.study_id == study_row.id).order_by(col(Pair.position))
    ).all()
    frame = pd.DataFrame.from_records(
        [
            {
                "pair_id": p.pair_key,
                "pair_version": p.version,
                "category": p.category,
                "is_gold": p.is_gold,
                "n_aspects": len(p.rubric_aspects or []),
                **{name: getattr(p, name) for name in SAMPLE_COLUMNS},
                "record": p.record(),
            }
            for p in pairs
        ],
        columns=[
            "pair_id",
            "pair_version",
            "category",
            "is_gold",
            "n_aspects",
            *SAMPLE_COLUMNS,
            "record",
        ],
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
