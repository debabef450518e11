"""Maintainer console: studies at a glance."""

import streamlit as st
from sqlalchemy import func
from sqlmodel import select

from annotate.access import engine, require_admin
from annotate.db import session
from annotate.models import Annotation, Annotator, Pair, Study

require_admin()
st.title("Maintainer console")
with session(engine()) as s:
    studies = s.exec(select(Study).order_by(Study.name)).all()
    rows = []
    for study in studies:
        pairs = s.exec(
            select(func.count()).select_from(Pair).where(Pair.study_id == study.id)
        ).one()
        annotators = s.exec(
            select(func.count())
            .select_from(Annotator)
            .where(Annotator.study_id == study.id, Annotator.is_admin.is_(False))
        ).one()
        annotations = s.exec(
            select(func.count()).select_from(Annotation).where(Annotation.study_id == study.id)
        ).one()
        rows.append(
            {
                "study": study.name,
                "pairs": pairs,
                "annotators": annotators,
                "annotations": annotations,
                "overlap target": study.overlap_target,
            }
        )
st.dataframe(rows, hide_index=True)
