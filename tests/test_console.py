"""The console's domain functions: gold checks in the queue and qualification, progress and
ETA, coverage, annotator flags, invitations and deactivation, Prolific entry, the OIDC
maintainer mapping, exports and the cache key. Storage-facing tests run on SQLite and
PostgreSQL."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from sqlmodel import select

from analysis.files.annotations_table import read_table
from annotate.engine import get_engine
from annotate.errors import UserError
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_answer
from annotate.people import accounts, prolific
from annotate.people.auth import annotator_for_token, create_annotator
from annotate.queue import gold, rules
from annotate.queue.assignment import history_in, next_assignment, skip
from annotate.results import exports, monitoring, study_report
from annotate.results.frames import annotations_frame
from annotate.store import db
from annotate.store.db import session
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study, id_of
from annotate.studies import catalog, uploads
from annotate.studies.catalog import update_study_options
from annotate.web.proofs import maintainer_for_identity
from tests.factories import make_study


def answer(engine, annotator_id, pair_id, preference="chosen", **extra):
    submit_answer(
        engine,
        annotator_id=annotator_id,
        pair_id=pair_id,
        answer=Answer(
            preference=preference,
            chosen_position="B",
            ratings={"relevance_chosen": 5, "relevance_rejected": 2},
            main_reason="both",
            seconds=30.0,
            **extra,
        ),
    )


def keys(engine, study_id) -> dict[str, int]:
    with session(engine) as s:
        pairs = s.exec(select(Pair).where(Pair.study_id == study_id)).all()
        return {pair.pair_key: id_of(pair) for pair in pairs}


def work_through(engine, annotator_id, preference="chosen", gold_answers=None) -> list[str]:
    """Answer everything the queue serves; returns the pair keys in the order served."""
    served = []
    while (assignment := next_assignment(engine, annotator_id=annotator_id)) is not None:
        with session(engine) as s:
            pair = s.get_one(Pair, assignment.pair_id)
        served.append(pair.pair_key)
        given = (gold_answers or {}).get(pair.pair_key, preference) if pair.is_gold else preference
        answer(engine, annotator_id, assignment.pair_id, given)
        assert len(served) < 200
    return served


# --- gold checks in the queue ------------------------------------------------------------


def test_gold_pairs_are_served_to_everyone_once_outside_the_overlap_target(
    db_url, tmp_path, monkeypatch
):
    engine = get_engine(db_url)
    # the coin (tested below) always says "gold now": every annotator meets both gold pairs
    monkeypatch.setattr(rules, "gold_due", lambda *_, **__: True)
    study_id, people = make_study(engine, tmp_path, n_pairs=30, annotators=3, overlap_target=1)
    gold.set_gold(engine, study_id=study_id, pair_keys=["p5", "p6"], answer="chosen")
    served = {aid: [] for aid, _ in people}
    busy = set(served)
    while busy:  # annotators working side by side, one pair at a time
        for aid in sorted(busy):
            assignment = next_assignment(engine, annotator_id=aid)
            if assignment is None:
                busy.discard(aid)
                continue
            with session(engine) as s:
                served[aid].append(s.get(Pair, assignment.pair_id).pair_key)
            answer(engine, aid, assignment.pair_id)
    for keys_served in served.values():
        assert keys_served.count("p5") <= 1 and keys_served.count("p6") <= 1
    # every real pair reached its target of one annotation, whatever gold was shown
    real = [k for ks in served.values() for k in ks if k not in ("p5", "p6")]
    assert sorted(real) == sorted(f"p{n}" for n in range(30) if n not in (5, 6))
    # gold goes to everyone although the overlap target is 1, once each, before real pairs
    for keys_served in served.values():
        # (in an order of each annotator's own: the gold-order coin)
        assert sorted(keys_served[:2]) == ["p5", "p6"] and keys_served.count("p5") == 1
    with session(engine) as s:
        assert s.exec(select(Pair.n_assigned).where(Pair.pair_key == "p5")).one() == 3


def test_gold_due_is_a_stable_coin_of_the_right_rate():
    coins = rules.Coins("5e" * 16)
    draws = [coins.gold_due(annotator_id=a, position=n) for a in range(50) for n in range(100)]
    assert 0.07 < sum(draws) / len(draws) < 0.13
    # keyed and stable: the positions are HMAC-SHA256(secret, "gold:3:<n>")'s first four bytes
    # divisible by 10, pinned here, so a coin that drew at random, or a changed message (which
    # would move the gold checks of studies already running), fails; another secret, others
    due = [n for n in range(1, 101) if coins.gold_due(annotator_id=3, position=n)]
    assert due == [25, 37, 49, 51, 54, 62, 65, 66, 67, 69, 76, 85]
    other = rules.Coins("5f" * 16)
    assert [n for n in range(1, 101) if other.gold_due(annotator_id=3, position=n)] != due


def test_qualification_gold_first_then_real_pairs_or_nothing(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, people = make_study(
        engine, tmp_path, n_pairs=8, annotators=3, overlap_target=3, qualification_gold=2
    )
    gold.set_gold(engine, study_id=study_id, pair_keys=["p6"], answer="chosen")
    gold.set_gold(engine, study_id=study_id, pair_keys=["p7"], answer="tie")
    (good, _), (bad, _), (partial, _) = people

    served = work_through(engine, good, gold_answers={"p6": "chosen", "p7": "tie"})
    assert sorted(served[:2]) == ["p6", "p7"]
    assert sorted(served[2:]) == [f"p{n}" for n in range(6)]
    assert gold.qualification_of(engine, annotator_id=good).state == gold.PASSED

    served = work_through(engine, bad, gold_answers={"p6": "chosen", "p7": "chosen"})
    assert sorted(served) == ["p6", "p7"]  # failed a check: nothing more after both
    assert gold.qualification_of(engine, annotator_id=bad).state == gold.FAILED
    assert next_assignment(engine, annotator_id=bad) is None

    first = next_assignment(engine, annotator_id=partial)
    gold_ids = {keys(engine, study_id)["p6"], keys(engine, study_id)["p7"]}
    assert first.pair_id in gold_ids
    assert gold.qualification_of(engine, annotator_id=partial).state == gold.PENDING
    # skipping a qualification check brings the next one, then the skipped one again
    skip(engine, annotator_id=partial, pair_id=first.pair_id)
    second = next_assignment(engine, annotator_id=partial).pair_id
    assert second == (gold_ids - {first.pair_id}).pop()

    # answered gold checks cannot be revisited (and changed) through the history
    assert [
        key for _, key in db.read(engine, lambda s: history_in(s, annotator_id=bad, limit=None))
    ] == []
    assert "p6" not in [
        key for _, key in db.read(engine, lambda s: history_in(s, annotator_id=good, limit=None))
    ]

    table = gold.gold_accuracy(engine, study_id=study_id).set_index("annotator")
    assert table.loc["default-ann-0", "gold_accuracy"] == 1.0
    assert table.loc["default-ann-1", "gold_accuracy"] == 0.5
    assert list(table["qualification"]) == ["passed", "failed", "pending"]


def test_qualification_cannot_pass_with_too_few_gold_pairs(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/q.db")
    study_id, [(aid, _)] = make_study(
        engine, tmp_path, n_pairs=3, annotators=1, qualification_gold=2
    )
    gold.set_gold(engine, study_id=study_id, pair_keys=["p0"], answer="chosen")
    assert work_through(engine, aid) == ["p0"]
    assert gold.qualification_of(engine, annotator_id=aid).state == gold.PENDING


def test_set_gold_checks_its_input_and_unmarks(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/g.db")
    study_id, _ = make_study(engine, tmp_path, n_pairs=2)
    with pytest.raises(UserError, match="one of chosen, rejected, tie"):
        gold.set_gold(engine, study_id=study_id, pair_keys=["p0"], answer="A")
    with pytest.raises(UserError, match="'nope'"):
        gold.set_gold(engine, study_id=study_id, pair_keys=["p0", "nope"], answer="chosen")
    assert gold.set_gold(engine, study_id=study_id, pair_keys=["p0"], answer="rejected") == 1
    assert gold.gold_pairs(engine, study_id=study_id)["expected"].tolist() == ["rejected"]
    gold.set_gold(engine, study_id=study_id, pair_keys=["p0"], answer=None)
    assert gold.gold_pairs(engine, study_id=study_id).empty


# --- progress, coverage --------------------------------------------------------------------


def test_progress_numbers_and_eta(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, people = make_study(engine, tmp_path, n_pairs=5, annotators=3, overlap_target=2)
    gold.set_gold(engine, study_id=study_id, pair_keys=["p4"], answer="chosen")
    ids = keys(engine, study_id)
    (a, _), (b, _), (c, _) = people
    now = datetime(2026, 11, 20, 12, tzinfo=UTC)
    answer(engine, a, ids["p0"], submitted_at=now - timedelta(days=3))
    answer(engine, b, ids["p0"], submitted_at=now - timedelta(hours=20))
    answer(engine, c, ids["p0"], submitted_at=now - timedelta(hours=20))  # beyond the target
    answer(engine, a, ids["p1"], submitted_at=now - timedelta(hours=1))
    answer(engine, a, ids["p4"], submitted_at=now - timedelta(hours=1))  # gold
    numbers = monitoring.study_progress(engine, study_id=study_id, now=now)
    assert (numbers.pairs, numbers.gold_pairs, numbers.target) == (4, 1, 2)
    assert numbers.complete == 1  # p0 has its two; p1 has one
    assert numbers.annotated == 2  # p0 and p1 (gold p4 left out)
    assert (numbers.collected, numbers.needed, numbers.remaining) == (3, 8, 5)
    assert (numbers.annotations, numbers.gold_annotations, numbers.annotators) == (4, 1, 3)
    assert numbers.fraction == pytest.approx(3 / 8)
    # per day: 17th 1, 18th 0, 19th 2, 20th 2 (gold included)
    assert numbers.per_day["annotations"].tolist() == [1, 0, 2, 2]
    # 3 real annotations in the last 24 hours (the one three days ago is older): 3/24 an
    # hour; 5 left: 40 hours
    assert numbers.rate_per_hour == pytest.approx(3 / 24)
    assert numbers.eta_days == pytest.approx(40 / 24)
    assert numbers.eta_text(now).startswith("about 1.7 days")

    quiet = monitoring.study_progress(engine, study_id=study_id, now=now + timedelta(days=30))
    assert quiet.rate_per_hour is None and quiet.eta_days is None
    assert "not enough recent activity" in quiet.eta_text()

    coverage = monitoring.pair_coverage(engine, study_id=study_id).set_index("pair_id")
    assert coverage.loc["p0", "annotations"] == 3 and coverage.loc["p0", "status"] == "complete"
    assert coverage.loc["p1", "status"] == "in progress"
    assert coverage.loc["p2", "status"] == "not started"
    assert coverage.loc["p4", "status"] == "gold check" and coverage.loc["p4", "target"] is None


def test_recent_rate_is_per_hour_over_the_last_day_or_a_younger_study():
    now = datetime(2026, 1, 10, tzinfo=UTC)
    # two annotations in the last 30 minutes of a study 30 minutes old: over one hour
    assert monitoring.recent_rate(2, now - timedelta(minutes=30), now=now) == 2.0
    # 48 in the last 24 hours of a study 30 days old: over the 24 hours
    assert monitoring.recent_rate(48, now - timedelta(days=30), now=now) == pytest.approx(2.0)
    # 6 in a study 3 hours old: over its 3 hours
    assert monitoring.recent_rate(6, now - timedelta(hours=3), now=now) == pytest.approx(2.0)
    assert monitoring.recent_rate(0, None, now=now) is None


# --- annotators ----------------------------------------------------------------------------


def test_outlier_flags():
    base = {
        "role": "annotator",
        "n_peer": 10,
        "n_decisive": 10,
        "n_slot": 20,
        "real_done": 10,
        "n_gold": 0,
        "gold_accuracy": None,
        "qualification": "none",
        "first_slot_p": 0.5,
        "first_slot_rate": 0.5,
        "straight_lining": False,
    }
    rows = [
        {
            **base,
            "annotator": n,
            "peer_agreement": 0.8,
            "label_agreement": 0.9,
            "median_seconds": 60,
        }
        for n in ("a", "b", "c")
    ]
    rows.append(
        {
            **base,
            "annotator": "odd",
            "peer_agreement": 0.3,
            "label_agreement": 0.4,
            "median_seconds": 5,
            "first_slot_p": 0.001,
            "first_slot_rate": 0.95,
            "straight_lining": True,
            "n_gold": 4,
            "gold_accuracy": 0.5,
        }
    )
    rows.append({**rows[0], "annotator": "new", "n_peer": 2, "peer_agreement": 0.0})
    rows.append({**rows[0], "annotator": "unqualified", "qualification": "failed"})
    flags = dict(
        zip(
            [r["annotator"] for r in rows],
            monitoring.outlier_flags(pd.DataFrame(rows)),
            strict=True,
        )
    )
    assert flags["a"] == "" and flags["new"] == ""  # too few pairs with peers to judge
    odd = flags["odd"]
    for expected in (
        "gold accuracy 50%",
        "low peer agreement (30% vs median 80%)",
        "low label agreement",
        "position bias (picks A 95%)",
        "straight-lining",
        "very fast (5s vs median 60s)",
    ):
        assert expected in odd
    assert flags["unqualified"] == "failed qualification"


def test_invite_new_link_and_deactivation(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/i.db")
    study_id, _ = make_study(engine, tmp_path, n_pairs=3, overlap_target=1)
    person, link = accounts.invite(
        engine, study_id=study_id, name="ann-x", base_url="https://label.example.org/"
    )
    assert link.startswith("https://label.example.org/?token=")
    token = link.split("=", 1)[1]
    with pytest.raises(UserError, match="already exists"):
        accounts.invite(engine, study_id=study_id, name="ann-x")
    with pytest.raises(UserError, match="not an email"):
        accounts.invite(engine, study_id=study_id, name="ann-y", email="nope")

    first = next_assignment(engine, annotator_id=person.id)
    answer(engine, person.id, first.pair_id)
    held = next_assignment(engine, annotator_id=person.id)  # reserved, not answered
    accounts.set_active(engine, annotator_id=person.id, active=False)
    with session(engine) as s:
        assert annotator_for_token(s, token) is None
        assert len(s.exec(select(Annotation)).all()) == 1  # the answer stays
        # the reservation went back: another annotator can take the pair (target 1)
        assert s.get(Pair, held.pair_id).n_assigned == 0
        assert s.get(Assignment, held.id).status == "skipped"
    accounts.set_active(engine, annotator_id=person.id, active=True)
    new = accounts.new_link(engine, annotator_id=person.id)
    with session(engine) as s:
        assert annotator_for_token(s, token) is None  # the old link no longer works
        assert annotator_for_token(s, new.split("=", 1)[1]).id == person.id

    activity = monitoring.annotator_activity(engine, study_id=study_id).set_index("annotator")
    assert activity.loc["ann-x", "done"] == 1 and activity.loc["ann-x", "median_seconds"] == 30


def test_studies_are_created_with_valid_names_and_options_lock(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/s.db")
    study = catalog.create_study(
        engine, "pilot", overlap_target=4, guidelines="Hi", prolific_study_id="  "
    )
    assert (study.overlap_target, study.guidelines, study.prolific_study_id) == (4, "Hi", None)
    for bad in ("", " ", "../x", "a" * 80):
        with pytest.raises(UserError, match="study name"):
            catalog.create_study(engine, bad)
    with pytest.raises(UserError, match="below its maximum"):
        catalog.create_study(engine, "bad-scale", scale_min=5, scale_max=5)
    assert catalog.locked_options(engine, study.id) == []

    study_id, [(aid, _)] = make_study(engine, tmp_path, n_pairs=1, annotators=1, study="pilot")
    answer(engine, aid, keys(engine, study_id)["p0"])
    assert "allow_ties" in catalog.locked_options(engine, study_id)
    with pytest.raises(UserError, match="locked"):
        catalog.save_study_options(engine, study_id, allow_ties=False)
    catalog.save_study_options(engine, study_id, overlap_target=2, allow_ties=True)


# --- Prolific ------------------------------------------------------------------------------


def test_prolific_entry(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=2)
    with pytest.raises(UserError, match="no study"):
        prolific.enter(engine, pid="P1", study_id="ANY", session_id="S1")
    with session(engine) as s:
        update_study_options(s, s.get(Study, study_id), allow_prolific=True)

    entry = prolific.enter(engine, pid="P1", study_id="ANY", session_id="S1")
    assert entry.created
    with session(engine) as s:
        person = s.get(Annotator, entry.annotator_id)
        assert (person.name, person.external_id, person.external_session) == (
            "prolific:P1",
            "P1",
            "S1",
        )
        assert person.study_id == study_id and not person.is_admin
        assert annotator_for_token(s, entry.token).id == person.id

    again = prolific.enter(engine, pid="P1", study_id="ANY", session_id="S1")
    assert again.annotator_id == entry.annotator_id and not again.created
    with pytest.raises(UserError, match="another session"):
        prolific.enter(engine, pid="P1", study_id="ANY", session_id="S2")
    for bad in ({"pid": ""}, {"pid": "x" * 100}, {"session_id": "a b"}, {"study_id": "<x>"}):
        with pytest.raises(UserError, match="missing or malformed"):
            prolific.enter(engine, **{"pid": "P2", "study_id": "ANY", "session_id": "S", **bad})

    # with two Prolific studies, the link's STUDY_ID decides
    other = catalog.create_study(engine, "other", allow_prolific=True, prolific_study_id="PS2")
    assert (
        prolific.enter(engine, pid="P3", study_id="PS2", session_id="S3").annotator_id
        != entry.annotator_id
    )
    with session(engine) as s:
        assert s.exec(select(Annotator).where(Annotator.external_id == "P3")).one().study_id == (
            other.id
        )
    accounts.set_active(engine, annotator_id=entry.annotator_id, active=False)
    with pytest.raises(UserError, match="closed"):
        prolific.enter(engine, pid="P1", study_id="ANY", session_id="S1")


def test_prolific_completion_url():
    assert prolific.finish_code(Study(name="x"), screened_out=False) is None
    study = Study(name="x", prolific_completion_code=" C 1&x ", prolific_screened_out_code="S")
    assert prolific.finish_code(study, screened_out=False).url == (
        "https://app.prolific.com/submissions/complete?cc=C%201%26x"
    )
    assert prolific.finish_code(study, screened_out=True).code == "S"
    assert prolific.entry_params({"PROLIFIC_PID": "a", "STUDY_ID": "b"}) == ("a", "b", "")
    assert prolific.entry_params({"token": "x"}) is None


# --- OIDC mapping --------------------------------------------------------------------------


def test_oidc_identity_maps_to_active_maintainers_by_email(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/o.db")
    study_id, _ = make_study(engine, tmp_path, n_pairs=1)
    with session(engine) as s:
        boss = create_annotator(
            s, name="boss", study_id=study_id, is_admin=True, email="Boss@Lab.org"
        )[0]
        create_annotator(s, name="ann", study_id=study_id, email="ann@lab.org")
    with session(engine) as s:
        found = maintainer_for_identity(s, {"is_logged_in": True, "email": " boss@LAB.org "})
        assert found.id == boss.id
        for identity in (
            {"is_logged_in": False, "email": "boss@lab.org"},
            {"email": "boss@lab.org"},  # st.user without a login (e.g. local defaults)
            {"is_logged_in": True, "email": "boss@lab.org", "email_verified": False},
            {"is_logged_in": True, "email": "ann@lab.org"},  # not a maintainer
            {"is_logged_in": True, "email": "other@lab.org"},
            {"is_logged_in": True},
        ):
            assert maintainer_for_identity(s, identity) is None, identity
    accounts.set_active(engine, annotator_id=boss.id, active=False)
    with session(engine) as s:
        assert maintainer_for_identity(s, {"is_logged_in": True, "email": "boss@lab.org"}) is None


# --- exports and cache key -------------------------------------------------------------------


def test_exports_round_trip_in_every_format(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/e.db")
    study_id, people = make_study(engine, tmp_path, n_pairs=3, annotators=2)
    ids = keys(engine, study_id)
    for aid, _ in people:
        for key in ids:
            answer(engine, aid, ids[key], "tie" if key == "p2" else "chosen")
    expected = annotations_frame(engine, study="default")
    for fmt in exports.EXPORT_FORMATS:
        data = exports.export_annotations(engine, study="default", fmt=fmt)
        path = tmp_path / f"out.{fmt}"
        path.write_bytes(data)
        frame = read_table(path)
        assert list(frame.columns) == list(expected.columns)
        assert frame["preference"].tolist() == expected["preference"].tolist()
        assert pd.to_numeric(frame["relevance_chosen"]).tolist() == [5] * 6
    with pytest.raises(UserError, match="unknown export format"):
        exports.export_annotations(engine, study="default", fmt="xlsx")
    pairs = [json.loads(line) for line in io.BytesIO(exports.export_pairs(engine, study="default"))]
    assert [p["id"] for p in pairs] == ["p0", "p1", "p2"]


def test_data_version_changes_with_answers_and_gold_marks(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/v.db")
    study_id, [(aid, _)] = make_study(engine, tmp_path, n_pairs=2, annotators=1)
    first = study_report.data_version(engine, study_id=study_id)
    assert study_report.data_version(engine, study_id=study_id) == first
    answer(engine, aid, keys(engine, study_id)["p0"])
    second = study_report.data_version(engine, study_id=study_id)
    assert second != first
    gold.set_gold(engine, study_id=study_id, pair_keys=["p1"], answer="chosen")
    third = study_report.data_version(engine, study_id=study_id)
    assert third != second
    gold.set_gold(engine, study_id=study_id, pair_keys=["p1"], answer="tie")
    assert study_report.data_version(engine, study_id=study_id) != third


def test_upload_import_keeps_the_suffix_and_reports_problems(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path}/u.db")
    catalog.create_study(engine, "up")
    good = b'{"id": "1", "question": "q", "chosen": "a", "rejected": "b"}\n'
    seen = []
    result = uploads.import_upload(
        engine, data=good, file_name="x.JSONL", study="up", progress=seen.append
    )
    assert result.added == 1 and seen == [1]
    array = json.dumps([{"id": "2", "question": "q", "chosen": "a", "rejected": "b"}]).encode()
    assert uploads.import_upload(engine, data=array, file_name="y.json", study="up").added == 1
    with pytest.raises(UserError, match=r"\.jsonl, \.json or \.parquet"):
        uploads.import_upload(engine, data=good, file_name="x.csv", study="up")
    assert uploads.count_records(good + b"\n" + good, "x.jsonl") == 2
