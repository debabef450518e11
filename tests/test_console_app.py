"""The maintainer console (/admin...) driven by Streamlit's AppTest: who may see it, study
creation and option locking, pairs upload, invitation and deactivation, gold checks and
qualification, progress numbers, the export buttons (their files are checked in a browser by
test_console_browser.py), Prolific entry and
completion, and maintainers signing in with st.login (OIDC) mapped by email."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime, timedelta

import pytest
import streamlit as st
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_answer
from annotate.people.auth import annotator_for_token, create_annotator
from annotate.queue import gold
from annotate.queue.assignment import next_assignment
from annotate.store.db import ENV_VAR, session
from annotate.store.models import Annotation, Annotator, Pair, Study, id_of
from annotate.studies.catalog import update_study_options
from annotate.studies.pair_import import import_pairs
from annotate.web.inert import md_literal
from annotate.web.views.admin import PAGES
from tests.factories import make_study, pair_record, write_jsonl

APP = "../annotate/web/app.py"
STUDY = "default"


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A study with 4 pairs (overlap target 2), two annotators and a maintainer."""
    url = f"sqlite:///{tmp_path}/console.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    st.cache_data.clear()
    engine = get_engine(url)
    study_id, people = make_study(engine, tmp_path, n_pairs=4, annotators=2, overlap_target=2)
    with session(engine) as s:
        _, boss_token = create_annotator(
            s, name="boss", study_id=study_id, is_admin=True, email="Boss@Example.org"
        )
    yield {
        "engine": engine,
        "study_id": study_id,
        "people": people,
        "boss_token": boss_token,
        "tmp": tmp_path,
    }
    st.cache_resource.clear()
    st.cache_data.clear()


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60)


def as_token(token: str | None) -> AppTest:
    at = app()
    if token:
        at.query_params["token"] = token
    return at.run()


def open_page(at: AppTest, url_path: str) -> AppTest:
    script = next(script for script, _, _, path in PAGES if path == url_path)
    at.switch_page(f"views/admin/{script}").run()
    assert not at.exception, at.exception
    return at


def maintainer(db, url_path: str = "admin") -> AppTest:
    return open_page(as_token(db["boss_token"]), url_path)


def texts(at: AppTest) -> str:
    """Everything the page shows as text (markdown, captions, titles, alerts, code, tables)."""
    parts = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "info",
        "success",
        "warning",
        "error",
        "code",
        "metric",
        "text",
    ):
        for element in at.get(kind):
            parts.append(str(getattr(element, "value", "")))
            if kind == "metric":
                parts.append(str(getattr(element, "label", "")))
    for frame in at.dataframe:
        parts.append(frame.value.to_csv())
    for form in at.get("bidi_component"):  # the labelling form's data (annotate/web/label_form.py)
        parts.append(form.proto.json)
    return "\n".join(parts)


def label_form(at: AppTest) -> dict | None:
    """The data of the labelling form on the page (None when there is no form)."""
    forms = at.get("bidi_component")
    return json.loads(forms[0].proto.json) if forms else None


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r} in {[b.label for b in at.button]}"
    return matches[0]


def answer(engine, annotator_id: int, pair_id: int, preference: str, **extra) -> None:
    submit_answer(
        engine,
        annotator_id=annotator_id,
        pair_id=pair_id,
        answer=Answer(
            preference=preference,
            chosen_position="A",
            ratings={"correctness_chosen": 4, "correctness_rejected": 3},
            main_reason="personal_fit",
            seconds=12.0,
            **extra,
        ),
    )


def pair_ids(engine, study_id: int) -> dict[str, int]:
    with session(engine) as s:
        pairs = s.exec(select(Pair).where(Pair.study_id == study_id)).all()
        return {pair.pair_key: id_of(pair) for pair in pairs}


# --- access ------------------------------------------------------------------------------


def test_strangers_and_annotators_see_no_console_content(db):
    _, annotator_token = db["people"][0]
    for token in (None, "not-a-token", annotator_token):
        # Their navigation holds the console's front door only: the other pages are not
        # registered for them, so AppTest (like the browser's address bar) cannot reach them.
        for script, _, _, url_path in PAGES:
            if url_path != "admin":
                with pytest.raises(ValueError, match="Could not find a navigation page"):
                    as_token(token).switch_page(f"views/admin/{script}")
                continue
            at = open_page(as_token(token), url_path)
            shown = texts(at)
            expected = "For maintainers only" if token == annotator_token else "Please sign in"
            assert at.title[0].value == expected, (token, url_path)
            assert "default-ann-" not in shown and "p0" not in shown
            assert not at.dataframe and not at.get("metric")
            assert not at.get("download_button") and not at.get("file_uploader")
            # no organisation sign-in without [auth]
            assert "Sign in with your organisation" not in [b.label for b in at.button]
            if token == annotator_token:  # told what the console is, not asked to sign in
                assert "for the study's maintainers" in shown


def test_a_maintainer_sees_every_console_page(db):
    at = as_token(db["boss_token"])
    for _, title, _, url_path in PAGES:
        open_page(at, url_path)
        assert at.title[0].value == title
        assert at.selectbox(key="study_picker").value == STUDY


# --- studies -----------------------------------------------------------------------------


def test_create_a_study_with_its_options(db):
    at = maintainer(db, "admin-studies")
    at.text_input(key="new_study_name").input("pilot")
    at.number_input(key="new_overlap_target").set_value(5)
    at.checkbox(key="new_allow_ties").uncheck()
    at.multiselect(key="new_dimensions").set_value(["correctness"])
    at.checkbox(key="new_show_profile").uncheck()
    at.text_area(key="new_guidelines").input("Read **carefully**.")
    at.number_input(key="new_qualification_gold").set_value(2)
    at.number_input(key="new_reservation_timeout").set_value(600)
    at.checkbox(key="new_aspect_check").check()
    button(at, "Create study").click().run()
    assert not at.exception and not at.error
    assert "Study 'pilot' created." in texts(at)
    assert at.selectbox(key="study_picker").value == "pilot"
    with session(db["engine"]) as s:
        study = s.exec(select(Study).where(Study.name == "pilot")).one()
    assert study.overlap_target == 5
    assert study.allow_ties is False
    assert study.dimensions == ["correctness"]
    assert study.show_profile is False and study.show_narrative is True
    assert study.guidelines == "Read **carefully**."
    assert study.qualification_gold == 2
    assert study.reservation_timeout == 600 and study.aspect_check is True

    # a second study of the same name is refused with a message, nothing created
    at.text_input(key="new_study_name").input("pilot")
    button(at, "Create study").click().run()
    assert "already exists" in at.error[0].value


def test_studies_page_sets_adaptive_overlap_as_configure_study_does(db):
    at = maintainer(db, "admin-studies")
    at.text_input(key="new_study_name").input("adaptive pilot")
    at.checkbox(key="new_adaptive").check()
    at.number_input(key="new_adaptive_min").set_value(2)
    at.number_input(key="new_adaptive_max").set_value(4)
    at.number_input(key="new_agreement_sample").set_value(0.25)
    at.number_input(key="new_agreement_overlap").set_value(4)
    button(at, "Create study").click().run()
    assert not at.exception and not at.error
    with session(db["engine"]) as s:
        study = s.exec(select(Study).where(Study.name == "adaptive pilot")).one()
    assert (study.adaptive_min, study.adaptive_max) == (2, 4)
    assert (study.agreement_sample, study.agreement_overlap) == (0.25, 4)
    # MIN above MAX: the same refusal as the command line's
    at.text_input(key="new_study_name").input("bad")
    at.number_input(key="new_adaptive_min").set_value(5)
    button(at, "Create study").click().run()
    assert "out of bounds" in at.error[0].value  # (shown markdown-escaped)
    # the fields offer only what the bounds allow, and say them
    low, high = at.number_input(key="new_adaptive_min"), at.number_input(key="new_adaptive_max")
    assert (low.min, low.max, high.min, high.max) == (2, 9, 3, 10)
    assert "at most 10" in high.help


def test_options_lock_once_the_study_has_annotations(db):
    engine, study_id = db["engine"], db["study_id"]
    prefix = f"study{study_id}"
    at = maintainer(db, "admin-studies")
    assert not at.checkbox(key=f"{prefix}_allow_ties").disabled
    at.checkbox(key=f"{prefix}_allow_ties").uncheck()
    button(at, "Save options").click().run()
    with session(engine) as s:
        assert s.get(Study, study_id).allow_ties is False

    annotator_id, _ = db["people"][0]
    answer(engine, annotator_id, pair_ids(engine, study_id)["p0"], "chosen")
    at = maintainer(db, "admin-studies")
    assert "options that define what an answer means are locked" in texts(at)
    # the scale's words ("1 = very poor") too: the answers were given against them
    locked = ("allow_ties", "dimensions", "reasons", "scale_min", "scale_max", "aspect_check")
    for name in (*locked, "scale_min_label", "scale_max_label"):
        widget = (
            at.get("checkbox")
            + at.get("multiselect")
            + at.get("number_input")
            + at.get("text_input")
        )
        match = [w for w in widget if w.key == f"{prefix}_{name}"]
        assert match and match[0].disabled, name
    # what does not change the meaning of answers can still change
    at.number_input(key=f"{prefix}_overlap_target").set_value(3)
    at.text_area(key=f"{prefix}_guidelines").input("New guidelines.")
    at.number_input(key=f"{prefix}_reservation_timeout").set_value(900)
    button(at, "Save options").click().run()
    assert not at.error
    with session(engine) as s:
        study = s.get(Study, study_id)
        assert (study.overlap_target, study.guidelines) == (3, "New guidelines.")
        assert study.reservation_timeout == 900
        assert study.allow_ties is False  # the locked value stayed


def test_the_console_opens_on_the_signed_in_maintainers_own_study(db, tmp_path):
    """Not the alphabetically first study, nor the default one: the study the maintainer's
    account belongs to (until they pick another)."""
    engine = db["engine"]
    make_study(engine, tmp_path, n_pairs=1, study="aardvark")
    zeta_id, _ = make_study(engine, tmp_path, n_pairs=1, study="zeta")
    with session(engine) as s:
        _, token = create_annotator(s, name="zoe", study_id=zeta_id, is_admin=True)
    for url_path in ("admin", "admin-agreement", "admin-studies"):
        at = open_page(as_token(token), url_path)
        assert at.selectbox(key="study_picker").value == "zeta", url_path
    # the default study's maintainer still opens on it
    assert maintainer(db).selectbox(key="study_picker").value == STUDY


# --- pairs -------------------------------------------------------------------------------


def test_pairs_upload_all_or_nothing_and_coverage(db):
    engine, study_id = db["engine"], db["study_id"]
    at = maintainer(db, "admin-pairs")
    good = "".join(json.dumps(pair_record(n)) + "\n" for n in range(10, 13)).encode()
    at.file_uploader(key="pairs_upload").set_value(("more.jsonl", good, "application/jsonl"))
    at.run()
    button(at, "Import").click().run()
    assert "3 pairs added, 0 revised, 0 unchanged." in texts(at)
    assert len(pair_ids(engine, study_id)) == 7

    bad_lines = [pair_record(20), {**pair_record(21), "chosen": ""}, {"id": "x"}]
    bad = "".join(json.dumps(r) + "\n" for r in bad_lines).encode()
    at.file_uploader(key="pairs_upload").set_value(("bad.jsonl", bad, "application/jsonl"))
    at.run()
    button(at, "Import").click().run()
    # the message is escaped markdown (it may quote names from the file: annotate/web/inert.py)
    assert at.error[0].value.startswith(md_literal("bad.jsonl: 2 problems, nothing was written"))
    problems = at.code[0].value
    assert "line 2" in problems and "line 3" in problems
    assert len(pair_ids(engine, study_id)) == 7  # nothing from the bad file

    annotator_id, _ = db["people"][0]
    answer(engine, annotator_id, pair_ids(engine, study_id)["p1"], "chosen")
    at = maintainer(db, "admin-pairs")
    table = at.dataframe[0].value.set_index("pair_id")
    assert table.loc["p1", "annotations"] == 1 and table.loc["p1", "target"] == 2
    assert table.loc["p1", "status"] == "in progress"
    assert table.loc["p12", "status"] == "not started"


# --- annotators --------------------------------------------------------------------------


def test_invite_shows_a_working_link_and_deactivation_keeps_answers(db):
    engine = db["engine"]
    at = maintainer(db, "admin-annotators")
    at.text_input(key="invite_name").input("new-person")
    button(at, "Create and show the link").click().run()
    assert not at.error
    link = at.code[0].value
    assert link.startswith("http") and "/?token=" in link
    token = link.split("?token=")[1]
    with session(engine) as s:
        person = annotator_for_token(s, token)
    assert person is not None and person.name == "new-person" and not person.is_admin
    label = as_token(token)
    assert label.title == [] or label.title[0].value != "Please sign in"
    assert label_form(label)  # the labelling page, with a pair

    answer(engine, person.id, pair_ids(engine, db["study_id"])["p0"], "chosen")
    at = maintainer(db, "admin-annotators")
    at.selectbox(key="manage_annotator").set_value("new-person").run()
    button(at, "Deactivate").click().run()
    assert not at.exception
    with session(engine) as s:
        assert s.get(Annotator, person.id).active is False
        kept = s.exec(select(Annotation).where(Annotation.annotator_id == person.id)).all()
    assert len(kept) == 1  # answers stay
    assert as_token(token).title[0].value == "Please sign in"  # the link stops working
    table = at.dataframe[0].value.set_index("annotator")
    assert not table.loc["new-person", "active"]

    at.selectbox(key="manage_annotator").set_value("new-person").run()
    button(at, "Reactivate").click().run()
    assert label_form(as_token(token))


def test_annotator_figures_and_outlier_flags(db, tmp_path):
    engine, study_id = db["engine"], db["study_id"]
    more = write_jsonl(tmp_path / "more.jsonl", [pair_record(n) for n in range(4, 8)])
    import_pairs(engine, more, study_name=STUDY)
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    with session(engine) as s:
        c = create_annotator(s, name="careless", study_id=study_id)[0].id
        d = create_annotator(s, name="steady", study_id=study_id)[0].id
    for key in ids:
        for person in (a, b, d):
            answer(engine, person, ids[key], "chosen")
        answer(engine, c, ids[key], "rejected")
    at = maintainer(db, "admin-annotators")
    table = at.dataframe[0].value.set_index("annotator")
    assert table.loc["default-ann-0", "label_agreement"] == 1.0
    assert table.loc["careless", "label_agreement"] == 0.0
    assert table.loc["careless", "peer_agreement"] == 0.0
    assert table.loc["default-ann-0", "median_seconds"] == 12.0
    # ratings 4 (chosen) and 3 (rejected) on every pair: a fixed pattern is straight-lining
    # too, not only one value everywhere
    assert bool(table.loc["default-ann-0", "straight_lining"]) is True
    assert "low label agreement" in table.loc["careless", "flags"]
    assert "low peer agreement" in table.loc["careless", "flags"]
    assert table.loc["default-ann-0", "flags"] == "straight-lining"
    assert "careless" in at.warning[0].value


# --- gold checks and qualification -------------------------------------------------------


def test_mark_gold_and_see_accuracy(db):
    engine, study_id = db["engine"], db["study_id"]
    at = maintainer(db, "admin-quality")
    at.multiselect(key="gold_pairs").set_value(["p0", "p1"])
    at.radio(key="gold_answer").set_value("chosen")
    button(at, "Mark as gold").click().run()
    assert "2 pair(s) marked as gold" in texts(at)
    with session(engine) as s:
        marked = s.exec(
            select(Pair.pair_key, Pair.gold_answer).where(Pair.is_gold == True)  # noqa: E712
        ).all()
    assert sorted(marked) == [("p0", "chosen"), ("p1", "chosen")]

    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    answer(engine, a, ids["p0"], "chosen")
    answer(engine, a, ids["p1"], "chosen")
    answer(engine, b, ids["p0"], "rejected")
    at = maintainer(db, "admin-quality")
    accuracy, per_pair = (f.value for f in at.dataframe)
    accuracy = accuracy.set_index("annotator")
    assert accuracy.loc["default-ann-0", "gold_accuracy"] == 1.0
    assert accuracy.loc["default-ann-1", "gold_accuracy"] == 0.0
    assert accuracy.loc["default-ann-1", "n_gold"] == 1
    assert per_pair.set_index("pair_id").loc["p0", "accuracy"] == 0.5

    # gold pairs are not part of the coverage
    at = maintainer(db, "admin")
    assert at.metric[0].value == "0 / 2"


def test_qualification_serves_gold_first_and_stops_those_who_fail(db):
    engine, study_id = db["engine"], db["study_id"]
    gold.set_gold(engine, study_id=study_id, pair_keys=["p3"], answer="chosen")
    with session(engine) as s:
        update_study_options(s, s.get(Study, study_id), qualification_gold=1)
    (good, good_token), (bad, bad_token) = db["people"]
    ids = pair_ids(engine, study_id)

    # both are first served the gold pair, unannounced (the page looks like any other pair)
    for token in (good_token, bad_token):
        at = as_token(token)
        assert "Question 3" in label_form(at)["question_html"]
        assert "gold" not in texts(at).lower()
    answer(engine, good, ids["p3"], "chosen")
    answer(engine, bad, ids["p3"], "rejected")

    assert next_assignment(engine, annotator_id=good).pair_id != ids["p3"]
    assert next_assignment(engine, annotator_id=bad) is None
    at = as_token(bad_token)
    assert "did not match what this study needs" in texts(at)

    at = maintainer(db, "admin-quality")
    accuracy = at.dataframe[0].value.set_index("annotator")
    assert accuracy.loc["default-ann-0", "qualification"] == "passed"
    assert accuracy.loc["default-ann-1", "qualification"] == "failed"
    at = maintainer(db, "admin-annotators")
    table = at.dataframe[0].value.set_index("annotator")
    assert "failed qualification" in table.loc["default-ann-1", "flags"]


# --- progress ----------------------------------------------------------------------------


def test_progress_numbers(db):
    engine, study_id = db["engine"], db["study_id"]
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    now = datetime.now(UTC)
    earlier = now - timedelta(hours=2)
    answer(engine, a, ids["p0"], "chosen", submitted_at=earlier)
    answer(engine, b, ids["p0"], "chosen", submitted_at=earlier)
    answer(engine, a, ids["p1"], "chosen", submitted_at=now)
    at = maintainer(db, "admin")
    metrics = {m.label: m.value for m in at.metric}
    # two words that cannot be read as one ("pairs annotated 4 / 4" beside "pairs complete
    # 0 / 4" read as a contradiction); the Agreement page says "Pairs started" too
    assert metrics["Pairs started"] == "2 / 4"
    assert metrics["Pairs finished"] == "1 / 4"
    helps = {m.label: m.proto.help for m in at.metric}
    assert "finished or not" in helps["Pairs started"]
    assert "all the annotations they are to get" in helps["Pairs finished"]
    assert metrics["Annotations towards the target"] == "3 / 8"
    # 3 annotations since the first one two hours ago: 1.5 an hour, the window in the label
    rate = float(metrics["Rate, last 24 h"].removesuffix(" / hour"))
    assert 1.45 < rate <= 1.5
    assert metrics["Estimated time to finish"] == "about 3 h"  # 5 left at 1.5 an hour
    assert at.get("progress")[0].proto.text == "38% of the target collected"
    assert at.get("plotly_chart")
    studies = at.dataframe[0].value.set_index("study")
    assert studies.loc[STUDY, "pairs finished"] == 1
    assert studies.loc[STUDY, "pairs started"] == 2


# --- exports -----------------------------------------------------------------------------


def download_buttons(at: AppTest) -> dict[str, str]:
    """The page's download buttons, label by key. AppTest has no public way to fetch a
    button's file: tests/test_console_browser.py checks the bytes each one gives, in Chromium."""
    return {b.proto.id.rsplit("-", 1)[-1]: b.proto.label for b in at.get("download_button")}


def test_exports_offer_the_annotations_report_and_pairs(db):
    engine, study_id = db["engine"], db["study_id"]
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    for key in ("p0", "p1", "p2"):
        answer(engine, a, ids[key], "chosen")
        answer(engine, b, ids[key], "chosen" if key != "p2" else "rejected")
    at = maintainer(db, "admin-exports")
    assert not at.exception
    # the files themselves: test_every_export_downloads_the_studys_annotations_report_and_pairs
    assert download_buttons(at) == {
        "export_annotations_csv": "CSV",
        "export_annotations_jsonl": "JSONL",
        "export_annotations_parquet": "PARQUET",
        "export_report_report.json": "report.json",
        "export_report_report.html": "report.html",
        "export_report_pairs.csv": "pairs.csv",
        "export_report_annotators.csv": "annotators.csv",
        "export_report_summary.md": "summary.md",
        "export_valid_pairs": "Validated pairs",
        "export_all_pairs": "All pairs",
        "export_pair_versions": "Every version",
    }


def test_agreement_page_renders_the_report_with_filters_and_downloads(db):
    engine, study_id = db["engine"], db["study_id"]
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    for key in ids:
        answer(engine, a, ids[key], "chosen" if key != "p2" else "tie")
        answer(engine, b, ids[key], "chosen")
    at = maintainer(db, "admin-agreement")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Annotations"] == "8"
    assert metrics["Pairs started"] == "4 / 4"
    assert metrics["Percent agreement"] == "0.750"
    assert len(at.get("plotly_chart")) >= 3
    verdicts = pair_verdicts(at)
    assert verdicts["p2"] == "no_consensus" and verdicts["p0"] != "no_consensus"
    # the files themselves: test_the_agreement_page_downloads_the_report_of_its_selection
    assert download_buttons(at) == {
        f"agreement_download_{name}": name
        for name in (
            "report.json",
            "report.html",
            "pairs.csv",
            "annotators.csv",
            "summary.md",
            "valid_pairs.jsonl",
        )
    }

    at.multiselect(key="agreement_annotators").set_value(["default-ann-0"]).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Annotations"] == "4"
    # one annotator's answers are too few for any pair's verdict
    assert set(pair_verdicts(at).values()) == {"insufficient_annotations"}
    assert "agreement_download_report.json" in download_buttons(at)


def pair_verdicts(at: AppTest) -> dict[str, str]:
    """The Agreement page's pairs table: verdict by pair."""
    table = next(f.value for f in at.dataframe if "verdict" in f.value.columns)
    return dict(zip(table["pair_id"], table["verdict"], strict=True))


# --- Prolific ----------------------------------------------------------------------------


def prolific(pid: str = "5f0c0ffee0123456789abcde", study: str = "PSTUDY", session_id="S1"):
    at = app()
    at.query_params.update({"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session_id})
    return at.run()


def test_prolific_entry_labelling_and_completion_code(db):
    engine, study_id = db["engine"], db["study_id"]
    at = prolific()
    assert at.title[0].value == "Please sign in"  # the study does not accept Prolific yet
    assert "does not" in texts(at) or "no study" in at.error[0].value

    with session(engine) as s:
        update_study_options(
            s,
            s.get(Study, study_id),
            allow_prolific=True,
            prolific_study_id="PSTUDY",
            prolific_completion_code="C0DE42",
            items_per_annotator=2,
        )
    at = prolific()
    assert not at.exception
    assert label_form(at)["progress"] == {"done": 0, "total": 2}
    with session(engine) as s:
        person = s.exec(select(Annotator).where(Annotator.name.startswith("prolific:"))).one()
    assert person.external_id == "5f0c0ffee0123456789abcde"
    assert person.external_session == "S1" and person.study_id == study_id

    # the participant stays signed in when the parameters leave the address
    at.query_params.clear()
    at.run()
    assert label_form(at)

    for _ in range(2):
        assignment = next_assignment(engine, annotator_id=person.id)
        answer(engine, person.id, assignment.pair_id, "chosen")
    at = prolific()  # same participant, same session: back in, finished
    shown = texts(at)
    assert "C0DE42" in shown
    link = [b for b in at.get("link_button") if b.proto.label == "Return to Prolific"]
    assert link[0].proto.url == "https://app.prolific.com/submissions/complete?cc=C0DE42"

    # the same participant id with another session is refused; another study id too
    assert prolific(session_id="S2").title[0].value == "Please sign in"
    assert prolific(pid="another0123", study="OTHER").title[0].value == "Please sign in"
    # ... and a Prolific participant never sees the console
    at = open_page(prolific(), "admin")
    assert at.title[0].value == "For maintainers only"  # signed in, told what the console is
    assert not at.dataframe and not at.get("metric")


# --- OIDC (st.login) ---------------------------------------------------------------------

AUTH = {
    "auth": {
        "redirect_uri": "http://localhost:8501/oauth2callback",
        "cookie_secret": "test-secret",
        "client_id": "id",
        "client_secret": "secret",
        "server_metadata_url": "https://id.example.org/.well-known/openid-configuration",
    }
}


def oidc(identity: dict) -> AppTest:
    at = app()
    at.secrets.update(AUTH)
    at.user = identity
    at.run()
    return open_page(at, "admin")


def test_oidc_maintainers_are_mapped_by_email(db):
    at = oidc({"is_logged_in": False})
    assert at.title[0].value == "Please sign in"
    button(at, "Sign in with your organisation").click().run()
    assert not at.exception
    if importlib.util.find_spec("authlib") is None:  # st.login needs Authlib
        assert "not set up correctly" in at.error[0].value

    at = oidc({"is_logged_in": True, "email": "boss@example.ORG", "name": "Boss"})
    assert at.title[0].value == "Progress"
    assert at.selectbox(key="study_picker").value == STUDY

    at = oidc({"is_logged_in": True, "email": "someone@example.org"})
    assert at.title[0].value == "Please sign in"
    assert "not that of a maintainer account" in at.warning[0].value
    assert "Sign out of your organisation" in [b.label for b in at.button]

    # an annotator's email never opens the console, nor does an unverified one
    with session(db["engine"]) as s:
        person = s.get(Annotator, db["people"][0][0])
        person.email = "ann@example.org"
        s.add(person)
    assert oidc({"is_logged_in": True, "email": "ann@example.org"}).title[0].value == (
        "Please sign in"
    )
    unverified = {"is_logged_in": True, "email": "boss@example.org", "email_verified": False}
    assert oidc(unverified).title[0].value == "Please sign in"


def test_without_auth_configured_a_login_claim_is_ignored(db):
    at = app()
    at.user = {"is_logged_in": True, "email": "boss@example.org"}
    at.run()
    at = open_page(at, "admin")
    assert at.title[0].value == "Please sign in"


def test_saving_a_studys_options_says_so_where_the_button_is(db):
    # "Save options" ends a long form; its confirmation was an alert at the top of the page,
    # off screen for the maintainer who had scrolled down to the button. A toast shows in view.
    prefix = f"study{db['study_id']}"
    at = maintainer(db, "admin-studies")
    at.number_input(key=f"{prefix}_reservation_timeout").set_value(900)
    button(at, "Save options").click().run()
    assert not at.error
    assert [t.value for t in at.toast] == ["Options saved."]


def test_the_agreement_headline_tells_too_few_data_from_evidence_against(db):
    # The conclusion has three outcomes; the console's headline had two, so four answered
    # pairs read "not shown to be the main factor" while the report below said "too few to say".
    # (test_the_agreement_page_downloads_the_report_of_its_selection checks, in a browser, that
    # the headline follows report.json's conclusion.)
    engine, study_id = db["engine"], db["study_id"]
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    for key in ids:
        answer(engine, a, ids[key], "chosen")
        answer(engine, b, ids[key], "chosen")
    at = maintainer(db, "admin-agreement")
    assert not at.warning and not at.success
    headline = at.info[0].value
    assert "too few to say" in headline and "not shown" not in headline


def test_the_agreement_page_reads_in_tabs_with_whole_notes_and_no_none(db):
    """The page was one 4,745 px column (the demo's answers) with the headline notes cut by the
    grid's widths and `None` where a pair has no majority: its parts are tabs, the headline
    table is a static table (each note read whole, a note several rows share said once
    under it), and a split pair's majority reads "no majority"."""
    engine, study_id = db["engine"], db["study_id"]
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    for key in ids:
        answer(engine, a, ids[key], "chosen")
        answer(engine, b, ids[key], "rejected" if key == "p2" else "chosen")
    at = maintainer(db, "admin-agreement")
    assert [t.label for t in at.tabs] == [
        "Headline numbers",
        "In words",
        "Charts",
        "Pairs",
        "Report files",
    ]
    headline = at.table[0].value
    assert list(headline.columns)[-1] == "n / note" and len(headline) >= 10
    # a note several rows share is said once under the table, and the rows name it
    notes = [c.value for c in at.tabs[0].caption]
    assert notes and all(note.startswith(f"[{i}] ") for i, note in enumerate(notes, start=1))
    cells = headline["n / note"].tolist()
    for i in range(1, len(notes) + 1):
        assert cells.count(f"[{i}]") >= 2
    assert not any(note[4:].lower() in " ".join(cells).lower() for note in notes)
    # the long note that the grid cut is in the table whole
    assert any(cell.startswith("equivalence test:") and len(cell) > 120 for cell in cells)
    pairs = next(f.value for f in at.dataframe if "majority" in f.value.columns)
    majority = dict(zip(pairs["pair_id"], pairs["majority"], strict=True))
    assert majority["p2"] == "no majority" and majority["p0"] == "chosen"
    assert None not in set(majority.values())
