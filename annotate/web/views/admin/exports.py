"""Console: downloads. Files are made when their button is clicked (nothing is computed while
the page merely shows), in the formats of the command line (`annotate export`, `annotate
report`)."""

from functools import partial

import streamlit as st

from annotate.results import exports, study_report
from annotate.web.identity import engine
from annotate.web.views.admin.shared import download_when_clicked, study_page, study_report_files

user, study, study_id = study_page("Exports")

db = engine()
name = study.name

st.header("Annotations")
st.caption(
    "One row per pair and annotator, gold checks included; the same columns in every format "
    "(see docs/reference/file-formats.md)."
)
with st.container(horizontal=True):
    for fmt, mime in exports.EXPORT_FORMATS.items():
        download_when_clicked(
            fmt.upper(),
            partial(exports.export_annotations, db, study=name, fmt=fmt),
            file_name=f"{name}-annotations.{fmt}",
            mime=mime,
            key=f"export_annotations_{fmt}",
        )

st.header("Report")
st.caption(
    "The whole study's report with the command line's default options (1,000 bootstrap "
    "resamples, seed 0). For a part of the study, use the **Agreement** page."
)


def _report_file(file_name: str) -> bytes:
    # Cached per data version: five buttons, one report computation.
    return study_report_files(study)[file_name]


with st.container(horizontal=True):
    for file_name, mime in study_report.REPORT_FILES.items():
        download_when_clicked(
            file_name,
            partial(_report_file, file_name),
            file_name=f"{name}-{file_name}",
            mime=mime,
            key=f"export_report_{file_name}",
        )

st.header("Pairs")
st.caption(
    "In the import format (JSON Lines), every original field kept. Validated pairs: those "
    "whose report verdict is `valid`, a reviewer's keep or drop overriding it (gold checks "
    "left out). All pairs: each pair's current version. Every version: each version of each "
    "pair, earlier ones included, with its `pair_version`."
)
with st.container(horizontal=True):
    download_when_clicked(
        "Validated pairs",
        lambda: exports.export_pairs(db, study=name, valid_only=True),
        file_name=f"{name}-valid-pairs.jsonl",
        mime="application/jsonl",
        key="export_valid_pairs",
        type="primary",
    )
    download_when_clicked(
        "All pairs",
        lambda: exports.export_pairs(db, study=name),
        file_name=f"{name}-pairs.jsonl",
        mime="application/jsonl",
        key="export_all_pairs",
    )
    download_when_clicked(
        "Every version",
        lambda: exports.export_pair_versions(db, study=name),
        file_name=f"{name}-pair-versions.jsonl",
        mime="application/jsonl",
        key="export_pair_versions",
    )
