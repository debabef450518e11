"""Schema upgrades: a first-release database keeps every annotation; a newer one is refused."""

from __future__ import annotations

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

from annotate.db import dispose_engines, get_engine
from annotate.errors import UserError
from annotate.schema import MIGRATIONS, current_revisions, ensure_schema

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
    ensure_schema(engine, revision="0001")
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
    engine = get_engine(url)  # what every command and the app do first
    with engine.connect() as conn:
        assert set(current_revisions(conn)) == set(_heads())
    assert _rows(url) == before


def test_upgrade_through_a_later_revision_keeps_every_annotation(db_backend, make_db_url, tmp_path):
    url = _first_release_db(db_backend, make_db_url, tmp_path)
    before = _rows(url)
    location = _extra_revision(tmp_path)
    engine = create_engine(url)
    ensure_schema(engine, script_location=location)
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


def test_many_processes_opening_a_new_database_at_once(db_url):
    code = textwrap.dedent(
        f"""
        from annotate.db import get_engine
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
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    for rc, out, err in results:
        assert rc == 0, err
        assert out.strip() == "ok"
    engine = get_engine(db_url)
    with engine.connect() as conn:
        assert set(current_revisions(conn)) == set(_heads())


def _heads() -> tuple[str, ...]:
    from annotate.schema import _script

    return tuple(_script(None).get_heads())
