"""Console: upload pairs (all or nothing, problems listed by line) and browse their coverage."""

import streamlit as st

from annotate.errors import UserError
from annotate.results import monitoring
from annotate.studies import uploads
from annotate.web.identity import engine
from annotate.web.render import safe_markdown
from annotate.web.views.admin.shared import show_error, study_page

user, study, study_id = study_page("Pairs")

with st.expander("Upload pairs", expanded=False):
    st.caption(
        "Personalized RewardBench records as JSON Lines, a JSON array or Parquet. All or "
        "nothing: if any record is invalid, nothing is imported and every problem is listed. "
        "Uploading the same file again changes nothing."
    )
    upload = st.file_uploader("Pairs file", type=["jsonl", "json", "parquet"], key="pairs_upload")
    replace = st.checkbox(
        "Add a new version of pairs whose content changed (same id)",
        key="pairs_update",
        value=False,
        help="The earlier version and its answers are kept; the pair is queued again.",
    )
    clicked = st.button("Import", type="primary", key="pairs_import", disabled=upload is None)
    if clicked and upload is not None:
        data = upload.getvalue()
        total = uploads.count_records(data, upload.name)
        bar = st.progress(0.0, text="Checking the file…")

        def advance(seen: int) -> None:
            if total:
                bar.progress(min(seen / total, 1.0), text=f"Checked {seen:,} of {total:,} records")
            else:
                bar.progress(0.5, text=f"Checked {seen:,} records")

        try:
            result = uploads.import_upload(
                engine(),
                data=data,
                file_name=upload.name,
                study=study.name,
                update=replace,
                progress=advance,
            )
        except UserError as exc:
            bar.empty()
            show_error(exc)
        else:
            bar.progress(1.0, text="Done")
            st.success(f"{result.counts()}.")

coverage = monitoring.pair_coverage(engine(), study_id=study_id)
st.header(f"{len(coverage):,} pairs")
if coverage.empty:
    st.info("No pairs yet: upload a file above, or use `annotate import-pairs`.")
    st.stop()

cols = st.columns([2, 3])
statuses = ["not started", "in progress", "complete", "gold check"]
shown_status = cols[0].multiselect("Status", statuses, key="pairs_status")
categories = sorted(c for c in coverage["category"].unique() if c)
shown_categories = cols[1].multiselect("Category", categories, key="pairs_category")
view = coverage
if shown_status:
    view = view[view["status"].isin(shown_status)]
if shown_categories:
    view = view[view["category"].isin(shown_categories)]
st.dataframe(
    view,
    hide_index=True,
    column_config={
        "annotations": st.column_config.NumberColumn("annotations", help="answers collected"),
        "target": st.column_config.NumberColumn("target", help="overlap target"),
        "open": st.column_config.NumberColumn("open", help="handed out, not answered yet"),
        "expected": st.column_config.TextColumn("gold answer"),
    },
)

pair_id = st.selectbox(
    "Look at a pair",
    view["pair_id"].tolist(),
    index=None,
    placeholder="Choose a pair id",
    key="pairs_detail",
)
if pair_id is not None:
    pair = monitoring.pair_record(engine(), study_id=study_id, pair_key=pair_id)
    if pair is None:  # removed since the list was read
        st.info("This pair is no longer in the study.")
        st.stop()
    st.markdown(f"**Question** ({safe_markdown(pair.category) or 'no category'})")
    with st.container(border=True):
        st.markdown(safe_markdown(pair.question))
    if pair.rubric_aspects:
        st.markdown("**Rubric**")
        for aspect in pair.rubric_aspects:
            st.markdown("- " + safe_markdown(str(aspect.get("aspect", ""))))
    left, right = st.columns(2)
    with left:
        st.markdown("**Chosen** (built to follow the rubric)")
        with st.container(border=True, height=320):
            st.markdown(safe_markdown(pair.chosen))
    with right:
        st.markdown("**Rejected** (built to violate it)")
        with st.container(border=True, height=320):
            st.markdown(safe_markdown(pair.rejected))
