"""The labelling form: one Streamlit custom component (components v2, inline HTML/CSS/JS from
`annotate/web/static/`, no build step, nothing fetched from anywhere) and the data it is given.

Choosing, rating, picking a reason and typing happen in the browser; the component sends
events back as trigger values: `submit` and `draft` (the form), `skip`, `back`, `cancel`,
`open` (a pair id from the earlier answers), `history` (load that list) and `posts` (load the
past posts, sent only when they are opened: hundreds on real records). Every event but
`draft` carries `seq`, a number the page echoes back as `answered` (see `event_seq`). The data names
slots A and B only, never chosen/rejected, and carries model text as `render.safe_html`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import streamlit as st

from analysis.vocabulary import SLOTS, TIE
from annotate.labelling.answers import FormState, Question, form_questions
from annotate.labelling.drafts import draft_handle, draft_key
from annotate.labelling.earlier import EarlierAnswer
from annotate.labelling.page import Item
from annotate.queue.rules import heartbeat_seconds
from annotate.store.models import Study
from annotate.web import streamlit_dom
from annotate.web.render import safe_html
from annotate.wording import DIMENSION_HELP, PREFERENCE_QUESTION, REASON_LABELS, REASON_QUESTION

STATIC = Path(__file__).parent / "static"
EVENTS = ("submit", "draft", "skip", "back", "cancel", "open", "history", "posts")
REASON_KEYS = {"personal_fit": "P", "general_quality": "G", "both": "O", "unsure": "U"}
SESSION_KEY = "form_session"  # session_mark()
ASPECT_TITLES = {0: "0 = not covered", 1: "1 = somewhat", 2: "2 = very well"}

_component = st.components.v2.component(
    "annotate_label_form",
    html='<div class="form-root"></div>',
    css=(STATIC / "label_form.css").read_text(encoding="utf-8"),
    js=(STATIC / "label_form.js").read_text(encoding="utf-8"),
    isolate_styles=True,  # a shadow root: the page's styles and the form's stay apart
)


def page_token(item: Item, study: Study) -> str:
    """The opaque name of one pair's visit on the page (the component's key and `data.token`):
    keyed with the study's secret, the same on a reload, but no assignment id or count reaches
    the page (a gold pair used to show as a gap in the ids)."""
    message = f"page:{item.assignment.annotator_id}:{item.assignment.id}:{item.editing}"
    key = (study.coin_secret or "").encode()
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()[:20]


def _cell(question: Question, study: Study) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "kind": question.kind,
        "field": question.field,
        "name_field": f"{question.kind}:{question.field}",
        "name": question.name,
        "slot": question.slot,
    }
    if question.kind == "rating":
        dimension = question.field.rsplit("_", 1)[0]
        title, help_text = DIMENSION_HELP[dimension]
        cell |= {"short": title, "help": help_text, "label": f"{title} of response {question.slot}"}
        cell["option_titles"] = {
            str(study.scale_min): study.scale_min_label,
            str(study.scale_max): study.scale_max_label,
        }
    elif question.kind == "aspect":
        number = int(question.field.split("_")[0]) + 1
        cell |= {
            "short": f"Aspect {number}",
            "help": "How well this response covers the aspect (0 not covered, 1 somewhat, 2 very well)",
            "label": f"Aspect {number} in response {question.slot}",
            "option_titles": {str(k): v for k, v in ASPECT_TITLES.items()},
        }
    return cell


def guidelines_html(study: Study) -> str:
    """The study's guidelines for the form's panel: a markdown document, often hard-wrapped in
    its source (annotate.studies.demo.GUIDELINES), so a single newline joins the lines of a paragraph."""
    return safe_html(study.guidelines, newline="space") if study.guidelines.strip() else ""


def form_data(
    *,
    item: Item,
    study: Study,
    form: FormState,
    progress: tuple[int, int],
    seconds_before: float,
    can_go_back: bool,
    history: list[EarlierAnswer] | None,
    refused: list[Question] | None,
    flash: str | None,
    sign_out_url: str,
    flash_tone: str = "info",
    answered: int | None = None,
    reset: bool = False,
    with_posts: bool = False,
    draft_url: str | None = None,
    sign_in: str | None = None,
    history_empty: str = "",
    no_earlier: str = "",
) -> dict[str, Any]:
    """Everything the component shows for one pair (JSON). `answered` is the number of the last
    event the server acted on (the browser leaves its sending state on it); `reset` tells the
    browser to drop what it holds for this pair and show the stored answer; `flash_tone` is
    "info" or "warning"; the past posts are sent only `with_posts` (the browser asked);
    `sign_in` (the account's token hash) goes into the draft key (labelling.draft_key);
    `history_empty` is what the earlier answers' list says when it has none, `no_earlier` what
    Backspace says where there is no earlier pair (annotate/wording.py)."""
    pair = item.pair
    chosen_position = item.assignment.chosen_position
    texts = {chosen_position: pair.chosen}
    texts[next(s for s in SLOTS if s != chosen_position)] = pair.rejected
    aspects = list(pair.rubric_aspects or [])
    questions = form_questions(study, n_aspects=len(aspects))
    choices = [("A", "Response A", "A"), ("B", "Response B", "B")]
    if study.allow_ties:
        choices.append((TIE, "No preference", "N"))
    # the past posts are read only when asked for (Item.posts); their count always
    posts = (item.posts or []) if study.show_profile else []
    posts_count = item.posts_count if study.show_profile else 0
    return {
        "token": page_token(item, study),
        "editing": item.editing,
        "progress": {"done": progress[0], "total": progress[1]},
        "flash": flash,
        "flash_tone": flash_tone,
        "answered": answered,
        "reset": reset,
        "sign_out_url": sign_out_url,
        # where the form posts its drafts without a page run (annotate/web/drafts.py), with
        # the key for this assignment; none when editing an earlier answer (no drafts then)
        "draft": None
        if item.editing or draft_url is None
        else {
            "url": draft_url,
            # no raw id on the page: ids come in sequence, and a gold pair served out of
            # turn showed as a gap before it
            "handle": draft_handle(
                study.coin_secret,
                study_id=item.assignment.study_id,
                assignment_id=item.assignment.id,
            ),
            "key": draft_key(
                study.coin_secret,
                assignment_id=item.assignment.id,
                annotator_id=item.assignment.annotator_id,
                sign_in=sign_in,
            ),
            # the page had said it went away (rule 8 of annotate/queue/rules.py): it says it
            # is back as it shows the pair again
            "away": item.away,
            # seconds between the page's "I am still here" (rule 8's GONE_HOLD)
            "heartbeat": heartbeat_seconds(),
        },
        "guidelines_html": guidelines_html(study),
        "question_html": safe_html(pair.question),
        "aspects": [
            {
                "title_html": safe_html(str(a.get("aspect", ""))),
                "reason_html": safe_html(str(a.get("reason") or "")),
                "evidence_html": safe_html(str(a.get("evidence") or "")),
            }
            for a in aspects
        ],
        "narrative_html": safe_html(pair.narrative) if study.show_narrative else "",
        "posts_count": posts_count,
        "posts": [
            {"category": str(p.get("category") or ""), "html": safe_html(str(p.get("text", "")))}
            for p in posts
        ]
        if with_posts and item.posts is not None
        else None,
        "responses": {slot: safe_html(texts[slot]) for slot in SLOTS},
        "scale": list(range(study.scale_min, study.scale_max + 1)),
        "aspect_check": bool(study.aspect_check and aspects),
        "order": [_cell(q, study) for q in questions],
        "choices": choices,
        "allow_ties": study.allow_ties,
        "reasons": [(r, REASON_LABELS.get(r, r), REASON_KEYS.get(r, "")) for r in study.reasons],
        "preference_question": PREFERENCE_QUESTION,
        "quality_lead": (
            f"General quality, for anyone asking: {study.scale_min} = {study.scale_min_label}, "
            f"{study.scale_max} = {study.scale_max_label}"
        ),
        "aspect_lead": "How well it covers each aspect of this user: "
        "0 = not covered, 1 = somewhat, 2 = very well",
        "reason_question": REASON_QUESTION,
        "initial": {
            "slot": form.slot,
            "ratings": form.ratings,
            "reason": form.reason if form.reason in study.reasons else None,
            "comment": form.comment,
            "aspects": form.aspects,
        },
        "seconds_before": seconds_before,
        "can_go_back": can_go_back,
        "no_earlier": no_earlier,  # what Backspace says when there is no earlier pair
        "history": None
        if history is None
        else [{"pair_id": h.pair_id, "question": h.question, "answer": h.answer} for h in history],
        "history_empty": history_empty,  # what the earlier answers' list says when empty
        "refused": [f"{q.kind}:{q.field}" for q in refused or []],
        "dom": streamlit_dom.for_form(),
    }


def session_mark() -> str:
    """A random name for this Streamlit session (this tab on this replica), made on its first
    run. The form compares it across runs: a new one means the page reconnected to another
    session, which never received an event the form still waits for, so it sends it again."""
    mark: str | None = st.session_state.get(SESSION_KEY)
    if mark is None:
        mark = st.session_state[SESSION_KEY] = secrets.token_hex(8)
    return mark


def label_form(*, key: str, data: dict[str, Any], on_event: Callable[[str], None]) -> None:
    """Mount the form; `on_event(name)` runs (as a callback, before the next script run) when
    the browser sends one of EVENTS; `event_value(key, name)` reads what it sent."""
    # Any: each value goes to the component's **on_callbacks, but mypy checks a dict spread
    # into a call against its named parameters (key, data, ...) too
    callbacks: dict[str, Any] = {f"on_{name}_change": partial(on_event, name) for name in EVENTS}
    _component(key=key, data={**data, "session": session_mark()}, **callbacks)


def event_seq(payload: object) -> int | None:
    """The number an event carries (`seq`), or None."""
    seq = payload.get("seq") if isinstance(payload, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def event_value(key: str, name: str) -> object:
    state = st.session_state.get(key)
    if state is None:
        return None
    if isinstance(state, dict):
        return state.get(name)
    return getattr(state, name, None)
