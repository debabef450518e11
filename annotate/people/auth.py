"""Annotator accounts and their personal login tokens (only a hash is stored)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from annotate.errors import UserError
from annotate.store.models import Annotator


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(24)


def create_annotator(
    session: Session,
    *,
    name: str,
    study_id: int | None,
    is_admin: bool = False,
    email: str | None = None,
    external_id: str | None = None,
) -> tuple[Annotator, str]:
    """Create an annotator and return it with its one-time visible token."""
    name = name.strip()
    if not name:
        raise UserError("an annotator needs a non-empty name")
    if session.exec(select(Annotator).where(Annotator.name == name)).first() is not None:
        raise UserError(f"an annotator named {name!r} already exists")
    token = new_token()
    annotator = Annotator(
        name=name,
        study_id=study_id,
        is_admin=is_admin,
        token_hash=hash_token(token),
        email=email,
        external_id=external_id,
    )
    session.add(annotator)
    try:
        session.flush()
    except IntegrityError:
        raise UserError(f"an annotator named {name!r} already exists") from None
    return annotator, token


def reissue_token(session: Session, annotator: Annotator) -> str:
    """A new link; the old one stops working."""
    token = new_token()
    annotator.token_hash = hash_token(token)
    session.add(annotator)
    session.flush()
    return token


def annotator_for_token(session: Session, token: str | None) -> Annotator | None:
    """The active annotator this token belongs to, or None (wrong, missing or deactivated)."""
    if not token or len(token) > 200:
        return None
    digest = hash_token(token)
    annotator = session.exec(select(Annotator).where(Annotator.token_hash == digest)).first()
    if annotator is None or not hmac.compare_digest(annotator.token_hash or "", digest):
        return None
    return annotator if annotator.active else None
