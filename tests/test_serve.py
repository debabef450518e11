"""`annotate serve` and `annotate demo` as processes: signals reach the Streamlit server, a
busy port is refused before any link is printed, the server listens on this machine only
unless told otherwise, and a second demo says that the first one's links stopped working."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from annotate.engine import get_engine
from annotate.people.auth import annotator_for_token
from annotate.store.db import read_session
from tests.browser import annotate_command, free_port

START_SECONDS = 90


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net shows them) with a socket listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.append(address)
    return found


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*annotate_command(), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,  # so that a failing test can clean the whole group up
        text=True,
    )


def _wait_healthy(process: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"no answer on port {port} within {START_SECONDS} s")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _cleanup(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    else:  # the command ended; end anything it left behind in its group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_sigterm_stops_the_server_and_frees_the_port_within_5_seconds(command, tmp_path):
    port = free_port()
    process = _start(
        [command, "--db", f"sqlite:///{tmp_path / 'a.db'}", "--port", str(port)], tmp_path
    )
    try:
        _wait_healthy(process, port)
        # the server listens on this machine only (localhost), not on every interface
        addresses = _listening(port)
        assert addresses and all(
            a in ("0100007F", "00000000000000000000000001000000") for a in addresses
        ), addresses
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)  # to the command only, as a service manager does
        while not _port_free(port) and time.monotonic() - started < 10:
            time.sleep(0.05)
        freed_after = time.monotonic() - started
        assert freed_after < 5, f"port still held {freed_after:.1f} s after SIGTERM"
        assert process.wait(timeout=5) == 0
        # nothing of the server is left running in the command's process group
        time.sleep(0.2)
        with pytest.raises(ProcessLookupError):
            os.killpg(process.pid, 0)
    finally:
        _cleanup(process)


def test_demo_on_a_busy_port_fails_before_printing_links(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        done = subprocess.run(
            [
                *annotate_command(),
                "demo",
                "--db",
                f"sqlite:///{tmp_path / 'a.db'}",
                "--port",
                str(port),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.close()
    assert done.returncode != 0
    assert "token=" not in done.stdout and done.stdout == ""
    assert f"port {port} on localhost is already in use" in done.stderr
    assert "--port" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "a.db").exists()  # nothing built either


def test_a_second_demo_says_the_first_ones_links_stopped_working(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    port = str(free_port())

    def demo() -> str:
        done = subprocess.run(
            [*annotate_command(), "demo", "--no-serve", "--db", url, "--port", port],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = demo()
    assert "no longer work" not in first
    first_token = first.split("token=")[1].split()[0]
    second = demo()
    assert "the demo links printed by an earlier `annotate demo`" in second
    assert "no longer work" in second
    second_token = second.split("token=")[1].split()[0]
    with read_session(get_engine(url)) as s:
        assert annotator_for_token(s, first_token) is None
        assert annotator_for_token(s, second_token) is not None


def test_serve_listens_where_address_says(tmp_path):
    from annotate.cli import build_parser

    args = build_parser(["serve"]).parse_args(["serve"])
    assert args.address == "localhost"
    args = build_parser(["demo"]).parse_args(["demo", "--address", "0.0.0.0"])
    assert args.address == "0.0.0.0"  # where it listens by default: checked in test_sigterm_...


def test_demo_without_serving_needs_no_free_port(tmp_path):
    """`demo --no-serve` only builds the demo and prints links: a server already on the port (the
    user's own demo, say) is no reason to refuse."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        done = subprocess.run(
            [*annotate_command(), "demo", "--no-serve", "--db", f"sqlite:///{tmp_path / 'a.db'}",
             "--port", str(port)],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        holder.close()
    assert done.returncode == 0, done.stderr
    assert "token=" in done.stdout and f":{port}/?token=" in done.stdout


@pytest.mark.parametrize("operator", [None, "4"])
def test_the_server_process_keeps_two_malloc_arenas_unless_told_otherwise(
    tmp_path, monkeypatch, operator
):
    # glibc gives each new thread an arena of its own (up to 8 per core) and keeps what is
    # freed in them: a SQLite replica's RSS grew 14 % in a 10-minute crowd run with malloc's
    # live bytes flat, and stayed flat with two arenas (#22, benchmarks/bench_crowd.py).
    import argparse

    from annotate.commands import serve

    if operator is None:
        monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    else:
        monkeypatch.setenv("MALLOC_ARENA_MAX", operator)
    seen = {}

    def execv(path, argv):
        seen["arenas"] = os.environ.get("MALLOC_ARENA_MAX")
        raise SystemExit(0)

    monkeypatch.setattr(serve.os, "execv", execv)
    monkeypatch.setattr(serve, "server_command", lambda args: ["python"])
    with pytest.raises(SystemExit):
        serve.run_server(f"sqlite:///{tmp_path}/x.db", argparse.Namespace())
    assert seen["arenas"] == (operator or "2")
