"""A browser killed mid-pair (SIGKILL: no pagehide, no beacon, no goodbye) gives its pair back:
its page stops saying it is there (the form's heartbeat), and GONE_HOLD seconds later the
assignment rules serve the pair to another annotator who needs it (annotate/queue/rules.py,
rule 8). The killed annotator's answers so far are kept and come back when they sign in again
(once the pair is free again: the other annotator's page goes too).

The hold is set short for the test (ANNOTATE_GONE_HOLD, a few seconds; 60 s by default); the
promise checked is the issue's: another annotator is served the pair within two minutes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest
from sqlmodel import select

from annotate.engine import get_engine
from annotate.store.db import session
from annotate.store.models import Assignment
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    CHROMIUM_ARGS,
    AppServer,
    browser_fixture,
    chromium_path,
    expect,
    free_port,
    goto,
    new_page_fixture,
)
from tests.factories import make_study
from tests.test_label_browser import expect_picked, keys, open_pair, question_box

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOLD_SECONDS = 6  # ANNOTATE_GONE_HOLD for the server under test (default 60)
PROMISE_SECONDS = 120.0  # the pair is someone else's within two minutes, however its page went


@contextlib.contextmanager
def killable_chromium(browser):
    """A Chromium of our own (its process id known, so it can be killed like a crash), driven
    through the DevTools protocol by the module's Playwright."""
    port = free_port()
    profile = tempfile.mkdtemp(prefix="gone-chromium-")
    process = subprocess.Popen(
        [
            str(chromium_path()),
            "--headless=new",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={profile}",
            *CHROMIUM_ARGS,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/json/version", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield process, browser.browser_type.connect_over_cdp(endpoint)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


def _assignment(engine, annotator_id: int) -> Assignment | None:
    with session(engine) as s:
        return s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.status == "active"
            )
        ).first()


def _draft(engine, assignment_id: int) -> dict:
    with session(engine) as s:
        return s.get_one(Assignment, assignment_id).draft or {}


def test_a_killed_browser_gives_its_pair_back_and_keeps_its_draft(tmp_path, browser, new_page):
    db_url = f"sqlite:///{tmp_path / 'gone.db'}"
    engine = get_engine(db_url)
    # one pair, overlap 1: whoever holds it keeps the other annotator waiting
    _, [(alice, alice_token), (bob, bob_token)] = make_study(
        engine, tmp_path, n_pairs=1, annotators=2, overlap_target=1, reservation_timeout=1800
    )
    env = {"ANNOTATE_GONE_HOLD": str(HOLD_SECONDS)}
    with AppServer(db_url, env=env) as server, killable_chromium(browser) as (chromium, remote):
        page = remote.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        open_pair(page, server.login_url(alice_token))
        held = _assignment(engine, alice)
        assert held is not None
        keys(page, ["a"])  # alice picks Response A; the draft goes a few seconds later
        deadline = time.monotonic() + 60
        while _draft(engine, held.id).get("slot") is None and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        assert _draft(engine, held.id).get("slot") == "A"

        os.killpg(chromium.pid, signal.SIGKILL)  # the browser crashes: no goodbye of any kind
        killed_at = time.monotonic()
        chromium.wait(timeout=15)

        other = new_page()
        goto(other, server.login_url(bob_token))
        while _assignment(engine, bob) is None:
            assert time.monotonic() - killed_at < PROMISE_SECONDS, "the pair was never given back"
            other.wait_for_timeout(1000)
            goto(other, other.url)  # bob reloads ("come back later" until the pair is free)
        served_after = time.monotonic() - killed_at
        expect(question_box(other)).to_be_visible()
        assert _assignment(engine, bob).pair_id == held.pair_id
        assert served_after < PROMISE_SECONDS
        released = _draft(engine, held.id)
        assert released.get("slot") == "A"  # the released reservation keeps alice's draft

        other.context.close()  # bob's page goes too: his pair is free again after the hold

        again = new_page()  # alice signs in again, in a new browser
        goto(again, server.login_url(alice_token))
        signed_in_at = time.monotonic()
        while _assignment(engine, alice) is None:
            assert time.monotonic() - signed_in_at < PROMISE_SECONDS, "her pair never came back"
            again.wait_for_timeout(1000)
            goto(again, again.url)
        expect(question_box(again)).to_be_visible()
        expect_picked(again, "Response A")  # her answers so far are back
        back = _assignment(engine, alice)
        assert back is not None and back.id == held.id
        logs = server.logs()
    assert "Traceback" not in logs, logs
