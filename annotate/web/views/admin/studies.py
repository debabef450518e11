"""Console: create a study and set its options (those that change the meaning of collected
annotations are locked once the study has any)."""

from collections.abc import Sequence
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from analysis.design.adaptive_bounds import (
    ADAPTIVE_BOUNDS,
    ADAPTIVE_MAX_HIGHEST,
    ADAPTIVE_MIN_LOWEST,
)
from annotate.errors import UserError
from annotate.store.models import DEFAULT_DIMENSIONS, DEFAULT_REASONS, Study, id_of
from annotate.studies import catalog
from annotate.web.identity import engine
from annotate.web.inert import md_literal
from annotate.web.views.admin.shared import choose_study, page, show_error
from annotate.wording import DIMENSION_HELP, REASON_LABELS

LOCK_REASON = (
    "Locked: the study already has annotations, and changing this would change what they mean."
)


def option_widgets(study: Study, *, prefix: str, locked: set[str]) -> dict[str, Any]:
    """The options form's widgets; returns the values entered."""
    out: dict[str, Any] = {}

    def lockable(option: str, *, help: str | None = None) -> dict[str, Any]:
        """The widget options of a study option that is locked once there are answers:
        greyed out saying why when locked, else with its own help."""
        is_locked = option in locked
        return {
            "disabled": is_locked,
            "help": LOCK_REASON if is_locked else help,
            "key": f"{prefix}_{option}",
        }

    st.markdown("**Coverage**")
    cols: Sequence[DeltaGenerator] = st.columns(2)
    out["overlap_target"] = cols[0].number_input(
        "Overlap target (annotations per pair)",
        min_value=1,
        max_value=50,
        value=study.overlap_target,
        key=f"{prefix}_overlap_target",
    )
    quota = cols[1].number_input(
        "Pairs per annotator (0 = no limit)",
        min_value=0,
        value=study.items_per_annotator or 0,
        key=f"{prefix}_items_per_annotator",
    )
    out["items_per_annotator"] = int(quota) or None
    adaptive = st.checkbox(
        "Adaptive overlap: more annotations only where the first ones leave a pair undecided",
        value=study.adaptive_min is not None,
        help="Each pair gets at least MIN annotations and more, up to MAX, while one further "
        "answer could still change its majority (README: adaptive overlap). The overlap "
        "target above then applies to no pair.",
        key=f"{prefix}_adaptive",
    )
    # shown always: a checkbox in a form changes nothing on the page until it is submitted
    cols = st.columns(4)
    lowest, highest = ADAPTIVE_MIN_LOWEST, ADAPTIVE_MAX_HIGHEST
    low = int(
        cols[0].number_input(
            "MIN",
            min_value=lowest,
            max_value=highest - 1,
            # a study set before the bounds keeps its values until saved
            value=min(max(study.adaptive_min or 2, lowest), highest - 1),
            help=ADAPTIVE_BOUNDS,
            key=f"{prefix}_adaptive_min",
        )
    )
    high = int(
        cols[1].number_input(
            "MAX",
            min_value=lowest + 1,
            max_value=highest,
            value=min(max(study.adaptive_max or 5, lowest + 1), highest),
            help=ADAPTIVE_BOUNDS,
            key=f"{prefix}_adaptive_max",
        )
    )
    sample_help = (
        "A keyed random share of pairs that always gets exactly K annotations; the "
        "report's agreement statistics and conclusion use these pairs only."
    )
    out["agreement_sample"] = float(
        cols[2].number_input(
            "Agreement sample (share of pairs)",
            min_value=0.0,
            max_value=1.0,
            step=0.05,
            value=float(study.agreement_sample),
            **lockable("agreement_sample", help=sample_help),
        )
    )
    out["agreement_overlap"] = int(
        cols[3].number_input(
            "K (its annotations per pair)",
            min_value=2,
            max_value=50,
            value=study.agreement_overlap,
            **lockable("agreement_overlap", help=sample_help),
        )
    )
    if adaptive:
        out["adaptive_min"], out["adaptive_max"] = low, high
    else:
        out["adaptive_min"] = out["adaptive_max"] = None
    out["reservation_timeout"] = st.number_input(
        "Reservation timeout (seconds a shown pair stays reserved for an annotator who does "
        "not answer it)",
        min_value=1,
        value=study.reservation_timeout,
        step=60,
        key=f"{prefix}_reservation_timeout",
    )

    st.markdown("**What annotators are asked**")
    out["allow_ties"] = st.checkbox(
        "Allow “no preference” (ties)",
        value=study.allow_ties,
        **lockable("allow_ties"),
    )
    out["dimensions"] = st.multiselect(
        "General-quality dimensions rated for each response",
        DEFAULT_DIMENSIONS,
        default=[d for d in study.dimensions if d in DEFAULT_DIMENSIONS],
        format_func=lambda d: DIMENSION_HELP[d][0],
        **lockable("dimensions"),
    )
    out["reasons"] = st.multiselect(
        "Main-reason answers offered (none = the question is not asked)",
        DEFAULT_REASONS,
        default=[r for r in study.reasons if r in DEFAULT_REASONS],
        format_func=lambda r: REASON_LABELS.get(r, r),
        **lockable("reasons"),
    )
    out["aspect_check"] = st.checkbox(
        "Aspect check: a 0-2 score for how well each response covers each of the user's "
        "rubric aspects",
        value=study.aspect_check,
        **lockable("aspect_check"),
    )
    cols = st.columns(4)
    out["scale_min"] = cols[0].number_input(
        "Scale from",
        value=study.scale_min,
        step=1,
        **lockable("scale_min"),
    )
    out["scale_min_label"] = cols[1].text_input(
        "meaning", value=study.scale_min_label, **lockable("scale_min_label")
    )
    out["scale_max"] = cols[2].number_input(
        "to",
        value=study.scale_max,
        step=1,
        **lockable("scale_max"),
    )
    out["scale_max_label"] = cols[3].text_input(
        "meaning", value=study.scale_max_label, **lockable("scale_max_label")
    )

    st.markdown("**What annotators see**")
    cols = st.columns(2)
    out["show_narrative"] = cols[0].checkbox(
        "Show the user's own words (narrative)",
        value=study.show_narrative,
        key=f"{prefix}_show_narrative",
    )
    out["show_profile"] = cols[1].checkbox(
        "Show the user's past posts (profile)",
        value=study.show_profile,
        key=f"{prefix}_show_profile",
    )
    out["guidelines"] = st.text_area(
        "Guidelines (Markdown; shown before the first pair and on demand)",
        value=study.guidelines,
        height=180,
        key=f"{prefix}_guidelines",
    )

    st.markdown("**Quality control and crowd platforms**")
    cols = st.columns(2)
    out["qualification_gold"] = cols[0].number_input(
        "Qualification: gold checks to pass before real pairs (0 = none)",
        min_value=0,
        max_value=50,
        value=study.qualification_gold,
        key=f"{prefix}_qualification_gold",
    )
    out["allow_prolific"] = cols[1].checkbox(
        "Accept Prolific participants",
        value=study.allow_prolific,
        key=f"{prefix}_allow_prolific",
        help="Entry link: /?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
        "&SESSION_ID={{%SESSION_ID%}}",
    )
    cols = st.columns(2)
    out["prolific_study_id"] = cols[0].text_input(
        "Prolific study id (empty = any, if this is the only Prolific study)",
        value=study.prolific_study_id or "",
        key=f"{prefix}_prolific_study_id",
    )
    out["prolific_completion_code"] = cols[1].text_input(
        "Prolific completion code",
        value=study.prolific_completion_code or "",
        key=f"{prefix}_prolific_completion_code",
    )
    return {k: v for k, v in out.items() if k not in locked}


user, study = page("Studies")

with (
    st.expander("Create a study", expanded=study is None),
    st.form("create_study", clear_on_submit=False, border=False),
):
    name = st.text_input("Name", key="new_study_name", placeholder="e.g. pilot-2026")
    options = option_widgets(Study(name=""), prefix="new", locked=set())
    if st.form_submit_button("Create study", type="primary"):
        try:
            created = catalog.create_study(engine(), name, **options)
        except UserError as exc:
            show_error(exc)
        else:
            choose_study(created.name)
            st.session_state["console_flash"] = f"Study '{md_literal(created.name)}' created."
            st.rerun()

flash = st.session_state.pop("console_flash", None)
if flash:
    st.success(flash)
saved = st.session_state.pop("console_saved", None)
if saved:
    st.toast(saved)

if study is not None:
    study_id = id_of(study)
    locked = set(catalog.locked_options(engine(), study_id))
    st.header(f"Options of “{md_literal(study.name)}”")
    if locked:
        st.info(
            "This study already has annotations, so the options that define what an answer "
            "means are locked: ties, the rating dimensions, the scale and what its ends mean, "
            "the main-reason answers, the aspect check and the agreement sample. Coverage, "
            "reservations, what annotators see, guidelines, qualification and Prolific "
            "settings can still change. To change a locked option, create a new study."
        )
    with st.form(f"study_options_{study_id}", border=True):
        values = option_widgets(study, prefix=f"study{study_id}", locked=locked)
        if st.form_submit_button("Save options", type="primary"):
            try:
                catalog.save_study_options(engine(), study_id, **values)
            except UserError as exc:
                show_error(exc)
            else:
                # A toast: the alert at the top of the page is off screen below the long form.
                st.session_state["console_saved"] = "Options saved."
                st.rerun()
    if study.allow_prolific:
        st.caption(
            "Prolific study URL: `<this app's address>/?PROLIFIC_PID={{%PROLIFIC_PID%}}"
            "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}`"
        )
