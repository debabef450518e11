"""Console: invite annotators, deactivate or reactivate them, and see how each one works."""

import streamlit as st

from annotate.errors import UserError
from annotate.people import accounts
from annotate.queue import gold
from annotate.results import monitoring
from annotate.web.identity import engine
from annotate.web.inert import md_literal
from annotate.web.views.admin.shared import base_url, show_error, study_page, study_report_data

QUALITY_BOOTSTRAP = 0  # annotator figures need no confidence intervals

user, study, study_id = study_page("Annotators")

with (
    st.expander("Invite an annotator", expanded=False),
    st.form("invite", clear_on_submit=True, border=False),
):
    cols = st.columns([2, 2, 1], vertical_alignment="bottom")
    name = cols[0].text_input("Name", key="invite_name", placeholder="e.g. ann-07")
    email = cols[1].text_input(
        "Email (optional; maintainers signing in with their organisation)",
        key="invite_email",
    )
    admin = cols[2].checkbox("Maintainer", key="invite_admin")
    if st.form_submit_button("Create and show the link", type="primary"):
        try:
            created, link = accounts.invite(
                engine(),
                study_id=study_id,
                name=name,
                email=email,
                admin=admin,
                base_url=base_url(),
            )
        except UserError as exc:
            show_error(exc)
        else:
            st.session_state["invite_result"] = (created.name, link)

result = st.session_state.pop("invite_result", None)
if result:
    st.success(
        f"Personal link for **{md_literal(result[0])}**. Send it to them privately: it is shown only now "
        "(a new one can be made below; the old one then stops working)."
    )
    st.code(result[1], language=None)

activity = monitoring.annotator_activity(engine(), study_id=study_id)
if activity.empty:
    st.info("No annotators yet: invite one above.")
    st.stop()

report, _, _ = study_report_data(study, bootstrap=QUALITY_BOOTSTRAP)
table = monitoring.annotator_quality(
    activity, report["annotators"], gold.gold_accuracy(engine(), study_id=study_id)
)
flagged = table[(table["flags"] != "") & (table["role"] == "annotator")]
if len(flagged):
    st.warning(
        f"{len(flagged)} annotator(s) flagged: "
        + "; ".join(f"**{md_literal(row.annotator)}**: {row.flags}" for row in flagged.itertuples())
    )

COLUMNS = [
    "annotator",
    "flags",
    "active",
    "done",
    "real_done",
    "open",
    "median_seconds",
    "model_accuracy",
    "model_accuracy_ci95",
    "balanced_accuracy",
    "label_agreement",
    "peer_agreement",
    "first_slot_rate",
    "straight_lining",
    "n_gold",
    "gold_accuracy",
    "qualification",
    "last_answer",
    "source",
    "role",
    "email",
]
st.dataframe(
    table.sort_values(["role", "annotator"])[COLUMNS],
    hide_index=True,
    column_config={
        "active": st.column_config.CheckboxColumn("active"),
        "done": st.column_config.NumberColumn("done", help="pairs answered, gold included"),
        "real_done": st.column_config.NumberColumn("real pairs", help="gold checks left out"),
        "open": st.column_config.NumberColumn("open", help="handed out, not answered yet"),
        "median_seconds": st.column_config.NumberColumn("median s", format="%.0f"),
        "last_answer": st.column_config.DatetimeColumn("last answer", format="YYYY-MM-DD HH:mm"),
        "model_accuracy": st.column_config.NumberColumn(
            "accuracy",
            format="percent",
            help="the model of annotation's estimate of the share of their answers that match "
            "the pair's true preference",
        ),
        "model_accuracy_ci95": st.column_config.TextColumn("accuracy 95% CI"),
        "balanced_accuracy": st.column_config.NumberColumn(
            "balanced acc.",
            format="percent",
            help="the mean over the true classes of answering a pair of that class right; "
            "chance is 50% without ties",
        ),
        "label_agreement": st.column_config.NumberColumn(
            "label agr.", format="percent", help="share of decisive answers picking `chosen`"
        ),
        "peer_agreement": st.column_config.NumberColumn(
            "peer agr.", format="percent", help="agreement with the other annotators' majority"
        ),
        "first_slot_rate": st.column_config.NumberColumn(
            "picks A", format="percent", help="share of decisive answers picking slot A"
        ),
        "straight_lining": st.column_config.CheckboxColumn(
            "straight-lining", help="the same ratings on every pair, by response or by slot"
        ),
        "gold_accuracy": st.column_config.NumberColumn("gold acc.", format="percent"),
        "n_gold": st.column_config.NumberColumn("gold answers"),
        "flags": st.column_config.TextColumn("flags", width="medium"),
    },
)
st.caption(f"Figures from the report (gold checks left out). Flags: {monitoring.FLAG_RULES}")

st.header("Manage an account")
names = table["annotator"].tolist()
chosen = st.selectbox(
    "Annotator", names, index=None, placeholder="Choose an account", key="manage_annotator"
)
if chosen is not None:
    row = table[table["annotator"] == chosen].iloc[0]
    target_id = int(row["id"])
    buttons = st.columns(3)
    if buttons[0].button("New link", key="manage_new_link", help="the old link stops working"):
        link = accounts.new_link(engine(), annotator_id=target_id, base_url=base_url())
        st.session_state["invite_result"] = (chosen, link)
        st.rerun()
    if row["active"]:
        if buttons[1].button(
            "Deactivate",
            key="manage_deactivate",
            disabled=target_id == user.id,
            help="their link stops working; their answers stay in the study",
        ):
            accounts.set_active(engine(), annotator_id=target_id, active=False)
            st.session_state["console_flash"] = (
                f"{md_literal(chosen)} deactivated; their answers are kept."
            )
            st.rerun()
    elif buttons[1].button("Reactivate", key="manage_reactivate"):
        accounts.set_active(engine(), annotator_id=target_id, active=True)
        st.session_state["console_flash"] = f"{md_literal(chosen)} reactivated."
        st.rerun()

flash = st.session_state.pop("console_flash", None)
if flash:
    st.toast(flash)
