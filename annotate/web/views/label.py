"""The labelling page: one pair at a time in one component (`annotate.web.label_form`); answers are
given in the browser and committed on Submit, before the next pair shows."""

from __future__ import annotations

import math

import streamlit as st

from annotate.labelling.answers import FormState, missing_questions
from annotate.labelling.drafts import draft_seconds, drop_revised_drafts, save_draft
from annotate.labelling.earlier import EarlierAnswer, earlier_answers, previous_pair
from annotate.labelling.page import Item, label_page, mark_guidelines_seen
from annotate.labelling.step import StaleAnswer, submit
from annotate.queue.assignment import next_assignment, progress, queue_status, skip
from annotate.queue.rules import AccountClosed, GivenAway, PairRevised
from annotate.store.models import Annotator, Study, id_of
from annotate.web import streamlit_dom
from annotate.web.identity import (
    ended_message,
    engine,
    require_user,
    signed_in_despite_invalid_link,
    still_signed_in,
)
from annotate.web.inert import md_literal
from annotate.web.label_form import event_seq, event_value, form_data, label_form, page_token
from annotate.web.views.common import (
    app_prefix,
    finished_extras,
    focus_button,
    show_guidelines,
    sign_out_link,
    sign_out_url,
)
from annotate.wording import no_earlier_answers, no_earlier_pair

EDIT_KEY = "edit_pair_id"
REFUSED_KEY = "refused"
HISTORY_KEY = "show_history"
POSTS_KEY = "posts_pair_id"  # the pair whose past posts the browser asked for
FLASH_KEY, TONE_KEY = "flash", "flash_tone"
ANSWERED_KEY = "form_answered"  # the number of the last event acted on (label_form.event_seq)
RESET_KEY = "form_reset"  # the browser drops what it holds and shows the stored answer
SKIPPED_KEY = "skipped_pair"
LAST_PAIR_LEFT = (
    "This is the last pair left for you, so it is shown again: answer it, or skip it later."
)
REVISED = (
    "A pair you had open was revised by the study's maintainers: your unsaved answers to its "
    "earlier text were dropped. Its new version comes up like any other pair."
)
MAX_SECONDS = 24 * 3600.0
RECHECK_SECONDS = 20  # how often a page waiting for pairs held by others looks again
# Our own constant CSS (never data): the form starts right under Streamlit's thin header, and
# the previous pair's form, which Streamlit retains until the run that replaced it is over, is
# not shown next to the new one.
PAGE_CSS = (
    f"<style>{streamlit_dom.MAIN_BLOCK} {{ padding-top: 3.6rem; padding-bottom: 1rem; }}"
    f' [class*="{streamlit_dom.KEY_CLASS_PREFIX}label_form_"][{streamlit_dom.RETAINED}]'
    " { display: none; }</style>"
)


def _form_key(item: Item, study: Study) -> str:
    # One component per pair and visit: a new pair mounts afresh (at its top, nothing of the
    # previous pair left). Keys become CSS classes: an opaque token, never ids or chosen/rejected.
    return f"label_form_{page_token(item, study)}"


def _seconds(payload: object) -> float | None:
    value = payload.get("seconds") if isinstance(payload, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    # finite numbers only: a forged NaN passed the clamp and reached the database
    return min(max(seconds, 0.0), MAX_SECONDS) if math.isfinite(seconds) else None


def _form(payload: object, item: Item, study: Study) -> FormState:
    sent = payload.get("form") if isinstance(payload, dict) else None
    return FormState.from_browser(sent, study=study, n_aspects=len(item.pair.rubric_aspects or []))


def _leave(item: Item, study: Study, payload: object) -> None:
    """Keep a new pair's answers so far as its draft before the page shows another pair."""
    if not item.editing and isinstance(payload, dict):
        save_draft(
            engine(),
            assignment_id=item.assignment.id,
            form=_form(payload, item, study),
            seconds=_seconds(payload),
        )
    st.session_state.pop(REFUSED_KEY, None)
    st.session_state.pop(HISTORY_KEY, None)


def _say(text: str, tone: str = "info") -> None:
    """The message the page shows with the next run ("info" or "warning")."""
    st.session_state[FLASH_KEY] = text
    st.session_state[TONE_KEY] = tone


def _on_event(name: str, *, key: str, item: Item, study: Study, user: Annotator) -> None:
    annotator_id = id_of(user)
    if not still_signed_in(annotator_id):
        return  # signed out, a newer link, deactivated: nothing stored, nothing reserved
    payload = event_value(key, name)
    seq = event_seq(payload)
    if seq is not None and seq <= st.session_state.get(ANSWERED_KEY, -1):
        return  # sent again after a reconnect, but already acted on: the rerun shows the result
    if seq is not None:  # every answer, whatever it shows, ends the browser's sending state
        st.session_state[ANSWERED_KEY] = seq
    if name == "submit":
        form = _form(payload, item, study)
        missing = missing_questions(study, form, n_aspects=len(item.pair.rubric_aspects or []))
        if missing:
            st.session_state[REFUSED_KEY] = missing
            return
        try:
            submit(engine(), item=item, form=form, seconds=_seconds(payload))
        except AccountClosed:
            return  # nothing saved; the rerun's sign-in check shows the page for a closed account
        except GivenAway as given:
            # released while the page was away and answered by others: the next pair shows
            _say(f"{str(given)[0].upper()}{str(given)[1:]}.", "warning")
            st.session_state.pop(REFUSED_KEY, None)
            return
        except PairRevised as revised:
            # the pair got a new version while this page showed the earlier one: nothing was
            # stored, its draft is dropped, and the next pair (maybe the new version) shows
            drop_revised_drafts(engine(), annotator_id=id_of(user))
            _say(f"{str(revised)[0].upper()}{str(revised)[1:]}.", "warning")
            st.session_state.pop(REFUSED_KEY, None)
            st.session_state.pop(EDIT_KEY, None)
            return
        except StaleAnswer as stale:
            if item.pair.is_gold:  # a check's first answer is final: nothing to change
                _say(
                    f"This pair was answered in another tab at {stale.submitted_at:%H:%M} UTC "
                    "and that first answer is final: your answer here was not saved.",
                    "warning",
                )
                st.session_state.pop(REFUSED_KEY, None)
                return
            # another tab answered this pair after this one loaded it: show the answer kept
            _say(
                f"This pair was answered in another tab at {stale.submitted_at:%H:%M} UTC; your "
                "answer here was not saved. That answer is shown below: change it if you meant to.",
                "warning",
            )
            st.session_state[EDIT_KEY] = item.pair.id
            st.session_state[RESET_KEY] = True
            st.session_state.pop(REFUSED_KEY, None)
            return
        _say("Your change was saved." if item.editing else "Answer saved.")
        st.session_state.pop(EDIT_KEY, None)
        st.session_state.pop(REFUSED_KEY, None)
        st.session_state.pop(HISTORY_KEY, None)
    elif name == "draft" and not item.editing:
        save_draft(
            engine(),
            assignment_id=item.assignment.id,
            form=_form(payload, item, study),
            seconds=_seconds(payload),
        )
    elif name == "skip" and not item.editing:
        _leave(item, study, None)
        skip(engine(), annotator_id=annotator_id, pair_id=item.assignment.pair_id)
        st.session_state[SKIPPED_KEY] = item.pair.id
    elif name == "cancel":
        _leave(item, study, None)
        st.session_state.pop(EDIT_KEY, None)
    elif name == "back":
        before = item.pair.id if item.editing else None
        target = previous_pair(engine(), annotator_id=annotator_id, before=before)
        if target is None:
            answered = progress(engine(), annotator_id=annotator_id).done
            _say(no_earlier_pair(editing=item.editing, answered=answered))
            return
        _leave(item, study, payload)
        st.session_state[EDIT_KEY] = target
    elif name == "open":
        wanted = payload.get("pair_id") if isinstance(payload, dict) else payload
        known = {a.pair_id for a in earlier_answers(engine(), annotator_id=annotator_id)}
        # a pair id is a number or text; anything else (a forged list or dict) names no pair
        if isinstance(wanted, int | str) and not isinstance(wanted, bool) and wanted in known:
            _leave(item, study, None)
            st.session_state[EDIT_KEY] = wanted
        else:
            _say("That pair is not one of your earlier answers, so it cannot be opened.")
    elif name == "history":
        st.session_state[HISTORY_KEY] = True
    elif name == "posts":
        st.session_state[POSTS_KEY] = item.pair.id


def _finished(user: Annotator, study: Study) -> None:
    status = queue_status(engine(), annotator_id=id_of(user))
    if status.busy_until is not None:  # no completion code while pairs may come back
        st.info(
            "Every pair left is being labelled by someone else right now. Pairs nobody answers "
            f"come back by {status.busy_until:%H:%M} UTC; this page looks again every "
            f"{RECHECK_SECONDS} seconds and shows the next pair as soon as there is one."
        )
        _recheck(user)
    elif status.answered == 0:
        st.info("There is no pair for you to label in this study.")
    elif status.screened_out:  # no thanks for work done and no completion code: see prolific
        finished_extras(user, study)
    else:
        st.success("You have labelled every pair available to you. Thank you!")
        finished_extras(user, study)
    done = earlier_answers(engine(), annotator_id=id_of(user))
    if done:
        _earlier_answers_picker(done)
    sign_out_link()


@st.fragment(run_every=RECHECK_SECONDS)
def _recheck(user: Annotator) -> None:
    """While every pair left is held by others: look again now and then (a pair whose page
    went away comes back within AWAY_HOLD, annotate/queue/rules.py), and show it."""
    if next_assignment(engine(), annotator_id=id_of(user)) is not None:
        st.rerun()


def _earlier_answers_picker(done: list[EarlierAnswer]) -> None:
    with st.expander(f"Change an earlier answer ({len(done)} answered)"):
        labels = {a.pair_id: f"{a.question} — {a.answer}" for a in done}
        choice = st.selectbox(
            "Pair to revisit",
            options=list(labels),
            format_func=lambda pair_id: labels.get(pair_id, ""),
            index=None,
            placeholder="Choose a pair you answered",
            key="history_choice",
        )
        if st.button("Open this pair", key="open_history", disabled=choice is None):
            st.session_state[EDIT_KEY] = choice
            st.session_state.pop("history_choice", None)
            st.rerun()


def _guidelines(study: Study, user: Annotator) -> None:
    show_guidelines(study)
    if st.button("Start labelling", type="primary", key="start_labelling"):
        mark_guidelines_seen(engine(), annotator_id=id_of(user))
        st.rerun()
    focus_button("start_labelling")  # Enter starts, no Tab first
    sign_out_link()


def main() -> None:
    user = require_user()
    if user.study_id is None:  # a maintainer's account made for no study
        st.info("This account labels in no study: ask the study's maintainer for your link.")
        sign_out_link()
        return
    page = label_page(
        engine(),
        annotator_id=id_of(user),
        study_id=user.study_id,
        pair_id=st.session_state.get(EDIT_KEY),
        posts_for=st.session_state.get(POSTS_KEY),
        guidelines_seen=user.guidelines_seen,
    )
    study, item = page.study, page.item
    invalid_link = signed_in_despite_invalid_link(user)
    if page.guidelines_first:
        if invalid_link:
            st.warning(md_literal(invalid_link))
        _guidelines(study, user)
        return
    st.html(PAGE_CSS)
    ended = ended_message()  # an event of another account's page, refused (identity.py)
    for said in (ended, invalid_link):
        if said:
            _say(said, "warning")
    if page.revised_draft and drop_revised_drafts(engine(), annotator_id=id_of(user)):
        _say(REVISED, "warning")
    flash = st.session_state.pop(FLASH_KEY, None)
    tone = st.session_state.pop(TONE_KEY, "info")
    skipped = st.session_state.pop(SKIPPED_KEY, None)
    if item is None:
        st.session_state.pop(EDIT_KEY, None)
        if flash:
            st.toast(flash, icon=":material/check_circle:")
        _finished(user, study)
        return
    if skipped is not None and skipped == item.pair.id and not item.editing:
        flash, tone = LAST_PAIR_LEFT, "info"
    shown = page.progress
    assert shown is not None  # read with every pair (None only with the guidelines first)
    key = _form_key(item, study)
    history = (
        earlier_answers(engine(), annotator_id=id_of(user))
        if st.session_state.get(HISTORY_KEY)
        else None
    )
    data = form_data(
        item=item,
        study=study,
        form=item.initial_form(),
        progress=(shown.done, shown.total),
        seconds_before=0.0 if item.editing else draft_seconds(item.assignment.draft),
        can_go_back=page.can_go_back,
        history=history,
        history_empty=no_earlier_answers(answered=shown.done),
        no_earlier=no_earlier_pair(editing=item.editing, answered=shown.done),
        refused=st.session_state.get(REFUSED_KEY),
        flash=flash,
        flash_tone=tone,
        answered=st.session_state.get(ANSWERED_KEY),
        reset=bool(st.session_state.pop(RESET_KEY, False)),
        sign_out_url=sign_out_url(),
        with_posts=item.posts is not None,
        draft_url=f"{app_prefix()}/draft",
        sign_in=user.token_hash,
    )
    label_form(
        key=key,
        data=data,
        on_event=lambda name: _on_event(name, key=key, item=item, study=study, user=user),
    )


main()
