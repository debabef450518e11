"""The labelling page driven by Streamlit's AppTest: sign in, refused incomplete submit, submit,
progress, drafts, go back and edit, every earlier answer listed, finish.

The form is one component (`annotate.web.label_form`): AppTest runs no JavaScript, so these tests
read the data the page gives the component and send the component's events (trigger values) as
the browser does; tests/test_label_browser.py drives the same page in Chromium.
"""

from __future__ import annotations

import json

import pytest
import streamlit as st
from sqlmodel import col, select
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.testing.v1 import AppTest

from annotate.engine import get_engine
from annotate.labelling.answers import FormState
from annotate.labelling.step import submit
from annotate.store.db import ENV_VAR, session
from annotate.store.models import Annotation, Assignment, Pair, Study
from tests.factories import make_study
from tests.labelling_helpers import current_item

APP = "../annotate/web/app.py"
DIMENSIONS = ("correctness", "relevance", "helpfulness")


@pytest.fixture
def study(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/app.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    engine = get_engine(url)
    _, people = make_study(engine, tmp_path, n_pairs=3, annotators=2)
    yield engine, people
    st.cache_resource.clear()


def signed_in(token: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = token
    return at.run()


def form_element(at: AppTest):
    forms = at.get("bidi_component")
    assert len(forms) == 1, f"expected the labelling form once, found {len(forms)}"
    return forms[0].proto


def data(at: AppTest) -> dict:
    """What the page gave the component for the pair on screen."""
    return json.loads(form_element(at).json)


def send(at: AppTest, event: str, value: object = True) -> AppTest:
    """The component's `setTriggerValue(event, value)`: one message, one script run."""
    states = WidgetStates()
    states.CopyFrom(at._tree.get_widget_states())
    trigger = states.widgets.add()
    trigger.id = f"$$STREAMLIT_INTERNAL_KEY_{form_element(at).id}__events"
    trigger.json_trigger_value = json.dumps([{"event": event, "value": value}])
    return at._run(widget_state=states)


def full_form(slot: str, rating: int = 4, reason: str = "personal_fit", comment: str = "") -> dict:
    ratings = {f"{d}_{s}": rating for d in DIMENSIONS for s in ("A", "B")}
    return {"slot": slot, "ratings": ratings, "reason": reason, "comment": comment}


def submit_form(at: AppTest, form: dict, seconds: float = 5.0) -> AppTest:
    return send(at, "submit", {"form": form, "seconds": seconds})


def progress(at: AppTest) -> tuple[int, int]:
    shown = data(at)["progress"]
    return shown["done"], shown["total"]


def question(at: AppTest) -> str:
    return data(at)["question_html"]


def stored(engine) -> list[Annotation]:
    with session(engine) as s:
        return list(s.exec(select(Annotation).order_by(col(Annotation.id))).all())


def chosen_position(engine, pair_id: int, annotator_id: int) -> str:
    with session(engine) as s:
        return s.exec(
            select(Assignment.chosen_position).where(
                Assignment.pair_id == pair_id, Assignment.annotator_id == annotator_id
            )
        ).one()


def test_without_a_valid_token_no_pair_is_shown(study):
    for at in (AppTest.from_file(APP, default_timeout=30).run(), signed_in("not-a-token")):
        assert not at.exception
        assert at.title[0].value == "Please sign in"
        assert not at.get("bidi_component")
        assert "Question 0" not in str([m.value for m in at.markdown])


def test_label_flow_end_to_end(study):
    engine, [(annotator_id, token), _] = study
    at = signed_in(token)
    assert not at.exception
    assert "token" not in at.query_params  # the token leaves the address bar
    assert progress(at) == (0, 3)
    first_question = question(at)

    # The server checks again what the browser checked: nothing stored, the missing named.
    submit_form(at, {"slot": "A", "ratings": {"correctness_A": 9}, "reason": "nonsense"})
    assert data(at)["refused"][:2] == ["rating:correctness_A", "rating:correctness_B"]
    assert "reason:reason" in data(at)["refused"]
    assert stored(engine) == []
    assert question(at) == first_question

    submit_form(at, full_form("B", 4, comment="Clear winner for this user."), seconds=12.5)
    assert not at.exception
    assert progress(at) == (1, 3)
    assert data(at)["flash"] == "Answer saved."
    assert question(at) != first_question
    [first] = stored(engine)
    position = chosen_position(engine, first.pair_id, annotator_id)
    assert first.preference == ("chosen" if position == "B" else "rejected")
    assert first.chosen_position == position
    assert first.correctness_chosen == 4 and first.helpfulness_rejected == 4
    assert first.main_reason == "personal_fit" and first.comment == "Clear winner for this user."
    assert first.seconds == 12.5

    submit_form(at, full_form("A", 5))
    assert len(stored(engine)) == 2
    assert progress(at) == (2, 3)

    # Backspace: the latest answered pair, its answer preselected, nothing stored by going.
    send(at, "back", {"form": {"slot": "B"}, "seconds": 1.0})
    shown = data(at)
    assert shown["editing"] and shown["initial"]["slot"] == "A"
    assert shown["initial"]["ratings"]["correctness_A"] == 5
    # Backspace again: the pair answered before it (the first one), in its A/B order.
    send(at, "back", {"form": {}, "seconds": 0})
    shown = data(at)
    assert shown["editing"] and shown["question_html"] == first_question
    assert shown["initial"]["slot"] == "B" and shown["initial"]["comment"] == (
        "Clear winner for this user."
    )
    submit_form(at, {**full_form("tie"), "comment": "Changed my mind."})
    rows = stored(engine)
    assert len(rows) == 2
    assert [(r.preference, r.comment) for r in rows if r.pair_id == first.pair_id] == [
        ("tie", "Changed my mind.")
    ]
    assert progress(at) == (2, 3) and data(at)["flash"] == "Your change was saved."
    # The pair left for the earlier ones kept its draft.
    assert data(at)["initial"]["slot"] == "B"

    submit_form(at, full_form("A", 3, reason="general_quality"))
    assert len(stored(engine)) == 3
    assert "labelled every pair" in at.success[0].value


def test_a_stale_second_tab_is_told_and_replaces_nothing(study):
    engine, [(_, token), _] = study
    first_tab, second_tab = signed_in(token), signed_in(token)
    assert question(first_tab) == question(second_tab)  # the same pair in both tabs
    submit_form(first_tab, full_form("A", 4, comment="from the first tab"))
    [answer] = stored(engine)
    submit_form(second_tab, full_form("B", 2, comment="from the second tab"))
    assert not second_tab.exception
    assert [(a.comment, a.submitted_at) for a in stored(engine)] == [
        ("from the first tab", answer.submitted_at)
    ]
    shown = data(second_tab)
    assert shown["flash"] == (
        f"This pair was answered in another tab at {answer.submitted_at:%H:%M} UTC; your "
        "answer here was not saved. That answer is shown below: change it if you meant to."
    )
    # the pair reopens with the answer that was kept, and an edit from there is saved
    assert shown["editing"] and shown["initial"]["comment"] == "from the first tab"
    submit_form(second_tab, full_form("B", 2, comment="changed on purpose"))
    assert [a.comment for a in stored(engine)] == ["changed on purpose"]
    assert data(second_tab)["flash"] == "Your change was saved."


def test_earlier_answers_list_every_pair_with_its_question_and_answer(study, tmp_path):
    engine, _ = study
    _, [(annotator_id, token)] = make_study(
        engine, tmp_path, n_pairs=205, annotators=1, study="many"
    )
    for n in range(203):  # more than the 200 the old list reached
        item = current_item(engine, annotator_id=annotator_id)
        slot = "A" if n % 2 else "B"
        form = FormState.from_draft(full_form(slot))
        submit(engine, item=item, form=form, seconds=1.0)
    at = signed_in(token)
    assert data(at)["history"] is None  # loaded on demand only (key H)
    send(at, "history")
    listed = data(at)["history"]
    assert len(listed) == 203
    assert listed[0]["answer"] == "Response B" and listed[1]["answer"] == "Response A"
    assert listed[-1]["question"].startswith("Question 0")
    oldest = listed[-1]["pair_id"]
    send(at, "open", oldest)
    assert data(at)["editing"] and data(at)["question_html"].startswith("<p>Question 0")
    send(at, "open", 10**9)  # not one of this annotator's pairs: nothing happens
    assert data(at)["question_html"].startswith("<p>Question 0")


def test_skip_moves_on_and_the_pair_returns_at_the_end(study):
    _engine, [(_, token), _] = study
    at = signed_in(token)
    first_question = question(at)
    send(at, "skip", {"form": {}, "seconds": 1})
    assert question(at) != first_question
    for _ in range(2):
        submit_form(at, full_form("A"))
    assert question(at) == first_question


def test_reload_keeps_the_pair_order_and_draft(study):
    _engine, [(_, token), _] = study
    at = signed_in(token)
    shown = question(at)
    send(at, "draft", {"form": {"slot": "A", "ratings": {"correctness_A": 2}}, "seconds": 3.5})
    reloaded = signed_in(token)  # a new session: nothing survives but the database
    assert question(reloaded) == shown
    initial = data(reloaded)["initial"]
    assert initial["slot"] == "A" and initial["ratings"]["correctness_A"] == 2
    assert initial["ratings"]["correctness_B"] is None
    assert data(reloaded)["seconds_before"] == 3.5


def test_time_on_item_continues_after_a_reload(study):
    engine, [(annotator_id, token), _] = study
    at = signed_in(token)
    send(at, "draft", {"form": {"slot": "A"}, "seconds": 100.0})
    reloaded = signed_in(token)
    assert data(reloaded)["seconds_before"] == 100.0  # the browser's clock starts there
    submit_form(reloaded, full_form("A"), seconds=104.0)
    with session(engine) as s:
        row = s.exec(select(Annotation).where(Annotation.annotator_id == annotator_id)).one()
    assert row.seconds == 104.0


def test_guidelines_come_first_and_on_demand(study):
    engine, [(_, token), _] = study
    with session(engine) as s:
        study_row = s.exec(select(Study)).one()
        study_row.guidelines = "Judge for **this** user. ![x](http://127.0.0.1:9/x.png)"
        s.add(study_row)
    at = signed_in(token)
    assert at.title[0].value == "Guidelines"
    # no labelling form yet: only the small component that focuses "Start labelling"
    assert [c.key for c in at.get("bidi_component")] == ["focus_start_labelling"]
    assert "\\!\\[x\\]" in at.markdown[0].value  # inert even in guidelines
    at.button(key="start_labelling").click().run()
    assert progress(at) == (0, 3)
    # on demand inside the form, as inert HTML
    assert data(at)["guidelines_html"] == (
        "<p>Judge for <strong>this</strong> user. ![x](http://127.0.0.1:9/x.png)</p>"
    )
    assert signed_in(token).get("bidi_component")  # seen once: not shown again


def test_no_ties_and_fewer_dimensions_when_the_study_says_so(study):
    engine, [(_, token), _] = study
    with session(engine) as s:
        study_row = s.exec(select(Study)).one()
        study_row.allow_ties = False
        study_row.dimensions = ["relevance"]
        s.add(study_row)
    at = signed_in(token)
    shown = data(at)
    assert [c[0] for c in shown["choices"]] == ["A", "B"]
    assert [c["field"] for c in shown["order"] if c["kind"] == "rating"] == [
        "relevance_A",
        "relevance_B",
    ]
    submit_form(
        at, {"slot": "tie", "ratings": {"relevance_A": 3, "relevance_B": 3}, "reason": "both"}
    )
    assert data(at)["refused"] == ["slot:slot"]


def test_the_form_names_slots_never_chosen_or_rejected(study):
    _engine, [(_, token), _] = study
    at = signed_in(token)
    assert "chosen" not in form_element(at).json.lower()
    assert "rejected" not in form_element(at).json.lower()
    assert "chosen" not in form_element(at).id and "rejected" not in form_element(at).id


def sign_out_links(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if 'href="/logout"' in m.value]


def test_a_finished_annotator_and_one_reading_the_guidelines_can_sign_out(study):
    # The form carries its own Sign out link; the pages without the form (guidelines first,
    # every pair done) offered none, so an annotator on a shared computer stayed signed in.
    engine, [(_, token), _] = study
    with session(engine) as s:
        study_row = s.exec(select(Study)).one()
        study_row.guidelines = "Judge for this user."
        s.add(study_row)
    at = signed_in(token)
    assert at.title[0].value == "Guidelines"
    assert sign_out_links(at)
    at.button(key="start_labelling").click().run()
    for slot in ("A", "B", "A"):
        submit_form(at, full_form(slot))
    assert "labelled every pair" in at.success[0].value
    assert not at.get("bidi_component")
    assert sign_out_links(at)
    # The saved toast's icon is one of Streamlit's bundled symbols: an emoji showed as an empty
    # box in browsers without an emoji font (Debian's Chromium among them).
    assert [t.icon for t in at.toast] == [":material/check_circle:"]


def test_a_submits_page_run_reads_the_page_in_one_unit_of_work(study):
    """The page run after a Submit: the sign-in looked up once (app.py hands it to the page)
    and everything the page shows read in one unit of work; no other transaction (the next
    pair was reserved by the Submit's own commit). Counted at the engine, so a read opened any
    other way is counted too; the Submit itself goes through the SQLite driver and is not."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    _engine, [(_, token), _] = study
    at = signed_in(token)
    units: list[list[str]] = []

    def begun(conn):
        units.append([])

    def executed(conn, cursor, statement, *_):
        units[-1].append(" ".join(statement.split()[:4]))

    shown = data(at)["token"]
    event.listen(Engine, "begin", begun)
    event.listen(Engine, "before_cursor_execute", executed)
    try:
        at = submit_form(at, full_form("A"))
    finally:
        event.remove(Engine, "begin", begun)
        event.remove(Engine, "before_cursor_execute", executed)
    assert not at.exception
    assert data(at)["token"] != shown  # the next pair is on screen
    assert len(units) == 2, units
    sign_in, page = units
    assert len(sign_in) == 1 and "annotator.id" in sign_in[0]
    assert all(sql.startswith("SELECT") for sql in page) and len(page) > 1


# --- what the page says where there is nothing to do ---------------------------------------

INVALID = "The link you opened is not valid"


def test_a_link_that_is_no_accounts_says_so(study):
    """A bogus token looked exactly like no token at all: the page now says the link is not
    valid, whether it reached the page (no login middleware in front) or the middleware sent
    the browser on with link=invalid."""
    at = signed_in("not-a-token")
    assert at.title[0].value == "Please sign in"
    assert INVALID in at.error[0].value
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["link"] = "invalid"
    at.run()
    assert at.title[0].value == "Please sign in" and INVALID in at.error[0].value
    assert "link" not in at.query_params  # said once: a reload shows the plain page
    # without a link there is nothing to complain about
    assert not AppTest.from_file(APP, default_timeout=30).run().error


def test_a_signed_in_annotator_opening_a_bogus_link_is_told_it_changed_nothing(study):
    _, [(_, token), _] = study
    at = signed_in(token)
    at.query_params["link"] = "invalid"
    at.run()
    assert data(at)["flash"] == (
        "The link you opened is not valid, so it changed nothing: you are still signed in as "
        "default-ann-0."
    )
    assert data(at)["flash_tone"] == "warning"


def test_backspace_where_there_is_no_earlier_pair_says_why(study):
    """The form says these words itself (no server round trip): the first pair, and the
    oldest answer reopened."""
    _, [(_, token), _] = study
    at = signed_in(token)
    assert not data(at)["can_go_back"]
    assert data(at)["no_earlier"] == "There is no earlier pair yet: this is your first."
    submit_form(at, full_form("A"))
    send(at, "back", {"form": {}, "seconds": 0})
    assert data(at)["editing"] and not data(at)["can_go_back"]
    assert data(at)["no_earlier"] == (
        "This is the oldest answer you can change: there is no earlier pair."
    )
    # a forged back event gets the same words from the server
    send(at, "back", {"form": {}, "seconds": 0})
    assert data(at)["flash"] == data(at)["no_earlier"]


def test_answers_to_gold_checks_count_in_the_progress_and_the_list_says_why_it_is_empty(
    study, tmp_path
):
    """Gold answers are final and never listed (the page never tells a check from a pair), but
    the progress counts them so that a check is not given away by a count that stalls: the
    list and Backspace must not then say there are no earlier answers."""
    from annotate.queue.gold import set_gold

    engine, _ = study
    study_id, [(annotator_id, token)] = make_study(
        engine, tmp_path, n_pairs=3, annotators=1, study="gold", qualification_gold=2
    )
    set_gold(engine, study_id=study_id, pair_keys=["p0", "p1"], answer="chosen")
    at = signed_in(token)
    for _ in range(2):  # the two qualification checks, answered as expected
        pair_id = current_item(engine, annotator_id=annotator_id).pair.id
        submit_form(at, full_form(chosen_position(engine, pair_id, annotator_id)))
    assert progress(at) == (2, 3)
    shown = data(at)
    assert not shown["can_go_back"]
    assert shown["no_earlier"] == "There is no earlier pair you can go back to."
    send(at, "history")
    assert data(at)["history"] == []
    assert data(at)["history_empty"] == "None of your answers so far can be changed here."


def test_no_assignment_id_or_gap_reaches_the_page_around_a_gold_pair(tmp_path, monkeypatch):
    # The draft object carried the raw assignment id: ids come in sequence, so the gold pair
    # the coin served out of turn showed as the one after a gap.
    from annotate.labelling.drafts import handle_assignment
    from annotate.queue import gold, rules

    url = f"sqlite:///{tmp_path}/gold.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    engine = get_engine(url)
    study_id, [(annotator_id, token)] = make_study(engine, tmp_path, n_pairs=6, annotators=1)
    gold.set_gold(engine, study_id=study_id, pair_keys=["p5"], answer="chosen")
    monkeypatch.setattr(rules, "gold_due", lambda *_, position, **__: position == 3)
    with session(engine) as s:
        secret = s.get(Study, study_id).coin_secret
    at = signed_in(token)
    shown, ids = [], []
    for _ in range(4):
        page = data(at)
        shown.append(page)
        ids.append(handle_assignment(page["draft"]["handle"], secret=secret))
        at = submit_form(at, full_form("A"))
    with session(engine) as s:
        gold_pair = s.exec(select(Pair.id).where(Pair.pair_key == "p5")).one()
        mine = s.exec(select(Assignment).where(Assignment.annotator_id == annotator_id)).all()
        served_gold = [a.id for a in mine if a.pair_id == gold_pair]
    assert served_gold and served_gold[0] == ids[2]  # the walk met the gold pair third
    assert len(set(ids)) == 4 and len({page["draft"]["handle"] for page in shown}) == 4
    for page, assignment_id in zip(shown, ids, strict=True):
        assert set(page["draft"]) == {"url", "handle", "key", "away", "heartbeat"}
        ciphered = page["draft"]["handle"].split(".", 1)[1]
        assert len(ciphered) == 32 and int(ciphered, 16) != assignment_id
        numbers = [
            v for v in page["draft"].values() if isinstance(v, int) and not isinstance(v, bool)
        ]
        assert numbers == []  # no id, position or count in the draft object
    st.cache_resource.clear()
