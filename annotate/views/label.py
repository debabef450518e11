"""The labelling page: one pair at a time, answers committed before the next pair shows."""

from __future__ import annotations

import time

import streamlit as st

from annotate.access import engine, require_user
from annotate.annotations import other_slot
from annotate.answers import SLOTS, FormState, missing_answers
from annotate.assignment import history, progress, queue_status, skip
from annotate.assignment_rules import AccountClosed
from annotate.labelling import (
    Item,
    current_item,
    draft_answers,
    draft_seconds,
    load_study,
    save_draft,
    submit,
)
from annotate.models import Annotator, Study
from annotate.render import safe_markdown
from annotate.views.common import (
    finished_extras,
    guidelines_dialog,
    mark_guidelines_seen,
    show_guidelines,
)
from annotate.wording import (
    DIMENSION_HELP,
    PREFERENCE_QUESTION,
    QUALITY_INTRO,
    REASON_LABELS,
    REASON_QUESTION,
)

PROFILE_SHOWN = 5
# Not Enter: Enter also presses whichever rating button has the focus, clearing that rating.
SUBMIT_SHORTCUT = "S"
SIGN_OUT_LINK = '<a href="/logout" target="_self">Sign out</a>'
EDIT_KEY = "edit_pair_id"


def _key(name: str, item: Item) -> str:
    # Keys become CSS classes in the page: they name slots (A/B), never chosen/rejected.
    return f"{name}_{item.pair.id}"


def _form_from_state(item: Item, study: Study) -> FormState:
    ratings = {}
    for dimension in study.dimensions:
        for slot in SLOTS:
            ratings[f"{dimension}_{slot}"] = st.session_state.get(
                _key(f"rate_{dimension}_{slot}", item)
            )
    return FormState(
        slot=st.session_state.get(_key("slot", item)),
        ratings=ratings,
        reason=st.session_state.get(_key("reason", item)),
        comment=st.session_state.get(_key("comment", item)) or "",
    )


def _seed_state(item: Item, study: Study) -> None:
    """Fill the widgets once per tab from the stored answer or draft (a reload keeps them)."""
    seeded = _key("seeded", item)
    if st.session_state.get(seeded):
        return
    form = item.initial_form()
    st.session_state[_key("slot", item)] = form.slot
    for dimension in study.dimensions:
        for slot in SLOTS:
            st.session_state[_key(f"rate_{dimension}_{slot}", item)] = form.ratings.get(
                f"{dimension}_{slot}"
            )
    st.session_state[_key("reason", item)] = form.reason if form.reason in study.reasons else None
    st.session_state[_key("comment", item)] = form.comment
    # a reload continues the time on item from the draft instead of starting again
    spent = 0.0 if item.editing else draft_seconds(item.assignment.draft)
    st.session_state[_key("started", item)] = time.monotonic() - spent
    st.session_state[seeded] = True


def _forget_state(item: Item) -> None:
    suffix = f"_{item.pair.id}"
    for key in [k for k in st.session_state if isinstance(k, str) and k.endswith(suffix)]:
        del st.session_state[key]


def _pick(item: Item, slot: str) -> None:
    st.session_state[_key("slot", item)] = slot


def _on_submit(item: Item, study: Study) -> None:
    form = _form_from_state(item, study)
    missing = missing_answers(study, form)
    if missing:
        st.session_state["missing"] = missing
        return
    seconds = time.monotonic() - st.session_state.get(_key("started", item), time.monotonic())
    try:
        submit(engine(), item=item, form=form, seconds=seconds)
    except AccountClosed:
        return  # nothing was saved; the rerun's sign-in check shows the page for a closed account
    st.session_state.pop("missing", None)
    st.session_state["flash"] = "Answer saved." if not item.editing else "Your change was saved."
    st.session_state.pop(EDIT_KEY, None)
    _forget_state(item)


def _on_skip(item: Item) -> None:
    skip(engine(), annotator_id=item.assignment.annotator_id, pair_id=item.pair.id)
    st.session_state.pop("missing", None)
    _forget_state(item)


def _on_cancel_edit(item: Item) -> None:
    st.session_state.pop(EDIT_KEY, None)
    st.session_state.pop("missing", None)
    _forget_state(item)


def _header(user: Annotator, study: Study) -> None:
    done_total = progress(engine(), annotator_id=user.id)
    left, right = st.columns([4, 2], vertical_alignment="bottom")
    with left:
        fraction = done_total.done / done_total.total if done_total.total else 1.0
        st.progress(min(fraction, 1.0), text=f"{done_total.done} of {done_total.total} pairs")
    with right, st.container(horizontal=True, horizontal_alignment="right"):
        if study.guidelines.strip() and st.button("Guidelines", key="open_guidelines"):
            guidelines_dialog(study)
        # Our own constant markup (never data): a same-tab link, which st.link_button is not.
        st.markdown(SIGN_OUT_LINK, unsafe_allow_html=True)


def _history_picker(user: Annotator) -> None:
    done = history(engine(), annotator_id=user.id)
    if not done:
        return
    with st.expander(f"Go back to an earlier pair ({len(done)} answered)"):
        labels = {
            pair_id: f"{n}. pair {key}" for n, (pair_id, key) in enumerate(reversed(done), start=1)
        }
        choice = st.selectbox(
            "Pair to revisit",
            options=list(reversed(list(labels))),
            format_func=labels.get,
            index=None,
            placeholder="Choose a pair you answered",
            key="history_choice",
        )
        if st.button("Open this pair", key="open_history", disabled=choice is None):
            st.session_state[EDIT_KEY] = choice
            st.session_state.pop("history_choice", None)
            st.rerun()


def _pair_context(item: Item, study: Study) -> None:
    pair = item.pair
    st.markdown("##### The user's question")
    with st.container(border=True):
        st.markdown(safe_markdown(pair.question))
    if pair.rubric_aspects or (study.show_narrative and pair.narrative):
        with st.expander("What this user expects", expanded=True):
            for aspect in pair.rubric_aspects:
                st.markdown(f"**{safe_markdown(str(aspect.get('aspect', '')))}**")
                if aspect.get("reason"):
                    st.markdown(safe_markdown(f"Why: {aspect['reason']}"))
                if aspect.get("evidence"):
                    st.caption(safe_markdown(f"Evidence: {aspect['evidence']}"))
            if study.show_narrative and pair.narrative:
                st.markdown("**In the user's own words**")
                st.markdown(safe_markdown(pair.narrative))
    if study.show_profile and pair.profile:
        posts = pair.profile
        with st.expander(f"The user's past posts ({len(posts)})"):
            show_all = len(posts) > PROFILE_SHOWN and st.toggle(
                f"Show all {len(posts)} posts", key=_key("all_posts", item)
            )
            for post in posts if show_all else posts[:PROFILE_SHOWN]:
                if post.get("category"):
                    st.caption(safe_markdown(str(post["category"])))
                st.markdown(safe_markdown(str(post.get("text", ""))))
                st.divider()
            if not show_all and len(posts) > PROFILE_SHOWN:
                st.caption(f"… and {len(posts) - PROFILE_SHOWN} more posts.")


def _responses(item: Item) -> None:
    texts = {
        item.assignment.chosen_position: item.pair.chosen,
        other_slot(item.assignment.chosen_position): item.pair.rejected,
    }
    columns = st.columns(2)
    for column, slot in zip(columns, SLOTS, strict=True):
        with column:
            st.markdown(f"#### Response {slot}")
            with st.container(height=460, border=True, key=_key(f"response_{slot}", item)):
                st.markdown(safe_markdown(texts[slot]))


def _answer_form(item: Item, study: Study) -> None:
    st.markdown(f"#### {PREFERENCE_QUESTION}")
    chosen_slot = st.session_state.get(_key("slot", item))
    options = [("A", "Response A", "A"), ("B", "Response B", "B")]
    if study.allow_ties:
        options.append(("tie", "No preference", "N"))
    with st.container(horizontal=True):
        for value, label, shortcut in options:
            st.button(
                label,
                key=_key(f"pick_{value}", item),
                type="primary" if chosen_slot == value else "secondary",
                icon=":material/check:" if chosen_slot == value else None,
                shortcut=shortcut,
                on_click=_pick,
                args=(item, value),
            )
    if study.dimensions:
        st.markdown("#### General quality")
        st.caption(
            f"{QUALITY_INTRO}  \nScale: {study.scale_min} = {study.scale_min_label}, "
            f"{study.scale_max} = {study.scale_max_label}."
        )
        scale = list(range(study.scale_min, study.scale_max + 1))
        for dimension in study.dimensions:
            title, help_text = DIMENSION_HELP[dimension]
            cells = st.columns([2, 3, 3], vertical_alignment="center")
            cells[0].markdown(f"**{title}**", help=help_text)
            for cell, slot in zip(cells[1:], SLOTS, strict=True):
                cell.segmented_control(
                    f"{title} of response {slot}",
                    options=scale,
                    key=_key(f"rate_{dimension}_{slot}", item),
                )
    if study.reasons:
        # A button group, not a radio: keyboard shortcuts keep working after a click on it.
        st.segmented_control(
            REASON_QUESTION,
            options=study.reasons,
            format_func=lambda r: REASON_LABELS.get(r, r),
            key=_key("reason", item),
        )
    st.text_area("Comment (optional)", key=_key("comment", item), height=68, max_chars=4000)

    missing = st.session_state.get("missing")
    if missing:
        st.error("Please answer before submitting: " + "; ".join(missing) + ".")
    with st.container(horizontal=True):
        st.button(
            "Save change" if item.editing else "Submit",
            key=_key("submit", item),
            type="primary",
            shortcut=SUBMIT_SHORTCUT,
            on_click=_on_submit,
            args=(item, study),
        )
        if item.editing:
            st.button("Cancel", key=_key("cancel", item), on_click=_on_cancel_edit, args=(item,))
        else:
            st.button("Skip for now", key=_key("skip", item), on_click=_on_skip, args=(item,))
    st.caption(
        "Keys: **A** / **B**"
        + (" / **N** (no preference)" if study.allow_ties else "")
        + f" to choose, **{SUBMIT_SHORTCUT}** to submit."
    )


def _finished(user: Annotator, study: Study) -> None:
    status = queue_status(engine(), annotator_id=user.id)
    if status.busy_until is not None:  # no completion code while pairs may come back
        st.info(
            "Every pair left is being labelled by someone else right now. Please come back "
            f"after {status.busy_until:%H:%M} UTC: pairs nobody answers come back then."
        )
        return
    if status.answered == 0:
        st.info("There is no pair for you to label in this study.")
        return
    st.success("You have labelled every pair available to you. Thank you!")
    finished_extras(user, study)


def main() -> None:
    user = require_user()
    study = load_study(engine(), study_id=user.study_id)
    if study.guidelines.strip() and not user.guidelines_seen:
        show_guidelines(study)
        if st.button("Start labelling", type="primary", key="start_labelling"):
            mark_guidelines_seen(engine(), annotator_id=user.id)
            st.rerun()
        return

    flash = st.session_state.pop("flash", None)
    if flash:
        st.toast(flash, icon=":material/check_circle:")
    _header(user, study)
    item = current_item(engine(), annotator_id=user.id, pair_id=st.session_state.get(EDIT_KEY))
    if item is None:
        st.session_state.pop(EDIT_KEY, None)
        _finished(user, study)
        _history_picker(user)
        return
    if item.editing:
        st.info("You are changing an answer you already gave. Saving replaces it.")
    _seed_state(item, study)
    _pair_context(item, study)
    _responses(item)
    _answer_form(item, study)
    if not item.editing:
        form = _form_from_state(item, study)
        if form.as_draft() != draft_answers(item.assignment.draft):
            spent = time.monotonic() - st.session_state[_key("started", item)]
            save_draft(engine(), assignment_id=item.assignment.id, form=form, seconds=spent)
    _history_picker(user)


main()
