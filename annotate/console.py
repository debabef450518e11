"""What the maintainer console shows and does, as plain functions (the pages only lay it out).

Numbers here ignore gold pairs unless they say otherwise: gold pairs are quality checks, not
part of the study's coverage (see annotate/gold.py).
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import select

from annotate import gold
from annotate.auth import DEFAULT_BASE_URL, create_annotator, login_link, reissue_token
from annotate.db import read_session, retrying, session
from annotate.errors import InputError, UserError
from annotate.models import Annotation, Annotator, Assignment, Pair, Study, utcnow
from annotate.studies import (
    LOCKED_WHEN_ANNOTATED,
    get_study,
    has_annotations,
    update_study_options,
)

RECENT_DAYS = 7
EXPORT_FORMATS = {
    "csv": "text/csv",
    "jsonl": "application/jsonl",
    "parquet": "application/vnd.apache.parquet",
}
REPORT_FILES = {
    "report.json": "application/json",
    "report.html": "text/html",
    "pairs.csv": "text/csv",
    "annotators.csv": "text/csv",
    "summary.md": "text/markdown",
}
_STUDY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")

# Outlier rules for annotators (each needs enough items to mean something).
MIN_ITEMS = 5
LOW_GOLD_ACCURACY = 0.7
MIN_GOLD = 3
PEER_GAP = 0.25
LABEL_GAP = 0.3
FAST_FACTOR = 1 / 3
POSITION_P = 0.01
MIN_SLOT_ITEMS = 10


# --- studies ------------------------------------------------------------------------------


@retrying
def studies(engine: Engine) -> list[Study]:
    with read_session(engine) as s:
        return list(s.exec(select(Study).order_by(Study.name)).all())


@retrying
def create_study(engine: Engine, name: str, **options) -> Study:
    """A new study with these options (the defaults otherwise)."""
    name = (name or "").strip()
    if not _STUDY_NAME.match(name):
        raise UserError(
            "a study name is 1-64 letters, digits, spaces, dots, dashes or underscores, "
            "starting with a letter or digit"
        )
    with session(engine) as s:
        if s.exec(select(Study.id).where(Study.name == name)).first() is not None:
            raise UserError(f"a study named {name!r} already exists")
        study = Study(name=name)
        s.add(study)
        s.flush()
        if options:
            update_study_options(s, study, **clean_options(options))
        return study


@retrying
def save_study_options(engine: Engine, study_id: int, **options) -> Study:
    """Change options; the locked ones are refused once the study has annotations."""
    options = clean_options(options)
    with session(engine) as s:
        study = s.get(Study, study_id)
        return update_study_options(s, study, **options)


def clean_options(options: dict) -> dict:
    out = dict(options)
    for key in ("prolific_completion_code", "prolific_study_id"):
        if key in out:
            out[key] = (out[key] or "").strip() or None
    if "dimensions" in out:
        out["dimensions"] = list(out["dimensions"])
    if "reasons" in out:
        out["reasons"] = list(out["reasons"])
    return out


@retrying
def locked_options(engine: Engine, study_id: int) -> list[str]:
    """The options that can no longer change (the study has annotations), else []."""
    with read_session(engine) as s:
        return list(LOCKED_WHEN_ANNOTATED) if has_annotations(s, study_id) else []


# --- annotators ---------------------------------------------------------------------------


@retrying
def invite(
    engine: Engine,
    *,
    study_id: int,
    name: str,
    email: str | None = None,
    admin: bool = False,
    base_url: str = DEFAULT_BASE_URL,
) -> tuple[Annotator, str]:
    """Create an annotator (or maintainer) and return it with their personal login link."""
    email = (email or "").strip() or None
    if email is not None and "@" not in email:
        raise UserError(f"{email!r} is not an email address")
    with session(engine) as s:
        annotator, token = create_annotator(
            s, name=name, study_id=study_id, is_admin=admin, email=email
        )
        return annotator, login_link(token, base_url)


@retrying
def new_link(engine: Engine, *, annotator_id: int, base_url: str = DEFAULT_BASE_URL) -> str:
    """A new personal link; the previous one stops working."""
    with session(engine) as s:
        annotator = s.get(Annotator, annotator_id)
        return login_link(reissue_token(s, annotator), base_url)


@retrying
def set_active(engine: Engine, *, annotator_id: int, active: bool) -> None:
    """Deactivate (their link stops working, their answers stay) or reactivate an account."""
    with session(engine) as s:
        annotator = s.get(Annotator, annotator_id)
        annotator.active = active
        s.add(annotator)
        if not active:
            # Open reservations go back to the pool so other annotators can take the pairs.
            held = s.exec(
                select(Assignment).where(
                    Assignment.annotator_id == annotator_id, Assignment.status == "active"
                )
            ).all()
            for assignment in held:
                assignment.status = "skipped"
                assignment.completed_at = utcnow()
                s.add(assignment)
                pair = s.get(Pair, assignment.pair_id)
                pair.n_assigned = max(0, pair.n_assigned - 1)
                s.add(pair)


@retrying
def annotator_activity(engine: Engine, *, study_id: int) -> pd.DataFrame:
    """One row per annotator of the study: account, progress and speed (gold included in
    `done`; `real_done` counts real pairs only)."""
    with read_session(engine) as s:
        people = s.exec(
            select(Annotator).where(Annotator.study_id == study_id).order_by(Annotator.name)
        ).all()
        done = dict(
            s.exec(
                select(Assignment.annotator_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status == "done")
                .group_by(Assignment.annotator_id)
            ).all()
        )
        open_ = dict(
            s.exec(
                select(Assignment.annotator_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status == "active")
                .group_by(Assignment.annotator_id)
            ).all()
        )
        rows = s.exec(
            select(
                Annotation.annotator_id,
                Pair.is_gold,
                Annotation.seconds,
                Annotation.submitted_at,
            )
            .join(Pair, Pair.id == Annotation.pair_id)
            .where(Annotation.study_id == study_id)
        ).all()
    answers = pd.DataFrame(rows, columns=["aid", "is_gold", "seconds", "submitted_at"])
    answers["seconds"] = pd.to_numeric(answers["seconds"], errors="coerce")
    answers["real"] = ~answers["is_gold"].astype(bool)
    per_person = answers.groupby("aid")  # one pass, not a filter per annotator
    real_done = per_person["real"].sum()
    median_seconds = per_person["seconds"].median().dropna()
    last_answer = per_person["submitted_at"].max().dropna()
    out = []
    for person in people:
        out.append(
            {
                "id": person.id,
                "annotator": person.name,
                "role": "maintainer" if person.is_admin else "annotator",
                "source": "Prolific" if person.external_id else "link",
                "email": person.email or "",
                "active": person.active,
                "done": int(done.get(person.id, 0)),
                "real_done": int(real_done.get(person.id, 0)),
                "open": int(open_.get(person.id, 0)),
                "median_seconds": (
                    float(median_seconds[person.id]) if person.id in median_seconds else None
                ),
                "last_answer": last_answer.get(person.id),
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
    activity: pd.DataFrame, report_annotators: list[dict], gold_table: pd.DataFrame
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


def _num(value) -> float | None:
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
    f"(p < {POSITION_P}, at least {MIN_SLOT_ITEMS} answers); one single rating value throughout "
    f"(straight-lining); median time under a third of the study's median (at least "
    f"{MIN_ITEMS} answers)."
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
        peer = _num(row.get("peer_agreement"))
        if (
            peer is not None
            and peer_median is not None
            and (_num(row.get("n_peer")) or 0) >= MIN_ITEMS
            and peer < peer_median - PEER_GAP
        ):
            found.append(f"low peer agreement ({peer:.0%} vs median {peer_median:.0%})")
        label = _num(row.get("label_agreement"))
        if (
            label is not None
            and label_median is not None
            and (_num(row.get("n_decisive")) or 0) >= MIN_ITEMS
            and label < label_median - LABEL_GAP
        ):
            found.append(f"low label agreement ({label:.0%} vs median {label_median:.0%})")
        p = _num(row.get("first_slot_p"))
        if p is not None and p < POSITION_P and (_num(row.get("n_slot")) or 0) >= MIN_SLOT_ITEMS:
            rate = _num(row.get("first_slot_rate")) or 0
            found.append(f"position bias (picks A {rate:.0%})")
        if row.get("straight_lining") is True or row.get("straight_lining") == 1.0:
            found.append("straight-lining")
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


# --- progress -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyProgress:
    pairs: int  # real pairs (gold left out)
    gold_pairs: int
    target: int
    complete: int  # real pairs with at least `target` annotations
    collected: int  # annotations that count towards the target (at most `target` per pair)
    needed: int  # pairs x target
    annotations: int  # every annotation of real pairs
    gold_annotations: int
    annotators: int  # annotators with at least one annotation
    per_day: pd.DataFrame  # day, annotations (real and gold)
    rate_per_day: float | None  # recent annotations per day (real pairs)
    remaining: int
    eta_days: float | None
    started: datetime | None

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
    n_recent: int, first: datetime | None, *, now: datetime, days: int = RECENT_DAYS
) -> float | None:
    """Annotations per day: the `n_recent` made in the last `days` days, over those days or,
    for a younger study, since the first annotation (`first`), counting at least one day.
    None when there were none."""
    if not n_recent or first is None:
        return None
    span_start = max(now - timedelta(days=days), first)
    return n_recent / max((now - span_start).total_seconds() / 86400, 1.0)


def _utc(value) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _day(column, dialect: str):
    """The UTC calendar day of a timestamp column, in SQL."""
    if dialect == "postgresql":
        return func.date(func.timezone("UTC", column))
    return func.date(column)  # SQLite keeps UTC wall time as text


@retrying
def study_progress(engine: Engine, *, study_id: int, now: datetime | None = None) -> StudyProgress:
    """The study's numbers, aggregated in the database (a few rows per pair and per day)."""
    now = now or datetime.now(UTC)
    start = now - timedelta(days=RECENT_DAYS)
    with read_session(engine) as s:
        dialect = s.get_bind().dialect.name
        study = s.get(Study, study_id)
        counts = s.exec(
            select(Pair.is_gold, func.count(Annotation.id))
            .join(Annotation, Annotation.pair_id == Pair.id, isouter=True)
            .where(Pair.study_id == study_id)
            .group_by(Pair.id, Pair.is_gold)
        ).all()
        day = _day(Annotation.submitted_at, dialect)
        days = s.exec(
            select(day, func.count(Annotation.id))
            .where(Annotation.study_id == study_id, Annotation.submitted_at.is_not(None))
            .group_by(day)
            .order_by(day)
        ).all()
        real = (Annotation.study_id == study_id) & (Pair.is_gold == False)  # noqa: E712
        n_recent, first_real = s.exec(
            select(
                func.count(Annotation.id).filter(Annotation.submitted_at >= start),
                func.min(Annotation.submitted_at),
            )
            .join(Pair, Pair.id == Annotation.pair_id)
            .where(real)
        ).one()
        annotators, started = s.exec(
            select(
                func.count(func.distinct(Annotation.annotator_id)),
                func.min(Annotation.submitted_at),
            ).where(Annotation.study_id == study_id)
        ).one()
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
    remaining = max(needed - collected, 0)
    rate = recent_rate(int(n_recent or 0), _utc(first_real), now=now)
    eta = remaining / rate if rate and remaining else (0.0 if remaining == 0 else None)
    return StudyProgress(
        pairs=len(real_n),
        gold_pairs=int(per_pair["is_gold"].sum()),
        target=target,
        complete=int((real_n >= target).sum()),
        collected=collected,
        needed=needed,
        annotations=int(real_n.sum()),
        gold_annotations=int(per_pair.loc[per_pair["is_gold"], "n"].sum()),
        annotators=int(annotators or 0),
        per_day=per_day,
        rate_per_day=rate,
        remaining=remaining,
        eta_days=eta,
        started=_utc(started),
    )


@retrying
def pair_coverage(engine: Engine, *, study_id: int) -> pd.DataFrame:
    """One row per pair: id, category, gold (and expected answer), annotations vs target."""
    with read_session(engine) as s:
        study = s.get(Study, study_id)
        rows = s.exec(
            select(
                Pair.pair_key,
                Pair.category,
                Pair.is_gold,
                Pair.gold_answer,
                Pair.n_assigned,
                func.count(Annotation.id),
            )
            .join(Annotation, Annotation.pair_id == Pair.id, isouter=True)
            .where(Pair.study_id == study_id)
            .group_by(Pair.id)
            .order_by(Pair.position)
        ).all()
    frame = pd.DataFrame(
        rows,
        columns=["pair_id", "category", "gold", "expected", "reserved", "annotations"],
    )
    frame["gold"] = frame["gold"].astype(bool)
    frame["target"] = np.where(frame["gold"], None, study.overlap_target)
    frame["open"] = (frame["reserved"] - frame["annotations"]).clip(lower=0)
    frame["status"] = np.select(
        [frame["gold"], frame["annotations"] >= study.overlap_target, frame["annotations"] > 0],
        ["gold check", "complete", "in progress"],
        "not started",
    )
    return frame[
        ["pair_id", "category", "gold", "expected", "annotations", "target", "open", "status"]
    ]


@retrying
def pair_record(engine: Engine, *, study_id: int, pair_key: str) -> Pair | None:
    with read_session(engine) as s:
        return s.exec(
            select(Pair).where(Pair.study_id == study_id, Pair.pair_key == pair_key)
        ).first()


# --- report and exports -------------------------------------------------------------------


@retrying
def data_version(engine: Engine, *, study_id: int) -> tuple:
    """Changes whenever the study's annotations, pairs or gold marks change (a cache key)."""
    with read_session(engine) as s:
        annotations = s.exec(
            select(
                func.count(Annotation.id),
                func.max(Annotation.id),
                func.max(Annotation.submitted_at),
            ).where(Annotation.study_id == study_id)
        ).one()
        pairs = s.exec(
            select(func.count(Pair.id), func.max(Pair.id)).where(Pair.study_id == study_id)
        ).one()
        gold_marks = s.exec(
            select(Pair.id, Pair.gold_answer)
            .where(Pair.study_id == study_id, Pair.is_gold == True)  # noqa: E712
            .order_by(Pair.id)
        ).all()
        study = s.get(Study, study_id)
    stamp = annotations[2].isoformat() if annotations[2] is not None else None
    return (
        study_id,
        study.scale_min,
        study.scale_max,
        int(annotations[0]),
        annotations[1],
        stamp,
        *(None if v is None else int(v) for v in pairs),
        hashlib.sha256(repr(list(gold_marks)).encode()).hexdigest(),
    )


def study_tables(
    engine: Engine,
    *,
    study: str,
    categories: list[str] | None = None,
    annotators: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, tuple[int, int]]:
    """(validated annotations, pairs, scale) for the report, optionally filtered: only pairs
    of these categories, only annotations of these annotators."""
    from analysis.tables import validate_annotations
    from annotate.annotations import annotations_frame, pairs_frame

    with read_session(engine) as s:
        row = get_study(s, study)
        scale = (row.scale_min, row.scale_max)
    pairs = pairs_frame(engine, study=study)
    raw = annotations_frame(engine, study=study)
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
    return annotations, pairs, scale


def study_design(engine: Engine, *, study: str) -> dict:
    """The study's settings that shape the statistics (ReportOptions.allow_ties, .dimensions):
    whether it offered a tie, and which quality dimensions it asked."""
    from analysis.tables import DIMENSIONS

    with read_session(engine) as s:
        row = get_study(s, study)
        asked = tuple(d for d in (row.dimensions or []) if d in DIMENSIONS)
        return {"allow_ties": bool(row.allow_ties), "dimensions": asked}


def report_options(scale: tuple[int, int], **overrides):
    from analysis.report import ReportOptions

    return ReportOptions(scale_min=scale[0], scale_max=scale[1], **overrides)


def build_study_report(
    engine: Engine,
    *,
    study: str,
    categories: list[str] | None = None,
    annotators: list[str] | None = None,
    **options,
) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(report dict, annotations, pairs) for the study or the filtered part of it."""
    from analysis.report import build_report

    annotations, pairs, scale = study_tables(
        engine, study=study, categories=categories, annotators=annotators
    )
    design = study_design(engine, study=study)
    report = build_report(annotations, pairs, options=report_options(scale, **design, **options))
    return report, annotations, pairs


def report_files(report: dict, *, pairs: pd.DataFrame) -> dict[str, bytes]:
    """The report files (contract section 4) and the valid pairs, as bytes by file name."""
    from analysis.report import write_report

    with tempfile.TemporaryDirectory(prefix="annotate-report-") as tmp:
        paths = write_report(
            report,
            tmp,
            pairs=pairs,
            export_valid=Path(tmp) / "valid_pairs.jsonl",
        )
        return {Path(path).name: Path(path).read_bytes() for path in paths.values()}


def export_annotations(engine: Engine, *, study: str, fmt: str) -> bytes:
    """The study's annotations (contract section 3) as CSV, JSONL or Parquet bytes."""
    from analysis.tables import write_table
    from annotate.annotations import annotations_frame

    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r}")
    frame = annotations_frame(engine, study=study)
    with tempfile.TemporaryDirectory(prefix="annotate-export-") as tmp:
        path = Path(tmp) / f"annotations.{fmt}"
        write_table(frame, path)
        return path.read_bytes()


def export_pairs(engine: Engine, *, study: str, valid_only: bool = False, **options) -> bytes:
    """The study's pairs as JSON Lines in the import format (section 2), every original field
    kept; with valid_only, only the non-gold pairs whose report verdict is `valid`."""
    from analysis.report import write_valid_pairs
    from annotate.annotations import pairs_frame
    from annotate.pairs_io import write_pairs

    with tempfile.TemporaryDirectory(prefix="annotate-pairs-") as tmp:
        path = Path(tmp) / "pairs.jsonl"
        if valid_only:
            report, _, pairs = build_study_report(engine, study=study, **options)
            write_valid_pairs(report, pairs, path)
        else:
            pairs = pairs_frame(engine, study=study)
            write_pairs(pairs["record"].tolist(), path)
        return path.read_bytes()


def upload_suffix(file_name: str) -> str:
    suffix = Path(file_name).suffix.lower()
    if suffix not in (".jsonl", ".json", ".parquet"):
        raise UserError(f"{file_name}: use a .jsonl, .json or .parquet file")
    return suffix


def import_upload(
    engine: Engine, *, data: bytes, file_name: str, study: str, update: bool = False, progress=None
):
    """Import uploaded pairs bytes with the command line's all-or-nothing rules."""
    from annotate.importer import import_pairs

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


def report_figures(report: dict) -> list[tuple[str, object]]:
    """The report's plotly charts (the same as in report.html), with a title for each."""
    from analysis import html_report

    return list(html_report.figures(report))


def report_reading(report: dict) -> list[str]:
    """The report's plain-language reading of its numbers (as in report.html)."""
    from analysis import html_report

    return list(html_report.reading(report))


def headline_table(report: dict) -> pd.DataFrame:
    from analysis.summary import HEADLINE_HEADER, headline_rows

    return pd.DataFrame(headline_rows(report), columns=list(HEADLINE_HEADER))
