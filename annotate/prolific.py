"""Prolific participants: `/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...` signs a participant in.

- Only a study with `allow_prolific` accepts them. When its `prolific_study_id` is set, the link's
  STUDY_ID must equal it; a study that allows Prolific without naming a Prolific study accepts
  any STUDY_ID, provided it is the only such study.
- Each participant becomes an annotator of that study named `prolific:<PID>`, with
  `external_id` = PID and `external_session` = SESSION_ID. Coming back with the same PID and the
  same SESSION_ID signs them in again (their answers are kept); the same PID with another
  SESSION_ID is refused, so that knowing a participant id alone is not enough to take over their
  work. A deactivated participant is refused.
- When they finish, they see the study's completion code and a button to Prolific's completion
  address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from sqlmodel import Session, select

from annotate.auth import create_annotator, reissue_token
from annotate.errors import UserError
from annotate.store.db import retrying, session
from annotate.store.models import Annotator, Study

PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Entry:
    annotator_id: int
    token: str
    created: bool


def entry_params(params) -> tuple[str, str, str] | None:
    """(PID, STUDY_ID, SESSION_ID) when the address carries a Prolific entry, else None."""
    if "PROLIFIC_PID" not in params:
        return None
    return tuple(str(params.get(name) or "").strip() for name in PARAMS)  # type: ignore[return-value]


def _check_id(value: str, name: str) -> None:
    if not _ID.match(value):
        raise UserError(f"the link's {name} is missing or malformed")


def study_for(s: Session, prolific_study_id: str) -> Study:
    studies = s.exec(select(Study).where(Study.allow_prolific == True)).all()  # noqa: E712
    named = [st for st in studies if st.prolific_study_id == prolific_study_id]
    if len(named) == 1:
        return named[0]
    open_to_any = [st for st in studies if not st.prolific_study_id]
    if not named and len(open_to_any) == 1:
        return open_to_any[0]
    raise UserError("no study here accepts participants from this Prolific study")


def _free_name(s: Session, pid: str, study: Study) -> str:
    for name in (f"prolific:{pid}", f"prolific:{pid}@{study.name}"):
        if s.exec(select(Annotator.id).where(Annotator.name == name)).first() is None:
            return name
    raise UserError("this Prolific participant cannot be registered (name taken)")


@retrying
def enter(engine, *, pid: str, study_id: str, session_id: str) -> Entry:
    """Sign a Prolific participant in (creating their annotator account on first entry)."""
    _check_id(pid, "PROLIFIC_PID")
    _check_id(study_id, "STUDY_ID")
    _check_id(session_id, "SESSION_ID")
    with session(engine) as s:
        study = study_for(s, study_id)
        existing = s.exec(
            select(Annotator).where(Annotator.external_id == pid, Annotator.study_id == study.id)
        ).first()
        if existing is not None:
            if not existing.active:
                raise UserError("this participant's access to the study has been closed")
            if existing.external_session and existing.external_session != session_id:
                raise UserError(
                    "this Prolific participant already started the study in another session; "
                    "please return to that session or contact the researchers"
                )
            if not existing.external_session:
                existing.external_session = session_id
            token = reissue_token(s, existing)
            return Entry(existing.id, token, created=False)
        annotator, token = create_annotator(
            s, name=_free_name(s, pid, study), study_id=study.id, external_id=pid
        )
        annotator.external_session = session_id
        s.add(annotator)
        s.flush()
        return Entry(annotator.id, token, created=True)


def completion_url(study: Study) -> str | None:
    code = (study.prolific_completion_code or "").strip()
    return COMPLETE_URL.format(code=quote(code, safe="")) if code else None
