"""A study's agreement and validation report from the database: the data read in one snapshot,
the report built from it, and its files, charts and reading for the console.

`annotate report --db` and the console's Agreement and Exports pages use these functions.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import func
from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine, Row
from sqlmodel import Session, col, select

from analysis.design.stopping import OverlapDesign
from analysis.report.shape import Report
from annotate.queue.targets import Design
from annotate.results import frames
from annotate.store import db
from annotate.store.models import Annotation, Pair, ReviewDecision, Study, table_of
from annotate.studies.catalog import get_study

_PAIR, _ANNOTATION = table_of(Pair), table_of(Annotation)

REPORT_FILES = {
    "report.json": "application/json",
    "report.html": "text/html",
    "pairs.csv": "text/csv",
    "annotators.csv": "text/csv",
    "summary.md": "text/markdown",
}


@dataclass(frozen=True)
class StudyData:
    """What the report reads: validated annotations and the pairs, from one snapshot."""

    annotations: pd.DataFrame
    pairs: pd.DataFrame  # pair_id, category, is_gold (and record, when read with content)
    scale: tuple[int, int]
    # The study's settings that shape the statistics (ReportOptions.allow_ties, .dimensions):
    # whether it offered a tie, and which quality dimensions it asked.
    design: dict[str, Any]
    # How many annotations each pair got: fixed or adaptive, with the agreement sample.
    overlap: OverlapDesign | None = None
    # Review decisions, in the order taken (analysis.review.decisions.DECISION_COLUMNS).
    decisions: pd.DataFrame | None = None


def study_tables(
    engine: Engine,
    *,
    study: str,
    categories: list[str] | None = None,
    annotators: list[str] | None = None,
    content: bool = False,
) -> StudyData:
    """The report's data, optionally filtered (only pairs of these categories, only
    annotations of these annotators). The study, its pairs and its annotations are read in
    one snapshot, so a pair imported and answered meanwhile is in all of them or in none.
    `content` adds each pair's original record (for --export-valid); without it a pair is a
    few bytes."""
    from analysis.files.annotations_table import validate_annotations
    from analysis.vocabulary import DIMENSIONS
    from annotate.review.decisions import decisions_frame

    def read(
        s: Session,
    ) -> tuple[
        pd.DataFrame, pd.DataFrame, tuple[int, int], dict[str, Any], OverlapDesign, pd.DataFrame
    ]:
        row = get_study(s, study)
        pairs = frames.pairs_frame(s, study=study, content=content)
        raw = frames.annotations_frame(s, study=study)
        design = {
            "allow_ties": bool(row.allow_ties),
            "dimensions": tuple(d for d in (row.dimensions or []) if d in DIMENSIONS),
        }
        real = pairs.loc[~pairs["is_gold"].astype(bool), "pair_id"]
        overlap = Design.of(row).report_design(real)
        decisions = decisions_frame(s, study=study)
        return raw, pairs, (row.scale_min, row.scale_max), design, overlap, decisions

    raw, pairs, scale, design, overlap, decisions = db.read(engine, read)
    if categories:
        pairs = pairs[pairs["category"].isin(categories)].reset_index(drop=True)
        raw = raw[raw["pair_id"].isin(set(pairs["pair_id"]))]
    if annotators:
        raw = raw[raw["annotator"].isin(annotators)]
    annotations = validate_annotations(
        raw.reset_index(drop=True),
        source=f"study {study!r}",
        scale=scale,
        pair_ids=set(pairs["pair_id"]),
    )
    if categories:  # the sample among the pairs kept
        overlap = replace(overlap, sample=overlap.sample & frozenset(pairs["pair_id"]))
    return StudyData(
        annotations=annotations,
        pairs=pairs,
        scale=scale,
        design=design,
        overlap=overlap,
        decisions=decisions,
    )


def build_study_report(
    engine: Engine,
    *,
    study: str,
    categories: list[str] | None = None,
    annotators: list[str] | None = None,
    content: bool = False,
    **options: Any,
) -> tuple[Report, pd.DataFrame, pd.DataFrame]:
    """(report, annotations, pairs) for the study or the filtered part of it."""
    from analysis.report.build import build_report, report_options

    data = study_tables(
        engine, study=study, categories=categories, annotators=annotators, content=content
    )
    from analysis.population.estimates import is_sampled, with_population
    from analysis.review.decisions import with_review

    report = build_report(
        data.annotations,
        data.pairs,
        options=report_options(data.scale, **data.design, **options),
        design=data.overlap,
    )
    report = with_review(report, data.decisions)
    if is_sampled(data.pairs):  # a sampled study (import-pairs --sample): its population key
        report = with_population(report, data.pairs)
    return report, data.annotations, data.pairs


def scorer_report(
    engine: Engine,
    *,
    study: str,
    report: Report,
    annotations: pd.DataFrame,
    pairs: pd.DataFrame,
    name: str,
    data: bytes,
) -> Report:
    """The report with an automatic scorer's file (its upload: name and bytes) compared with
    the annotators, as `annotate report --aspect-scores` does. The file is checked against the
    whole study's pairs (a broken file raises InputError naming its lines); rows of pairs
    outside the report's selection are left out."""
    from analysis.aspects.scorer import aspect_counts, read_scorer_file
    from analysis.report.build import with_aspect_scores

    counts = aspect_counts(frames.pairs_frame(engine, study=study, content=False))
    scorer = read_scorer_file(name, aspect_counts=counts, data=data)
    selected = scorer["pair_id"].isin(set(pairs["pair_id"].astype(str)))
    return with_aspect_scores(report, annotations, pairs, scorer[selected].reset_index(drop=True))


def valid_pair_records(engine: Engine, *, study: str, report: Report) -> list[dict[str, Any]]:
    """The original records of the pairs `--export-valid` writes (the report's `valid`
    non-gold pairs, a reviewer's keep or drop overriding the verdict), in the study's order."""
    from analysis.report.files import valid_pair_ids

    valid = valid_pair_ids(report)

    def read(s: Session) -> list[dict[str, Any]]:
        row = get_study(s, study)
        pairs = s.exec(
            select(Pair).where(Pair.study_id == row.id).order_by(col(Pair.position))
        ).all()
        return [p.record() for p in pairs if p.pair_key in valid]

    return db.read(engine, read) if valid else []


def report_files(
    report: Report, *, engine: Engine, study: str, valid_pairs: bool = True
) -> dict[str, bytes]:
    """The report files (docs/reference/report-keys.md) and the valid pairs (valid_pairs.jsonl, their
    records read now), as bytes by file name."""
    from analysis.report.files import write_report
    from annotate.studies.pairs_files import write_pairs

    with tempfile.TemporaryDirectory(prefix="annotate-report-") as tmp:
        paths = write_report(report, tmp, pairs=None, export_valid=None)
        files = {Path(path).name: Path(path).read_bytes() for path in paths.values()}
        if valid_pairs:
            path = Path(tmp) / "valid_pairs.jsonl"
            write_pairs(valid_pair_records(engine, study=study, report=report), path)
            files[path.name] = path.read_bytes()
        return files


def data_version(engine: Engine, *, study_id: int) -> tuple[object, ...]:
    """Changes whenever the study's annotations, pairs (their versions too), gold marks or
    review decisions change (a cache key)."""

    def read(
        s: Session,
    ) -> tuple[tuple[Any, ...], tuple[Any, ...], Sequence[Row[Any]], tuple[int, int]]:
        counted = select_columns(
            func.count(_ANNOTATION.c.id),
            func.max(_ANNOTATION.c.id),
            func.max(_ANNOTATION.c.submitted_at),
        )
        annotations = tuple(s.execute(counted.where(_ANNOTATION.c.study_id == study_id)).one())
        counted_pairs = select_columns(
            func.count(_PAIR.c.id), func.max(_PAIR.c.id), func.sum(_PAIR.c.version)
        )
        pairs = tuple(s.execute(counted_pairs.where(_PAIR.c.study_id == study_id)).one())
        decision = table_of(ReviewDecision)
        counted_decisions = select_columns(func.count(decision.c.id), func.max(decision.c.id))
        decisions = tuple(s.execute(counted_decisions.where(decision.c.study_id == study_id)).one())
        gold_marks = s.execute(
            select_columns(_PAIR.c.id, _PAIR.c.gold_answer)
            .where(_PAIR.c.study_id == study_id, _PAIR.c.is_gold == True)  # noqa: E712
            .order_by(_PAIR.c.id)
        ).all()
        study = s.get_one(Study, study_id)
        return annotations, (*pairs, *decisions), gold_marks, (study.scale_min, study.scale_max)

    annotations, pairs, gold_marks, scale = db.read(engine, read)
    stamp = annotations[2].isoformat() if annotations[2] is not None else None
    return (
        study_id,
        *scale,
        int(annotations[0]),
        annotations[1],
        stamp,
        *(None if v is None else int(v) for v in pairs),
        hashlib.sha256(repr(list(gold_marks)).encode()).hexdigest(),
    )


def report_figures(report: Report) -> list[tuple[str, object]]:
    """The report's plotly charts (the same as in report.html), with a title for each."""
    from analysis.report import html_page

    return list(html_page.figures(report))


def report_reading(report: Report) -> list[str]:
    """The report's plain-language reading of its numbers (as in report.html)."""
    from analysis.report import html_page

    return list(html_page.reading(report))


def headline_table(report: Report) -> tuple[pd.DataFrame, list[str]]:
    """The headline numbers as summary.md has them, and the notes their rows share."""
    from analysis.report.summary import HEADLINE_HEADER, headline_table

    table = headline_table(report)
    return pd.DataFrame(table.rows, columns=list(HEADLINE_HEADER)), table.notes
