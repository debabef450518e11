"""A study's data as files: annotations in the annotations table (docs/reference/file-formats.md) and pairs in the
import format (section 2)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from annotate.errors import UserError

EXPORT_FORMATS = {
    "csv": "text/csv",
    "jsonl": "application/jsonl",
    "parquet": "application/vnd.apache.parquet",
}


def export_annotations(engine: Engine, *, study: str, fmt: str) -> bytes:
    """The study's annotations (docs/reference/file-formats.md, annotations table) as CSV, JSONL or Parquet bytes."""
    from analysis.files.annotations_table import write_table
    from annotate.results.frames import annotations_frame

    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r}")
    frame = annotations_frame(engine, study=study)
    with tempfile.TemporaryDirectory(prefix="annotate-export-") as tmp:
        path = Path(tmp) / f"annotations.{fmt}"
        write_table(frame, path)
        return path.read_bytes()


def export_pairs(engine: Engine, *, study: str, valid_only: bool = False, **options: Any) -> bytes:
    """The study's pairs as JSON Lines in the import format (section 2), every original field
    kept; with valid_only, only the non-gold pairs whose report verdict is `valid`."""
    from annotate.results.frames import pairs_frame
    from annotate.results.study_report import build_study_report, valid_pair_records
    from annotate.studies.pairs_files import write_pairs

    with tempfile.TemporaryDirectory(prefix="annotate-pairs-") as tmp:
        path = Path(tmp) / "pairs.jsonl"
        if valid_only:
            report, _, _ = build_study_report(engine, study=study, **options)
            write_pairs(valid_pair_records(engine, study=study, report=report), path)
        else:
            write_pairs(pairs_frame(engine, study=study)["record"].tolist(), path)
        return path.read_bytes()


def export_pair_versions(engine: Engine, *, study: str) -> bytes:
    """Every version of every pair (earlier ones included, annotate/studies/pair_versions.py)
    as JSON Lines: each a record of the import format with its `pair_version`, in the study's
    order, earlier versions first."""
    from annotate.studies.pair_versions import all_versions
    from annotate.studies.pairs_files import write_pairs

    with tempfile.TemporaryDirectory(prefix="annotate-versions-") as tmp:
        path = Path(tmp) / "versions.jsonl"
        write_pairs(all_versions(engine, study=study), path)
        return path.read_bytes()
