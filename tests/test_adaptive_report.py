"""The report of an adaptive study (docs/reference/report-keys.md): `design`, each pair's `n_annotations`
and `stopped`, and agreement statistics computed on the agreement sample only."""

from __future__ import annotations

from sqlmodel import select

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_and_next
from annotate.queue.assignment import next_assignment
from annotate.queue.targets import Design
from annotate.results.monitoring import study_progress
from annotate.results.study_report import build_study_report
from annotate.store.db import session
from annotate.store.models import Pair, Study
from tests.factories import make_study

RATINGS: dict[str, int | None] = {
    f"{d}_{s}": 4
    for d in ("correctness", "relevance", "helpfulness")
    for s in ("chosen", "rejected")
}


def _label(engine, people, choose) -> None:
    for annotator_id, _ in people:
        row = next_assignment(engine, annotator_id=annotator_id)
        while row is not None:
            answer = Answer(
                preference=choose(row.pair_id, annotator_id),
                chosen_position="A",
                ratings=RATINGS,
                main_reason="personal_fit",
            )
            row = submit_and_next(
                engine, annotator_id=annotator_id, pair_id=row.pair_id, answer=answer
            )


def test_report_of_an_adaptive_study(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path / 'a.db'}")
    study_id, people = make_study(
        engine,
        tmp_path,
        n_pairs=30,
        annotators=6,
        allow_ties=False,
        adaptive_min=2,
        adaptive_max=4,
        agreement_sample=0.3,
        agreement_overlap=3,
    )
    with session(engine) as s:
        keys = dict(s.exec(select(Pair.id, Pair.pair_key)).all())
        design = Design.of(s.get(Study, study_id))
    sample = {k for k in keys.values() if design.in_sample(k)}
    order = {a: i for i, (a, _) in enumerate(people)}

    def choose(pair_id, annotator_id):  # pairs 0-9 split by annotator; the rest agree
        if pair_id % 3 == 0:
            return "chosen" if order[annotator_id] % 2 == 0 else "rejected"
        return "chosen"

    _label(engine, people, choose)
    report, _, _ = build_study_report(engine, study="default", bootstrap=50)

    assert report["design"]["overlap"] == "adaptive"
    assert (report["design"]["min"], report["design"]["max"]) == (2, 4)
    assert report["design"]["agreement_sample"] == {
        "fraction": 0.3,
        "overlap": 3,
        "pairs": len(sample),
    }
    assert "agreement sample" in report["design"]["note"]
    pairs = {p["pair_id"]: p for p in report["pairs"]}
    for key, pair in pairs.items():
        if key in sample:
            assert (pair["n_annotations"], pair["stopped"]) == (3, "max"), key
        else:
            assert pair["stopped"] in ("decided", "max"), key
    split = [p for k, p in pairs.items() if k not in sample and keys_of(keys, k) % 3 == 0]
    assert split and all(p["n_annotations"] > 2 for p in split)
    agreeing = [p for k, p in pairs.items() if k not in sample and keys_of(keys, k) % 3 != 0]
    assert agreeing and all((p["n_annotations"], p["stopped"]) == (2, "decided") for p in agreeing)
    # agreement statistics: the sample's pairs only
    assert report["preference"]["label_agreement"]["n"] <= len(sample)
    assert report["counts"]["annotations"] == sum(p["n_annotations"] for p in pairs.values())
    # the console's progress counts the annotations expected, here all of them given
    progress = study_progress(engine, study_id=study_id)
    assert progress.adaptive and progress.finished
    assert progress.needed == progress.collected == report["counts"]["annotations"]
    assert progress.complete == progress.pairs == 30


def keys_of(keys: dict[int, str], key: str) -> int:
    return {v: k for k, v in keys.items()}[key]


def test_report_of_a_fixed_study_says_so(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path / 'f.db'}")
    _, people = make_study(engine, tmp_path, n_pairs=4, annotators=2, overlap_target=2)
    _label(engine, people, lambda p, a: "chosen")
    report, _, _ = build_study_report(engine, study="default", bootstrap=20)
    assert report["design"] == {"overlap": "fixed", "min": 2, "max": 2}
    assert all(p["stopped"] is None for p in report["pairs"])


def test_switching_adaptive_on_and_off_sets_and_clears_the_pairs_targets(tmp_path):
    from annotate.studies.catalog import configure_study

    engine = get_engine(f"sqlite:///{tmp_path / 's.db'}")
    make_study(engine, tmp_path, n_pairs=5, overlap_target=4)

    def targets():
        with session(engine) as s:
            return sorted(s.exec(select(Pair.target)).all(), key=str)

    assert targets() == [None] * 5
    configure_study(engine, "default", adaptive_min=2, adaptive_max=5, agreement_sample=0.0)
    assert targets() == [2] * 5
    configure_study(engine, "default", adaptive_min=None, adaptive_max=None)
    assert targets() == [None] * 5  # the study's overlap again
