"""Review decisions as files (docs/reference/command-line.md, `annotate review --export / --import`).

One row per decided pair, its latest decision: `pair_id, pair_version, decision, category,
note, reviewer, decided_at`; CSV or JSON Lines by the file's suffix. An import is validated
like every other import, all or nothing: every row is checked (the pair and its version
exist, the decision and category are known, one row per pair) and on any problem nothing is
written and every problem is listed with its row. A row equal to the pair's latest decision
adds nothing, so importing an export again changes nothing.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from analysis.files import strict_input
from analysis.files.csv_cells import neutralise_frame, restore
from annotate.errors import InputError, UserError
from annotate.review.decisions import decision_problems, decisions_frame
from annotate.store import db
from annotate.store.clock import as_utc
from annotate.store.models import Pair, ReviewDecision, utcnow
from annotate.studies.catalog import get_study

SUFFIXES = (".csv", ".jsonl")
MAX_LINE_BYTES = 1024**2
MAX_FILE_BYTES = 256 * 1024**2
MAX_PROBLEMS = 50


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(f"{path}: use a .csv or .jsonl file for review decisions")
    return suffix


def latest_per_pair(engine: Engine, *, study: str) -> pd.DataFrame:
    """Each decided pair's latest decision (DECISION_COLUMNS), in the study's pair order."""

    def read(s: Session) -> tuple[pd.DataFrame, list[str]]:
        frame = decisions_frame(s, study=study)
        order = s.exec(
            select(Pair.pair_key)
            .where(Pair.study_id == get_study(s, study).id)
            .order_by(col(Pair.position))
        ).all()
        return frame, list(order)

    frame, order = db.read(engine, read)
    latest = frame.drop_duplicates("pair_id", keep="last")
    rank = {key: i for i, key in enumerate(order)}
    latest = latest.assign(_rank=latest["pair_id"].map(rank)).sort_values("_rank", kind="stable")
    return latest.drop(columns="_rank").reset_index(drop=True)


def export_decisions(engine: Engine, *, study: str, path: str | Path) -> int:
    """Write the study's decisions (module docstring); how many rows."""
    path = Path(path)
    suffix = _suffix(path)
    frame = latest_per_pair(engine, study=study)
    decided = cast(list[dict[str, Any]], frame.to_dict("records"))
    records = [
        {
            "pair_id": str(row["pair_id"]),
            "pair_version": int(row["pair_version"]),
            "decision": str(row["decision"]),
            "category": _text(row["category"]) or None,
            "note": _text(row["note"]),
            "reviewer": str(row["reviewer"]),
            "decided_at": row["decided_at"].isoformat(),
        }
        for row in decided
    ]
    if suffix == ".csv":
        table = pd.DataFrame(records, columns=list(frame.columns)).astype(object).fillna("")
        neutralise_frame(table).to_csv(path, index=False, lineterminator="\r\n")
    else:
        with path.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)


# --- import --------------------------------------------------------------------------------


def _read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number, raw row) of the file: CSV rows numbered from 1 after the header, JSON
    Lines by line."""
    strict_input.check_file(path)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise UserError(f"{path}: over the limit of {MAX_FILE_BYTES:,} bytes for decisions")
    if _suffix(path) == ".jsonl":
        with path.open("rb") as handle:
            records, problems = strict_input.json_object_lines(handle, limit=MAX_LINE_BYTES)
        if problems:
            raise InputError(str(path), problems)
        return records
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), [f"not valid UTF-8 text (byte {exc.start + 1})"]) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    for number, row in enumerate(reader, start=1):
        if None in row:
            raise InputError(str(path), [f"row {number}: more cells than the header has"])
        rows.append((number, {k: restore(v) if isinstance(v, str) else v for k, v in row.items()}))
    return rows


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()


def _version(value: Any) -> int | None:
    text = _text(value)
    try:
        number = int(text)
    except ValueError:
        return None
    return number if number >= 1 and str(number) == text.lstrip("+") else None


def _time(value: Any) -> datetime | None:
    text = _text(value)
    if not text:
        return None
    try:
        return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


@dataclass(frozen=True)
class ImportedDecisions:
    rows: int
    added: int  # rows that were not already each pair's latest decision


def import_decisions(engine: Engine, *, study: str, path: str | Path) -> ImportedDecisions:
    """Load decisions taken elsewhere (module docstring): all or nothing."""
    path = Path(path)
    raw = _read_rows(path)
    absent = [c for c in ("pair_id", "pair_version", "decision") if raw and c not in raw[0][1]]
    if absent:
        raise InputError(str(path), [f"required column '{c}' is missing" for c in absent])

    def work(s: Session) -> ImportedDecisions:
        study_row = get_study(s, study)
        pairs = {
            key: (pair_id, version)
            for pair_id, key, version in s.exec(
                select(Pair.id, Pair.pair_key, Pair.version).where(Pair.study_id == study_row.id)
            ).all()
            if pair_id is not None
        }
        latest = decisions_frame(s, study=study).drop_duplicates(
            ["pair_id", "pair_version"], keep="last"
        )
        latest_rows = cast(list[dict[str, Any]], latest.to_dict("records"))
        known = {
            (row["pair_id"], int(row["pair_version"])): (
                _text(row["decision"]),
                _text(row["category"]),
                _text(row["note"]),
            )
            for row in latest_rows
        }
        problems: list[str] = []
        seen: dict[str, int] = {}
        added: list[ReviewDecision] = []
        now = utcnow()
        for number, row in raw:
            found = _row_problems(number, row, pairs, seen)
            if found:
                problems += found
            else:
                key = _text(row.get("pair_id"))
                pair_id, _ = pairs[key]
                version = _version(row.get("pair_version")) or 0
                decision = _text(row.get("decision"))
                category = _text(row.get("category"))
                note = _text(row.get("note"))
                if known.get((key, version)) == (decision, category, note):
                    continue  # already this pair's decision: nothing to add
                added.append(
                    ReviewDecision(
                        study_id=study_row.id or 0,
                        pair_id=pair_id,
                        pair_version=version,
                        decision=decision,
                        category=category or None,
                        note=note,
                        reviewer=_text(row.get("reviewer")) or "import",
                        decided_at=_time(row.get("decided_at")) or now,
                    )
                )
            if len(problems) >= MAX_PROBLEMS:
                problems.append(f"stopped after {MAX_PROBLEMS} problems")
                break
        if not raw:
            problems.append("the file holds no decisions")
        if problems:
            raise InputError(str(path), problems)
        added.sort(key=lambda r: r.decided_at)
        s.add_all(added)
        return ImportedDecisions(rows=len(raw), added=len(added))

    return db.write(engine, work)


def _row_problems(
    number: int, row: dict[str, Any], pairs: dict[str, tuple[int, int]], seen: dict[str, int]
) -> list[str]:
    where = f"row {number}"
    key = _text(row.get("pair_id"))
    if not key:
        return [f"{where}, column 'pair_id': is empty"]
    if key not in pairs:
        return [f"{where}, column 'pair_id': no pair with this id (got {key!r})"]
    if key in seen:
        return [f"{where}: a second row for pair {key!r} (first at row {seen[key]})"]
    seen[key] = number
    version = _version(row.get("pair_version"))
    if version is None:
        got = _text(row.get("pair_version"))
        return [f"{where}, column 'pair_version': must be a whole number from 1 (got {got!r})"]
    _, current = pairs[key]
    decision = _text(row.get("decision"))
    problems = decision_problems(
        decision=decision,
        category=_text(row.get("category")) or None,
        note=_text(row.get("note")),
        version=version,
        current=current,
    )
    if decision == "revise" and version == current:
        problems.append(
            "a revise names the version it replaced, which a later version follows; version "
            f"{version} is the pair's latest (make the new version with import-pairs "
            "--update, or revise on the Review page)"
        )
    if _text(row.get("decided_at")) and _time(row.get("decided_at")) is None:
        problems.append(
            f"decided_at is not an ISO 8601 time (got {_text(row.get('decided_at'))!r})"
        )
    return [f"{where}: {problem}" for problem in problems]
