"""Console: the Agreement page's aspects section (issue 15): the aspect check's tables, as in
report.html, and an uploaded automatic scorer's file compared with the annotators, as
`annotate report --aspect-scores` does. Every number comes from the report (analysis/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from analysis.aspects.render import (
    COVERAGE_HEADER,
    DISAGREEMENT_HEADER,
    ROW_HEADER,
    SCALE_SENTENCE,
    TITLE,
    coverage_rows,
    disagreement_rows,
    human_rows,
    scorer_rows,
    verdict_sentence,
)
from analysis.errors import InputError, UserError
from analysis.report.shape import Report
from analysis.report.summary import CHECK_HEADER, check_rows
from annotate.web.inert import md_literal
from annotate.web.views.admin.shared import show_error, show_problems

UPLOAD_KEY = "agreement_aspect_scores"
_COVERAGE = st.column_config.NumberColumn(format="%.2f", help="mean match score, 0-2")
_COLUMNS = {
    "chosen coverage": _COVERAGE,
    "rejected coverage": _COVERAGE,
    "gap": st.column_config.NumberColumn(format="%+.2f", help="chosen minus rejected"),
    "annotations": st.column_config.NumberColumn(help="annotations that scored the aspects"),
}


def _table(rows: Sequence[Sequence[object]], header: Sequence[str], **options: Any) -> None:
    st.dataframe(pd.DataFrame(rows, columns=list(header)), hide_index=True, **options)


def show_aspects(
    report: Report, *, aspect_check: bool, compare: Callable[[str, bytes], Report]
) -> None:
    """The section, when the report has aspect scores (a short caption when the study asks
    for them but none are in this selection yet; nothing for a study without the check).
    ``compare(name, data)``: the report with an uploaded scorer file compared."""
    if "aspects" not in report:
        if aspect_check:
            st.header("Aspects")
            st.caption(
                "The study asks for aspect scores; no annotation in this selection has them yet."
            )
        return
    st.header("Aspects")
    st.markdown(f"**{TITLE}**")
    st.markdown(SCALE_SENTENCE + " " + verdict_sentence(report, verdict="`rubric_not_reflected`"))
    # The fourth conclusion check, from the same row as report.html's table of checks (its
    # value and interval are the table's "construction confirmed" row): outcome, then the rule.
    row = next(r for r in check_rows(report) if r[0] == "aspects")
    check = dict(zip(CHECK_HEADER, row, strict=True))
    st.markdown(
        f"Conclusion check `aspects`: **{check['Outcome']}** (threshold {check['Threshold']})"
    )
    st.caption(check["Rule / note"])
    _table(human_rows(report), ROW_HEADER)

    st.markdown("**Per pair**, the smallest gap first")
    _table(coverage_rows(report), COVERAGE_HEADER, column_config=_COLUMNS)

    st.markdown("**Automatic scorer against the annotators**")
    st.caption(
        "Upload the benchmark's automatic aspect scores to compare them with the annotators' "
        "on these pairs: id, response (chosen or rejected) and scores (a list of 0-2, one per "
        "rubric aspect in the pair's order), two rows a pair."
    )
    upload = st.file_uploader(
        "Aspect scores (JSON Lines, CSV or Parquet)",
        type=["jsonl", "csv", "parquet"],
        key=UPLOAD_KEY,
    )
    if upload is None:
        return
    try:
        compared = compare(upload.name, upload.getvalue())
    except InputError as exc:
        noun = "problem" if len(exc.problems) == 1 else "problems"
        show_problems(
            f"{md_literal(exc.source)}: {len(exc.problems)} {noun}; nothing was compared:",
            exc.problems,
        )
        return
    except UserError as exc:
        show_error(exc)
        return
    _table(scorer_rows(compared), ROW_HEADER)
    rows = disagreement_rows(compared)
    if rows:
        st.caption("Pairs where the scorer and the annotators disagree most")
        _table(rows, DISAGREEMENT_HEADER)
