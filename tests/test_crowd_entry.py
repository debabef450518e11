"""Crowd participants who must not be paid for nothing or drain a study (#21): a failed
qualification shows no completion code (only the study's screened-out code, when set), and
throwaway Prolific ids cannot hold a study's pairs. Both databases."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from analysis.vocabulary import TIE
from annotate.engine import get_engine
from annotate.queue.gold import set_gold
from annotate.store.db import ENV_VAR, session
from annotate.store.models import Study
from annotate.studies.catalog import update_study_options
from tests.factories import make_study
from tests.test_label_app import data, full_form, submit_form

APP = "../annotate/web/app.py"
CODE = "C0DE42"
SCREENED = "SCR33N"


@pytest.fixture
def crowd(db_url, tmp_path, monkeypatch):
    """A Prolific study of 4 pairs, overlap 1, whose first pair is a qualification check."""
    monkeypatch.setenv(ENV_VAR, db_url)
    st.cache_resource.clear()
    engine = get_engine(db_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=4, overlap_target=1)
    with session(engine) as s:
        update_study_options(
            s,
            s.get(Study, study_id),
            allow_prolific=True,
            prolific_study_id="PSTUDY",
            prolific_completion_code=CODE,
            qualification_gold=1,
        )
    set_gold(engine, study_id=study_id, pair_keys=["p0"], answer="chosen")
    yield engine, study_id
    st.cache_resource.clear()


def visitor(pid: str, session_id: str = "S1") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"PROLIFIC_PID": pid, "STUDY_ID": "PSTUDY", "SESSION_ID": session_id})
    return at.run()


def page_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.code]
    parts += [e.value for e in at.info] + [e.value for e in at.success]
    parts += [b.proto.url for b in at.get("link_button")]
    return "\n".join(str(p) for p in parts)


def fail_qualification(pid: str) -> AppTest:
    at = visitor(pid)
    assert not at.exception
    assert data(at)["question_html"]  # the gold check
    at = submit_form(at, full_form(TIE))  # the expected answer is "chosen": a tie is wrong
    assert not at.exception
    return at


def test_a_failed_qualification_shows_no_completion_code(crowd):
    shown = page_text(fail_qualification("failer1"))
    assert CODE not in shown
    assert "labelled every pair" not in shown
    assert "did not match" in shown


def test_a_failed_qualification_shows_the_screened_out_code_when_the_study_has_one(crowd):
    engine, study_id = crowd
    with session(engine) as s:
        update_study_options(s, s.get(Study, study_id), prolific_screened_out_code=SCREENED)
    shown = page_text(fail_qualification("failer2"))
    assert SCREENED in shown and f"cc={SCREENED}" in shown
    assert CODE not in shown


# --- throwaway participant ids (N4) --------------------------------------------------------


@pytest.fixture
def open_study(db_url, tmp_path):
    """A Prolific study of 15 pairs, overlap 1, no qualification."""
    from annotate.people.prolific import NEW_ACCOUNTS

    NEW_ACCOUNTS.clear()
    engine = get_engine(db_url)
    study_id, _ = make_study(
        engine,
        tmp_path,
        n_pairs=15,
        overlap_target=1,
        allow_prolific=True,
        prolific_study_id="PSTUDY",
        prolific_completion_code=CODE,
    )
    yield engine, study_id
    NEW_ACCOUNTS.clear()


def arrive(engine, pid: str, client: str):
    """A participant's entry and the pair the page would reserve for them."""
    from annotate.people.prolific import enter
    from annotate.queue.assignment import next_assignment

    entry = enter(engine, pid=pid, study_id="PSTUDY", session_id=f"S-{pid}", client=client)
    return entry, next_assignment(engine, annotator_id=entry.annotator_id)


def test_twenty_throwaway_ids_from_one_client_leave_a_real_participant_a_pair(open_study):
    from annotate.errors import UserError

    engine, _ = open_study
    created, refused = 0, []
    for n in range(20):
        try:
            arrive(engine, f"bot{n}", client="203.0.113.9")
            created += 1
        except UserError as exc:
            refused.append(str(exc))
    assert created <= 5 and len(refused) >= 15
    assert "too many new participants" in refused[0]
    _, pair = arrive(engine, "realperson", client="198.51.100.7")
    assert pair is not None
    # a participant who came before may come back from the same address
    again, _ = arrive(engine, "bot0", client="203.0.113.9")
    assert not again.created


def backdate(engine, seconds: float, *, table="assignment", column="assigned_at") -> None:
    from sqlalchemy import text

    from annotate.store.models import utcnow

    with session(engine) as s:
        s.execute(
            text(f"UPDATE {table} SET {column} = :t"),
            {"t": utcnow() - __import__("datetime").timedelta(seconds=seconds)},
        )


def test_an_answerless_account_holds_a_pair_only_for_a_short_hold(open_study):
    from annotate.queue.rules import ANSWERLESS_HOLD

    engine, _ = open_study
    for n in range(15):  # a botnet: every id from its own address, each holding a pair
        _, pair = arrive(engine, f"bot{n}", client=f"203.0.113.{n}")
        assert pair is not None
    _, nothing = arrive(engine, "early", client="198.51.100.7")
    assert nothing is None  # all 15 held, just now
    backdate(engine, ANSWERLESS_HOLD + 1)
    _, pair = arrive(engine, "realperson", client="198.51.100.8")
    assert pair is not None


def test_a_reservation_of_an_account_with_answers_keeps_the_study_timeout(open_study):
    from annotate.labelling.step import submit
    from annotate.queue.rules import ANSWERLESS_HOLD
    from tests.labelling_helpers import current_item
    from tests.test_label_app import full_form as _full

    engine, _ = open_study
    worker, _ = arrive(engine, "worker", client="198.51.100.1")
    from annotate.labelling.answers import FormState

    with session(engine) as s:
        study = s.get(Study, 1)
    item = current_item(engine, annotator_id=worker.annotator_id)
    form = FormState.from_browser(_full("A"), study=study, n_aspects=1)
    submit(engine, item=item, form=form, seconds=5.0)
    for n in range(14):  # the rest held by others who answered nothing
        arrive(engine, f"bot{n}", client=f"203.0.113.{n}")
    backdate(engine, ANSWERLESS_HOLD + 1)
    _, pair = arrive(engine, "late", client="198.51.100.9")
    assert pair is not None  # a throwaway's pair came free
    with session(engine) as s:
        from sqlmodel import select

        from annotate.store.models import Assignment

        mine = s.exec(
            select(Assignment.status).where(Assignment.annotator_id == worker.annotator_id)
        ).all()
    assert sorted(mine) == ["active", "done"]  # the worker's next pair is still theirs


def test_abandoned_throwaway_accounts_are_removed_when_a_new_participant_comes(open_study):
    from sqlmodel import func, select

    from annotate.people.prolific import ABANDONED_AFTER
    from annotate.store.models import Annotator, Pair

    engine, _ = open_study
    for n in range(5):
        arrive(engine, f"bot{n}", client=f"203.0.113.{n}")
    backdate(engine, ABANDONED_AFTER + 60, table="annotator", column="created_at")
    arrive(engine, "newcomer", client="198.51.100.7")
    with session(engine) as s:
        names = s.exec(select(Annotator.name)).all()
        held = s.exec(select(func.sum(Pair.n_assigned))).one()
    assert names == ["prolific:newcomer"]
    assert held == 1


def test_a_study_that_names_its_prolific_study_refuses_other_study_ids(open_study):
    from annotate.errors import UserError
    from annotate.people.prolific import enter

    engine, _ = open_study
    for study_id in ("OTHER", ""):
        with pytest.raises(UserError):
            enter(engine, pid="someone", study_id=study_id, session_id="S1", client="x")


# --- forged numbers (N10) -------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_time_on_item_that_is_not_a_finite_number_is_stored_as_unknown(crowd, seconds):
    from sqlmodel import select

    from annotate.store.models import Annotation, Assignment
    from tests.test_label_app import send

    engine, _ = crowd
    at = visitor("numbers")
    at = send(at, "draft", {"form": full_form("A"), "seconds": seconds})
    assert not at.exception
    at = submit_form(at, full_form("A"), seconds=seconds)
    assert not at.exception
    with session(engine) as s:
        assert [a.seconds for a in s.exec(select(Annotation)).all()] == [None]
        drafts = [d for d in s.exec(select(Assignment.draft)).all() if d]
    assert all("NaN" not in str(d) and "inf" not in str(d) for d in drafts)


# --- what the page says about assignments (N6) ---------------------------------------------


def test_the_page_names_each_pair_by_an_opaque_token_not_an_assignment_id(crowd):
    import re

    from sqlmodel import select

    from annotate.store.models import Assignment
    from tests.test_label_app import form_element

    engine, _ = crowd
    at = visitor("tokens")
    seen = []
    for _ in range(2):
        with session(engine) as s:
            (open_id,) = s.exec(select(Assignment.id).where(Assignment.status == "active")).all()
        token, element = data(at)["token"], form_element(at).id
        assert re.fullmatch(r"[0-9a-f]{20}", token)
        assert f"label_form_{token}" in element
        assert not re.search(rf"label_form_{open_id}\b|label_form_{open_id}_", element)
        seen.append(token)
        at = submit_form(at, full_form("A"))
        if not at.get("bidi_component"):
            break
    assert len(set(seen)) == len(seen)
    again = visitor("tokens")  # a reload: the same token for the same pair
    if again.get("bidi_component"):
        assert data(again)["token"] == data(at)["token"]


# --- gold checks against throwaway accounts (N5) --------------------------------------------


def test_gold_order_differs_between_accounts_and_failure_shows_after_all_checks(db_url, tmp_path):
    from annotate.queue import gold
    from annotate.queue.assignment import next_assignment
    from tests.test_console import work_through

    engine = get_engine(db_url)
    study_id, people = make_study(
        engine, tmp_path, n_pairs=10, annotators=12, overlap_target=3, qualification_gold=3
    )
    for key in ("p7", "p8", "p9"):
        gold.set_gold(engine, study_id=study_id, pair_keys=[key], answer="chosen")
    firsts = set()
    for aid, _ in people[:10]:
        first = next_assignment(engine, annotator_id=aid)
        firsts.add(first.pair_id)
    assert len(firsts) > 1, "every account got the same first gold pair"
    # a wrong first answer is not announced by an empty queue: the other checks still come
    wrong_first, _ = people[10]
    served = work_through(engine, wrong_first, gold_answers={"p7": "tie", "p8": "tie", "p9": "tie"})
    assert sorted(served) == ["p7", "p8", "p9"]
    assert gold.qualification_of(engine, annotator_id=wrong_first).state == gold.FAILED
