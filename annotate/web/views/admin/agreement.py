"""Console: the agreement and pair-validation report, live, for the study or a part of it."""

from functools import partial

import pandas as pd
import streamlit as st

from analysis.report.numbers import fmt
from annotate.results import monitoring, study_report
from annotate.web.identity import engine
from annotate.web.views.admin.aspect_section import show_aspects
from annotate.web.views.admin.model_upload import model_comparison, show_models
from annotate.web.views.admin.shared import (
    download_when_clicked,
    show_problems,
    study_page,
    study_report_data,
    study_report_files,
    study_scorer_report,
)

user, study, study_id = study_page("Agreement")

coverage = monitoring.pair_coverage(engine(), study_id=study_id)
activity = monitoring.annotator_activity(engine(), study_id=study_id)
cols = st.columns([3, 3, 1])
categories = cols[0].multiselect(
    "Categories (none = all)",
    sorted(c for c in coverage["category"].unique() if c),
    key="agreement_categories",
)
annotators = cols[1].multiselect(
    "Annotators (none = all)",
    activity.loc[activity["role"] == "annotator", "annotator"].tolist(),
    key="agreement_annotators",
)
bootstrap = cols[2].selectbox(
    "Bootstrap", [200, 1000, 2000], index=1, key="agreement_bootstrap", help="resamples"
)

selection = {"categories": tuple(categories), "annotators": tuple(annotators)}
report, _annotations, _pairs = study_report_data(study, **selection, bootstrap=bootstrap)
counts = report["counts"]

PAIR_COLUMNS = {
    "pair_id": st.column_config.TextColumn("pair"),
    "category": st.column_config.TextColumn("category"),
    "verdict": st.column_config.TextColumn("verdict"),
    "n_annotations": st.column_config.NumberColumn("annotations"),
    "majority": st.column_config.TextColumn(
        "majority",
        help="what more than half of the pair's annotators answered (chosen, rejected or tie)",
    ),
    "flags": st.column_config.TextColumn("flags", width="large"),
}
NO_MAJORITY = "no majority"  # no answer has more than half of the pair's annotations


# The conclusion's three outcomes (analysis/verdicts/conclusion.py): too few data is not evidence against.
HEADLINES = {
    "supported": (st.success, "Personal preference **is** the main factor"),
    "not_supported": (
        st.warning,
        "The data speak **against** personal preference as the main factor",
    ),
    "insufficient_evidence": (
        st.info,
        "The data are **too few to say** whether personal preference is the main factor",
    ),
}


def show_report() -> None:
    """Everything that needs human answers: the conclusion, the numbers, charts, the aspect
    check, the pairs and the report files."""
    show, headline = HEADLINES[report["conclusion"]["status"]]
    show(
        headline
        + " that separates chosen from rejected"
        + (" in this selection." if categories or annotators else ".")
    )
    pref = report["preference"]
    cells = st.columns(5)
    cells[0].metric(
        monitoring.PAIRS_ANNOTATED,
        f"{counts['pairs_with_annotations']:,} / {counts['pairs']:,}",
        help=monitoring.TERMS[monitoring.PAIRS_ANNOTATED] + " In this selection.",
    )
    cells[1].metric("Annotations", f"{counts['annotations']:,}")
    cells[2].metric("Percent agreement", fmt(pref["percent_agreement"]))
    cells[3].metric("Krippendorff's alpha", fmt(pref["alpha"]["value"]))
    cells[4].metric("Label agreement", fmt(pref["label_agreement"]["value"]))

    # One tab at a time, so the page is as tall as the part being read (everything at once
    # made it nearly 5,000 px); the first tab holds the numbers a maintainer checks first.
    aspects = "aspects" in report or bool(study.aspect_check)
    names = ["Headline numbers", "In words", "Charts", *(["Aspects"] if aspects else [])]
    names += ["Pairs", "Report files"]
    tabs = dict(zip(names, st.tabs(names), strict=True))

    with tabs["Headline numbers"]:
        table, notes = study_report.headline_table(report)
        # a static table: every note is read whole (a grid cut the long ones at its width)
        st.table(table, hide_index=True)
        for note in notes:
            st.caption(note)

    with tabs["In words"]:
        for paragraph in study_report.report_reading(report):
            st.markdown(paragraph.replace("$", r"\$"))

    with tabs["Charts"]:
        for title, figure in study_report.report_figures(report):  # each carries its title
            st.plotly_chart(figure, config={"displaylogo": False}, key=f"chart_{title}")

    if aspects:
        with tabs["Aspects"]:
            show_aspects(
                report,
                aspect_check=bool(study.aspect_check),
                compare=lambda name, data: study_scorer_report(
                    study, name=name, data=data, **selection, bootstrap=bootstrap
                ),
            )

    with tabs["Pairs"]:
        verdicts = report["verdicts"]
        st.caption(", ".join(f"{name.replace('_', ' ')}: {n:,}" for name, n in verdicts.items()))
        pair_rows = pd.DataFrame(report["pairs"])
        if len(pair_rows):
            pair_rows["flags"] = pair_rows["flags"].map(", ".join)
            pair_rows["majority"] = pair_rows["majority"].fillna(NO_MAJORITY)
            # the columns a maintainer reads to decide on a pair, so the table fits the page;
            # the numbers behind each verdict are in pairs.csv (Report files)
            st.dataframe(
                pair_rows,
                hide_index=True,
                column_order=[c for c in PAIR_COLUMNS if c in pair_rows.columns],
                column_config=PAIR_COLUMNS,
            )
            st.caption(
                "Every column of the pairs table, with the numbers behind each verdict, is "
                "in pairs.csv (Report files)."
            )

    with tabs["Report files"]:
        st.caption("The report of this selection, as `annotate report` writes it.")

        def selection_file(name: str) -> bytes:
            return study_report_files(study, **selection, bootstrap=bootstrap)[name]

        with st.container(horizontal=True):
            files = {**study_report.REPORT_FILES, "valid_pairs.jsonl": "application/jsonl"}
            for name, mime in files.items():
                download_when_clicked(
                    name,
                    partial(selection_file, name),
                    file_name=name,
                    mime=mime,
                    key=f"agreement_download_{name}",
                )


if counts["annotations"]:
    show_report()
else:
    # A model's accuracy against the constructed label needs no human answer (issue 14).
    st.info(
        "No annotations of real pairs in this selection yet. Model files can be compared with "
        "the constructed label already; what needs human answers stays undefined until then."
    )

st.header("Models against the humans")
st.caption(
    "Upload a reward model's or judge's output to compare it with the annotators on these "
    "pairs: the benchmark's pairwise judgements (id, prediction, pos_in_a or correct_answer, "
    "optional parse_failed), pointwise scores (id, label, score) or a table (pair_id with "
    "score_chosen and score_rejected, or with preference). One file per model, named after it."
)
uploads = st.file_uploader(
    "Model files (JSON Lines, CSV or Parquet)",
    type=["jsonl", "csv", "parquet"],
    accept_multiple_files=True,
    key="agreement_models",
)
if uploads:
    compared, problems = model_comparison(
        report, uploads, study_pair_ids=coverage["pair_id"].astype(str).tolist()
    )
    if compared is None:
        show_problems(problems[0], problems[1:])
    else:
        show_models(compared)
