"""The database schema's version: created, upgraded or checked with the Alembic migrations
shipped in annotate/store/migrations (no alembic.ini needed). Contract section 8.

Who may change the schema (`ensure_schema`'s `mode`):
- UPGRADE (`annotate migrate`, `annotate serve`, `annotate demo`): create it in an empty
  database, or upgrade an older one in place, in one transaction (completely or not at all).
- CURRENT (every other command and the app's own processes): create it in an empty database;
  an older database is refused with one sentence naming `annotate migrate`, never upgraded
  behind the operator's back (older app replicas would then refuse it).
- AS_IS (`annotate backup`): create it in an empty database; an older one is used as it is.

In every mode a database at a revision this code does not know was made by a newer release:
refused. A database whose tables were made before migrations existed (no `alembic_version`
table, but annotate's tables present) counts as revision 0001, the first release.
Several processes starting at once on a new database: one creates the schema while the others
wait for its lock (BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL), then find it done.

This module depends on the engine only through SQLAlchemy (annotate.store.db imports it, not the
other way round).
"""

from __future__ import annotations

import enum
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine

from annotate.errors import UserError
from annotate.queue import sql as queue_sql
from annotate.store import (
    models,  # noqa: F401  (models: the tables)
    sqlite_engine,
)

MIGRATIONS = Path(__file__).with_name("migrations")
FIRST_RELEASE = "0001"
_ADVISORY_LOCK = 0x616E6E6F7461  # any constant shared by every annotate process
_KNOWN_TABLES = {"study", "pair", "annotator", "annotation", "assignment"}


class Mode(enum.Enum):
    UPGRADE = "upgrade"
    CURRENT = "current"
    AS_IS = "as_is"


class OlderSchema(UserError):
    """The database was made by an older release and this command does not upgrade it."""


def alembic_config(connection: Connection | None = None, script_location: Path | None = None):
    config = Config()
    config.set_main_option("script_location", str(script_location or MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _script(script_location: Path | None) -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(script_location=script_location))


def current_revisions(connection: Connection) -> tuple[str, ...]:
    return tuple(MigrationContext.configure(connection).get_current_heads())


def recorded_revisions(url: str) -> str | None:
    """The revision(s) recorded in the database at `url`, comma-separated ('' when none; None
    when it cannot be read), without creating or changing anything."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            current, exists = _state(conn)
            if exists and not current:
                return f"{FIRST_RELEASE} (made before migrations)"
            return ", ".join(current)
    except DBAPIError:
        return None  # get_engine says why, in one sentence
    finally:
        engine.dispose()


def _shown(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


def _check_known(current: tuple[str, ...], script: ScriptDirectory, engine: Engine) -> None:
    heads = script.get_heads()
    for revision in current:
        try:
            known = script.get_revision(revision)
        except CommandError:
            known = None
        if known is None:
            raise UserError(
                f"this database ({_shown(engine)}) was created by a newer version of annotate "
                f"(schema revision {revision!r}; this version knows up to {', '.join(heads)}); "
                "upgrade the tool"
            )


def _state(conn: Connection) -> tuple[tuple[str, ...], bool]:
    """(recorded revisions, whether annotate's tables exist)."""
    current = current_revisions(conn)
    return current, bool(current) or set(inspect(conn).get_table_names()) >= _KNOWN_TABLES


def _older(engine: Engine, current: tuple[str, ...], target: set[str]) -> OlderSchema:
    found = ", ".join(current) or f"{FIRST_RELEASE}, made before migrations"
    return OlderSchema(
        f"this database ({_shown(engine)}) has an older schema (revision {found}; this "
        f"version uses {', '.join(sorted(target))}): upgrade it first with `annotate migrate` "
        "(after `annotate backup`), then run this command again"
    )


def _reader(engine: Engine) -> Engine:
    return sqlite_engine.read_only(engine) if engine.dialect.name == "sqlite" else engine


def ensure_schema(
    engine: Engine,
    *,
    mode: Mode = Mode.CURRENT,
    script_location: Path | None = None,
    revision: str = "head",
) -> bool:
    """Bring the database to `revision` (default: the newest this code knows) as `mode`
    allows. True when the schema is at `revision` afterwards, False when AS_IS left an older
    one alone."""
    script = _script(script_location)
    target = set(script.get_heads()) if revision == "head" else {revision}
    with _reader(engine).connect() as conn:  # fast path: nothing to do, no lock taken
        current, exists = _state(conn)
        functions_current = mode is not Mode.UPGRADE or queue_sql.functions_installed(conn)
        conn.rollback()
    _check_known(current, script, engine)
    if set(current) == target and functions_current:
        return True
    if exists and mode is Mode.AS_IS:
        return False
    if exists and mode is Mode.CURRENT:
        raise _older(engine, current, target)
    with engine.connect() as conn, conn.begin():
        if engine.dialect.name != "sqlite":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})")
        # else: BEGIN IMMEDIATE already holds SQLite's write lock
        current, exists = _state(conn)  # again, under the lock: another process may have won
        _check_known(current, script, engine)
        if set(current) == target:
            if mode is Mode.UPGRADE:  # a release that changed only the generated functions
                queue_sql.install_functions(conn)
            return True
        if exists and mode is not Mode.UPGRADE:  # another process made it meanwhile, older
            if mode is Mode.AS_IS:
                return False
            raise _older(engine, current, target)
        _upgrade_under_lock(conn, script_location, revision=revision, stamp_first=exists)
    return True


def _upgrade_under_lock(
    conn: Connection, script_location: Path | None, *, revision: str, stamp_first: bool
) -> None:
    """Run the migrations on `conn`, whose transaction holds the schema lock. Objects that
    are replaced whole on every upgrade (not frozen in a migration) are installed here, after
    the migrations and under the same lock."""
    config = alembic_config(conn, script_location)
    if stamp_first and not current_revisions(conn):
        command.stamp(config, FIRST_RELEASE)  # made by create_all before migrations existed
    command.upgrade(config, revision)
    # PostgreSQL's submit function, generated by the current code (not frozen in a migration)
    queue_sql.install_functions(conn)
