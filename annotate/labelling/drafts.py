"""Drafts: the answers given so far kept in the open assignment, and the key that lets a page
save them without a page run."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from sqlalchemy import BindParameter, Text, bindparam, cast, exists, func, update
from sqlalchemy.engine import Engine

from annotate.labelling.answers import FormState
from annotate.store import db
from annotate.store.models import Annotator, Assignment, table_of, utcnow

DRAFT_SECONDS = "seconds"


_ASSIGNMENT = table_of(Assignment)


_ANNOTATOR = table_of(Annotator)


# Built once (SQLAlchemy compiles it once per dialect): drafts are most of what the server hears.
_OPEN_DRAFT = (
    _ASSIGNMENT.c.id == bindparam("b_id"),
    _ASSIGNMENT.c.status.in_(bindparam("b_statuses", expanding=True)),
)


_ACCOUNT = (_ANNOTATOR.c.id == _ASSIGNMENT.c.annotator_id, _ANNOTATOR.c.active)


_DRAFT_VALUES: dict[str, BindParameter[Any]] = {
    "draft": bindparam("b_draft"),
    "away_since": bindparam("b_away"),
    "seen_at": bindparam("b_seen"),  # a draft says the page is there (rules.py, rule 8)
}


# a deactivated account keeps nothing, also from a tab still open
_SAVE_DRAFT = (
    update(_ASSIGNMENT).where(*_OPEN_DRAFT, exists().where(*_ACCOUNT)).values(**_DRAFT_VALUES)
)


# ... nor one signed out or given a new link since the page's key was made (draft_key)
_SAVE_SIGNED_DRAFT = (
    update(_ASSIGNMENT)
    .where(
        *_OPEN_DRAFT,
        exists().where(
            *_ACCOUNT, _ANNOTATOR.c.token_hash.is_not_distinct_from(bindparam("b_sign_in"))
        ),
    )
    .values(**_DRAFT_VALUES)
)


SIGN_IN_UNCHECKED = object()  # save_draft's default: the caller checked the sign-in itself


def save_draft(
    engine: Engine,
    *,
    assignment_id: int,
    form: FormState,
    seconds: float | None = None,
    away: bool = False,
    statuses: tuple[str, ...] = ("active",),
    sign_in: str | object | None = SIGN_IN_UNCHECKED,
) -> bool:
    """Keep the answers given so far, and the seconds spent on the pair until now (so that a
    reload does not restart the time on item), in an open assignment (`statuses`) of an
    active account; whether it was kept. `away`: the page sent it as it went away (closed or
    hidden), which starts rule 8's AWAY_HOLD. `sign_in`: the account's token hash the page's
    draft key was made with, which must still be the account's. A draft lost in a power cut costs seconds of
    typing: its commit skips SQLite's fsync (db.session's durable=False)."""
    draft = form.as_draft()
    if seconds is not None:
        draft[DRAFT_SECONDS] = round(seconds, 1)
    # a draft comes from a page that shows the pair: it is not away (rules.py, rule 8), unless
    # it is the page's last word before it went away
    now = utcnow()
    params = {
        "b_id": assignment_id,
        "b_statuses": list(statuses),
        "b_draft": draft,
        "b_away": now if away else None,
        "b_seen": now,
    }
    statement = _SAVE_DRAFT
    if sign_in is not SIGN_IN_UNCHECKED:
        statement = _SAVE_SIGNED_DRAFT
        params["b_sign_in"] = sign_in
    return db.write_statement(
        engine, lambda conn: conn.execute(statement, params).rowcount == 1, durable=False
    )


def draft_key(
    secret: str | None, *, assignment_id: int, annotator_id: int, sign_in: str | None
) -> str:
    """The key that lets a page save drafts of this assignment without a page run (the
    labelling form is given it with the pair; annotate/web/drafts.py checks it): HMAC-SHA256
    with the study's secret, of a message no coin uses. `sign_in` is the account's token hash
    when the page was shown: Sign out and a new link change it, so a tab left open saves no
    more drafts (a Prolific participant's stays: their address is their sign-in)."""
    message = f"draft:{assignment_id}:{annotator_id}:{sign_in or ''}".encode()
    return hmac.new((secret or "").encode(), message, hashlib.sha256).hexdigest()


_ID_BYTES = 8  # an assignment id, big-endian (bounded_json keeps ids within 64 bits)


def _mask(key: bytes, label: bytes, data: bytes) -> bytes:
    return hmac.new(key, label + data, hashlib.sha256).digest()[:_ID_BYTES]


def draft_handle(secret: str | None, *, study_id: int, assignment_id: int) -> str:
    """The name a page gives its assignment in a draft request, instead of the id: the id
    enciphered with the study's secret ("{study id}.{32 hex digits}"). Ids are given in
    sequence, so raw ids on the page told a pair served out of turn (a gold check) by the gap
    before it; handles look random, the same for one assignment on every reload. The study id
    is the same for every pair of an annotator's walk."""
    key = (secret or "").encode()
    plain = assignment_id.to_bytes(_ID_BYTES, "big", signed=True)
    tag = _mask(key, b"handle-tag:", plain)  # synthetic IV: deterministic, checked on reading
    masked = bytes(a ^ b for a, b in zip(plain, _mask(key, b"handle-mask:", tag), strict=True))
    return f"{study_id}.{(tag + masked).hex()}"


def handle_study(handle: object) -> int | None:
    """The study id a handle names (draft_handle), or None when it is no handle."""
    if not isinstance(handle, str) or len(handle) > 64:
        return None
    study, _, rest = handle.partition(".")
    if not study.isdigit() or len(study) > 18 or len(rest) != 4 * _ID_BYTES:
        return None
    return int(study)


def handle_assignment(handle: str, *, secret: str | None) -> int | None:
    """The assignment id of a handle made with this study's `secret`, or None (not a handle,
    or not one this study's secret made)."""
    _, _, rest = handle.partition(".")
    try:
        raw = bytes.fromhex(rest)
    except ValueError:
        return None
    if len(raw) != 2 * _ID_BYTES:
        return None
    key = (secret or "").encode()
    tag, masked = raw[:_ID_BYTES], raw[_ID_BYTES:]
    plain = bytes(a ^ b for a, b in zip(masked, _mask(key, b"handle-mask:", tag), strict=True))
    if not hmac.compare_digest(tag, _mask(key, b"handle-tag:", plain)):
        return None
    return int.from_bytes(plain, "big", signed=True)


def draft_seconds(draft: Mapping[str, Any] | None) -> float:
    """Seconds spent on the pair before the draft was saved (0 for an older draft)."""
    value = (draft or {}).get(DRAFT_SECONDS)
    return float(value) if isinstance(value, int | float) else 0.0


# A draft kept in a pair's earlier version's assignment (closed as 'revised' when the pair got
# a new version while it was open; annotate/studies/pair_versions.py): never applied to the new
# text. JSON null is how an assignment holds no draft.
_HAS_DRAFT = func.coalesce(cast(_ASSIGNMENT.c.draft, Text), "null") != "null"
REVISED_DRAFTS = (_ASSIGNMENT.c.status == "revised", _HAS_DRAFT)


def drop_revised_drafts(engine: Engine, *, annotator_id: int) -> int:
    """Drop this annotator's drafts of pairs revised while they had them open (the page says
    so once); how many there were."""
    dropped = (
        update(_ASSIGNMENT)
        .where(_ASSIGNMENT.c.annotator_id == annotator_id, *REVISED_DRAFTS)
        .values(draft=None)
    )
    return db.write_statement(engine, lambda conn: conn.execute(dropped).rowcount, durable=False)
