"""Console: the Agreement page's models section: uploaded model files read against the
study's pairs, then the same tables and chart as report.html."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from analysis.judges.accuracy import with_models
from analysis.judges.files import ModelFileError, read_model_file
from analysis.judges.render import (
    DIFFERENCE_HEADER,
    HUMAN_HEADER,
    MODEL_HEADER,
    RULES,
    difference_rows,
    error_sentences,
    human_rows,
    model_rows,
    models_csv_bytes,
    models_figure,
    undefined_notes,
)
from analysis.report.shape import Report
from annotate.web.inert import md_literal


def model_comparison(
    report: Report, uploads: Sequence[UploadedFile], *, study_pair_ids: list[str]
) -> tuple[Report | None, list[str]]:
    """(the report with its models section, []) or (None, problems). A file may judge pairs
    of the study outside the selection (they are left out); every selected pair needs one."""
    names = [Path(upload.name).stem for upload in uploads]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return None, ["Two files give a model the same name:", *repeated]
    required = [p["pair_id"] for p in report["pairs"] if not p["is_gold"]]
    models, problems = [], []
    for upload, name in zip(uploads, names, strict=True):
        try:
            models.append(
                read_model_file(
                    upload.name,
                    name=name,
                    known_ids=study_pair_ids,
                    required_ids=required,
                    data=upload.getvalue(),
                )
            )
        except ModelFileError as exc:
            problems += [f"{exc.source}: {problem}" for problem in exc.problems]
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        return None, [
            f"{len(problems)} {noun} in the model files; nothing was compared:",
            *problems,
        ]
    options = report["options"]
    compared = with_models(
        report,
        models,
        min_annotations=options["min_annotations"],
        bootstrap=options["bootstrap"],
        seed=options["seed"],
    )
    return compared, []


def show_models(report: Report) -> None:
    """The tables and the chart (model names are data: shown in tables and escaped in the chart)."""
    st.dataframe(pd.DataFrame(model_rows(report), columns=list(MODEL_HEADER)), hide_index=True)
    for sentence in error_sentences(report):
        st.text(sentence)  # plain text: the model's name is data
    st.caption("Human reference (the ceiling), by the same rule")
    st.dataframe(pd.DataFrame(human_rows(report), columns=list(HUMAN_HEADER)), hide_index=True)
    notes = undefined_notes(report)
    if notes:  # why a cell says n/a: before any human answer, all that needs one
        # model names are data: every line shown as its literal characters
        st.caption("  \n".join(["**Where the tables say n/a**", *map(md_literal, notes)]))
    if report["model_differences"]:
        st.caption("Differences between models (accuracy, paired bootstrap)")
        st.dataframe(
            pd.DataFrame(difference_rows(report), columns=list(DIFFERENCE_HEADER)),
            hide_index=True,
        )
    st.plotly_chart(models_figure(report), config={"displaylogo": False}, key="chart_models")
    st.caption(RULES)
    st.download_button(
        "models.csv",
        data=models_csv_bytes(report),
        file_name="models.csv",
        mime="text/csv",
        key="agreement_download_models.csv",
        icon=":material/download:",
    )
