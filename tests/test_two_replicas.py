"""Two app processes (`annotate serve` twice) on one PostgreSQL database, as behind a load
balancer: two annotators label through a real browser (Debian's Chromium), one on each replica,
then switch replicas; both replicas answer /healthz; the database ends exact."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter

import pytest
from sqlalchemy import func
from sqlmodel import select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import Annotation, Pair
from annotate.studies.catalog import get_or_create_study, update_study_options
from tests.browser import (  # noqa: F401
    AppServer,
    browser_fixture,
    goto,
    new_page_fixture,
    rerun,
    wait_idle,
)
from tests.scale_helpers import make_study

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

DIMENSIONS = {"correctness": "Correctness", "relevance": "Relevance", "helpfulness": "Helpfulness"}
N_PAIRS, OVERLAP = 3, 2


def _click(locator) -> None:
    with rerun(locator.page):
        locator.click()


def _label_one(page, slot: str) -> None:
    """Answer the pair on screen completely with the keys alone, and submit."""
    from playwright.sync_api import expect

    question = page.locator('[data-part="question"]:visible')  # in the labelling form
    expect(question).to_be_visible()
    wait_idle(page)
    shown = question.inner_text()
    for key in [slot.lower(), *["4"] * len(DIMENSIONS) * 2, "p", "s"]:
        page.keyboard.press(key)
    expect(page.get_by_text(shown, exact=True)).to_have_count(0)  # the next pair, or the end
    wait_idle(page)


def _sign_in(page, server, token) -> None:
    goto(page, server.login_url(token))
    start = page.get_by_role("button", name="Start labelling")
    if start.count():
        _click(start)


def _healthz(server) -> tuple[int, str]:
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=10) as response:
        return response.status, response.read().decode()


def test_two_replicas_on_one_postgresql_label_through_both(pg_url, tmp_path, browser, new_page):
    from playwright.sync_api import expect

    engine = get_engine(pg_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=N_PAIRS, n_annotators=0, overlap=OVERLAP)
    tokens = {}
    with session(engine) as s:
        study = get_or_create_study(s, "scale")
        update_study_options(s, study, overlap_target=OVERLAP)
        for name in ("alice", "bob"):
            tokens[name] = create_annotator(s, name=name, study_id=study.id)[1]

    with AppServer(pg_url) as one, AppServer(pg_url) as two:
        assert _healthz(one) == (200, "ok") and _healthz(two) == (200, "ok")
        alice, bob = new_page(), new_page()
        _sign_in(alice, one, tokens["alice"])
        _sign_in(bob, two, tokens["bob"])
        # interleaved: each replica writes while the other one does
        for slot in ("A", "B"):
            _label_one(alice, slot)
            _label_one(bob, slot)
        # the load balancer moves both to the other replica: progress comes from the database
        alice2, bob2 = new_page(), new_page()
        _sign_in(alice2, two, tokens["alice"])
        _sign_in(bob2, one, tokens["bob"])
        expect(alice2.get_by_text(f"2 of {N_PAIRS} pairs")).to_be_visible()
        expect(bob2.get_by_text(f"2 of {N_PAIRS} pairs")).to_be_visible()
        for slot in ("B",):
            _label_one(alice2, slot)
            _label_one(bob2, slot)
        expect(alice2.get_by_text("labelled every pair")).to_be_visible()
        expect(bob2.get_by_text("labelled every pair")).to_be_visible()
        logs = one.logs() + two.logs()

    assert "Traceback" not in logs, logs
    with session(engine) as s:
        rows = s.exec(
            select(Annotation.pair_id, Annotation.annotator_id).where(
                Annotation.study_id == study_id
            )
        ).all()
        over = s.exec(
            select(func.count())
            .select_from(Pair)
            .where(Pair.study_id == study_id, Pair.n_assigned > OVERLAP)
        ).one()
    assert len(rows) == len(set(rows)) == N_PAIRS * OVERLAP, json.dumps(rows)
    assert set(Counter(p for p, _ in rows).values()) == {OVERLAP}
    assert over == 0
