"""Alembic environment for annotate's schema, shipped inside the package.

At runtime `annotate.store.schema.ensure_schema` runs the migrations programmatically on first use
(no alembic.ini needed): it passes its own connection in `config.attributes["connection"]`,
already inside a transaction that holds the schema lock (BEGIN IMMEDIATE on SQLite, an advisory
lock on PostgreSQL), so every pending revision runs in that one transaction.

How to change the schema (for the next engineer):
  1. Edit annotate/store/models.py.
  2. Add a revision file in versions/, named NNNN_what.py with revision = "NNNN" (next number)
     and down_revision = the previous one. Generate a draft from an up-to-date database with
         ANNOTATE_DATABASE_URL=sqlite:///scratch.db annotate import-pairs ...   # any command
         alembic -c /dev/null -x script_location=annotate/store/migrations revision --autogenerate
     or write the op.* calls by hand. Never edit a released revision.
  3. SQLite cannot ALTER most things: use `with op.batch_alter_table("t") as batch:`.
     Give new NOT NULL columns a server_default so existing rows stay valid.
  4. Run tests/test_migrations.py: it upgrades a first-release database with annotations to
     head on SQLite and PostgreSQL and checks the result matches the models exactly.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from annotate.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)

config = context.config
target_metadata = SQLModel.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("annotate's migrations run online only (against a database)")

_connection = config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
else:  # the alembic command line, for developers: the database comes from --db rules
    from annotate.store.db import create_db_engine, resolve_url

    _engine = create_db_engine(resolve_url(config.get_main_option("sqlalchemy.url") or None))
    with _engine.connect() as _conn:
        _run(_conn)
        _conn.commit()
    _engine.dispose()
