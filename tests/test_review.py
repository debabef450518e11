"""Reviewing contested pairs (issue 47), on SQLite and PostgreSQL: decisions with who and when,
two reviewers at once (the later refused, naming the first), a revision labelled again, the
decisions' files (all or nothing), the exports honouring decisions, and the report's counts."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import select

from analysis.review.decisions import with_review
from analysis.review.queue import reason_counts, review_order, review_queue
from analysis.verdicts.shipping import cleaned_shipment, valid_shipment
from annotate.cli import main
from annotate.engine import get_engine
from annotate.errors import InputError, UserError
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_and_next
from annotate.people.auth import create_annotator
from annotate.queue.assignment import next_assignment
from annotate.results.study_report import build_study_report
from annotate.review.decisions import (
    DecidedMeanwhile,
    Revision,
    Seen,
    pair_review,
    record_decision,
)
from annotate.review.files import export_decisions, import_decisions
from annotate.store.db import read_session, session
from annotate.store.models import Pair, ReviewDecision
from annotate.studies.pair_import import import_pairs
from tests.factories import pair_record, write_jsonl
from tests.test_pair_versions import _answers, _cli

# Three answers each: p0 valid (3 chosen), p1 split (2 chosen, 1 rejected: valid by majority),
# p2 flipped (1 chosen, 2 rejected), p3 no consensus (chosen, rejected, tie), p4 unlabelled.
ANSWERS = {
    "p0": ("chosen", "chosen", "chosen"),
    "p1": ("chosen", "chosen", "rejected"),
    "p2": ("chosen", "rejected", "rejected"),
    "p3": ("chosen", "rejected", "tie"),
}


def _study(db_url: str, tmp_path: Path, capsys) -> tuple:
    engine = get_engine(db_url)
    import_pairs(engine, write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(5)]))
    rows = [
        (pair, f"ann{i}", preference)
        for pair, answers in ANSWERS.items()
        for i, preference in enumerate(answers)
    ]
    _cli(capsys, "import-annotations", str(_answers(tmp_path / "a.jsonl", rows)), "--db", db_url)
    with session(engine) as s:
        boss, _ = create_annotator(s, name="boss", study_id=1, is_admin=True)
        newcomer, _ = create_annotator(s, name="newcomer", study_id=1)
        ids = boss.id, newcomer.id
    return engine, ids


def _seen(engine, key: str) -> Seen:
    shown = pair_review(engine, study_id=1, pair_key=key)
    assert shown is not None
    return shown.seen


def _decide(engine, key: str, decision: str, *, reviewer="boss", seen=None, **kw):
    return record_decision(
        engine,
        study_id=1,
        pair_key=key,
        decision=decision,
        reviewer=reviewer,
        seen=seen or _seen(engine, key),
        **kw,
    )


def test_decisions_are_stored_with_who_and_when_and_counted_in_the_report(db_url, tmp_path, capsys):
    engine, _ = _study(db_url, tmp_path, capsys)
    _decide(engine, "p0", "drop", category="low_quality", note="the chosen answer is wrong")
    _decide(engine, "p2", "keep", note="the rubric is what the user said")
    _decide(engine, "p3", "keep")
    report, _, _ = build_study_report(engine, study="default", bootstrap=0)
    pairs = {p["pair_id"]: p for p in report["pairs"]}
    assert (pairs["p0"]["decision"], pairs["p0"]["decision_category"]) == ("drop", "low_quality")
    assert pairs["p2"]["decision"] == "keep" and pairs["p1"]["decision"] is None
    review = report["review"]
    assert (review["reviewed"], review["kept"], review["dropped"], review["revised"]) == (
        3,
        2,
        1,
        0,
    )
    # p0 valid but dropped, p2 and p3 not valid but kept: the reviewer disagreed every time
    assert review["overridden"] == 3
    assert review["agreement_with_crowd"] == {"value": 0.0, "n": 3}
    shown = pair_review(engine, study_id=1, pair_key="p0")
    (decision,) = shown.decisions
    assert (decision.reviewer, decision.pair_version, decision.note) == (
        "boss",
        1,
        "the chosen answer is wrong",
    )
    assert decision.decided_at.tzinfo is not None


def test_two_reviewers_at_once_the_later_is_refused_naming_the_first(db_url, tmp_path, capsys):
    engine, _ = _study(db_url, tmp_path, capsys)
    alice_saw, bob_saw = _seen(engine, "p2"), _seen(engine, "p2")  # both open the pair
    _decide(engine, "p2", "keep", reviewer="alice", seen=alice_saw)
    with pytest.raises(DecidedMeanwhile, match=r"^alice decided this pair \(keep\) at") as refused:
        _decide(engine, "p2", "drop", reviewer="bob", seen=bob_saw, category="preference_flip")
    assert refused.value.latest.reviewer == "alice"
    with read_session(engine) as s:
        assert [d.reviewer for d in s.exec(select(ReviewDecision)).all()] == ["alice"]
    # having seen alice's decision, bob may still decide otherwise
    _decide(engine, "p2", "drop", reviewer="bob", category="preference_flip")
    # at the same moment, from two threads: exactly one is recorded, the other names it
    seen = _seen(engine, "p3")
    outcomes: dict[str, object] = {}
    start = threading.Barrier(2)

    def decide(name: str, decision: str, category: str | None) -> None:
        start.wait()
        try:
            outcomes[name] = _decide(
                engine, "p3", decision, reviewer=name, seen=seen, category=category
            )
        except DecidedMeanwhile as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(target=decide, args=("carol", "keep", None)),
        threading.Thread(target=decide, args=("dave", "drop", "no_consensus")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = [name for name, outcome in outcomes.items() if isinstance(outcome, Exception)]
    assert len(refused) == 1
    (winner,) = set(outcomes) - set(refused)
    assert str(outcomes[refused[0]]).startswith(f"{winner} decided this pair")
    with read_session(engine) as s:
        p3 = s.exec(select(Pair).where(Pair.pair_key == "p3")).one()
        decided = s.exec(select(ReviewDecision).where(ReviewDecision.pair_id == p3.id)).all()
    assert [d.reviewer for d in decided] == [winner]


def test_a_revision_is_a_new_version_queued_for_its_full_overlap(db_url, tmp_path, capsys):
    engine, (_, newcomer) = _study(db_url, tmp_path, capsys)
    before = pair_review(engine, study_id=1, pair_key="p1")
    assert len(before.answers) == 3
    new_text = "A premium leather bag for 300 dollars, nothing like what a student can afford."
    _decide(
        engine,
        "p1",
        "revise",
        note="the rejected response was too close to the chosen one",
        revision=Revision(
            chosen=before.record["chosen"],
            rejected=new_text,
            rubric_aspects=before.record["rubric_aspects"],
        ),
    )
    after = pair_review(engine, study_id=1, pair_key="p1")
    assert (after.version, after.record["rejected"], after.answers) == (2, new_text, [])
    assert after.earlier_answers == {1: 3}
    assert [(d.pair_version, d.decision) for d in after.decisions] == [(1, "revise")]
    # the pair is queued again: the newcomer gets it first (the least covered with p4), as
    # version 2, and so do the three who answered version 1
    served = []
    for who in (newcomer,):
        row = next_assignment(engine, annotator_id=who)
        while row is not None:
            with read_session(engine) as s:
                served.append((s.get(Pair, row.pair_id).pair_key, row.pair_version))
            row = submit_and_next(
                engine,
                annotator_id=who,
                pair_id=row.pair_id,
                answer=Answer(preference="chosen", chosen_position=row.chosen_position),
                version=row.pair_version,
            )
    assert ("p1", 2) in served and ("p4", 1) in served
    report, _, _ = build_study_report(engine, study="default", bootstrap=0)
    p1 = next(p for p in report["pairs"] if p["pair_id"] == "p1")
    assert (p1["pair_version"], p1["n_annotations"], p1["decision"]) == (2, 1, None)
    assert p1["earlier_versions"][0]["decision"] == "revise"
    assert report["review"]["revised"] == 1
    # a revision that changes nothing is refused, and so is a revise without new text
    with pytest.raises(UserError, match="changes nothing"):
        _decide(
            engine,
            "p1",
            "revise",
            revision=Revision(
                chosen=after.record["chosen"],
                rejected=new_text,
                rubric_aspects=after.record["rubric_aspects"],
            ),
        )
    with pytest.raises(InputError) as same:
        _decide(
            engine,
            "p1",
            "revise",
            revision=Revision(chosen="same", rejected="same", rubric_aspects=[]),
        )
    assert "fields 'chosen' and 'rejected' are the same text" in same.value.problems


def test_a_review_import_with_one_bad_row_writes_nothing(db_url, tmp_path, capsys):
    engine, _ = _study(db_url, tmp_path, capsys)
    good = {"pair_id": "p0", "pair_version": 1, "decision": "keep", "reviewer": "eve"}
    rows = [
        good,
        {"pair_id": "p2", "pair_version": 1, "decision": "drop", "category": "preference_flip"},
        {"pair_id": "p3", "pair_version": 1, "decision": "drop", "category": "too_long"},
    ]
    path = write_jsonl(tmp_path / "decisions.jsonl", rows)
    assert main(["review", "--import", str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "row 3: category must be one of no_consensus, preference_flip" in err
    assert "(got 'too_long')" in err
    with read_session(engine) as s:
        assert s.exec(select(ReviewDecision)).all() == []
    more = [
        {"pair_id": "p9", "pair_version": 1, "decision": "keep"},
        {"pair_id": "p0", "pair_version": 2, "decision": "keep"},
        {"pair_id": "p1", "pair_version": 1, "decision": "revise"},
        {"pair_id": "p2", "pair_version": 1, "decision": "maybe"},
        {"pair_id": "p3", "pair_version": 1, "decision": "keep", "category": "low_quality"},
        {"pair_id": "p3", "pair_version": 1, "decision": "keep"},
    ]
    with pytest.raises(InputError) as refused:
        import_decisions(engine, study="default", path=write_jsonl(tmp_path / "m.jsonl", more))
    problems = refused.value.problems
    assert problems[0] == "row 1, column 'pair_id': no pair with this id (got 'p9')"
    assert problems[1] == "row 2: the pair has no version 2 (its latest is 1)"
    assert problems[2].startswith("row 3: a revise names the version it replaced")
    assert problems[3].startswith("row 4: decision must be one of keep, drop, revise")
    assert problems[4] == "row 5: only a drop has a category (got 'low_quality' with 'keep')"
    assert problems[5] == "row 6: a second row for pair 'p3' (first at row 5)"
    with read_session(engine) as s:
        assert s.exec(select(ReviewDecision)).all() == []


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_decisions_round_trip_through_their_file(
    db_url, db_backend, make_db_url, tmp_path, capsys, suffix
):
    engine, _ = _study(db_url, tmp_path, capsys)
    _decide(engine, "p2", "keep", reviewer="alice", note='=HYPERLINK("x") says "fine"')
    _decide(engine, "p2", "drop", reviewer="bob", category="preference_flip")
    _decide(engine, "p3", "keep", reviewer="alice")
    out = tmp_path / f"decisions{suffix}"
    assert export_decisions(engine, study="default", path=out) == 2  # one row per decided pair
    copy_url = make_db_url(db_backend)  # another database with the same pairs
    copy = get_engine(copy_url)
    import_pairs(copy, write_jsonl(tmp_path / "p.jsonl", [pair_record(i) for i in range(5)]))
    said = _cli(capsys, "review", "--import", str(out), "--db", copy_url)
    assert "2 decisions read" in said and "2 recorded" in said
    again = _cli(capsys, "review", "--import", str(out), "--db", copy_url)
    assert "0 recorded, 2 already the pairs' decisions" in again
    back = tmp_path / f"back{suffix}"
    export_decisions(copy, study="default", path=back)
    assert back.read_bytes() == out.read_bytes()


def test_exports_honour_decisions_and_say_what_they_dropped(db_url, tmp_path, capsys):
    engine, _ = _study(db_url, tmp_path, capsys)
    _decide(engine, "p2", "keep", note="the flip is the annotators' mistake")
    _decide(engine, "p0", "drop", category="low_quality")
    valid = tmp_path / "valid.jsonl"
    said = _cli(
        capsys,
        "report",
        "--out",
        str(tmp_path / "r"),
        "--bootstrap",
        "0",
        "--export-valid",
        str(valid),
        "--db",
        db_url,
    )
    written = [json.loads(line)["id"] for line in valid.read_text().splitlines()]
    assert written == ["p1", "p2"]
    assert (
        "--export-valid: 2 pairs written to "
        f"{valid} (1 valid, 1 kept by a reviewer); 2 dropped (1 dropped by a reviewer "
        "as low_quality, 1 no_consensus); 1 not written because nobody has labelled them "
        "enough yet"
    ) in said
    assert "review: 2 pairs reviewed (1 kept, 1 dropped, 0 revised; 2 against" in said


# --- the analysis side, without a database ------------------------------------------------


def _pair(pair_id: str, verdict: str, chosen: int, rejected: int, **extra) -> dict:
    return {
        "pair_id": pair_id,
        "pair_version": 1,
        "is_gold": False,
        "verdict": verdict,
        "flags": [],
        "n_annotations": chosen + rejected,
        "n_chosen": chosen,
        "n_rejected": rejected,
        "n_tie": 0,
        "decision": None,
        "decision_category": None,
        "earlier_versions": [],
        **extra,
    }


def test_the_queue_puts_the_most_contested_first_and_the_least_certain_when_known():
    pairs = [
        _pair("valid_split", "valid", 2, 1),
        _pair("flip", "preference_flip", 1, 2),
        _pair("unanimous", "valid", 3, 0),
        _pair("tied", "no_consensus", 1, 1),
        _pair("flip_unanimous", "preference_flip", 0, 3),
        _pair("unlabelled", "insufficient_annotations", 0, 0),
    ]
    queue = review_queue(pairs)
    assert [p["pair_id"] for p in queue] == ["tied", "flip", "flip_unanimous", "valid_split"]
    assert queue[0]["reasons"] == ["not_valid", "no_consensus", "split"]
    counts = reason_counts(pairs)
    assert counts == {"not_valid": 3, "no_consensus": 1, "split": 3, "judge": 0, "uncertain": 0}
    assert [p["pair_id"] for p in review_queue(pairs, wanted=["split"])] == [
        "tied",
        "flip",
        "valid_split",
    ]
    # with the model of annotation's probabilities: least certain first
    certain = [
        {**pairs[0], "probabilities": {"valid": 0.55, "preference_flip": 0.45}},
        {**pairs[1], "probabilities": {"valid": 0.05, "preference_flip": 0.95}},
        {**pairs[2], "probabilities": {"valid": 0.7, "preference_flip": 0.3}},
    ]
    assert [p["pair_id"] for p in review_order(certain)] == ["valid_split", "unanimous", "flip"]
    assert "uncertain" in review_queue(certain)[0]["reasons"]
    # a judge that did not pick chosen brings a pair in
    judged = [_pair("quiet", "valid", 3, 0, **{"model:gpt": "rejected"})]
    assert review_queue(judged)[0]["reasons"] == ["judge"]


def test_shipments_honour_decisions_and_never_drop_a_pair_for_being_unlabelled():
    pairs = [
        _pair("ok", "valid", 3, 0),
        _pair("flip", "preference_flip", 0, 3, decision="keep"),
        _pair("fine_but_dropped", "valid", 3, 0, decision="drop", decision_category="low_quality"),
        _pair("bad", "no_consensus", 1, 1),
        _pair("new", "insufficient_annotations", 0, 0),
        _pair("gold", "valid", 3, 0, is_gold=True),
    ]
    report = {"pairs": pairs}
    valid = valid_shipment(report)
    assert valid.written == ["ok", "flip"]
    assert valid.written_by == {"valid": 1, "kept by a reviewer": 1}
    assert valid.dropped == {"dropped by a reviewer as low_quality": 1, "no_consensus": 1}
    assert valid.pending == 1
    population = [
        {"pair_id": p["pair_id"], "sampled": True} for p in pairs if not p.get("is_gold")
    ] + [{"pair_id": "unsampled", "sampled": False}]
    cleaned = cleaned_shipment({"pairs": pairs, "population": {"pairs": population}})
    assert cleaned.written == ["ok", "flip", "new", "unsampled"]
    assert cleaned.written_by == {
        "valid": 1,
        "kept by a reviewer": 1,
        "not labelled yet": 1,
        "never sampled": 1,
    }


def test_agreement_with_the_crowd_reads_the_version_decided():
    """A revise counts as 'not valid'; a decision on an earlier version is compared with that
    version's verdict, not the new one's."""
    revised = _pair(
        "p1",
        "valid",
        3,
        0,
        pair_version=2,
        earlier_versions=[
            {"pair_version": 1, "n_annotations": 3, "verdict": "preference_flip", "decision": None}
        ],
    )
    report = {"pairs": [revised, _pair("p2", "valid", 3, 0)]}
    decisions = pd.DataFrame(
        [
            ("p1", 1, "revise", None, "", "boss", None),
            ("p2", 1, "keep", None, "", "boss", None),
        ],
        columns=[
            "pair_id",
            "pair_version",
            "decision",
            "category",
            "note",
            "reviewer",
            "decided_at",
        ],
    )
    out = with_review(report, decisions)
    assert out["review"]["agreement_with_crowd"] == {"value": 1.0, "n": 2}
    assert out["review"]["revised"] == 1 and out["review"]["overridden"] == 0
    assert out["pairs"][0]["decision"] is None
    assert out["pairs"][0]["earlier_versions"][0]["decision"] == "revise"
