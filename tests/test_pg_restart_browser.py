"""PostgreSQL "restarts" for 10 s while an annotator submits (a TCP relay between the app and
the server is cut and restored: tests/tcp_relay.py; the shared server itself keeps running).
The page says it is still saving, no traceback reaches the screen or the server's log, and the
answer given during the outage is stored once when the database is back."""

from __future__ import annotations

import time

import pytest
from sqlmodel import select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import Annotation
from annotate.studies.catalog import get_or_create_study
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    wait_idle,
)
from tests.scale_helpers import make_study
from tests.tcp_relay import TcpRelay, relay_url, target_of
from tests.test_label_browser import next_pair, question_box

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

OUTAGE_SECONDS = 10.0  # the fault itself: how long the database is away
SLOW = "Still saving: the server is taking longer than usual"
RATINGS = 6
RECOVERY_MS = 60_000


def _answer(page, slot: str) -> str:
    """Every answer of the pair on screen and Submit; returns the question shown."""
    shown = question_box(page).inner_text()
    for key in [slot.lower(), *["4"] * RATINGS, "p", "s"]:
        page.keyboard.press(key)
    return shown


def test_a_database_restart_mid_study_loses_no_answer(pg_url, tmp_path, browser, new_page):
    engine = get_engine(pg_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=4, n_annotators=0, overlap=1)
    with session(engine) as s:
        study = get_or_create_study(s, "scale")
        account, token = create_annotator(s, name="carol", study_id=study.id)

    with TcpRelay(target_of(pg_url)) as relay, AppServer(relay_url(pg_url, relay)) as server:
        page = new_page()
        goto(page, server.login_url(token))
        next_pair(page, _answer(page, "A"))
        assert relay.connections >= 1, "the app should reach the database through the relay"

        relay.cut()  # PostgreSQL goes away: connections dropped, new ones refused
        cut_at = time.monotonic()
        shown = _answer(page, "B")  # Submit during the outage
        expect(page.get_by_text(SLOW)).to_be_visible(timeout=RECOVERY_MS)
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        page.wait_for_timeout(max(0.0, OUTAGE_SECONDS - (time.monotonic() - cut_at)) * 1000)
        relay.restore()

        expect(question_box(page)).not_to_have_text(shown, timeout=RECOVERY_MS)
        next_pair(page, shown)
        expect(page.get_by_text(SLOW)).to_have_count(0)
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        next_pair(page, _answer(page, "A"))  # and labelling goes on as before
        logs = server.logs()

    assert "Traceback" not in logs, logs
    with session(engine) as s:
        rows = s.exec(
            select(Annotation.pair_id, Annotation.comment).where(
                Annotation.study_id == study_id, Annotation.annotator_id == account.id
            )
        ).all()
    assert len(rows) == len({pair for pair, _ in rows}) == 3, rows
