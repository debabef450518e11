"""Pairs files uploaded in the console, imported with the command line's all-or-nothing rules."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from annotate.errors import InputError, UserError

if TYPE_CHECKING:
    from annotate.studies.pair_import import ImportResult


def upload_suffix(file_name: str) -> str:
    suffix = Path(file_name).suffix.lower()
    if suffix not in (".jsonl", ".json", ".parquet"):
        raise UserError(f"{file_name}: use a .jsonl, .json or .parquet file")
    return suffix


def import_upload(
    engine: Engine,
    *,
    data: bytes,
    file_name: str,
    study: str,
    update: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import uploaded pairs bytes with the command line's all-or-nothing rules."""
    from annotate.studies.pair_import import import_pairs

    suffix = upload_suffix(file_name)
    with tempfile.TemporaryDirectory(prefix="annotate-upload-") as tmp:
        path = Path(tmp) / f"upload{suffix}"
        path.write_bytes(data)
        try:
            return import_pairs(
                engine, path, study_name=study, update_existing=update, progress=progress
            )
        except InputError as exc:  # name the uploaded file, not the temporary copy
            raise InputError(file_name, exc.problems) from None


def count_records(data: bytes, file_name: str) -> int | None:
    """Roughly how many records an upload holds (for a progress bar), or None if unknown."""
    suffix = Path(file_name).suffix.lower()
    if suffix == ".jsonl":
        return sum(1 for line in io.BytesIO(data) if line.strip())
    return None
