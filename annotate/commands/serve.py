"""annotate serve [--port N] [--address HOST]"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import make_url

from annotate.db import ENV_VAR, get_engine, is_sqlite, resolve_url

NAME = "serve"
ORDER = 30
HELP = "Run the web app (Streamlit) against the database."

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "server.py"
# Production-minded settings, passed as flags so they hold wherever the command is run from.
STREAMLIT_FLAGS = {
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "viewer",
    "client.showErrorDetails": "none",
    "client.showSidebarNavigation": "false",
    "server.fileWatcherType": "none",
    "server.runOnSave": "false",
    "server.headless": "true",
    # Streamlit's full gc.collect(2) after every script run held the GIL for about 0.3 s with
    # the console's libraries loaded, delaying the "run finished" message: every Submit waited
    # for it (benchmarks/bench_label_browser.py). Python's own generational GC still runs.
    "runner.postScriptGC": "false",
    "theme.base": "light",
    # blue, not the default red: a selected answer must not look like an error
    "theme.primaryColor": "#2563eb",
}


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)


def add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8501, help="port to listen on (default 8501)")
    parser.add_argument(
        "--address", default=None, help="address to listen on (default: all interfaces)"
    )


def absolute_url(url: str) -> str:
    """Pin a relative SQLite path to the working directory before the server starts."""
    parsed = make_url(url)
    if is_sqlite(url) and parsed.database and parsed.database != ":memory:":
        return parsed.set(database=str(Path(parsed.database).resolve())).render_as_string(
            hide_password=False
        )
    return url


def serve(args: argparse.Namespace) -> int:
    url = absolute_url(resolve_url(args.db))
    get_engine(url)  # create or upgrade the schema, and fail early with a clear message
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(SERVER_SCRIPT),
        "--server.port",
        str(args.port),
    ]
    if args.address:
        command += ["--server.address", args.address]
    for key, value in STREAMLIT_FLAGS.items():
        command += [f"--{key}", value]
    env = {**os.environ, ENV_VAR: url}
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0


def run(args: argparse.Namespace) -> int:
    return serve(args)
