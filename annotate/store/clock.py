"""Time as the database keeps it: UTC, one home for the rule.

PostgreSQL gives timestamps back aware, SQLite naive (its text holds UTC wall time), and files
may carry any offset or none. Every time is read with `as_utc` (aware, in UTC; a time without an
offset is UTC, the zone the app writes in) and compared or written naive with `naive_utc`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


def utcnow() -> datetime:
    return datetime.now(UTC)


@overload
def as_utc(moment: datetime | str) -> datetime: ...
@overload
def as_utc(moment: None) -> None: ...
def as_utc(moment: datetime | str | None) -> datetime | None:
    """An aware UTC time: ISO text parsed, a naive time taken as UTC, others converted."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@overload
def naive_utc(moment: datetime) -> datetime: ...
@overload
def naive_utc(moment: None) -> None: ...
def naive_utc(moment: datetime | None) -> datetime | None:
    """UTC wall time without an offset, as SQLite stores it (a naive time is UTC already)."""
    if moment is None or moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)
