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
  address; a participant who failed the qualification never sees the completion code, only the
  study's screened-out code when it has one (`--screened-out-code`).

A script that invents participant ids cannot drain a study:
- one client (the network prefix of its address, annotate/people/clients.py) creates at most
  NEW_PER_CLIENT new participants per NEW_WINDOW seconds; coming back as an existing
  participant is not limited;
- a participant with no answer holds a pair only for a short hold when others need it
  (ANSWERLESS_HOLD, annotate/queue/rules.py), not for the study's reservation timeout;
- participants who answered nothing ABANDONED_AFTER seconds after they came are removed
  (their reservations released) whenever a new participant arrives, so throwaway ids do not
  pile up as accounts.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

from sqlalchemy import delete, exists
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotate.errors import UserError
from annotate.people.auth import create_annotator
from annotate.people.clients import client_key
from annotate.store import db
from annotate.store.models import Annotation, Annotator, Assignment, Study, id_of, utcnow

PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
NEW_PER_CLIENT = 5
NEW_WINDOW = 600.0  # seconds
ABANDONED_AFTER = 6 * 3600  # seconds
_MAX_CLIENTS = 100_000  # clients remembered by the rate limit (oldest forgotten first)


class _NewAccountLimit:
    """New participants per client in a sliding window, in this process (a deployment with
    several replicas has sticky sessions, so a client meets one of them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def take(self, client: str, *, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._seen.pop(client, None) or deque()
            while times and times[0] <= now - NEW_WINDOW:
                times.popleft()
            self._seen[client] = times
            while len(self._seen) > _MAX_CLIENTS:
                self._seen.popitem(last=False)
            if len(times) >= NEW_PER_CLIENT:
                wait = int(times[0] + NEW_WINDOW - now) // 60 + 1
                raise UserError(
                    "too many new participants came from this network address just now; "
                    f"please try again in {wait} minute{'s' if wait > 1 else ''}"
                )
            times.append(now)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


NEW_ACCOUNTS = _NewAccountLimit()


@dataclass(frozen=True)
class Entry:
    annotator_id: int
    token: str | None  # a new participant's token; None for one coming back (the address is
    # their proof: a second tab must not retire the first tab's sign-in)
    created: bool


def entry_params(params: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(PID, STUDY_ID, SESSION_ID) when the address carries a Prolific entry, else None."""
    if "PROLIFIC_PID" not in params:
        return None
    pid, study_id, session_id = (str(params.get(name) or "").strip() for name in PARAMS)
    return pid, study_id, session_id


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


def remove_abandoned(s: Session, *, study_id: int, now: datetime | None = None) -> int:
    """Remove the study's crowd participants who came more than ABANDONED_AFTER seconds ago
    and answered nothing (their open reservations go back to the pool). Returns how many."""
    from annotate.queue.assignment import release_reservations

    now = now or utcnow()
    stale = s.exec(
        select(Annotator.id).where(
            Annotator.study_id == study_id,
            col(Annotator.external_id).is_not(None),
            Annotator.created_at < now - timedelta(seconds=ABANDONED_AFTER),
            ~exists().where(col(Annotation.annotator_id) == Annotator.id),
            ~exists().where(
                (col(Assignment.annotator_id) == Annotator.id) & (col(Assignment.status) == "done")
            ),
        )
    ).all()
    for annotator_id in sorted(i for i in stale if i is not None):
        release_reservations(s, annotator_id=annotator_id, now=now)
        s.execute(delete(Assignment).where(col(Assignment.annotator_id) == annotator_id))
        s.execute(delete(Annotator).where(col(Annotator.id) == annotator_id))
    return len(stale)


def returning(s: Session, *, pid: str, study_id: str, session_id: str) -> Annotator | None:
    """The active participant coming back with this address (same PID, STUDY_ID and
    SESSION_ID), else None: `enter` then decides (a new participant, or a refusal)."""
    if not all(_ID.match(value) for value in (pid, study_id, session_id)):
        return None
    try:
        study = study_for(s, study_id)
    except UserError:
        return None
    return s.exec(
        select(Annotator).where(
            Annotator.external_id == pid,
            Annotator.study_id == study.id,
            Annotator.external_session == session_id,
            Annotator.active == True,  # noqa: E712
        )
    ).first()


def enter(
    engine: Engine,
    *,
    pid: str,
    study_id: str,
    session_id: str,
    client: str | None = None,
    now: datetime | None = None,
) -> Entry:
    """Sign a Prolific participant in (creating their annotator account on first entry;
    `client` is the visitor's network address, counted by its prefix for the limit on new participants)."""
    _check_id(pid, "PROLIFIC_PID")
    _check_id(study_id, "STUDY_ID")
    _check_id(session_id, "SESSION_ID")
    # db.write re-runs the unit after a transient refusal: the new participant is counted
    # against the limit in the first attempt that gets that far, not again in a re-run (which
    # could refuse the very participant it counted, for an account never created).
    taken: list[bool] = []

    def take_once() -> None:
        if not taken:
            NEW_ACCOUNTS.take(client_key(client))
            taken.append(True)

    return db.write(
        engine,
        lambda s: _enter(
            s, pid=pid, study_id=study_id, session_id=session_id, now=now, take=take_once
        ),
    )


def _enter(
    s: Session,
    *,
    pid: str,
    study_id: str,
    session_id: str,
    now: datetime | None,
    take: Callable[[], None],
) -> Entry:
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
            s.add(existing)
        return Entry(id_of(existing), None, created=False)
    take()
    remove_abandoned(s, study_id=id_of(study), now=now)
    annotator, token = create_annotator(
        s, name=_free_name(s, pid, study), study_id=study.id, external_id=pid
    )
    annotator.external_session = session_id
    s.add(annotator)
    s.flush()
    return Entry(id_of(annotator), token, created=True)


@dataclass(frozen=True)
class FinishCode:
    code: str
    url: str


def finish_code(study: Study, *, screened_out: bool) -> FinishCode | None:
    """The code a participant who has finished is given: the completion code for work done;
    after a failed qualification only the study's screened-out code (Prolific's separate code
    for participants who are paid little or nothing), and no code when it has none."""
    code = (
        (study.prolific_screened_out_code if screened_out else study.prolific_completion_code) or ""
    ).strip()
    return FinishCode(code, COMPLETE_URL.format(code=quote(code, safe=""))) if code else None
