"""Create or upgrade the database schema on first use, with the Alembic migrations shipped in
annotate/migrations (no alembic.ini needed).

- A new, empty database is brought to the newest revision.
- A database at an older revision is upgraded in place; the upgrade runs in one transaction,
  so it happens completely or not at all.
- A database whose tables were made before migrations existed (no `alembic_version` table,
  but annotate's tables present) is recorded as revision 0001, the first release, then upgraded.
- A database at a revision this code does not know was made by a newer release: refused.
- Several processes starting at once on a new database: one creates the schema while the others
  wait for its lock (BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL), then find it done.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine

from annotate import models, queue_sql  # noqa: F401  (models registers the tables)
from annotate.db import is_sqlite, reader
from annotate.errors import UserError

MIGRATIONS = Path(__file__).with_name("migrations")
FIRST_RELEASE = "0001"
_ADVISORY_LOCK = 0x616E6E6F7461  # any constant shared by every annotate process
_KNOWN_TABLES = {"study", "pair", "annotator", "annotation", "assignment"}


def alembic_config(connection: Connection | None = None, script_location: Path | None = None):
    config = Config()
    config.set_main_option("script_location", str(script_location or MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _script(script_location: Path | None) -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(script_location=script_location))


def current_revisions(connection: Connection) -> tuple[str, ...]:
    return tuple(MigrationContext.configure(connection).get_current_heads())


def _check_known(current: tuple[str, ...], script: ScriptDirectory, engine: Engine) -> None:
    heads = script.get_heads()
    for revision in current:
        try:
            known = script.get_revision(revision)
        except CommandError:
            known = None
        if known is None:
            shown = engine.url.render_as_string(hide_password=True)
            raise UserError(
                f"this database ({shown}) was created by a newer version of annotate "
                f"(schema revision {revision!r}; this version knows up to {', '.join(heads)}); "
                "upgrade the tool"
            )


def ensure_schema(
    engine: Engine, *, script_location: Path | None = None, revision: str = "head"
) -> None:
    """Bring the database to `revision` (default: the newest this code knows)."""
    script = _script(script_location)
    target = set(script.get_heads()) if revision == "head" else {revision}
    with reader(engine).connect() as conn:  # fast path: already up to date, no lock taken
        current = current_revisions(conn)
        functions_current = queue_sql.functions_installed(conn)
        conn.rollback()
    _check_known(current, script, engine)
    if set(current) == target and functions_current:
        return
    with engine.connect() as conn, conn.begin():
        if not is_sqlite(engine):
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})")
        # else: BEGIN IMMEDIATE already holds SQLite's write lock
        current = current_revisions(conn)  # again, under the lock: another process may have won
        _check_known(current, script, engine)
        if set(current) != target:
            config = alembic_config(conn, script_location)
            if not current and set(inspect(conn).get_table_names()) >= _KNOWN_TABLES:
                command.stamp(config, FIRST_RELEASE)  # made by create_all before migrations
            command.upgrade(config, revision)
        # PostgreSQL's submit function, derived from the current code (not frozen in a
        # migration): replaced whenever it differs from this code's version.
        queue_sql.install_functions(conn)
