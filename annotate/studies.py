"""Studies and their options."""

from __future__ import annotations

from sqlmodel import Session, select

from annotate.errors import UserError
from annotate.models import Annotation, Study

DEFAULT_STUDY = "default"

# Options whose change would alter the meaning of annotations already collected.
LOCKED_WHEN_ANNOTATED = (
    "allow_ties",
    "scale_min",
    "scale_max",
    "dimensions",
    "reasons",
)


def get_study(session: Session, name: str) -> Study:
    study = session.exec(select(Study).where(Study.name == name)).first()
    if study is None:
        raise UserError(f"there is no study named {name!r}")
    return study


def get_or_create_study(session: Session, name: str) -> Study:
    study = session.exec(select(Study).where(Study.name == name)).first()
    if study is None:
        study = Study(name=name)
        session.add(study)
        session.flush()
    return study


def has_annotations(session: Session, study_id: int) -> bool:
    return (
        session.exec(select(Annotation.id).where(Annotation.study_id == study_id).limit(1)).first()
        is not None
    )


def update_study_options(session: Session, study: Study, **options) -> Study:
    """Change options; refuses those that would alter existing annotations' meaning."""
    unknown = [k for k in options if not hasattr(study, k) or k in {"id", "created_at"}]
    if unknown:
        raise UserError(f"unknown study option(s): {', '.join(unknown)}")
    changed = {k: v for k, v in options.items() if getattr(study, k) != v}
    locked = [k for k in changed if k in LOCKED_WHEN_ANNOTATED]
    if locked and has_annotations(session, study.id):
        raise UserError(
            "these options are locked because the study already has annotations: "
            + ", ".join(locked)
        )
    if changed.get("scale_min", study.scale_min) >= changed.get("scale_max", study.scale_max):
        raise UserError("the rating scale's minimum must be below its maximum")
    if "overlap_target" in changed and changed["overlap_target"] < 1:
        raise UserError("the overlap target must be at least 1")
    for key, value in changed.items():
        setattr(study, key, value)
    session.add(study)
    session.flush()
    return study
