"""Two `annotate serve` replicas behind Debian's nginx, configured as docs/deployment.md says
(tests/nginx.py reads the configuration from there): two annotators label in Chromium through
the proxy, the replica that holds their pages is killed mid-study (SIGKILL, as a crash or an
out-of-memory kill), the pages reconnect through nginx to the other replica with their
half-answered pairs as they left them, and both annotators finish. The database ends exact:
every answer stored once, no pair over its target."""

from __future__ import annotations

import os
import secrets
import signal
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
from sqlalchemy import func
from sqlmodel import select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair
from annotate.studies.catalog import get_or_create_study, update_study_options
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    wait_idle,
)
from tests.nginx import Nginx, require_nginx
from tests.scale_helpers import make_study
from tests.test_label_browser import expect_picked, next_pair, question_box, rating_group

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

N_PAIRS, OVERLAP = 3, 2
RATINGS = 6  # three dimensions, two responses
DRAFT_WAIT_MS = 30_000  # the page sends a draft 4 s after a change; a busy machine is slower
RECONNECT_MS = 60_000  # Streamlit's page retries with a growing back-off
RECONNECTING = "Connection to the server lost: reconnecting"


def _established(port: int) -> int:
    """Open TCP connections whose local end is 127.0.0.1:port (nginx's to a replica)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as lines:
            next(lines)
            for line in lines:
                local, state = line.split()[1], line.split()[3]
                if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def _kill(server: AppServer) -> None:
    """SIGKILL the replica's whole process group: no goodbye to the pages."""
    process = server._process
    assert process is not None  # started
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=15)


def _draft(engine, *, annotator_id: int) -> Mapping[str, Any] | None:
    with session(engine) as s:
        return s.exec(
            select(Assignment.draft).where(
                Assignment.annotator_id == annotator_id, Assignment.status == "active"
            )
        ).first()


def _wait_for_draft(page, engine, *, annotator_id: int) -> None:
    """Until the page's draft (slot and the first two ratings) is in the database."""
    deadline_ms = DRAFT_WAIT_MS
    while deadline_ms > 0:
        draft = _draft(engine, annotator_id=annotator_id) or {}
        if draft.get("slot") and len(draft.get("ratings") or {}) >= 2:
            return
        page.wait_for_timeout(250)
        deadline_ms -= 250
    raise AssertionError(f"no draft stored within {DRAFT_WAIT_MS} ms: {draft!r}")


def _finish_pair(page, *, from_rating: int) -> str:
    """The rest of a half-answered pair: the remaining ratings, a reason, Submit. Returns the
    question shown (see `_wait_next_pair`)."""
    shown = question_box(page).inner_text()
    for key in [*["4"] * (RATINGS - from_rating), "p", "s"]:
        page.keyboard.press(key)
    return shown


def _wait_next_pair(page, shown: str) -> None:
    expect(question_box(page)).not_to_have_text(shown, timeout=RECONNECT_MS)
    next_pair(page, shown)


def _label_whole_pair(page, slot: str) -> str:
    shown = question_box(page).inner_text()
    for key in [slot.lower(), *["3"] * RATINGS, "o", "s"]:
        page.keyboard.press(key)
    return next_pair(page, shown)


def test_a_replica_killed_mid_study_behind_nginx(pg_url, tmp_path, browser, new_page):
    require_nginx()
    engine = get_engine(pg_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=N_PAIRS, n_annotators=0, overlap=OVERLAP)
    people = {}
    with session(engine) as s:
        study = get_or_create_study(s, "scale")
        update_study_options(s, study, overlap_target=OVERLAP)
        for name in ("alice", "bob"):
            account, token = create_annotator(s, name=name, study_id=study.id)
            people[name] = (account.id, token)

    # as docs/deployment.md says: the same cookie secret on every replica
    same = {"STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_urlsafe(32)}
    with (
        AppServer(pg_url, env=same) as one,
        AppServer(pg_url, env=same) as two,
        Nginx([one.port, two.port], tmp_path) as proxy,
    ):
        pages = {}
        for name, (_, token) in people.items():
            pages[name] = new_page()
            goto(pages[name], f"{proxy.url}/?token={token}")
            expect(question_box(pages[name])).to_be_visible()
            wait_idle(pages[name])
        for page in pages.values():
            _label_whole_pair(page, "A")
        # half of the second pair: a choice and two ratings, kept as the page's draft
        for name, page in pages.items():
            for key in ["b", "5", "5"]:
                page.keyboard.press(key)
            _wait_for_draft(page, engine, annotator_id=people[name][0])

        # ip_hash pins every browser of one address (here all of them) to one replica: kill it.
        # The other one is held still (SIGSTOP) until the pages have shown that they lost
        # the server and alice has pressed Submit: a restart or a slow failover.
        held = {server: _established(server.port) for server in (one, two)}
        victim = max(held, key=held.get)
        survivor = two if victim is one else one
        assert held[victim] >= 2 and held[survivor] == 0, held
        alice, bob_before = pages["alice"], pages["bob"]
        os.killpg(survivor._process.pid, signal.SIGSTOP)
        try:
            with alice.expect_console_message(lambda m: "WebSocket onclose" in m.text):
                _kill(victim)
            for page in pages.values():
                expect(page.get_by_text(RECONNECTING)).to_be_visible(timeout=RECONNECT_MS)
            shown = _finish_pair(alice, from_rating=2)  # Submit while no server answers
        finally:
            os.killpg(survivor._process.pid, signal.SIGCONT)
        # the page reconnects through nginx to the survivor and her answer is stored there
        _wait_next_pair(alice, shown)
        expect(alice.get_by_text(RECONNECTING)).to_have_count(0)
        # bob reloads instead (a new tab: nothing kept in the browser): the survivor shows his
        # half-answered pair from the database draft
        bob = bob_before.context.new_page()
        bob_before.close()
        goto(bob, proxy.url, timeout_ms=RECONNECT_MS)
        expect_picked(bob, "Response B")
        for slot in ("A", "B"):
            picked = rating_group(bob, "correctness", slot).locator('[aria-checked="true"]')
            expect(picked).to_have_text("5")
        _wait_next_pair(bob, _finish_pair(bob, from_rating=2))
        assert victim._process is not None and victim._process.poll() is not None
        assert _established(survivor.port) >= 1

        for page in (alice, bob):  # the last pair
            for key in ["b", *["3"] * RATINGS, "o", "s"]:
                page.keyboard.press(key)
            expect(page.get_by_text("labelled every pair")).to_be_visible()
            expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        logs = survivor.logs()

    assert "Traceback" not in logs, logs
    with session(engine) as s:
        rows = s.exec(
            select(Annotation.pair_id, Annotation.annotator_id, Annotation.preference).where(
                Annotation.study_id == study_id
            )
        ).all()
        over = s.exec(
            select(func.count())
            .select_from(Pair)
            .where(Pair.study_id == study_id, Pair.n_assigned > OVERLAP)
        ).one()
    keys = [(pair, who) for pair, who, _ in rows]
    assert len(keys) == len(set(keys)) == N_PAIRS * OVERLAP, rows
    assert set(Counter(pair for pair, _ in keys).values()) == {OVERLAP}
    assert over == 0
