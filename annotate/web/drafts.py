"""`POST {prefix}/draft`: the labelling form's drafts, saved without a Streamlit page run.

The form sends its answers so far at most every 4 seconds while an annotator thinks, and when
the page is hidden: at a human pace that is most of what the server hears. Through the page's
websocket each draft was a whole page run (sign-in check, pair, progress, the pair's texts
rendered and sent again), more CPU than a Submit. Here a draft is one small JSON request:

- it names the assignment by its handle (`labelling.draft_handle`: the id enciphered with the
  study's secret, so no id or gap in the ids reaches the page) and carries the key the form
  was given with it
  (`labelling.draft_key`, an HMAC with the study's secret): only a page that was shown that pair
  can save its draft, whichever way its annotator signed in (link cookie or Prolific), and
  only while that sign-in lasts (the key includes the account's token hash: after Sign out
  or a new link the open tab's drafts are refused, annotate/web/identity.py);
- it must come from this site's own pages (`Sec-Fetch-Site`, else `Origin`), at most
  MAX_DRAFT_BYTES, nested and numbered within annotate/web/bounded_json.py's bounds (a bad
  body is a 4xx before anything else reads it), and its answers pass the same check as the page's (`FormState.from_browser`);
- it is stored by `labelling.save_draft`, the one rule for drafts (an open assignment only).

Answers 204 when stored or when the assignment is no longer open (nothing to keep), 4xx
otherwise; the form falls back to the websocket event when the request fails.

The same request carries the page's lease (annotate/queue/rules.py, rule 8): `"away": true`
when the page is hidden or closed (with the form when it changed since the last draft, else
without one), which releases the pair AWAY_HOLD seconds later if others need it; any later
draft, or `"back": true` when the page is shown again, ends that. `back` answers 409 with a
message when the pair was released meanwhile (the page shows it; the answers stay).

An open, shown form also sends `"back": true` every `heartbeat` seconds (the form's data:
rules.heartbeat_seconds): each draft, return and heartbeat renews assignment.seen_at, and a
pair whose page stopped talking (crashed, killed, cut off: no close, no beacon) is released
GONE_HOLD seconds after its last word, if others need it.
"""

from __future__ import annotations

import hmac
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from annotate.labelling.answers import FormState
from annotate.labelling.drafts import draft_key, handle_assignment, handle_study, save_draft
from annotate.queue.assignment import mark_away
from annotate.store import db
from annotate.store.models import Annotator, Assignment, Pair, Study
from annotate.web import bounded_json
from annotate.web.proofs import same_origin

GONE = 409  # the pair was given to another annotator while the page was away (rules.py, 8)
GONE_MESSAGE = (
    "While this page was away, this pair was given to another annotator. Your answers so far "
    "are kept: submit them if the pair still needs them, else you get your next pair."
)
MAX_DRAFT_BYTES = 32_768  # a comment of 4,000 characters, escaped, and the ratings
MAX_SECONDS = 24 * 3600.0


def _seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return min(max(float(value), 0.0), MAX_SECONDS)
    return None


@dataclass(frozen=True)
class DraftFacts:
    """What checking an assignment's draft needs that its drafts do not change: whose it is,
    the study's secret (the key) and options (the answers' check), the pair's aspects."""

    annotator_id: int
    secret: str | None
    sign_in: str | None  # the account's token hash the key was made with (labelling.draft_key)
    study: Study
    n_aspects: int


FACTS_SECONDS = 30.0  # a study's options changed in the console apply to drafts within this
# Read at most every FACTS_SECONDS, so only the assignments drafted within that time are kept:
# about one an annotator at work (each entry holds its own Study).
_facts: dict[tuple[str, int], tuple[float, DraftFacts]] = {}
_swept = 0.0  # when entries older than FACTS_SECONDS were last dropped


_FACTS = (
    select(Assignment.annotator_id, Annotator.token_hash, Study, Pair.rubric_aspects)
    .join(Annotator, col(Annotator.id) == Assignment.annotator_id)
    .join(Study, col(Study.id) == Assignment.study_id)
    .join(Pair, col(Pair.id) == Assignment.pair_id)
)


def _read_facts(engine: Engine, assignment_id: int) -> DraftFacts | None:
    row = db.read(engine, lambda s: s.exec(_FACTS.where(Assignment.id == assignment_id)).first())
    if row is None:
        return None
    annotator_id, sign_in, study, aspects = row
    return DraftFacts(annotator_id, study.coin_secret, sign_in, study, len(aspects or []))


def _key_fits(facts: DraftFacts, assignment_id: int, key: str) -> bool:
    expected = draft_key(
        facts.secret,
        assignment_id=assignment_id,
        annotator_id=facts.annotator_id,
        sign_in=facts.sign_in,  # signed out or given a new link since: the page's key is stale
    )
    return hmac.compare_digest(expected, key)


def draft_facts(engine: Engine, assignment_id: int, *, fresh: bool = False) -> DraftFacts | None:
    """DraftFacts of an assignment, read at most every FACTS_SECONDS (a page sends a draft
    every few seconds while its annotator works) unless `fresh`. The sign-in it holds is
    checked again by the draft's own write (labelling.save_draft's `sign_in`)."""
    key = (engine.url.render_as_string(hide_password=False), assignment_id)
    now = time.monotonic()
    cached = _facts.get(key)
    if cached is not None and not fresh and now - cached[0] < FACTS_SECONDS:
        return cached[1]
    facts = _read_facts(engine, assignment_id)
    if facts is not None:
        _facts[key] = (now, facts)
    _sweep(now)
    return facts


def _sweep(now: float) -> None:
    """Drop the entries too old to be used again, at most every FACTS_SECONDS."""
    global _swept
    if now - _swept < FACTS_SECONDS:
        return
    _swept = now
    for key in [k for k, (read, _) in list(_facts.items()) if now - read >= FACTS_SECONDS]:
        _facts.pop(key, None)


_STATE = select(Assignment.status, Annotator.active, Annotator.token_hash).join(
    Annotator, col(Annotator.id) == Assignment.annotator_id
)


def _state(engine: Engine, assignment_id: int, *, sign_in: str | None) -> tuple[str, bool]:
    """The assignment's status and whether its annotator is still signed in as the page's
    key says: an active account whose token hash is still `sign_in` (Sign out and a new
    link change it, as for the form's draft in labelling.save_draft)."""
    status, active, token_hash = db.read(
        engine, lambda s: s.exec(_STATE.where(Assignment.id == assignment_id)).one()
    )
    return status, bool(active) and token_hash == sign_in


_secrets: dict[tuple[str, int], tuple[float, str | None]] = {}  # studies' secrets, by id


def _study_secret(engine: Engine, study_id: int) -> tuple[bool, str | None]:
    """Whether the study exists, and its secret (read at most every FACTS_SECONDS)."""
    key = (engine.url.render_as_string(hide_password=False), study_id)
    now = time.monotonic()
    cached = _secrets.get(key)
    if cached is not None and now - cached[0] < FACTS_SECONDS:
        return True, cached[1]
    study = db.read(engine, lambda s: s.get(Study, study_id))
    if study is None:
        return False, None
    _secrets[key] = (now, study.coin_secret)
    return True, study.coin_secret


def _assignment_of(engine: Engine, handle: str, study_id: int) -> int | None:
    """The assignment a page's handle names (labelling.draft_handle), or None."""
    found, secret = _study_secret(engine, study_id)
    return handle_assignment(handle, secret=secret) if found else None


def store_draft(engine: Engine, body: dict[str, Any]) -> int:
    """Check and store one draft request's body; the HTTP status. The common draft is one
    write (labelling.save_draft); the rest reads the assignment's state first."""
    handle, key = body.get("handle"), body.get("key")
    study_id = handle_study(handle)
    if study_id is None or not isinstance(handle, str) or not isinstance(key, str):
        return 400
    assignment_id = _assignment_of(engine, handle, study_id)
    if assignment_id is None:
        return 403
    facts = draft_facts(engine, assignment_id)
    if facts is not None and not _key_fits(facts, assignment_id, key):
        facts = draft_facts(engine, assignment_id, fresh=True)  # signed in anew since?
    if facts is None or facts.study.id != study_id or not _key_fits(facts, assignment_id, key):
        return 403
    away = body.get("away") is True
    if "form" in body and body.get("back") is not True:
        form = FormState.from_browser(
            body.get("form"), study=facts.study, n_aspects=facts.n_aspects
        )
        seconds = _seconds(body.get("seconds"))
        stored = save_draft(
            engine,
            assignment_id=assignment_id,
            form=form,
            seconds=seconds,
            away=away,
            sign_in=facts.sign_in,
        )
        if stored:
            return 204
    status, signed_in = _state(engine, assignment_id, sign_in=facts.sign_in)
    if not signed_in:
        return 403  # deactivated, signed out or given a new link since: a stale tab moves nothing
    if body.get("back") is True:  # the page is shown again: is the pair still its own?
        if status == "skipped":
            return GONE
        if status == "active":
            mark_away(engine, assignment_id=assignment_id, away=False)
        return 204
    if status == "active" and away and "form" not in body:  # went away, nothing new to keep
        mark_away(engine, assignment_id=assignment_id, away=True)
    return 204  # stored, or answered or released meanwhile: nothing to keep


def draft_routes(get_engine: Callable[[], Engine], *, prefix: str = "") -> list[Route]:
    async def draft(request: Request) -> Response:
        if not same_origin(request.headers):
            return Response(status_code=403)
        length = request.headers.get("content-length", "")
        if not length.isdigit() or int(length) > MAX_DRAFT_BYTES:
            return Response(status_code=413)
        try:  # bounded in size, depth and numbers before anything reads it
            body = bounded_json.loads(await request.body(), max_bytes=MAX_DRAFT_BYTES)
        except bounded_json.BadBody as bad:
            return Response(status_code=bad.status)
        if not isinstance(body, dict):
            return Response(status_code=400)
        status = await run_in_threadpool(store_draft, get_engine(), body)
        headers = {"Cache-Control": "no-store"}
        if status == GONE:
            return JSONResponse({"message": GONE_MESSAGE}, status_code=status, headers=headers)
        return Response(status_code=status, headers=headers)

    return [Route(f"{prefix}/draft", draft, methods=["POST"])]
