"""Annotator and maintainer accounts as the console manages them: invitations, new links,
deactivation. (Tokens and their hashes: annotate/people/auth.py.)"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotate.errors import UserError
from annotate.people.auth import create_annotator, reissue_token
from annotate.people.links import DEFAULT_BASE_URL, login_link
from annotate.queue.assignment import release_reservations
from annotate.store import db
from annotate.store.models import Annotator


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

    def work(s: Session) -> tuple[Annotator, str]:
        annotator, token = create_annotator(
            s, name=name, study_id=study_id, is_admin=admin, email=email
        )
        return annotator, login_link(token, base_url)

    return db.write(engine, work)


def new_link(engine: Engine, *, annotator_id: int, base_url: str = DEFAULT_BASE_URL) -> str:
    """A new personal link; the previous one stops working."""
    return db.write(
        engine, lambda s: login_link(reissue_token(s, s.get_one(Annotator, annotator_id)), base_url)
    )


def set_active(engine: Engine, *, annotator_id: int, active: bool) -> None:
    """Deactivate (their link stops working, their answers stay) or reactivate an account."""

    def change(s: Session) -> None:
        annotator = s.get_one(Annotator, annotator_id)
        annotator.active = active
        s.add(annotator)
        if not active:
            # Open reservations go back to the pool so other annotators can take the pairs.
            release_reservations(s, annotator_id=annotator_id)

    db.write(engine, change)
