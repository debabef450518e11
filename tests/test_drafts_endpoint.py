"""`POST /draft` (annotate/web/drafts.py): the form's drafts without a page run. Only the page
given an assignment's key can save its draft; the answers pass the page's own check; other
sites, wrong keys, closed assignments and oversized bodies change nothing."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from annotate.engine import get_engine
from annotate.labelling.answers import FormState
from annotate.labelling.drafts import draft_handle, draft_key
from annotate.labelling.step import submit
from annotate.people.auth import reissue_token
from annotate.store.db import read_session, session
from annotate.store.models import Annotator, Assignment, Study
from annotate.web.drafts import MAX_DRAFT_BYTES, draft_routes
from tests.factories import make_study
from tests.labelling_helpers import current_item

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def site(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, people = make_study(engine, tmp_path, n_pairs=3, annotators=2)
    (alice, _), (bob, _) = people
    items = {who: current_item(engine, annotator_id=who) for who in (alice, bob)}
    with read_session(engine) as s:
        secret = s.get(Study, study_id).coin_secret
    client = TestClient(Starlette(routes=draft_routes(lambda: engine)), base_url="http://a.test")
    return engine, client, secret, items, (alice, bob)


def _key(engine, secret, item) -> str:
    """The key the page gives the form: the account's sign-in (token hash) as it is now."""
    with read_session(engine) as s:
        sign_in = s.get_one(Annotator, item.assignment.annotator_id).token_hash
    return draft_key(
        secret,
        assignment_id=item.assignment.id,
        annotator_id=item.assignment.annotator_id,
        sign_in=sign_in,
    )


def _handle(secret, item, *, assignment_id: int | None = None) -> str:
    """The name the page gives the assignment (labelling.draft_handle)."""
    return draft_handle(
        secret,
        study_id=item.assignment.study_id,
        assignment_id=item.assignment.id if assignment_id is None else assignment_id,
    )


def _draft(engine, item) -> dict | None:
    with read_session(engine) as s:
        return s.get_one(Assignment, item.assignment.id).draft


def test_a_draft_with_its_key_is_stored_as_the_page_would(site):
    engine, client, secret, items, (alice, _) = site
    item = items[alice]
    form = {"slot": "A", "ratings": {"correctness_A": 4, "relevance_B": 99}, "comment": "hm"}
    body = {"handle": _handle(secret, item), "key": _key(engine, secret, item), "form": form}
    response = client.post("/draft", json={**body, "seconds": 12.34}, headers=SAME_SITE)
    assert response.status_code == 204
    draft = _draft(engine, item)
    assert draft["slot"] == "A" and draft["comment"] == "hm" and draft["seconds"] == 12.3
    # a value outside the study's scale counts as not given, as on the page
    assert draft["ratings"]["correctness_A"] == 4 and draft["ratings"]["relevance_B"] is None


def test_wrong_keys_other_sites_and_big_bodies_change_nothing(site):
    engine, client, secret, items, (alice, bob) = site
    mine, theirs = items[alice], items[bob]
    form = {"slot": "B"}
    cases = [
        (
            {"handle": _handle(secret, theirs), "key": _key(engine, secret, mine), "form": form},
            403,
        ),
        ({"handle": _handle(secret, mine), "key": "0" * 64, "form": form}, 403),
        (
            {
                "handle": _handle(secret, mine, assignment_id=10**6),
                "key": _key(engine, secret, mine),
                "form": form,
            },
            403,
        ),
        ({"handle": 1, "key": _key(engine, secret, mine), "form": form}, 400),
        # the raw id is no name for an assignment any more
        ({"assignment": mine.assignment.id, "key": _key(engine, secret, mine), "form": form}, 400),
        ({"handle": _handle("not the secret", mine), "key": _key(engine, secret, mine)}, 403),
    ]
    for body, status in cases:
        assert client.post("/draft", json=body, headers=SAME_SITE).status_code == status
    good = {"handle": _handle(secret, mine), "key": _key(engine, secret, mine), "form": form}
    cross = client.post("/draft", json=good, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    big = {**good, "form": {"slot": "B", "comment": "x" * MAX_DRAFT_BYTES}}
    assert client.post("/draft", json=big, headers=SAME_SITE).status_code == 413
    assert client.post("/draft", content=b"[1]", headers=SAME_SITE).status_code == 400
    assert _draft(engine, mine) is None and _draft(engine, theirs) is None


def test_a_late_draft_of_an_answered_pair_is_ignored(site):
    engine, client, secret, items, (alice, _) = site
    item = items[alice]
    answer = FormState(
        slot="A",
        ratings={f"{d}_{s}": 4 for d in ("correctness", "relevance", "helpfulness") for s in "AB"},
        reason="personal_fit",
    )
    submit(engine, item=item, form=answer, seconds=3.0)
    body = {
        "handle": _handle(secret, item),
        "key": _key(engine, secret, item),
        "form": {"slot": "B"},
    }
    assert client.post("/draft", json=body, headers=SAME_SITE).status_code == 204
    assert _draft(engine, item) is None


def test_a_deactivated_account_saves_no_draft_and_nan_seconds_are_not_stored(site):
    engine, client, secret, items, (alice, bob) = site
    body = {"handle": _handle(secret, items[bob]), "key": _key(engine, secret, items[bob])}
    # NaN from the browser is no time spent (PostgreSQL would store NaN)
    raw = json.dumps({**body, "form": {"slot": "A"}, "seconds": float("nan")})
    headers = {**SAME_SITE, "Content-Type": "application/json"}
    assert client.post("/draft", content=raw, headers=headers).status_code == 204
    assert "seconds" not in _draft(engine, items[bob])
    with session(engine) as s:
        s.get(Annotator, alice).active = False
    item = items[alice]
    mine = {
        "handle": _handle(secret, item),
        "key": _key(engine, secret, item),
        "form": {"slot": "B"},
    }
    assert client.post("/draft", json=mine, headers=SAME_SITE).status_code == 403
    assert _draft(engine, item) in (None, {})


def test_an_open_tab_saves_no_draft_after_sign_out_or_a_new_link(site):
    # N8: the page's key was given while the account was signed in with its old token
    engine, client, secret, items, (alice, bob) = site
    keys = {who: _key(engine, secret, items[who]) for who in (alice, bob)}
    with session(engine) as s:
        for who in (alice, bob):  # Sign out (alice) and "New link" (bob) both reissue the token
            reissue_token(s, s.get(Annotator, who))
    for who in (alice, bob):
        body = {"handle": _handle(secret, items[who]), "key": keys[who], "form": {"slot": "A"}}
        assert client.post("/draft", json=body, headers=SAME_SITE).status_code == 403
        assert _draft(engine, items[who]) is None
    # a page shown after the new sign-in saves its drafts again
    fresh = {
        "handle": _handle(secret, items[alice]),
        "key": _key(engine, secret, items[alice]),
        "form": {"slot": "A"},
    }
    assert client.post("/draft", json=fresh, headers=SAME_SITE).status_code == 204


def test_what_a_draft_checks_is_not_kept_for_assignments_no_longer_drafted(site, monkeypatch):
    # Each assignment's facts (with its own copy of the study) were kept up to 20,000 entries:
    # a replica serving a crowd grew with every pair drafted (issue 22).
    from annotate.web import drafts

    engine, client, secret, items, (alice, bob) = site
    clock = [1_000.0]
    monkeypatch.setattr(drafts, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(drafts, "_swept", 0.0, raising=False)
    monkeypatch.setattr(drafts, "_facts", {})

    def post(who) -> int:
        item = items[who]
        body: dict[str, object] = {
            "handle": _handle(secret, item),
            "key": _key(engine, secret, item),
        }
        body["form"] = {"slot": "A"}
        return client.post("/draft", json=body, headers=SAME_SITE).status_code

    assert post(alice) == 204 and post(bob) == 204
    assert {key[1] for key in drafts._facts} == {items[w].assignment.id for w in (alice, bob)}
    clock[0] += drafts.FACTS_SECONDS + 1  # bob's page went quiet; alice keeps drafting
    assert post(alice) == 204
    assert {key[1] for key in drafts._facts} == {items[alice].assignment.id}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"handle": ' + b"[" * 10_000 + b"]" * 10_000 + b', "key": "k"}',
        b'{"handle": ' + str(10**24).encode() + b', "key": "' + b"0" * 64 + b'"}',
        b'{"handle": -' + str(10**24).encode() + b', "key": "k"}',
        b'{"handle": 1, "key": "k", "form": {"ratings": ' + str(10**24).encode() + b"}}",
        b'{"handle": 1, "key": "k", "form": {"slot": "' + b"9" * 4_400 + b'"}}',
    ],
    ids=["nested-10000", "assignment-10e24", "assignment-minus-10e24", "rating-10e24", "digits"],
)
def test_a_hostile_body_is_a_4xx_with_nothing_in_the_log(site, raw, caplog):
    # A body nested 10,000 deep (RecursionError) or an id of 10**24 (OverflowError in SQLite's
    # query) was a 500 with a traceback in the log before its key was even checked.
    engine, client, _secret, items, (alice, _) = site
    client = TestClient(client.app, base_url="http://a.test", raise_server_exceptions=False)
    headers = {**SAME_SITE, "Content-Type": "application/json"}
    with caplog.at_level("DEBUG"):
        response = client.post("/draft", content=raw, headers=headers)
    assert 400 <= response.status_code < 500
    ours = [r for r in caplog.records if r.name.split(".")[0] not in ("asyncio", "httpx2")]
    assert not any(r.exc_info for r in ours) and "Traceback" not in caplog.text
    assert sum(len(r.getMessage()) for r in ours) < 200
    assert _draft(engine, items[alice]) is None


def test_bodies_are_bounded_in_depth_and_numbers_before_parsing():
    from annotate.web import bounded_json

    assert bounded_json.loads(b'{"a": [{"b": "[[[[[[[[[[[["}]}', max_bytes=100) == {
        "a": [{"b": "[[[[[[[[[[[["}]
    }
    assert bounded_json.loads(str(2**63 - 1).encode(), max_bytes=100) == 2**63 - 1
    for raw, status in [
        (b"[" * 9 + b"]" * 9, 400),
        (str(2**63).encode(), 400),
        (b"1" * 101, 413),
        (b"{", 400),
        (b"\xff", 400),
    ]:
        with pytest.raises(bounded_json.BadBody) as bad:
            bounded_json.loads(raw, max_bytes=100)
        assert bad.value.status == status


def test_a_stale_key_marks_no_pair_away_or_back_after_sign_out(site):
    # The form's draft was refused after Sign out, but `away`/`back` only checked that the
    # account was active: for up to FACTS_SECONDS the old key still moved the pair's lease.
    engine, client, secret, items, (alice, _) = site
    item = items[alice]
    body = {"handle": _handle(secret, item), "key": _key(engine, secret, item)}
    assert client.post("/draft", json={**body, "away": True}, headers=SAME_SITE).status_code == 204
    with session(engine) as s:
        reissue_token(s, s.get(Annotator, alice))  # Sign out
    assert client.post("/draft", json={**body, "back": True}, headers=SAME_SITE).status_code == 403
    with read_session(engine) as s:
        assert s.get_one(Assignment, item.assignment.id).away_since is not None  # still away
    with session(engine) as s:
        s.get_one(Assignment, item.assignment.id).away_since = None
    assert client.post("/draft", json={**body, "away": True}, headers=SAME_SITE).status_code == 403
    with read_session(engine) as s:
        assert s.get_one(Assignment, item.assignment.id).away_since is None


def test_a_handle_reads_back_only_whole_and_with_its_studys_secret():
    from annotate.labelling.drafts import handle_assignment

    handle = draft_handle("s3cret", study_id=7, assignment_id=42)
    assert handle_assignment(handle, secret="s3cret") == 42
    assert handle_assignment(handle, secret="other") is None
    for cut in (handle[:-2], handle + "00", "7.", "7.zz", "nothing"):
        assert handle_assignment(cut, secret="s3cret") is None, cut
