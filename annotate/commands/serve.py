"""annotate serve [--port N] [--address HOST] [--base-url-path PATH]"""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from pathlib import Path
from typing import NoReturn

from annotate.errors import UserError
from annotate.web.paths import checked_base_url_path, configured_prefix, url_prefix

NAME = "serve"
ORDER = 30
HELP = "Run the web app (Streamlit) against the database."

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "web" / "server.py"
DEFAULT_ADDRESS = "localhost"
# Production-minded settings, passed as flags so they hold wherever the command is run from:
# the one place the app's Streamlit settings are written (no config.toml of the repository
# repeats them; a deployment's own config.toml or STREAMLIT_* variables set the rest, e.g.
# server.cookieSecret and server.baseUrlPath). server.maxUploadSize is the guard's limit,
# applied by annotate/web/server.py whatever the configuration says.
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
    # The largest message a client may send (MB, whole numbers only): the labelling form's
    # Submit is at most a few tens of KB (4,000-character comment, the ratings and aspect
    # scores; tests/test_socket_limits.py), so 1 MB is just above it. Streamlit's default of
    # 25 MB let every anonymous socket park that much in the server's memory.
    "server.maxWidgetStateSize": "1",
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
    from sqlalchemy.engine import make_url

    from annotate.store.db import is_sqlite

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
    from annotate.engine import get_engine
    from annotate.store.db import resolve_url
    from annotate.store.schema import Mode

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
    command = [sys.executable, "-m", "annotate.web.serve_process", "run", str(SERVER_SCRIPT)]
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


def run_server(url: str, args: argparse.Namespace) -> NoReturn:
    """Become the Streamlit server: this process is replaced by `streamlit run`
    (annotate/web/serve_process.py, by exec), so a
    replica is one process. A second Python process that only waited on Streamlit and passed
    its signals on held about 146 MB for nothing. SIGTERM and Ctrl+C now reach the server
    itself, which stops and frees the port (SIGHUP ends it too); the exit is the server's."""
    from annotate.store.db import ENV_VAR, dispose_engines

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    dispose_engines()  # the checks' connections end here, not in the server's process
    os.environ[ENV_VAR] = url
    # glibc gives each new thread (Streamlit starts one per page run) an arena of its own, up
    # to 8 per core, and keeps what is freed in them: a SQLite replica's RSS grew 14 % in ten
    # minutes of a crowd with malloc's live bytes flat; with two arenas it stayed flat and
    # used no more CPU (#22). Read by glibc as the new process starts; an operator's wins.
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    command = server_command(args)
    os.execv(command[0], command)


def serve(args: argparse.Namespace) -> int:
    from annotate.queue.rules import gone_hold

    gone_hold()  # a bad ANNOTATE_GONE_HOLD is named here, in one sentence, not on a page
    return run_server(prepare(args), args)


def run(args: argparse.Namespace) -> int:
    return serve(args)
