"""Pieces shared by pages."""

from __future__ import annotations

import streamlit as st
from sqlalchemy import update
from sqlalchemy.engine import Engine

from annotate.db import retrying, session
from annotate.models import Annotator, Study
from annotate.render import safe_markdown

# Our own constant markup (never data): a same-tab link, which st.link_button is not. The
# labelling form draws its own; this one is for the pages without the form.
SIGN_OUT_LINK = '<a href="/logout" target="_self">Sign out</a>'


def sign_out_link() -> None:
    st.markdown(SIGN_OUT_LINK, unsafe_allow_html=True)


def show_guidelines(study: Study) -> None:
    st.title("Guidelines")
    st.markdown(safe_markdown(study.guidelines))


@retrying
def mark_guidelines_seen(engine: Engine, *, annotator_id: int) -> None:
    with session(engine) as s:
        s.execute(
            update(Annotator).where(Annotator.id == annotator_id).values(guidelines_seen=True)
        )


def finished_extras(user: Annotator, study: Study) -> None:
    """What a finished annotator sees besides the thanks: a failed qualification, and a crowd
    platform's completion code with the button back to the platform."""
    from annotate.access import engine
    from annotate.gold import FAILED, qualification_of
    from annotate.prolific import completion_url

    if qualification_of(engine(), annotator_id=user.id).state == FAILED:
        st.info(
            "Your first answers did not match what this study needs, so no further pairs will "
            "be shown to you. Thank you for your time."
        )
    url = completion_url(study) if user.external_id else None
    if url:
        code = study.prolific_completion_code.strip()
        st.markdown("Your completion code:")
        st.code(code, language=None)
        st.link_button("Return to Prolific", url, type="primary")
