"""Launch day: 200 annotators open their login links within 10 seconds, on two replicas of one
PostgreSQL database. Each is a websocket client that speaks Streamlit's protocol as a browser
tab does (benchmarks/bench_crowd.py's `Client`: the link, its cookie, the page's socket, the
first page run). Every one of them gets a labelling form for a pair of its own, nothing is
shown as an error, and the database holds exactly one reserved pair per annotator with no pair
over its target. How long the first page took is measured by the crowd benchmark, not here."""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import Assignment, Pair
from annotate.studies.catalog import get_or_create_study
from tests.browser import AppServer
from tests.scale_helpers import make_study

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_crowd

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ANNOTATORS, WITHIN_SECONDS = 200, 10.0
PAIRS, OVERLAP = 100, 3  # room for everyone: 300 places for 200 annotators
PAGE_TIMEOUT = 300.0  # correctness is the point; on a busy two-core machine the last is slow


async def _sign_in(url: str, token: str, i: int, start_at: float) -> bench_crowd.Page:
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    # each from its own address, as forwarded by a proxy (one address holds at most 16 pages)
    client = bench_crowd.Client(url, token, f"crowd-{i}", address=bench_crowd.crowd_address(i))
    try:
        await client.sign_in()
        return await client.connect()
    finally:
        await client.close()


async def _crowd(urls: list[str], tokens: list[str]) -> list:
    start = time.monotonic() + 1.0
    step = WITHIN_SECONDS / len(tokens)
    jobs = [
        _sign_in(urls[i % len(urls)], token, i, start + i * step) for i, token in enumerate(tokens)
    ]
    return await asyncio.gather(*jobs, return_exceptions=True)


def test_two_hundred_sign_ins_within_ten_seconds(pg_url, tmp_path, monkeypatch):
    monkeypatch.setattr(bench_crowd, "READ_TIMEOUT", PAGE_TIMEOUT)
    engine = get_engine(pg_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=PAIRS, n_annotators=0, overlap=OVERLAP)
    with session(engine) as s:
        study = get_or_create_study(s, "scale")
        people = [create_annotator(s, name=f"crowd-{i}", study_id=study.id) for i in range(200)]
    ids = {account.id for account, _ in people}
    same = {"STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_urlsafe(32)}
    with AppServer(pg_url, env=same) as one, AppServer(pg_url, env=same) as two:
        pages = asyncio.run(_crowd([one.url, two.url], [token for _, token in people]))
        logs = one.logs() + two.logs()

    failed = [repr(p) for p in pages if isinstance(p, BaseException)]
    assert not failed, f"{len(failed)} sign-ins failed, e.g. {failed[:3]}"
    errors = [p.exception for p in pages if p.exception]
    assert not errors, errors[:3]
    assert all(p.finished and p.data is not None for p in pages), "someone got no pair"
    assert "Traceback" not in logs, logs[-5000:]
    with session(engine) as s:
        held = s.exec(
            select(Assignment.annotator_id, Assignment.pair_id).where(
                Assignment.study_id == study_id, Assignment.status == "active"
            )
        ).all()
        assigned = s.exec(select(Pair.n_assigned).where(Pair.study_id == study_id)).all()
    per_annotator = Counter(annotator for annotator, _ in held)
    assert set(per_annotator) == ids and set(per_annotator.values()) == {1}
    assert max(Counter(pair for _, pair in held).values()) <= OVERLAP
    assert max(assigned) <= OVERLAP
