"""annotate import-annotations FILE [--study NAME]"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from annotate.commands._common import add_study_option
from annotate.store.clock import as_utc

if TYPE_CHECKING:
    import pandas as pd

NAME = "import-annotations"
ORDER = 40
HELP = (
    "Load annotations collected elsewhere (.csv, .jsonl, .parquet) into a study, all or "
    "nothing; a row for an existing (pair, annotator) replaces it."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="annotations file: .csv, .jsonl or .parquet")
    add_study_option(parser)


def contract_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Validated table -> plain dicts for annotate.studies.annotation_import.import_annotation_rows."""
    plain = frame.astype(object).where(frame.notna(), None)
    columns = [str(column) for column in plain.columns]
    rows = [dict(zip(columns, values, strict=True)) for values in plain.itertuples(index=False)]
    for row in rows:
        row["submitted_at"] = as_utc(row["submitted_at"])  # no offset: UTC, as the app writes
    return rows


def run(args: argparse.Namespace) -> int:
    from sqlmodel import Session, select

    from analysis.files.annotations_table import load_annotations
    from annotate.engine import get_engine
    from annotate.store.db import read
    from annotate.store.models import Pair, id_of
    from annotate.studies.annotation_import import import_annotation_rows
    from annotate.studies.catalog import get_study

    def study_and_pairs(
        s: Session,
    ) -> tuple[int, tuple[int, int], dict[str, int], dict[str, int]]:
        study = get_study(s, args.study)
        rows = s.exec(
            select(Pair.pair_key, Pair.rubric_aspects, Pair.version).where(
                Pair.study_id == study.id
            )
        ).all()
        aspect_counts = {key: len(aspects or []) for key, aspects, _ in rows}
        versions = {key: version for key, _, version in rows}
        return id_of(study), (study.scale_min, study.scale_max), aspect_counts, versions

    engine = get_engine(args.db)
    study_id, scale, aspect_counts, versions = read(engine, study_and_pairs)
    frame = load_annotations(
        args.file,
        scale=scale,
        pair_ids=set(aspect_counts),
        aspect_counts=aspect_counts,
        versions=versions,
    )
    done = import_annotation_rows(engine, study_id=study_id, rows=contract_rows(frame))
    print(
        f"study {args.study!r}: {done.total:,} annotations read from {args.file}: "
        f"{done.new:,} new, {done.replaced:,} replaced, {done.unchanged:,} unchanged"
    )
    return 0
