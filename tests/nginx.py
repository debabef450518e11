"""Debian's nginx in front of `annotate serve` replicas, configured as docs/deployment.md says.

    from tests.nginx import Nginx, require_nginx

    require_nginx()
    with Nginx([one.port, two.port], tmp_path) as proxy:
        page.goto(proxy.url + "/?token=...")

- The configuration is the documented one, read from docs/deployment.md (its first ```nginx
  block: the upstream with `ip_hash`, the websocket `map`, the `location /`). Only what a test
  machine needs is changed: the replicas' addresses become the test's ports, `listen 443 ssl`
  becomes a free port on 127.0.0.1 without TLS. So a wrong line in the docs fails a test.
- nginx runs as the test's own user, in the foreground (`daemon off`), with its own prefix,
  pid file, logs and temporary folders under a temporary directory: no system service, no
  root, nothing outside the test's folder.
- `require_nginx()` skips, saying why, when /usr/sbin/nginx is missing;
  ANNOTATE_TEST_NGINX=require (CI, .ci/run) makes that a failure, =off skips the tests.
  ANNOTATE_TEST_NGINX_BINARY points at another nginx.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from tests.browser import free_port
from tests.components import require_component

NGINX_MODE = os.environ.get("ANNOTATE_TEST_NGINX", "auto").lower()  # auto | require | off
NGINX = os.environ.get("ANNOTATE_TEST_NGINX_BINARY", "/usr/sbin/nginx")
DEPLOYMENT_DOC = Path(__file__).resolve().parents[1] / "docs" / "deployment.md"
START_SECONDS = 30.0


def nginx_path() -> str | None:
    path = Path(NGINX)
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    return shutil.which(NGINX)


@functools.cache
def nginx_unavailable_reason() -> str | None:
    """None when nginx can run, else why not (one sentence)."""
    if NGINX_MODE == "off":
        return "nginx tests are turned off (ANNOTATE_TEST_NGINX=off)"
    if nginx_path() is None:
        return (
            f"nginx is not installed at {NGINX} (apt-get install nginx-light or nginx, or set "
            "ANNOTATE_TEST_NGINX_BINARY)"
        )
    return None


def require_nginx() -> None:
    """Skip (or fail, with ANNOTATE_TEST_NGINX=require) when nginx is missing."""
    reason = nginx_unavailable_reason()
    require_component(reason, switch="ANNOTATE_TEST_NGINX", mode=NGINX_MODE)


def documented_config() -> str:
    """The first ```nginx block of docs/deployment.md, as written there."""
    text = DEPLOYMENT_DOC.read_text(encoding="utf-8")
    found = re.search(r"```nginx\n(.*?)```", text, re.S)
    assert found, f"{DEPLOYMENT_DOC} has no ```nginx block"
    return found.group(1)


def nginx_conf(*, ports: Sequence[int], listen_port: int, prefix: Path) -> str:
    """The documented configuration with the test's replicas and port, in a whole nginx.conf
    whose every file lives under `prefix`."""
    block = documented_config()
    servers = re.findall(r"^\s*server \d+\.\d+\.\d+\.\d+:\d+[^;]*;\n", block, re.M)
    assert len(servers) >= 2, "the documented upstream should name the replicas"
    options = servers[0].split(";")[0].split(None, 2)[2:]  # what follows the address
    replicas = "".join(
        f"    server 127.0.0.1:{port} {' '.join(options)};\n".replace(" ;", ";") for port in ports
    )
    start = block.index(servers[0])
    end = block.index(servers[-1]) + len(servers[-1])
    block = block[:start] + replicas + block[end:]
    block, listens = re.subn(r"^\s*listen [^;]*;", f"    listen 127.0.0.1:{listen_port};", block,
                             flags=re.M)  # fmt: skip
    assert listens == 1, "the documented server block should listen once"
    block = re.sub(r"^\s*#\s*ssl_certificate.*\n", "", block, flags=re.M)
    temp = "\n".join(
        f"    {name}_temp_path {prefix / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"pid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'} info;\n"
        "worker_processes 1;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        f"    access_log {prefix / 'access.log'};\n"
        f"{temp}\n"
        f"{block}"
        "}\n"
    )


class Nginx:
    """nginx in front of the replicas on `ports`, for the duration of a `with` block."""

    def __init__(self, ports: Sequence[int], workdir: Path):
        require_nginx()
        self.prefix = Path(workdir) / "nginx"
        self.prefix.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.conf = self.prefix / "nginx.conf"
        self.conf.write_text(nginx_conf(ports=ports, listen_port=self.port, prefix=self.prefix))
        self._process: subprocess.Popen | None = None

    def logs(self) -> str:
        path = self.prefix / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _command(self, *extra: str) -> list[str]:
        return [str(nginx_path()), "-p", str(self.prefix), "-c", str(self.conf), *extra]

    def start(self) -> Nginx:
        checked = subprocess.run(self._command("-t"), capture_output=True, text=True)
        assert checked.returncode == 0, f"nginx -t refused the configuration:\n{checked.stderr}"
        self._process = subprocess.Popen(
            self._command("-g", "daemon off;"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"nginx exited with {self._process.returncode}:\n{self.logs()}")
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=5) as response,
            ):
                if response.status == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nginx did not answer within {START_SECONDS:.0f} s")
            time.sleep(0.2)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            # nginx's fast stop: its graceful one (SIGQUIT) waits for the pages' websockets
            # to close, which they do not while the test's browser is open (15 s, then KILL)
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
