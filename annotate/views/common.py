"""Pieces shared by pages."""

from __future__ import annotations

import streamlit as st
from sqlalchemy import update
from sqlalchemy.engine import Engine

from annotate.db import retrying, session
from annotate.models import Annotator, Study
from annotate.render import safe_markdown


def show_guidelines(study: Study) -> None:
    st.title("Guidelines")
    st.markdown(safe_markdown(study.guidelines))


@st.dialog("Guidelines", width="large")
def guidelines_dialog(study: Study) -> None:
    st.markdown(safe_markdown(study.guidelines))


@retrying
def mark_guidelines_seen(engine: Engine, *, annotator_id: int) -> None:
    with session(engine) as s:
        s.execute(
            update(Annotator).where(Annotator.id == annotator_id).values(guidelines_seen=True)
        )


def finished_extras(user: Annotator, study: Study) -> None:
    """What a finished annotator sees besides the thanks (a crowd platform's completion code)."""
    if user.external_id and study.prolific_completion_code:
        code = study.prolific_completion_code
        st.markdown(f"Your completion code: **{safe_markdown(code)}**")
        st.link_button(
            "Return to Prolific", f"https://app.prolific.com/submissions/complete?cc={code}"
        )
