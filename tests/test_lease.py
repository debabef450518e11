"""A pair held by a page that went away (closed or hidden) goes back to the pool AWAY_HOLD
seconds later, well before the study's reservation timeout (annotate/queue/rules.py, rule 8).

The page says it went away with its draft (`POST /draft` with `"away": true`,
annotate/web/drafts.py) and that it is back with `"back": true`. The clock is faked by moving
the stored times back (no sleeps). What the first annotator sees when they return: their
draft kept, a message when the pair was given away, and no answer beyond the pair's target.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import func, select
from starlette.applications import Starlette
from starlette.testclient import TestClient

from annotate.engine import get_engine
from annotate.labelling.answers import FormState
from annotate.labelling.drafts import draft_handle, draft_key
from annotate.labelling.step import submit
from annotate.queue.assignment import next_assignment, queue_status, skip
from annotate.queue.rules import AWAY_HOLD, GivenAway, gone_hold
from annotate.store.db import read_session, session
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study, utcnow
from annotate.web.drafts import GONE_MESSAGE, draft_routes
from tests.factories import make_study
from tests.labelling_helpers import current_item

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
TIMEOUT = 1800  # the study's reservation timeout: 30 minutes
RATINGS = {f"{d}_{s}": 4 for d in ("correctness", "relevance", "helpfulness") for s in "AB"}


@pytest.fixture
def one_pair(db_url, tmp_path):
    """One pair, overlap 1, two annotators: whoever holds the pair keeps the other waiting."""
    engine = get_engine(db_url)
    study_id, [(alice, _), (bob, _)] = make_study(
        engine, tmp_path, n_pairs=1, annotators=2, overlap_target=1, reservation_timeout=TIMEOUT
    )
    with read_session(engine) as s:
        secret = s.get(Study, study_id).coin_secret
    app = Starlette(routes=draft_routes(lambda: engine))
    app.state.engine = engine
    client = TestClient(app, base_url="http://a.test")
    return engine, client, secret, alice, bob


def _post(client, secret, item, **fields):
    with read_session(client.app.state.engine) as s:
        sign_in = s.get(Annotator, item.assignment.annotator_id).token_hash
    key = draft_key(
        secret,
        assignment_id=item.assignment.id,
        annotator_id=item.assignment.annotator_id,
        sign_in=sign_in,
    )
    handle = draft_handle(
        secret, study_id=item.assignment.study_id, assignment_id=item.assignment.id
    )
    body = {"handle": handle, "key": key, **fields}
    return client.post("/draft", json=body, headers=SAME_SITE)


def _clock_forward(engine, seconds: float) -> None:
    """Fake clock: every stored time of open reservations moves `seconds` into the past."""
    with session(engine) as s:
        for row in s.exec(select(Assignment).where(Assignment.status == "active")).all():
            row.assigned_at -= timedelta(seconds=seconds)
            if row.away_since is not None:
                row.away_since -= timedelta(seconds=seconds)
            if row.seen_at is not None:
                row.seen_at -= timedelta(seconds=seconds)
            s.add(row)


def _row(engine, assignment_id: int) -> Assignment:
    with read_session(engine) as s:
        return s.get_one(Assignment, assignment_id)


def _answers(engine) -> int:
    with read_session(engine) as s:
        return s.exec(select(func.count()).select_from(Annotation)).one()


def test_a_closed_tab_gives_its_pair_to_the_next_annotator_within_two_minutes(one_pair):
    engine, client, secret, alice, bob = one_pair
    item = current_item(engine, annotator_id=alice)
    # alice chose A, then closed the tab: the page's last draft says it is going away
    form = {"slot": "A", "ratings": RATINGS, "comment": "half done"}
    assert _post(client, secret, item, form=form, seconds=30.0, away=True).status_code == 204
    assert next_assignment(engine, annotator_id=bob) is None
    # bob is told to come back when the page's hold ends, not after the 30-minute timeout
    waited = queue_status(engine, annotator_id=bob).busy_until - utcnow()
    assert timedelta(0) < waited <= timedelta(seconds=AWAY_HOLD)
    _clock_forward(engine, AWAY_HOLD - 5)
    assert next_assignment(engine, annotator_id=bob) is None  # still within the hold
    _clock_forward(engine, 10)  # AWAY_HOLD + 5 s after the tab closed: well within 2 minutes
    given = next_assignment(engine, annotator_id=bob)
    assert given is not None and given.pair_id == item.pair.id
    released = _row(engine, item.assignment.id)
    assert released.status == "skipped"
    assert released.draft["slot"] == "A" and released.draft["comment"] == "half done"


def test_a_hidden_page_that_comes_back_in_time_keeps_its_pair(one_pair):
    engine, client, secret, alice, bob = one_pair
    item = current_item(engine, annotator_id=alice)
    assert _post(client, secret, item, away=True).status_code == 204  # hidden, nothing typed
    assert _row(engine, item.assignment.id).away_since is not None
    _clock_forward(engine, AWAY_HOLD - 5)
    assert _post(client, secret, item, back=True).status_code == 204  # shown again
    assert _row(engine, item.assignment.id).away_since is None
    for _ in range(30):  # AWAY_HOLD x 10, the shown page saying it is there (its heartbeat)
        _clock_forward(engine, AWAY_HOLD / 3)
        assert _post(client, secret, item, back=True).status_code == 204
    assert next_assignment(engine, annotator_id=bob) is None
    assert _row(engine, item.assignment.id).status == "active"
    # a draft from a shown page also ends an away mark
    assert _post(client, secret, item, away=True).status_code == 204
    form = {"slot": "B", "ratings": RATINGS}
    assert _post(client, secret, item, form=form, seconds=3.0).status_code == 204
    assert _row(engine, item.assignment.id).away_since is None


def test_the_returning_annotator_is_told_and_their_answer_is_not_stored_beyond_target(one_pair):
    engine, client, secret, alice, bob = one_pair
    item = current_item(engine, annotator_id=alice)
    form = {"slot": "A", "ratings": RATINGS, "comment": "mine"}
    assert _post(client, secret, item, form=form, away=True).status_code == 204
    _clock_forward(engine, AWAY_HOLD + 1)
    bobs = current_item(engine, annotator_id=bob)
    assert bobs.pair.id == item.pair.id
    # alice's page is shown again: the server says the pair went to someone else
    back = _post(client, secret, item, back=True)
    assert back.status_code == 409 and back.json() == {"message": GONE_MESSAGE}
    # bob answers; alice submits anyway: refused, kept as her draft, one answer for the pair
    full = FormState(slot="B", ratings=RATINGS, reason="both")
    submit(engine, item=bobs, form=full, seconds=5.0)
    hers = FormState(slot="A", ratings=RATINGS, reason="personal_fit", comment="mine, late")
    with pytest.raises(GivenAway, match="given to another annotator"):
        submit(engine, item=item, form=hers, seconds=50.0)
    assert _answers(engine) == 1
    kept = _row(engine, item.assignment.id)
    assert kept.status == "skipped" and kept.draft["comment"] == "mine, late"
    with read_session(engine) as s:
        assert s.get(Pair, item.pair.id).n_assigned == 1


def test_a_late_answer_is_stored_while_the_released_pair_still_has_room(one_pair):
    engine, client, secret, alice, bob = one_pair
    item = current_item(engine, annotator_id=alice)
    assert _post(client, secret, item, away=True).status_code == 204
    _clock_forward(engine, AWAY_HOLD + 1)
    bobs = current_item(engine, annotator_id=bob)  # released to bob ...
    skip(engine, annotator_id=bob, pair_id=bobs.pair.id)  # ... who skips it: room again
    submit(engine, item=item, form=FormState(slot="A", ratings=RATINGS, reason="both"), seconds=9.0)
    assert _answers(engine) == 1
    assert _row(engine, item.assignment.id).status == "done"
    with read_session(engine) as s:
        assert s.get(Pair, item.pair.id).n_assigned == 1


def test_an_away_mark_on_an_answered_pair_changes_nothing(one_pair):
    engine, client, secret, alice, _bob = one_pair
    item = current_item(engine, annotator_id=alice)
    submit(engine, item=item, form=FormState(slot="A", ratings=RATINGS, reason="both"), seconds=1.0)
    assert _post(client, secret, item, away=True).status_code == 204
    assert _post(client, secret, item, back=True).status_code == 204
    done = _row(engine, item.assignment.id)
    assert done.status == "done" and done.away_since is None


def test_a_page_that_stopped_talking_gives_its_pair_back_and_keeps_its_draft(one_pair):
    # alice's browser crashed (or her phone lost its network) mid-pair: no close, no beacon,
    # the page simply stops saying it is there
    engine, client, secret, alice, bob = one_pair
    item = current_item(engine, annotator_id=alice)
    form = {"slot": "B", "ratings": RATINGS, "comment": "typed before the crash"}
    assert _post(client, secret, item, form=form, seconds=12.0).status_code == 204
    hold = gone_hold()
    assert next_assignment(engine, annotator_id=bob) is None
    # bob is told to come back when the hold ends, not after the 30-minute timeout
    waited = queue_status(engine, annotator_id=bob).busy_until - utcnow()
    assert timedelta(0) < waited <= timedelta(seconds=hold)
    _clock_forward(engine, hold - 5)
    assert next_assignment(engine, annotator_id=bob) is None  # a heartbeat may still come
    _clock_forward(engine, 10)  # GONE_HOLD + 5 s after her last word: well within 2 minutes
    given = next_assignment(engine, annotator_id=bob)
    assert given is not None and given.pair_id == item.pair.id
    released = _row(engine, item.assignment.id)
    assert released.status == "skipped"
    assert released.draft["slot"] == "B" and released.draft["comment"] == "typed before the crash"
    # her page, back on the network, hears that the pair was given away; her answers stay
    reply = _post(client, secret, item, back=True)
    assert reply.status_code == 409 and reply.json()["message"] == GONE_MESSAGE


def test_a_page_that_keeps_saying_it_is_there_keeps_its_pair(one_pair):
    engine, client, secret, alice, bob = one_pair
    item = current_item(engine, annotator_id=alice)
    hold = gone_hold()
    for _ in range(10):  # ten holds long, with a heartbeat every third of one: never released
        _clock_forward(engine, hold / 3)
        assert _post(client, secret, item, back=True).status_code == 204
        assert next_assignment(engine, annotator_id=bob) is None
    assert _row(engine, item.assignment.id).status == "active"


def test_the_gone_hold_is_set_by_its_variable_and_a_bad_value_is_named(monkeypatch):
    from annotate.errors import UserError

    monkeypatch.setenv("ANNOTATE_GONE_HOLD", "6")
    assert gone_hold() == 6
    monkeypatch.setenv("ANNOTATE_GONE_HOLD", "soon")
    with pytest.raises(UserError, match="ANNOTATE_GONE_HOLD must be a whole number"):
        gone_hold()


def test_serve_names_a_bad_gone_hold_before_it_starts(monkeypatch, tmp_path, capsys):
    from annotate.cli import main

    monkeypatch.setenv("ANNOTATE_GONE_HOLD", "-5")
    assert main(["serve", "--db", f"sqlite:///{tmp_path / 'x.db'}"]) == 2
    err = capsys.readouterr().err
    assert "ANNOTATE_GONE_HOLD must be a whole number of seconds" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
