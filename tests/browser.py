"""Real-browser test helpers: Debian's Chromium driven by the `playwright` Python package.

Use it from a test module (not from a conftest): importing the fixture functions registers the
`browser` and `new_page` fixtures for that module.

    from tests.browser import AppServer, browser_fixture, goto, new_page_fixture, rerun  # noqa: F401
    from tests.browser import expect  # playwright's, or None without playwright (tests skip)

- `require_browser()` skips, saying why, when /usr/bin/chromium or the playwright package is
  missing; ANNOTATE_TEST_BROWSER=require (CI) makes that a failure, =off skips browser tests.
  ANNOTATE_TEST_CHROMIUM points at another Chromium binary.
- `AppServer(db_url)` runs `annotate serve` on a free port (another one if that was taken before
  the server listened), waits for /_stcore/health, keeps the server's output (`.logs()`) and
  stops the whole process group on exit. `base_url_path="x"` serves it under /x/
  (`--base-url-path`; `.app_url` and `.login_url()` follow), `serve_args` passes further options
  to `annotate serve`.
- `launch_browser(playwright)` starts Chromium headless with a fresh profile and no background
  traffic. Playwright's own browser downloads are never used (no `playwright install`).
- `goto(page, url)` opens (or reloads) a page and waits for its first script run to finish.
- `with rerun(page): <click or key press>` returns once the script run that the interaction
  started is over; `wait_idle(page)` only waits for "not running" (plus a short settle).
- `hold_timers(page)`: the page's timers fire only when the test says (`page.clock.run_for`,
  `page.clock.resume`), so that what a test counts (a draft every few seconds) does not depend
  on how fast a busy machine runs it. Call `page.clock.install()` before opening the page.
- `save_screenshot(page, name)`: into docs/screenshots/ with ANNOTATE_SCREENSHOTS=update (to
  refresh the committed pictures), else into a temporary folder (a test run leaves git clean).
- `RequestRecorder()`: a tiny local HTTP server recording every request (untrusted-text tests).
- Fixtures: `browser` (one Chromium per test module) and `new_page` (a factory of pages, each in
  its own context, so cookies never leak from one visitor to the next).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.components import require_component

if TYPE_CHECKING:  # the checks see playwright's types
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import expect
else:
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
        from playwright.sync_api import expect
    except ImportError:  # browser tests skip (or fail), saying why, without playwright
        PlaywrightError = PlaywrightTimeoutError = TimeoutError
        expect = None

BROWSER_MODE = os.environ.get("ANNOTATE_TEST_BROWSER", "auto").lower()  # auto | require | off
CHROMIUM = os.environ.get("ANNOTATE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
# Generous: the test machines are shared and have two cores.
SERVER_START_SECONDS = 90.0
IDLE_TIMEOUT_MS = 30_000
EXPECT_TIMEOUT_MS = 15_000  # for playwright's `expect(...)` (its default is 5 s)
# How often AppServer picks another free port when the one it picked was taken before the server
# could listen on it (see AppServer.start).
PORT_ATTEMPTS = 5
# What `annotate serve` (and Streamlit after it) print when the port is taken.
PORT_TAKEN = ("is already in use", "is not available")
IDLE_SELECTOR = '[data-testid="stApp"][data-test-script-state="notRunning"]'
RUNNING_SELECTOR = '[data-testid="stApp"][data-test-script-state="running"]'


def chromium_path() -> str | None:
    """The Chromium binary to drive, or None when it is not installed."""
    path = Path(CHROMIUM)
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    found = shutil.which(CHROMIUM)
    return found


@functools.cache
def browser_unavailable_reason() -> str | None:
    """None when a browser test can run, else why not (one sentence)."""
    if BROWSER_MODE == "off":
        return "browser tests are turned off (ANNOTATE_TEST_BROWSER=off)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"the playwright Python package is not installed ({exc}); pip install playwright"
    if chromium_path() is None:
        return (
            f"Chromium is not installed at {CHROMIUM} (apt-get install chromium, or set "
            "ANNOTATE_TEST_CHROMIUM); Playwright's own browser downloads are not used"
        )
    return None


def require_browser() -> None:
    """Skip (or fail, with ANNOTATE_TEST_BROWSER=require) when the browser cannot run."""
    reason = browser_unavailable_reason()
    require_component(reason, switch="ANNOTATE_TEST_BROWSER", mode=BROWSER_MODE)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def annotate_command() -> list[str]:
    """How to run the `annotate` command of the environment running the tests."""
    script = Path(sys.executable).with_name("annotate")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "annotate.cli"]


class AppServer:
    """`annotate serve` on 127.0.0.1 and a free port, for the duration of a `with` block.

    >>> with AppServer("sqlite:////tmp/x.sqlite") as server:
    ...     page.goto(server.login_url(token))
    """

    def __init__(
        self,
        db_url: str,
        port: int | None = None,
        *,
        start_timeout: float = SERVER_START_SECONDS,
        env: dict[str, str] | None = None,
        base_url_path: str = "",
        serve_args: Sequence[str] = (),
    ):
        self.db_url = db_url
        self._port_given = port is not None
        self.start_timeout = start_timeout
        self.env = env or {}
        self.serve_args = list(serve_args)
        if base_url_path:
            self.serve_args += ["--base-url-path", base_url_path]
        self._prefix = base_url_path.strip("/")
        self._use_port(port or free_port())
        self._process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - closed in __exit__

    def _use_port(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"  # the host's root
        self.app_url = f"{self.url}/{self._prefix}" if self._prefix else self.url  # the app's

    def login_url(self, token: str) -> str:
        return f"{self.app_url}/?token={token}"

    def logs(self) -> str:
        """Everything the server printed so far (stdout and stderr)."""
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace")
        self._log.seek(0, os.SEEK_END)
        return text

    def start(self) -> AppServer:
        """Start the server and wait until it answers.

        A port from `free_port()` is only free when picked: another process (a parallel test
        worker's server, a connection's local port) can take it in the seconds before the server
        listens. The server then stops saying so, and another free port is picked."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            logged = len(self.logs())
            self._launch()
            try:
                self._wait_healthy()
                return self
            except RuntimeError:
                self.stop()
                said = self.logs()[logged:]
                if self._port_given or attempt == PORT_ATTEMPTS:
                    raise
                if not any(words in said for words in PORT_TAKEN):
                    raise
                self._use_port(free_port())
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _launch(self) -> None:
        command = [
            *annotate_command(),
            "serve",
            "--db",
            self.db_url,
            "--port",
            str(self.port),
            "--address",
            "127.0.0.1",
            *self.serve_args,
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stop() ends streamlit too
        )

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        health = f"{self.app_url}/_stcore/health"
        process = self._process
        assert process is not None  # started
        while True:
            code = process.poll()
            if code is not None:
                raise RuntimeError(
                    f"`annotate serve` exited with code {code} before answering "
                    f"{health}. Its output:\n{self.logs()}"
                )
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(health, timeout=2) as response,
            ):
                if response.status == 200 and response.read().strip() == b"ok":
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"`annotate serve` did not answer {health} within {self.start_timeout:.0f} s. "
                    f"Its output:\n{self.logs()}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
        self._log.close()


DOCS_SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
_scratch_screenshots: Path | None = None


def save_screenshot(page, name: str, **options) -> Path:
    """Screenshot the viewport as `name` (e.g. "label.png"); see the module docstring for where."""
    global _scratch_screenshots
    if os.environ.get("ANNOTATE_SCREENSHOTS", "").lower() == "update":
        folder = DOCS_SCREENSHOTS
    else:
        if _scratch_screenshots is None:
            _scratch_screenshots = Path(tempfile.mkdtemp(prefix="annotate-screenshots-"))
        folder = _scratch_screenshots
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.mouse.move(0, 0)  # no hover effect where the last click was
    page.screenshot(path=str(path), animations="disabled", **options)
    return path


def launch_browser(playwright, **kwargs):
    """Debian's Chromium, headless, with a fresh profile and no background traffic."""
    require_browser()
    return playwright.chromium.launch(
        executable_path=chromium_path(),
        headless=True,
        args=CHROMIUM_ARGS,
        **kwargs,
    )


def wait_idle(page, *, timeout_ms: int = IDLE_TIMEOUT_MS, settle_ms: int = 150) -> None:
    """Wait until Streamlit is not running the script (checked twice, a short settle apart).

    After an interaction prefer `rerun(page)`, which also waits for the run it starts to begin.
    """
    page.wait_for_selector(IDLE_SELECTOR, state="attached", timeout=timeout_ms)
    page.wait_for_timeout(settle_ms)
    page.wait_for_selector(IDLE_SELECTOR, state="attached", timeout=timeout_ms)


_ARM_RUN_WATCH = """() => {
    window.__annotateRuns = 0;
    if (window.__annotateRunWatch) return;
    const app = document.querySelector('[data-testid="stApp"]');
    window.__annotateRunWatch = new MutationObserver(() => {
        if (app.getAttribute('data-test-script-state') !== 'notRunning') window.__annotateRuns++;
    });
    window.__annotateRunWatch.observe(app, {attributes: true,
                                            attributeFilter: ['data-test-script-state']});
}"""
_RUN_SEEN = "() => window.__annotateRuns > 0"


@contextlib.contextmanager
def rerun(page, *, start_timeout_ms: int = 3_000, timeout_ms: int = IDLE_TIMEOUT_MS):
    """Wrap an interaction that makes Streamlit rerun the script; returns once that run is over.

        with rerun(page):
            page.keyboard.press("b")

    Watches the app's script state from before the interaction, so a run that has not started
    yet is not mistaken for one that has finished. A run too quick to be seen costs
    `start_timeout_ms` of waiting, nothing more.
    """
    page.wait_for_selector('[data-testid="stApp"]', state="attached", timeout=timeout_ms)
    page.evaluate(_ARM_RUN_WATCH)
    yield
    with contextlib.suppress(PlaywrightTimeoutError):
        page.wait_for_function(_RUN_SEEN, timeout=start_timeout_ms)
    wait_idle(page, timeout_ms=timeout_ms)


def hold_timers(page) -> None:
    """Stop the page's clock (installed with `page.clock.install()` before the page opened):
    from here on no timer of the page fires until `page.clock.run_for(ms)` or
    `page.clock.resume()`. Keys, clicks and messages still act at once.

    Playwright pauses at a given time, which must not have passed yet when the pause arrives:
    ask for one a second ahead (timers due within it fire once, as when a laptop wakes), and
    again should the machine have taken longer than that."""
    while True:
        now = page.evaluate("() => Date.now()") / 1000
        try:
            page.clock.pause_at(now + 1)
            return
        except PlaywrightError as exc:
            if "to the past" not in str(exc):
                raise


def goto(page, url: str, *, timeout_ms: int = 60_000) -> None:
    """Open (or reload) a page of the app and wait for its first script run to finish.

    Before that run the app's script state is "initial", never "notRunning".
    """
    page.goto(url, timeout=timeout_ms)
    wait_idle(page, timeout_ms=timeout_ms)


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator:
    """One headless Chromium for the test module (skips, saying why, when unavailable)."""
    require_browser()
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        chromium = launch_browser(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


def new_context(browser, **context_options):
    """A fresh browser context (its own cookies, like a new visitor); close it when done."""
    options = {"viewport": {"width": 1400, "height": 1000}, **context_options}
    context = browser.new_context(**options)
    context.set_default_timeout(IDLE_TIMEOUT_MS)
    return context


@pytest.fixture(name="new_page")
def new_page_fixture(browser) -> Iterator[Callable[..., object]]:
    """Factory: new_page() -> a page in a fresh context (its own cookies, like a new visitor)."""
    contexts = []

    def make(**context_options):
        context = new_context(browser, **context_options)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        with contextlib.suppress(Exception):
            context.close()


class RequestRecorder:
    """A tiny HTTP server on 127.0.0.1 that records every request it receives.

    Point untrusted text at `recorder.url` and assert `recorder.requests == []`.
    """

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        recorded: list[str] = []
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def _record(self):
                with lock:
                    recorded.append(f"{self.command} {self.path}")
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = do_OPTIONS = _record

            def log_message(self, *args):
                pass

        self._requests = recorded
        self._lock = lock
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def requests(self) -> list[str]:
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> RequestRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
