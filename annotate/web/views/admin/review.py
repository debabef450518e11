"""Console: review contested pairs (a queue by reason, least certain or most contested first),
read each with its answers, and keep, drop or revise it (annotate/review/decisions.py).

Model text (the responses, the question, the rubric) and annotators' comments are untrusted:
shown inert (render.safe_markdown, inert.md_literal) or in tables, which show text as text."""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd
import streamlit as st

from analysis.review.decisions import DROP_CATEGORIES
from analysis.review.queue import REASONS, reason_counts, reasons, review_queue
from analysis.vocabulary import DECISIONS, RATING_COLUMNS
from annotate.errors import UserError
from annotate.review.decisions import (
    AnswerShown,
    DecidedMeanwhile,
    PairReview,
    Revision,
    earlier_version,
    pair_review,
    record_decision,
)
from annotate.web.identity import engine
from annotate.web.inert import md_literal
from annotate.web.render import safe_markdown
from annotate.web.views.admin.shared import show_error, study_page, study_report_data

SEEN_KEY = "review_seen"  # pair key -> what the page showed when the pair was opened
FLASH_KEY = "review_flash"
PICK_KEY = "review_pair"
DECISION_WORDS = {
    "keep": "Keep (ships whatever the crowd's verdict)",
    "drop": "Drop (does not ship)",
    "revise": "Revise (edit the responses or rubric: a new version, labelled again)",
}
UNDECIDED, DECIDED, EVERY = "undecided", "decided", "all"

user, study, study_id = study_page("Review")

st.caption(
    "Pairs the crowd found contested, least certain or most contested first. A decision "
    "applies to the version you read: **keep** or **drop** overrides the crowd's verdict in "
    "`--export-valid` and `--export-cleaned`; **revise** makes a new version, queued for its "
    "full overlap (the earlier version and its answers are kept)."
)

report, _annotations, _pairs = study_report_data(study, bootstrap=0)
pairs = report["pairs"]
counts = reason_counts(pairs)
summary = report.get("review") or {}
cols = st.columns(len(REASONS) + 1)
for column, (reason, label) in zip(cols, REASONS.items(), strict=False):
    column.metric(label.capitalize(), f"{counts[reason]:,}")
cols[-1].metric(
    "Decided",
    f"{summary.get('reviewed', 0):,}",
    help=(
        f"kept {summary.get('kept', 0)}, dropped {summary.get('dropped', 0)}, revised "
        f"{summary.get('revised', 0)}"
    ),
)

known = {p["pair_id"] for p in pairs}


def _open_by_id() -> None:
    wanted_id = st.session_state.get("review_open", "").strip()
    if wanted_id in known:
        st.session_state[PICK_KEY] = wanted_id
    elif wanted_id:
        st.session_state[FLASH_KEY] = ("warning", md_literal(f"No pair {wanted_id} in this study."))
    st.session_state["review_open"] = ""


left, middle, right = st.columns([3, 2, 2])
middle.text_input(
    "Or open any pair by its id",
    key="review_open",
    on_change=_open_by_id,
    help="a pair with no reason to be in the queue (a unanimous valid pair, say) can be "
    "decided too",
)
wanted = left.multiselect(
    "Show pairs that are (none = any reason)",
    list(REASONS),
    format_func=lambda reason: REASONS.get(reason, reason),
    key="review_reasons",
)
status = right.radio(
    "Decision taken",
    [UNDECIDED, DECIDED, EVERY],
    format_func=lambda shown: {UNDECIDED: "not yet", DECIDED: "decided", EVERY: "either"}[shown],
    horizontal=True,
    key="review_status",
)
current = st.session_state.get(PICK_KEY)


def _listed(pair: dict[str, Any]) -> bool:
    # the pair on screen stays listed, so a decision taken on it (here or by another
    # maintainer meanwhile) shows on it instead of the page moving on by itself
    if pair["pair_id"] == current or status == EVERY:
        return True
    return bool(pair.get("decision")) == (status == DECIDED)


queue = [p for p in review_queue(pairs, wanted=wanted) if _listed(p)]
on_screen = next((p for p in pairs if p["pair_id"] == current), None)
if on_screen is not None and all(p["pair_id"] != current for p in queue):
    queue.insert(0, {**on_screen, "reasons": reasons(on_screen)})  # e.g. revised: no answers yet

flash = st.session_state.pop(FLASH_KEY, None)
if flash:
    tone, text = flash
    (st.success if tone == "success" else st.warning)(text)

st.header(f"{len(queue):,} pairs to review")
if not queue:
    st.info("No pair matches: every contested pair is decided, or none has enough answers yet.")
    st.stop()

table = pd.DataFrame(
    {
        "pair": [p["pair_id"] for p in queue],
        "version": [p["pair_version"] for p in queue],
        "verdict": [p["verdict"] for p in queue],
        "chosen": [p["n_chosen"] for p in queue],
        "rejected": [p["n_rejected"] for p in queue],
        "tie": [p["n_tie"] for p in queue],
        "why": [", ".join(REASONS[r] for r in p["reasons"]) for p in queue],
        "decision": [p.get("decision") or "" for p in queue],
    }
)
st.dataframe(table, hide_index=True, height=min(38 + 35 * len(table), 250))

keys = [p["pair_id"] for p in queue]
if st.session_state.get(PICK_KEY) not in keys:
    st.session_state[PICK_KEY] = keys[0]
pick_col, next_col = st.columns([4, 1], vertical_alignment="bottom")
pair_key = pick_col.selectbox("Pair to review", keys, key=PICK_KEY)
position = keys.index(pair_key)


def _next() -> None:
    st.session_state[PICK_KEY] = keys[(position + 1) % len(keys)]


next_col.button("Next pair", on_click=_next, key="review_next", disabled=len(keys) < 2)
entry = queue[position]
shown = pair_review(engine(), study_id=study_id, pair_key=pair_key)
if shown is None:
    st.warning("This pair is no longer in the study.")
    st.stop()
seen = st.session_state.setdefault(SEEN_KEY, {})
if pair_key not in seen or seen[pair_key].pair_version != shown.version:
    seen[pair_key] = shown.seen  # what this page showed when the pair was opened


def _token(review: PairReview) -> str:
    # widget keys become CSS classes: an opaque token, never a pair id from a file
    return hashlib.sha256(f"{review.pair_key}\x1f{review.version}".encode()).hexdigest()[:12]


def _edited_rubric(rubric: pd.DataFrame, aspects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rubric as edited: a row left as it was keeps its aspect whole (its other fields
    too), an edited or added row is its three fields, an emptied aspect is removed."""
    edited = []
    for i, row in enumerate(rubric.fillna("").to_dict(orient="records")):
        values = {name: str(row[name]).strip() for name in ("aspect", "evidence", "reason")}
        if not values["aspect"]:
            continue
        original = aspects[i] if i < len(aspects) else None
        if original is not None and all(
            str(original.get(name) or "").strip() == value for name, value in values.items()
        ):
            edited.append(original)
        else:
            edited.append(values)
    return edited


def _verdict_line(entry: dict[str, Any]) -> str:
    parts = [f"verdict **{md_literal(entry['verdict'])}**"]
    parts.append(
        f"{entry['n_chosen']} chose the chosen response, {entry['n_rejected']} the rejected "
        f"one, {entry['n_tie']} no preference"
    )
    flags = [f for f in entry.get("flags") or [] if f]
    if flags:
        parts.append("flags: " + md_literal(", ".join(flags)))
    probabilities = entry.get("probabilities")
    if isinstance(probabilities, dict) and probabilities:
        parts.append(
            "probabilities: "
            + ", ".join(f"{md_literal(k)} {v:.2f}" for k, v in probabilities.items())
        )
    return " · ".join(parts)


st.subheader(f"Pair {md_literal(shown.pair_key)}, version {shown.version}")
st.markdown(_verdict_line(entry))
record = shown.record
st.markdown(f"**Question** ({md_literal(record.get('category') or 'no category')})")
with st.container(border=True):
    st.markdown(safe_markdown(record.get("question")))
posts = record.get("profile") or []
words, rubric_col = st.columns(2)
with words:
    st.markdown(
        "**The user's own words** "
        f"({len(posts):,} past {'post' if len(posts) == 1 else 'posts'} of theirs on the Pairs "
        "page)"
    )
    st.markdown(safe_markdown(record.get("narrative")) or "_none_")
aspects = record.get("rubric_aspects") or []
with rubric_col:
    st.markdown("**Rubric** (what this user expects)")
    st.markdown("\n".join(f"- {md_literal(a.get('aspect', ''))}" for a in aspects) or "_none_")

# the responses whole, side by side: a box of fixed height that scrolls cannot be scrolled by
# keyboard (Streamlit gives it no focus; axe's scrollable-region-focusable), and the page
# scrolls anyway
left, right = st.columns(2)
with left:
    st.markdown("**Chosen** (built to follow the rubric)")
    with st.container(border=True):
        st.markdown(safe_markdown(record.get("chosen")))
with right:
    st.markdown("**Rejected** (built to violate it)")
    with st.container(border=True):
        st.markdown(safe_markdown(record.get("rejected")))

st.markdown(f"**{len(shown.answers)} answers to this version**")
dimensions = [d for d in (study.dimensions or []) if f"{d}_chosen" in RATING_COLUMNS]


def _ratings(answer: AnswerShown, side: str) -> str:
    values = [answer.ratings.get(f"{d}_{side}") for d in dimensions]
    return " / ".join("–" if v is None else str(v) for v in values)


if shown.answers:
    rated = " / ".join(dimensions)
    answers = pd.DataFrame(
        {
            "annotator": [a.annotator for a in shown.answers],
            "answer": [a.preference for a in shown.answers],
            "chosen shown as": [a.chosen_position or "" for a in shown.answers],
            "chosen rated": [_ratings(a, "chosen") for a in shown.answers],
            "rejected rated": [_ratings(a, "rejected") for a in shown.answers],
            "reason": [(a.main_reason or "").replace("_", " ") for a in shown.answers],
            "comment": [a.comment or "" for a in shown.answers],
            "seconds": [a.seconds for a in shown.answers],
            "submitted (UTC)": [
                f"{a.submitted_at:%Y-%m-%d %H:%M}" if a.submitted_at else "" for a in shown.answers
            ],
        }
    )
    st.dataframe(
        answers,
        hide_index=True,
        column_config={
            "chosen shown as": st.column_config.TextColumn(
                "chosen shown as", help="the slot in which this annotator saw the chosen response"
            ),
            "chosen rated": st.column_config.TextColumn("chosen rated", help=rated),
            "rejected rated": st.column_config.TextColumn("rejected rated", help=rated),
            "comment": st.column_config.TextColumn("comment", width="large"),
            "seconds": st.column_config.NumberColumn("seconds", format="%.0f"),
        },
    )

history = entry.get("earlier_versions") or []
if history:
    with st.expander(f"Earlier versions ({len(history)})"):
        for old in history:
            decided = f", decision: {old['decision']}" if old.get("decision") else ""
            st.markdown(
                f"**Version {old['pair_version']}**: {old['n_annotations']} answers, verdict "
                f"{md_literal(old.get('verdict') or 'none')}{md_literal(decided)}"
            )
            earlier = earlier_version(
                engine(), study_id=study_id, pair_key=pair_key, version=old["pair_version"]
            )
            if earlier is not None:
                a, b = st.columns(2)
                with a, st.container(border=True, height=200):
                    st.markdown(safe_markdown(earlier.get("chosen")))
                with b, st.container(border=True, height=200):
                    st.markdown(safe_markdown(earlier.get("rejected")))

if shown.decisions:
    st.markdown("**Decisions**")
    for taken in reversed(shown.decisions):
        what = taken.decision + (f" ({taken.category})" if taken.category else "")
        said = f": {taken.note}" if taken.note else ""
        st.markdown(
            "- "
            + md_literal(
                f"version {taken.pair_version}: {what} by {taken.reviewer} at "
                f"{taken.decided_at:%Y-%m-%d %H:%M} UTC{said}"
            )
        )

st.subheader("Your decision")
token = _token(shown)
decision = st.radio(
    "Decision",
    list(DECISIONS),
    format_func=lambda word: DECISION_WORDS.get(word, word),
    index=None,
    key=f"review_decision_{token}",
)
category, revision = None, None
if decision == "drop":
    category = st.selectbox(
        "What is wrong with it",
        list(DROP_CATEGORIES),
        format_func=lambda c: c.replace("_", " "),
        key=f"review_category_{token}",
    )
if decision == "revise":
    st.caption(
        "Edit the text as the pair should read. The new version is queued for its full "
        "overlap; nobody is shown the earlier text again."
    )
    new_chosen = st.text_area(
        "Chosen response", value=record.get("chosen") or "", height=220, key=f"review_c_{token}"
    )
    new_rejected = st.text_area(
        "Rejected response",
        value=record.get("rejected") or "",
        height=220,
        key=f"review_r_{token}",
    )
    rubric = st.data_editor(
        pd.DataFrame(
            [
                {
                    "aspect": a.get("aspect", ""),
                    "evidence": a.get("evidence") or "",
                    "reason": a.get("reason") or "",
                }
                for a in aspects
            ],
            columns=["aspect", "evidence", "reason"],
        ),
        num_rows="dynamic",
        hide_index=True,
        key=f"review_rubric_{token}",
        column_config={
            "aspect": st.column_config.TextColumn("aspect", required=True, width="medium"),
            "evidence": st.column_config.TextColumn("evidence", width="medium"),
            "reason": st.column_config.TextColumn("reason", width="medium"),
        },
    )
    edited_aspects = _edited_rubric(rubric, aspects)
    revision = Revision(chosen=new_chosen, rejected=new_rejected, rubric_aspects=edited_aspects)
note = st.text_area("Note (optional)", key=f"review_note_{token}", height=80)

if (
    st.button(
        "Record decision", type="primary", key=f"review_record_{token}", disabled=decision is None
    )
    and decision is not None
):
    try:
        made = record_decision(
            engine(),
            study_id=study_id,
            pair_key=pair_key,
            decision=decision,
            reviewer=user.name,
            seen=seen[pair_key],
            category=category,
            note=note,
            revision=revision,
        )
    except DecidedMeanwhile as exc:
        seen.pop(pair_key, None)  # show what the other reviewer did
        st.session_state[FLASH_KEY] = ("warning", md_literal(str(exc)))
        st.rerun()
    except UserError as exc:
        show_error(exc)
    else:
        seen.pop(pair_key, None)
        done = {
            "keep": "kept",
            "drop": "dropped",
            "revise": "revised: its new version is queued for labelling",
        }
        st.session_state[FLASH_KEY] = (
            "success",
            md_literal(f"Pair {pair_key} (version {made.pair_version}) {done[made.decision]}."),
        )
        st.rerun()
