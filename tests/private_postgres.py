"""A PostgreSQL cluster of our own (initdb and pg_ctl in a temporary folder, on a free port,
trust authentication on 127.0.0.1; as root, run as the postgres user), to stop and start at will: the machine's shared server is
never restarted by a test or a benchmark.

    with PrivatePostgres() as pg:
        url = pg.url("crowd")   # postgresql+psycopg://127.0.0.1:PORT/crowd (created)
        pg.restart(down_seconds=5)

`postgres_bin()` finds the server's programs (/usr/lib/postgresql/<newest>/bin, or
ANNOTATE_TEST_PG_BIN); None when they are missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_ROOT = Path("/usr/lib/postgresql")
RUN_AS = "postgres"  # the user the programs run as when we are root


def postgres_bin() -> Path | None:
    """The folder of initdb, pg_ctl and postgres, or None."""
    given = os.environ.get("ANNOTATE_TEST_PG_BIN")
    candidates = [Path(given)] if given else []
    if PG_ROOT.is_dir():
        versions = sorted(
            (p for p in PG_ROOT.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
        )
        candidates += [p / "bin" for p in reversed(versions)]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivatePostgres:
    """One private cluster; `with` starts it and removes it at the end."""

    def __init__(self) -> None:
        found = postgres_bin()
        if found is None:
            raise RuntimeError(f"PostgreSQL's server programs are not under {PG_ROOT}")
        self.bin = found
        self.folder = Path(tempfile.mkdtemp(prefix="private-pg-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.log = self.folder / "server.log"
        if os.geteuid() == 0:
            shutil.chown(self.folder, user=RUN_AS)

    def _run(self, *args: str) -> None:
        # initdb and postgres refuse to run as root: as root, run them as the postgres user
        prefix = ["runuser", "-u", RUN_AS, "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, capture_output=True, text=True)

    def start(self) -> PrivatePostgres:
        if not self.data.exists():
            self._run(
                str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                "--no-sync", "-E", "UTF8",
            )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off"
            " -c max_connections=300 -c shared_buffers=64MB"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, *, down_seconds: float = 0.0, mode: str = "fast") -> None:
        """Stop (every connection dropped), stay down `down_seconds`, start again."""
        self.stop(mode)
        time.sleep(down_seconds)
        self.start()

    def pid(self) -> int | None:
        """The postmaster's process id (None when stopped)."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def url(self, database: str) -> str:
        """A SQLAlchemy URL of `database` on this cluster, created if missing."""
        self._run(
            str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
            "-d", "postgres", "-c", f'CREATE DATABASE "{database}"',
        )  # fmt: skip
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def __enter__(self) -> PrivatePostgres:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)
