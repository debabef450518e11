"""Studies and their options: the rules for a study's name and options, and which options lock
once the study has answers. The console's Studies page and `annotate configure-study` both go
through `create_study`, `save_study_options` and `configure_study` here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from analysis.design.adaptive_bounds import adaptive_range_problem
from annotate.errors import UserError
from annotate.queue.targets import refresh_targets
from annotate.store import db
from annotate.store.models import Annotation, Study

DEFAULT_STUDY = "default"
STUDY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
COMPLETION_CODE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_LISTED_STUDIES = 20
# Every rating is given with one digit key on the labelling page (docs/reference/addresses.md, keys).
SCALE_LOWEST, SCALE_HIGHEST = 0, 9

# Options whose change would alter the meaning of annotations already collected.
LOCKED_WHEN_ANNOTATED = (
    "allow_ties",
    "scale_min",
    "scale_max",
    # what the scale's ends mean ("1 = very poor"): the annotators rated against these words
    "scale_min_label",
    "scale_max_label",
    "dimensions",
    "reasons",
    "aspect_check",
    # which pairs form an adaptive study's agreement sample, and how many answers each gets:
    # changed later, a sample pair could already have more or fewer than exactly K
    "agreement_sample",
    "agreement_overlap",
)
# Options that decide each pair's target (annotate/queue/targets.py): a change recomputes them.
DESIGN_OPTIONS = {
    "overlap_target",
    "adaptive_min",
    "adaptive_max",
    "agreement_sample",
    "agreement_overlap",
    "allow_ties",
}


def get_study(session: Session, name: str) -> Study:
    """The study of this name; refused, naming the studies there are, when there is none."""
    study = session.exec(select(Study).where(Study.name == name)).first()
    if study is None:
        names = session.exec(
            select(Study.name).order_by(Study.name).limit(MAX_LISTED_STUDIES + 1)
        ).all()
        shown = ", ".join(repr(n) for n in names[:MAX_LISTED_STUDIES])
        there = (
            f"the studies are {shown}{', ...' if len(names) > MAX_LISTED_STUDIES else ''}"
            if names
            else "there are no studies yet (`annotate import-pairs` or "
            "`annotate configure-study` creates one)"
        )
        raise UserError(f"there is no study named {name!r}; {there}")
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


def check_study_name(name: str | None) -> str:
    name = (name or "").strip()
    if not STUDY_NAME.match(name):
        raise UserError(
            f"{name!r} is not a study name: a study name is 1-64 letters, digits, spaces, dots, "
            "dashes or underscores, starting with a letter or digit"
        )
    return name


def clean_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options as entered (a form, the command line) in the form they are stored."""
    out = dict(options)
    for key in ("prolific_completion_code", "prolific_screened_out_code", "prolific_study_id"):
        if key in out:
            out[key] = (out[key] or "").strip() or None
    if "dimensions" in out:
        out["dimensions"] = list(out["dimensions"])
    if "reasons" in out:
        out["reasons"] = list(out["reasons"])
    return out


def _check_values(study: Study, changed: Mapping[str, Any]) -> None:
    """One readable sentence for the first option value that cannot be used."""
    scale_min = changed.get("scale_min", study.scale_min)
    scale_max = changed.get("scale_max", study.scale_max)
    if scale_min >= scale_max:
        raise UserError("the rating scale's minimum must be below its maximum")
    scale_changed = "scale_min" in changed or "scale_max" in changed  # older studies still save
    if scale_changed and (scale_min < SCALE_LOWEST or scale_max > SCALE_HIGHEST):
        raise UserError(
            f"the rating scale must lie within {SCALE_LOWEST} to {SCALE_HIGHEST}, so that every "
            "rating has its digit key"
        )
    if "overlap_target" in changed and changed["overlap_target"] < 1:
        raise UserError("the overlap target must be at least 1")
    adaptive_min = changed.get("adaptive_min", study.adaptive_min)
    adaptive_max = changed.get("adaptive_max", study.adaptive_max)
    if (adaptive_min is None) != (adaptive_max is None):
        raise UserError("adaptive overlap needs both a minimum and a maximum (MIN-MAX)")
    adaptive_changed = "adaptive_min" in changed or "adaptive_max" in changed
    if adaptive_changed and adaptive_min is not None:
        problem = adaptive_range_problem(adaptive_min, adaptive_max)
        if problem:
            raise UserError(problem)
    if "agreement_sample" in changed and not 0 <= changed["agreement_sample"] <= 1:
        raise UserError("the agreement sample is a share of the pairs, between 0 and 1")
    if "agreement_overlap" in changed and changed["agreement_overlap"] < 2:
        raise UserError(
            "the agreement sample's overlap must be at least 2 (agreement needs pairs of answers)"
        )
    if "reservation_timeout" in changed and changed["reservation_timeout"] < 1:
        raise UserError("the reservation timeout must be at least 1 second")
    if "items_per_annotator" in changed and (changed["items_per_annotator"] or 1) < 1:
        raise UserError("pairs per annotator must be at least 1 (or no limit)")
    if "qualification_gold" in changed and changed["qualification_gold"] < 0:
        raise UserError("the number of qualification checks cannot be negative")
    for key, what in (
        ("prolific_completion_code", "a completion code"),
        ("prolific_screened_out_code", "a screened-out code"),
    ):
        code = changed.get(key)
        if code is not None and not COMPLETION_CODE.match(code):
            raise UserError(
                f"{code!r} is not {what}: use 1-64 letters, digits, dashes or underscores"
            )
    completion = changed.get("prolific_completion_code", study.prolific_completion_code)
    screened = changed.get("prolific_screened_out_code", study.prolific_screened_out_code)
    if screened and screened == completion:
        raise UserError("the screened-out code must differ from the completion code")


def update_study_options(session: Session, study: Study, **options: Any) -> Study:
    """Change options; refuses those that would alter existing annotations' meaning."""
    unknown = [k for k in options if not hasattr(study, k) or k in {"id", "name", "created_at"}]
    if unknown:
        raise UserError(f"unknown study option(s): {', '.join(unknown)}")
    changed = {k: v for k, v in options.items() if getattr(study, k) != v}
    locked = [k for k in changed if k in LOCKED_WHEN_ANNOTATED]
    if locked and study.id is not None and has_annotations(session, study.id):
        raise UserError(
            "these options are locked because the study already has annotations: "
            + ", ".join(locked)
        )
    _check_values(study, changed)
    for key, value in changed.items():
        setattr(study, key, value)
    session.add(study)
    session.flush()
    if changed.keys() & DESIGN_OPTIONS and study.id is not None:
        refresh_targets(session.connection(), study_id=study.id)
    return study


def studies(engine: Engine) -> list[Study]:
    return db.read(engine, lambda s: list(s.exec(select(Study).order_by(Study.name)).all()))


def create_study(engine: Engine, name: str, **options: Any) -> Study:
    """A new study with these options (the defaults otherwise)."""
    name = check_study_name(name)
    options = clean_options(options)

    def work(s: Session) -> Study:
        if s.exec(select(Study.id).where(Study.name == name)).first() is not None:
            raise UserError(f"a study named {name!r} already exists")
        study = Study(name=name)
        s.add(study)
        s.flush()
        return update_study_options(s, study, **options)

    return db.write(engine, work)


def save_study_options(engine: Engine, study_id: int, **options: Any) -> Study:
    """Change options; the locked ones are refused once the study has annotations. A study
    that is not in the database (a console page left open while the database was replaced,
    for example by a restored backup) is refused in one sentence."""
    options = clean_options(options)

    def work(s: Session) -> Study:
        study = s.get(Study, study_id)
        if study is None:
            raise UserError(
                "this study is no longer in the database (was it replaced?): reload the page"
            )
        return update_study_options(s, study, **options)

    return db.write(engine, work)


def configure_study(engine: Engine, name: str, **options: Any) -> tuple[Study, bool]:
    """Set these options of the study `name`, creating it if missing, with the same rules as
    the console. Returns (study, created)."""
    name = check_study_name(name)
    options = clean_options(options)

    def work(s: Session) -> tuple[Study, bool]:
        study = s.exec(select(Study).where(Study.name == name)).first()
        created = study is None
        if study is None:
            study = Study(name=name)
            s.add(study)
            s.flush()
        return update_study_options(s, study, **options), created

    return db.write(engine, work)


def locked_options(engine: Engine, study_id: int) -> list[str]:
    """The options that can no longer change (the study has annotations), else []."""
    return db.read(
        engine,
        lambda s: list(LOCKED_WHEN_ANNOTATED) if has_annotations(s, study_id) else [],
    )


def option_lines(study: Study) -> list[tuple[str, str]]:
    """The study's options as (option, value) lines, named as `configure-study` spells them."""

    def onoff(value: bool) -> str:
        return "yes" if value else "no"

    return [
        ("study", study.name),
        ("overlap", str(study.overlap_target)),
        (
            "adaptive",
            f"{study.adaptive_min}-{study.adaptive_max}"
            if study.adaptive_min is not None
            else "no",
        ),
        ("agreement-sample", f"{study.agreement_sample:g}"),
        ("agreement-overlap", str(study.agreement_overlap)),
        ("ties", onoff(study.allow_ties)),
        (
            "scale",
            f"{study.scale_min} ({study.scale_min_label}) to "
            f"{study.scale_max} ({study.scale_max_label})",
        ),
        ("dimensions", ", ".join(study.dimensions) or "none"),
        ("reasons", ", ".join(study.reasons) or "none (not asked)"),
        ("aspect-check", onoff(study.aspect_check)),
        ("pairs-per-annotator", str(study.items_per_annotator or "no limit")),
        ("qualification-gold", str(study.qualification_gold)),
        ("reservation-timeout", f"{study.reservation_timeout} s"),
        ("prolific", onoff(study.allow_prolific)),
        ("prolific-study-id", study.prolific_study_id or "any"),
        ("completion-code", study.prolific_completion_code or "none"),
        ("screened-out-code", study.prolific_screened_out_code or "none"),
    ]
