"""Create or upgrade the database schema on first use."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from annotate import models  # noqa: F401  (registers the tables)


def ensure_schema(engine: Engine) -> None:
    SQLModel.metadata.create_all(engine)
