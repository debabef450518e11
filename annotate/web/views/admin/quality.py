"""Console: gold checks (pairs with an expected answer, mixed into the queue unannounced),
each annotator's accuracy on them, and the qualification rule."""

import streamlit as st

from annotate.errors import UserError
from annotate.queue import gold
from annotate.queue.rules import GOLD_EVERY
from annotate.results import monitoring
from annotate.web.identity import engine
from annotate.web.views.admin.shared import show_error, study_page

ANSWERS = {
    "chosen": "chosen (the rubric-following response)",
    "rejected": "rejected",
    "tie": "no preference (tie)",
}

user, study, study_id = study_page("Gold checks")

st.caption(
    "A gold check is a pair with a known answer. Every annotator meets each gold pair once, "
    f"at random positions (about one in {GOLD_EVERY} pairs), without being told; gold "
    "pairs do not count towards the overlap target and are left out of the report's "
    "statistics."
)
if study.qualification_gold:
    st.info(
        f"Qualification is on: each annotator first gets {study.qualification_gold} gold "
        "checks, and only those who answer all of them as expected go on to the real pairs "
        "(change this on the **Studies** page)."
    )

coverage = monitoring.pair_coverage(engine(), study_id=study_id)
n_gold = int(coverage["gold"].sum())
if study.qualification_gold > n_gold:
    st.warning(
        f"Qualification needs {study.qualification_gold} gold checks but the study has "
        f"{n_gold}: nobody can qualify until more pairs are marked."
    )

with st.form("mark_gold", border=True):
    st.markdown("**Mark pairs as gold checks**")
    keys = st.multiselect(
        "Pairs",
        coverage["pair_id"].tolist(),
        key="gold_pairs",
        placeholder="Choose pair ids",
    )
    answer = st.radio(
        "Expected answer",
        list(ANSWERS),
        format_func=ANSWERS.get,
        horizontal=True,
        key="gold_answer",
    )
    cols = st.columns(2)
    mark = cols[0].form_submit_button("Mark as gold", type="primary")
    unmark = cols[1].form_submit_button("Remove gold mark")
    if mark or unmark:
        annotated = coverage[
            coverage["pair_id"].isin(keys) & ~coverage["gold"] & (coverage["annotations"] > 0)
        ]
        try:
            changed = gold.set_gold(
                engine(), study_id=study_id, pair_keys=keys, answer=answer if mark else None
            )
        except UserError as exc:
            show_error(exc)
        else:
            st.session_state["gold_flash"] = (
                f"{changed} pair(s) {'marked as gold' if mark else 'no longer gold'}."
                + (
                    f" {len(annotated)} of them already had answers, which now count as "
                    "gold answers and leave the report's statistics."
                    if mark and len(annotated)
                    else ""
                )
            )
            st.rerun()

flash = st.session_state.pop("gold_flash", None)
if flash:
    st.success(flash)

left, right = st.columns(2)
with left:
    st.header("Accuracy per annotator")
    accuracy = gold.gold_accuracy(engine(), study_id=study_id)
    if accuracy.empty:
        st.info("No annotators yet.")
    else:
        st.dataframe(
            accuracy,
            hide_index=True,
            column_config={
                "gold_accuracy": st.column_config.ProgressColumn(
                    "accuracy", format="percent", min_value=0, max_value=1
                ),
                "n_gold": st.column_config.NumberColumn("gold answers"),
                "n_correct": st.column_config.NumberColumn("as expected"),
            },
        )
with right:
    st.header(f"Gold pairs ({n_gold})")
    pairs = gold.gold_pairs(engine(), study_id=study_id)
    if pairs.empty:
        st.info("No gold checks yet: mark some pairs above.")
    else:
        st.dataframe(
            pairs,
            hide_index=True,
            column_config={
                "accuracy": st.column_config.ProgressColumn(
                    "accuracy", format="percent", min_value=0, max_value=1
                )
            },
        )
