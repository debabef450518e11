"""Schema upgrades: a first-release database keeps every annotation; a newer one is refused."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, create_engine, insert, select, text
from sqlmodel import SQLModel

from annotate.engine import GENERATED, get_engine
from annotate.errors import UserError
from annotate.store import schema
from annotate.store.db import dispose_engines
from annotate.store.schema import FIRST_RELEASE, MIGRATIONS, Mode, current_revisions, ensure_schema
from tests.processes import run_annotate

FIXTURE = Path(__file__).parent / "fixtures" / "first_release.sqlite.sql"
TABLES = ["study", "annotator", "pair", "assignment", "annotation"]  # foreign keys first


def _load_first_release_sqlite(path: Path, *, with_version_table: bool = True) -> None:
    script = FIXTURE.read_text(encoding="utf-8")
    con = sqlite3.connect(path)
    con.executescript(script)
    if not with_version_table:
        con.execute("DROP TABLE alembic_version")
    con.commit()
    con.close()


def _first_release_columns() -> dict[str, list[str]]:
    con = sqlite3.connect(":memory:")
    con.executescript(FIXTURE.read_text(encoding="utf-8"))
    columns = {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    con.close()
    return columns


def _rows(url: str) -> dict[str, list[tuple]]:
    """Every row of every first-release table, first-release columns only (later revisions
    add columns), in a comparable form."""
    first = _first_release_columns()
    engine = create_engine(url)
    meta = MetaData()
    meta.reflect(engine, only=TABLES)
    out = {}
    with engine.connect() as conn:
        for name in TABLES:
            table = meta.tables[name]
            columns = [table.c[c] for c in first[name]]
            rows = conn.execute(select(*columns).order_by(table.c.id)).all()
            out[name] = [tuple(_plain(v) for v in row) for row in rows]
    engine.dispose()
    return out


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.replace(tzinfo=None).isoformat(sep=" ") if value.tzinfo else str(value)
    if isinstance(value, bool):
        return int(value)
    return value


def _first_release_db(backend: str, make_db_url, tmp_path: Path) -> str:
    """A database at revision 0001 holding the fixture's data, on the given backend."""
    source = tmp_path / "first_release.db"
    _load_first_release_sqlite(source)
    if backend == "sqlite":
        return f"sqlite:///{source}"
    url = make_db_url("postgresql")
    engine = create_engine(url)
    ensure_schema(engine, generated=GENERATED, mode=Mode.UPGRADE, revision="0001")
    src_engine = create_engine(f"sqlite:///{source}")
    meta = MetaData()
    meta.reflect(engine, only=TABLES)
    src_meta = MetaData()
    src_meta.reflect(src_engine, only=TABLES)
    with src_engine.connect() as src, engine.begin() as dst:
        for name in TABLES:
            rows = [dict(r._mapping) for r in src.execute(select(src_meta.tables[name]))]
            if rows:
                dst.execute(insert(meta.tables[name]), rows)
            dst.execute(text(f"SELECT setval('{name}_id_seq', (SELECT max(id) FROM {name}))"))
    src_engine.dispose()
    engine.dispose()
    return url


def _extra_revision(tmp_path: Path) -> Path:
    """A copy of the shipped migrations plus a later revision (after the current head) that
    changes annotated tables."""
    location = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, location, ignore=shutil.ignore_patterns("__pycache__"))
    (head,) = _heads()
    (location / "versions" / "9001_later_release.py").write_text(
        textwrap.dedent(
            f'''
            """A later release: a flag on annotations and a new index on assignments."""
            import sqlalchemy as sa
            from alembic import op

            revision = "9001"
            down_revision = "{head}"
            branch_labels = None
            depends_on = None


            def upgrade():
                with op.batch_alter_table("annotation") as batch:
                    batch.add_column(
                        sa.Column("flagged", sa.Boolean(), nullable=False, server_default=sa.false())
                    )
                op.create_index("ix_assignment_pair_later", "assignment", ["pair_id"])


            def downgrade():
                op.drop_index("ix_assignment_pair_later", "assignment")
                with op.batch_alter_table("annotation") as batch:
                    batch.drop_column("flagged")
            '''
        )
    )
    return location


def test_first_release_fixture_upgrades_to_head_keeping_everything(
    db_backend, make_db_url, tmp_path
):
    url = _first_release_db(db_backend, make_db_url, tmp_path)
    before = _rows(url)
    assert len(before["annotation"]) == 11
    engine = get_engine(url, schema=Mode.UPGRADE)  # what migrate, serve and demo do first
    with engine.connect() as conn:
        assert set(current_revisions(conn)) == set(_heads())
    assert _rows(url) == before


def test_upgrade_through_a_later_revision_keeps_every_annotation(db_backend, make_db_url, tmp_path):
    url = _first_release_db(db_backend, make_db_url, tmp_path)
    before = _rows(url)
    location = _extra_revision(tmp_path)
    engine = create_engine(url)
    ensure_schema(engine, generated=GENERATED, mode=Mode.UPGRADE, script_location=location)
    with engine.connect() as conn:
        assert current_revisions(conn) == ("9001",)
        flagged = conn.execute(text("SELECT count(*) FROM annotation WHERE flagged")).scalar()
        assert flagged == 0
    engine.dispose()
    after = _rows(url)
    assert after["annotation"] == before["annotation"]
    assert after == before
    # ... and this release, which stops at an older revision, now refuses that database.
    with pytest.raises(UserError, match=r"newer version of annotate.*upgrade the tool"):
        get_engine(url)


def test_database_made_before_migrations_is_recognised_as_first_release(tmp_path):
    path = tmp_path / "pre_alembic.db"
    _load_first_release_sqlite(path, with_version_table=False)
    url = f"sqlite:///{path}"
    before = _rows(url)
    done = run_annotate("export", "--study", "first", "--out", "a.csv", "--db", url, cwd=tmp_path)
    assert "older schema (revision 0001, made before migrations" in done.stderr
    done = run_annotate("migrate", "--db", url, cwd=tmp_path)
    assert "upgraded from revision 0001 (made before migrations) to" in done.stdout
    engine = get_engine(url)
    with engine.connect() as conn:
        assert set(current_revisions(conn)) == set(_heads())
    assert _rows(url) == before


def test_newer_database_is_refused_with_a_clear_message(db_url, tmp_path):
    engine = get_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00dcafe'"))
    dispose_engines()
    with pytest.raises(UserError) as caught:
        get_engine(db_url)
    message = str(caught.value)
    assert "created by a newer version of annotate" in message
    assert "'f00dcafe'" in message and "upgrade the tool" in message
    # the command line says it in one sentence, without a traceback
    pairs = tmp_path / "p.jsonl"
    pairs.write_text('{"id": "1", "question": "q", "chosen": "a", "rejected": "b"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "import-pairs", str(pairs), "--db", db_url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "newer version of annotate" in done.stderr
    assert "Traceback" not in done.stderr


def test_head_schema_matches_the_models_exactly(db_url):
    """A model change without a migration fails here: add a revision (see migrations/env.py)."""
    engine = get_engine(db_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []


@contextlib.contextmanager
def _raw_engine(url: str):
    """An engine of its own (not get_engine's cached one, which checks the schema itself)."""
    engine = create_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def test_a_schema_committed_between_the_checks_reads_as_new_not_older(db_url, monkeypatch):
    # CI caught it once (6 processes opening a new PostgreSQL database): the fast path read
    # the revision (none yet), another process then committed the whole schema, and the table
    # lookup that followed saw annotate's tables: "made before migrations", refused as older.
    # Here the other process commits at exactly that moment.
    read_revisions = schema.current_revisions
    done = []

    def then_another_process_creates_it(conn):
        revisions = read_revisions(conn)
        if not done:
            done.append(True)
            with _raw_engine(db_url) as other:
                assert ensure_schema(other, generated=GENERATED, mode=Mode.UPGRADE)
        return revisions

    monkeypatch.setattr(schema, "current_revisions", then_another_process_creates_it)
    with _raw_engine(db_url) as engine:
        assert ensure_schema(engine, generated=GENERATED, mode=Mode.CURRENT)
    assert done


def test_many_processes_opening_a_new_database_at_once(db_url):
    code = textwrap.dedent(
        f"""
        from annotate.engine import get_engine
        engine = get_engine({db_url!r})
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT count(*) FROM annotation").scalar()
        print("ok")
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]  # bounds a hang only
    for rc, out, err in results:
        assert rc == 0, err
        assert out.strip() == "ok"
    engine = get_engine(db_url)
    with engine.connect() as conn:
        assert set(current_revisions(conn)) == set(_heads())


def _heads() -> tuple[str, ...]:
    from annotate.store.schema import _script

    return tuple(_script(None).get_heads())


# --- who may change the schema (docs/reference/command-line.md, the schema) ------------------------------------------


def _revision(url: str) -> tuple[str, ...]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = current_revisions(conn)
    engine.dispose()
    return found


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--out", "report"],
        ["export", "--out", "a.csv"],
        ["import-pairs", "p.jsonl"],
        ["configure-study", "default", "--overlap", "2"],
    ],
    ids=lambda c: c[0],
)
def test_commands_refuse_an_older_database_naming_migrate_and_leave_it_alone(
    command, db_backend, make_db_url, tmp_path
):
    url = _first_release_db(db_backend, make_db_url, tmp_path)
    (tmp_path / "p.jsonl").write_text(
        '{"id": "n1", "question": "q", "chosen": "a", "rejected": "b"}\n'
    )
    before = _rows(url)
    done = run_annotate(*command, "--db", url, cwd=tmp_path)
    assert done.returncode != 0
    assert "older schema" in done.stderr and "annotate migrate" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert _revision(url) == (FIRST_RELEASE,)
    assert _rows(url) == before
    assert not (tmp_path / "report").exists() and not (tmp_path / "a.csv").exists()


def test_backup_copies_an_older_database_as_it_is(tmp_path):
    url = _first_release_db("sqlite", None, tmp_path)
    before = _rows(url)
    out = tmp_path / "copy.db"
    done = run_annotate("backup", "--out", str(out), "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "11 annotations" in done.stdout
    assert _revision(url) == (FIRST_RELEASE,)  # the source was not upgraded
    assert _revision(f"sqlite:///{out}") == (FIRST_RELEASE,)  # nor the copy
    assert _rows(f"sqlite:///{out}") == before == _rows(url)


@pytest.mark.skipif(shutil.which("pg_dump") is None, reason="pg_dump is not installed")
def test_backup_copies_an_older_postgresql_database_as_it_is(make_db_url, tmp_path):
    url = _first_release_db("postgresql", make_db_url, tmp_path)
    done = run_annotate("backup", "--out", str(tmp_path / "copy.sql"), "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _revision(url) == (FIRST_RELEASE,)
    # a plain SQL script (the .sql suffix), holding the old revision
    script = (tmp_path / "copy.sql").read_text(encoding="utf-8")
    assert "CREATE TABLE public.alembic_version" in script and "0001" in script


def test_migrate_upgrades_an_older_database_then_commands_run(db_backend, make_db_url, tmp_path):
    url = _first_release_db(db_backend, make_db_url, tmp_path)
    before = _rows(url)
    done = run_annotate("migrate", "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"upgraded from revision {FIRST_RELEASE} to {', '.join(_heads())}" in done.stdout
    assert set(_revision(url)) == set(_heads())
    assert _rows(url) == before
    done = run_annotate("migrate", "--db", url, cwd=tmp_path)
    assert done.returncode == 0 and "up to date" in done.stdout
    done = run_annotate("export", "--study", "first", "--out", "a.csv", "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "11 annotations" in done.stdout


def test_commands_create_the_schema_in_an_empty_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    done = run_annotate("export", "--out", "a.csv", "--db", url, cwd=tmp_path)
    assert "no study named 'default'" in done.stderr  # the schema exists, the study does not
    assert set(_revision(url)) == set(_heads())
    done = run_annotate("migrate", "--db", f"sqlite:///{tmp_path / 'other.db'}", cwd=tmp_path)
    assert done.returncode == 0 and "was created" in done.stdout


def test_the_app_process_refuses_an_older_database_and_serve_upgrades_it(tmp_path):
    url = _first_release_db("sqlite", None, tmp_path)
    with pytest.raises(UserError, match="annotate migrate"):
        get_engine(url)  # what the app's pages do: `annotate serve` upgraded before them
    assert _revision(url) == (FIRST_RELEASE,)
    get_engine(url, schema=Mode.UPGRADE)
    assert set(_revision(url)) == set(_heads())
    assert get_engine(url) is not None
