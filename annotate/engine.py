"""The app's one door to its database: every command, web process, test and benchmark opens its
engine with `get_engine`.

The storage layer (annotate/store/) imports nothing above it, so the objects the layers above
generate for the schema (PostgreSQL's submit function, annotate/queue/sql.py) reach it as an
argument: this door hands `GENERATED` to every schema it creates or upgrades, so no process can
make a database without them.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from annotate.queue import sql
from annotate.store import db
from annotate.store.schema import Generated, Mode

GENERATED: tuple[Generated, ...] = (sql.SUBMIT_FUNCTION,)


def get_engine(url: str | None = None, *, schema: Mode = Mode.CURRENT) -> Engine:
    """The engine for `url` (--db rules when None: annotate.store.db.resolve_url), one per URL
    per process, its schema checked on first use as `schema` says (annotate/store/schema.py)."""
    return db.open_engine(url, schema=schema, generated=GENERATED)
