"""annotate serve [--port N] [--address HOST] [--base-url-path PATH]"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy.engine import make_url

from annotate.database import get_engine
from annotate.errors import UserError
from annotate.store.db import ENV_VAR, is_sqlite, resolve_url
from annotate.store.schema import Mode
from annotate.web.paths import checked_base_url_path, configured_prefix, url_prefix

NAME = "serve"
ORDER = 30
HELP = "Run the web app (Streamlit) against the database."

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "web" / "server.py"
DEFAULT_ADDRESS = "localhost"
# How long the server has to stop after the signal we passed on, before it is killed.
STOP_SECONDS = 3.0
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
        "--address",
        default=DEFAULT_ADDRESS,
        metavar="HOST",
        help=(
            "address to listen on (default: localhost, this machine only; 0.0.0.0 for every "
            "interface, normally behind a reverse proxy: see docs/deployment.md)"
        ),
    )
    parser.add_argument(
        "--base-url-path",
        metavar="PATH",
        help=(
            "serve the app under this path, e.g. annotate for http://HOST:PORT/annotate/ "
            "(Streamlit's server.baseUrlPath; default: what .streamlit/config.toml or "
            "STREAMLIT_SERVER_BASE_URL_PATH says, else the root; see docs/deployment.md)"
        ),
    )


def absolute_url(url: str) -> str:
    """Pin a relative SQLite path to the working directory before the server starts."""
    parsed = make_url(url)
    if is_sqlite(url) and parsed.database and parsed.database != ":memory:":
        return parsed.set(database=str(Path(parsed.database).resolve())).render_as_string(
            hide_password=False
        )
    return url


def check_port_free(address: str, port: int) -> None:
    """Refuse a port something already listens on, before anything is printed or started."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(
            f"--address {address!r} is not an address of this machine ({exc})"
        ) from None
    for family, kind, proto, _, where in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            try:
                probe.bind(where)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise UserError(
                        f"port {port} on {address} is already in use (another server, or an "
                        f"earlier annotate still running); choose another with --port, e.g. "
                        f"--port {port + 1}"
                    ) from None
                if exc.errno == errno.EADDRNOTAVAIL:
                    continue  # e.g. ::1 on a machine without IPv6: the server skips it too
                raise UserError(f"cannot listen on {address}:{port}: {exc.strerror}") from None


def prepare(args: argparse.Namespace, *, serving: bool = True) -> str:
    """Check the address and port (when it will serve), create or upgrade the schema; the
    database URL to serve."""
    if args.base_url_path is not None:
        args.base_url_path = checked_base_url_path(args.base_url_path)
    if serving:
        check_port_free(args.address, args.port)
    url = absolute_url(resolve_url(args.db))
    get_engine(url, schema=Mode.UPGRADE)  # and fail early with a clear message
    return url


def server_command(args: argparse.Namespace) -> list[str]:
    """`streamlit run` of the server with our flags. A base path is passed only when given:
    otherwise Streamlit's own configuration (config.toml, environment) decides, as it always
    did."""
    command = [sys.executable, "-m", "streamlit", "run", str(SERVER_SCRIPT)]
    command += ["--server.port", str(args.port), "--server.address", args.address]
    for key, value in STREAMLIT_FLAGS.items():
        command += [f"--{key}", value]
    if args.base_url_path is not None:
        command += ["--server.baseUrlPath", checked_base_url_path(args.base_url_path)]
    return command


def app_prefix(args: argparse.Namespace) -> str:
    """The path prefix the server will use: the option's, else Streamlit's configuration's."""
    if args.base_url_path is not None:
        return url_prefix(args.base_url_path)
    return configured_prefix()


def run_server(url: str, args: argparse.Namespace) -> int:
    """Run Streamlit until it stops. SIGTERM, SIGHUP and Ctrl+C reach the server and this
    command waits for it, so the port is free when the command has ended."""
    server = subprocess.Popen(server_command(args), env={**os.environ, ENV_VAR: url})
    stop_by: list[float] = []  # when the server must be gone, once a stop was asked for

    def pass_on(signum, _frame):
        if server.poll() is None:
            server.send_signal(signal.SIGTERM if signum == signal.SIGHUP else signum)
        if not stop_by:
            stop_by.append(time.monotonic() + STOP_SECONDS)

    previous = {
        signum: signal.signal(signum, pass_on)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    }
    try:
        while True:
            try:
                code = server.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if stop_by and time.monotonic() > stop_by[0]:
                    server.kill()  # it did not stop in time: free the port anyway
            except KeyboardInterrupt:  # a Ctrl+C that arrived before the handler was set
                pass_on(signal.SIGINT, None)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if server.poll() is None:
            server.kill()
            server.wait()
    # Stopped by a signal we passed on: a normal end of the command.
    return 0 if stop_by or code == 0 else code


def serve(args: argparse.Namespace) -> int:
    return run_server(prepare(args), args)


def run(args: argparse.Namespace) -> int:
    return serve(args)
