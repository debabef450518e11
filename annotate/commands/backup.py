"""annotate backup --out FILE [--force]

A consistent copy of the database, taken while the app keeps running.

- SQLite: `VACUUM INTO` a temporary file next to FILE, then an atomic rename. It reads one WAL
  snapshot, so answers committed during the copy are simply not in it (they are in the next
  backup); writers are never blocked. The copy is checked with `PRAGMA integrity_check`.
- PostgreSQL: runs `pg_dump` (it must be installed, of the server's major version or newer),
  which also works from one snapshot without blocking the app. FILE ending in `.sql` gets a
  plain SQL script (restore with `psql -d URL -f FILE`); any other name gets pg_dump's custom
  format (restore with `pg_restore -d URL FILE`). Without pg_dump the command says how to run
  it by hand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from annotate.commands._common import output_file
from annotate.errors import UserError

NAME = "backup"
ORDER = 70
HELP = "Write a consistent copy of the database to a file while the app keeps running."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="FILE", help="where to write the copy")
    parser.add_argument("--force", action="store_true", help="replace FILE if it exists")


def _annotation_count(url: str) -> int:
    # AS_IS: an older database is copied as it is (a newer release's backup must not migrate
    # production first); a newer one is refused, an empty one gets the schema.
    from sqlalchemy import text

    from annotate.engine import get_engine
    from annotate.store.db import read
    from annotate.store.schema import Mode

    engine = get_engine(url, schema=Mode.AS_IS)
    return int(
        read(engine, lambda s: s.execute(text("SELECT count(*) FROM annotation")).scalar_one())
    )


def backup_sqlite(url: str, out: Path) -> None:
    from sqlalchemy.engine import make_url

    source = make_url(url).database
    if not source or source == ":memory:":
        raise UserError("an in-memory SQLite database cannot be backed up")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    tmp.unlink(missing_ok=True)
    try:
        con = sqlite3.connect(source, timeout=30)
        try:
            con.execute("PRAGMA busy_timeout=30000")
            con.execute("VACUUM INTO ?", (str(tmp),))
        finally:
            con.close()
        check = sqlite3.connect(tmp)
        try:
            result = check.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            check.close()
        if result != "ok":
            raise UserError(f"the copy failed its integrity check ({result}); nothing was written")
        os.replace(tmp, out)
    except sqlite3.Error as exc:
        raise UserError(f"could not copy {source}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _pg_dump_command(url: str, out: Path, *, named: Path) -> tuple[list[str], dict[str, str]]:
    """pg_dump writing to `out`, in the format that the final file name `named` asks for."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    env = dict(os.environ)
    if parsed.password:
        env["PGPASSWORD"] = str(parsed.password)  # not on the command line, where ps shows it
    libpq = parsed.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    fmt = "plain" if named.suffix.lower() == ".sql" else "custom"
    return ["pg_dump", f"--format={fmt}", "--no-owner", f"--file={out}", libpq], env


def backup_postgresql(url: str, out: Path) -> None:
    from sqlalchemy.engine import make_url

    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    command, env = _pg_dump_command(url, partial, named=out)
    if shutil.which("pg_dump") is None:
        hint, _ = _pg_dump_command(url, out, named=out)
        shown = make_url(url).set(drivername="postgresql").render_as_string()  # password hidden
        raise UserError(
            "pg_dump was not found; install the PostgreSQL client tools (the server's major "
            f"version or newer), or run it where they are: {' '.join([*hint[:-1], shown])}"
        )
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise UserError(f"pg_dump failed: {last}")
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def run(args: argparse.Namespace) -> int:
    from annotate.store.db import is_sqlite, resolve_url

    url = resolve_url(args.db)
    out = output_file(args.out, option="--out")
    if out.exists() and not args.force:
        raise UserError(f"{out} already exists (use --force to replace it)")
    count = _annotation_count(url)  # also creates an empty database's schema, refuses newer ones
    if is_sqlite(url):
        backup_sqlite(url, out)
        restore = f"copy it back in place of the database file (with the app stopped): {out}"
    else:
        backup_postgresql(url, out)
        restore = (
            f"psql -d URL -f {out}" if out.suffix.lower() == ".sql" else f"pg_restore -d URL {out}"
        )
    print(
        f"backup written to {out} ({out.stat().st_size:,} bytes; the database held {count:,} "
        f"annotations when it started); to restore: {restore}"
    )
    return 0
