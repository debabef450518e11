"""Pieces every console page uses: the maintainer check, the study picker, cached reports."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import streamlit as st

from annotate.errors import UserError
from annotate.people.links import DEFAULT_BASE_URL
from annotate.results import study_report
from annotate.store.models import Annotator, Study, id_of
from annotate.studies import catalog
from annotate.studies.catalog import DEFAULT_STUDY
from annotate.web import streamlit_dom
from annotate.web.identity import engine, require_admin, signed_in_despite_invalid_link
from annotate.web.inert import md_literal
from annotate.web.views.common import app_prefix

if TYPE_CHECKING:
    import pandas as pd

    from analysis.report.shape import Report

STUDY_KEY = "console_study"
# Streamlit 1.67 draws captions at 60 % opacity (3.9:1 on white, less in a faded theme): a solid
# grey instead, 6.4:1 (WCAG 1.4.3 asks 4.5:1). Our own fixed rule, no data in it.
CONSOLE_CSS = (
    f"<style>{streamlit_dom.CAPTION} {{ opacity: 1; color: #5c5e68; }}"
    f" {streamlit_dom.CAPTION} * {{ color: #5c5e68; }}</style>"
)
REPORT_TTL = 120  # seconds; the key also holds the data version, so new answers show at once


def page(title: str) -> tuple[Annotator, Study | None]:
    """Check the maintainer role (nothing else runs otherwise), title, study picker."""
    user = require_admin()
    st.html(CONSOLE_CSS)
    st.title(title)
    said = signed_in_despite_invalid_link(user)
    if said:
        st.warning(md_literal(said))
    return user, pick_study(user)


def study_page(title: str) -> tuple[Annotator, Study, int]:
    """`page` for a page about one study: (user, study, its id); without a study the page
    stops after the picker's note."""
    user, study = page(title)
    if study is None:
        st.stop()
    return user, study, id_of(study)


def pick_study(user: Annotator) -> Study | None:
    """The study the console shows: the one picked in this session, else the maintainer's own
    (the study their account belongs to), else the default study, else the first by name."""
    everything = catalog.studies(engine())
    if not everything:
        st.info("There is no study yet. Create one on the **Studies** page.")
        return None
    names = [study.name for study in everything]
    wanted = st.session_state.get(STUDY_KEY)
    if wanted not in names:
        own = next((s.name for s in everything if s.id == user.study_id), None)
        wanted = own or (DEFAULT_STUDY if DEFAULT_STUDY in names else names[0])
        st.session_state[STUDY_KEY] = wanted

    def remember() -> None:
        st.session_state[STUDY_KEY] = st.session_state["study_picker"]

    choice = st.selectbox(
        "Study",
        names,
        index=names.index(wanted),
        key="study_picker",
        on_change=remember,
        width=320,
    )
    return everything[names.index(choice)]


def choose_study(name: str) -> None:
    st.session_state[STUDY_KEY] = name
    st.session_state.pop("study_picker", None)


def base_url() -> str:
    """This app's address as the browser sees it (for login links), else the default's host;
    with the app's path prefix either way."""
    try:
        url = st.context.url
    except Exception:
        url = None
    parts = urlsplit(url or "")
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None
    return (origin or DEFAULT_BASE_URL) + app_prefix()


def show_problems(headline: str, problems: Sequence[str] = ()) -> None:
    """A refusal: its headline (markdown, with any data in it already `md_literal`) in an
    error box, then every problem as plain text."""
    st.error(headline)
    if problems:
        st.code("\n".join(problems), language=None)


def show_error(exc: UserError) -> None:
    # the sentence may quote names and ids from a file
    show_problems(md_literal(str(exc).splitlines()[0]), getattr(exc, "problems", None) or [])


def db_key() -> str:
    return engine().url.render_as_string(hide_password=True)


@dataclass(frozen=True)
class ReportKey:
    """What a cached report depends on: the database, the study, its data version (so new
    answers show at once) and the selection. Hashable: Streamlit's cache key."""

    db: str
    study: str
    version: tuple[object, ...]
    categories: tuple[str, ...]
    annotators: tuple[str, ...]
    bootstrap: int


def report_key(
    study: Study,
    *,
    categories: tuple[str, ...] = (),
    annotators: tuple[str, ...] = (),
    bootstrap: int = 1000,
) -> ReportKey:
    """The key of the study's report (or a selection's) as its data stand now."""
    return ReportKey(
        db=db_key(),
        study=study.name,
        version=study_report.data_version(engine(), study_id=id_of(study)),
        categories=tuple(categories),
        annotators=tuple(annotators),
        bootstrap=bootstrap,
    )


# st.cache_resource, not st.cache_data: cache_data pickles a copy of the value on every call,
# and a report's frames are large. Callers only read what they get. The pairs frame holds
# ids, categories and gold flags, not the pairs' text (read only for the valid pairs' file).
@st.cache_resource(ttl=REPORT_TTL, max_entries=16, show_spinner=False)
def cached_report(key: ReportKey) -> tuple[Report, pd.DataFrame, pd.DataFrame]:
    """(report, annotations, pairs) of the key's study and selection."""
    return study_report.build_study_report(
        engine(),
        study=key.study,
        categories=list(key.categories) or None,
        annotators=list(key.annotators) or None,
        bootstrap=key.bootstrap,
    )


def study_report_data(study: Study, **selection: Any) -> tuple[Report, pd.DataFrame, pd.DataFrame]:
    """The (possibly cached) report for the study (`selection`: report_key's options),
    computed under a spinner if needed."""
    with st.spinner("Computing the report…", show_time=True):
        return cached_report(report_key(study, **selection))


@st.cache_resource(ttl=REPORT_TTL, max_entries=8, show_spinner=False)
def cached_report_files(key: ReportKey) -> dict[str, bytes]:
    report, _annotations, _pairs = cached_report(key)
    return study_report.report_files(report, engine=engine(), study=key.study)


def study_report_files(study: Study, **selection: Any) -> dict[str, bytes]:
    """The report files of the study (or of a selection), computed once per data version and
    selection, shared by all download buttons."""
    return cached_report_files(report_key(study, **selection))


@st.cache_resource(ttl=REPORT_TTL, max_entries=8, show_spinner=False)
def cached_scorer_report(key: ReportKey, digest: str, _name: str, _data: bytes) -> Report:
    """The report of the selection with an uploaded scorer file compared (the file is keyed
    by its name and digest, not hashed by Streamlit on every run). A broken file raises (and
    is not cached)."""
    del digest  # only part of the cache key
    report, annotations, pairs = cached_report(key)
    return study_report.scorer_report(
        engine(),
        study=key.study,
        report=report,
        annotations=annotations,
        pairs=pairs,
        name=_name,
        data=_data,
    )


def study_scorer_report(study: Study, *, name: str, data: bytes, **selection: Any) -> Report:
    """The study's report (or a selection's) with the uploaded automatic aspect scores
    compared with the annotators; raises UserError (InputError for a broken file)."""
    digest = f"{name}:{hashlib.sha256(data).hexdigest()}"
    with st.spinner("Comparing the scorer with the annotators…", show_time=True):
        return cached_scorer_report(report_key(study, **selection), digest, name, data)


def download_when_clicked(
    label: str,
    make: Callable[[], bytes],
    *,
    file_name: str,
    mime: str,
    key: str,
    **options: Any,
) -> None:
    """A download button whose file `make` builds only when it is clicked, without rerunning
    the page: nothing is computed while a page merely shows (Streamlit calls a callable
    `data` on click)."""
    st.download_button(
        label,
        data=make,
        file_name=file_name,
        mime=mime,
        key=key,
        on_click="ignore",
        icon=":material/download:",
        **options,
    )
