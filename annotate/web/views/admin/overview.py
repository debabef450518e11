"""Console: progress of a study (pairs started and finished, per day, the rate, ETA)."""

import plotly.graph_objects as go
import streamlit as st

from annotate.results import monitoring
from annotate.store.models import id_of
from annotate.studies import catalog
from annotate.web.identity import engine
from annotate.web.views.admin.shared import study_page

user, study, study_id = study_page("Progress")

progress = monitoring.study_progress(engine(), study_id=study_id)
TERMS = monitoring.TERMS
cells = st.columns(5)
cells[0].metric(
    monitoring.PAIRS_ANNOTATED,
    f"{progress.annotated:,} / {progress.pairs:,}",
    help=TERMS[monitoring.PAIRS_ANNOTATED],
)
cells[1].metric(
    monitoring.PAIRS_COMPLETE,
    f"{progress.complete:,} / {progress.pairs:,}",
    help=TERMS[monitoring.PAIRS_COMPLETE],
)
cells[2].metric(
    "Annotations towards the target",
    f"{progress.collected:,} / {progress.needed:,}",
    help=(
        "Adaptive overlap: expected annotations, each undecided pair counted at the mean of "
        "the pairs already stopped (at most MAX), not pairs x overlap."
        if progress.adaptive
        else "At most the overlap target counts per pair."
    ),
)
cells[3].metric(
    monitoring.RECENT_RATE,
    "–"
    if progress.rate_per_hour is None
    else f"{progress.rate_per_hour:,.1f} / hour"
    if progress.rate_per_hour >= 1
    else f"{progress.rate_per_hour:.2g} / hour",
    help=TERMS[monitoring.RECENT_RATE],
)
cells[4].metric(
    "Estimated time to finish",
    progress.eta_short(),
    help=f"At the rate of the last {monitoring.RECENT_HOURS} hours: {progress.eta_text()}.",
)
st.progress(min(progress.fraction, 1.0), text=f"{progress.fraction:.0%} of the target collected")
st.caption(
    f"{progress.annotators} annotators have answered; {progress.annotations:,} annotations of "
    f"real pairs; {progress.gold_annotations:,} answers to the {progress.gold_pairs} gold checks."
)

st.header("Annotations per day")
if len(progress.per_day):
    figure = go.Figure(
        go.Bar(x=progress.per_day["day"], y=progress.per_day["annotations"], name="annotations")
    )
    figure.update_layout(
        height=280, margin={"l": 10, "r": 10, "t": 10, "b": 10}, yaxis_title="annotations"
    )
    figure.update_xaxes(tickformat="%b %d", dtick=86_400_000)
    st.plotly_chart(figure, config={"displaylogo": False})
else:
    st.info("No annotations yet.")

st.header("All studies")
rows = []
for other in catalog.studies(engine()):
    numbers = (
        progress
        if id_of(other) == study_id
        else monitoring.study_progress(engine(), study_id=id_of(other))
    )
    rows.append(
        {
            "study": other.name,
            "pairs": numbers.pairs,
            "gold checks": numbers.gold_pairs,
            "overlap target": numbers.target,
            monitoring.PAIRS_ANNOTATED.lower(): numbers.annotated,
            monitoring.PAIRS_COMPLETE.lower(): numbers.complete,
            "collected": numbers.fraction,
            "annotations": numbers.annotations,
            "annotators": numbers.annotators,
        }
    )
st.dataframe(
    rows,
    hide_index=True,
    column_config={
        "collected": st.column_config.ProgressColumn(
            "collected", format="percent", min_value=0, max_value=1
        )
    },
)
