"""`annotate configure-study` and the console's Studies page share one set of rules
(annotate/studies/catalog.py): values checked, meaning-defining options locked once there are answers.
Each rule is tested through the domain function and through the command line."""

from __future__ import annotations

import pytest
from sqlmodel import select

from annotate.cli import main
from annotate.engine import get_engine
from annotate.errors import UserError
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_answer
from annotate.store.db import session
from annotate.store.models import Pair, Study, id_of
from annotate.studies.catalog import LOCKED_WHEN_ANNOTATED, configure_study, save_study_options
from tests.factories import make_study


def _study(engine, name="default") -> Study:
    with session(engine) as s:
        return s.exec(select(Study).where(Study.name == name)).one()


def _answered(engine, tmp_path) -> int:
    study_id, people = make_study(engine, tmp_path, n_pairs=2, annotators=1)
    with session(engine) as s:
        pair_id = id_of(s.exec(select(Pair).where(Pair.study_id == study_id)).all()[0])
    submit_answer(
        engine,
        annotator_id=people[0][0],
        pair_id=pair_id,
        answer=Answer(preference="chosen", chosen_position="A"),
    )
    return study_id


def test_configure_study_creates_a_missing_study_and_sets_the_options_given(db_url):
    engine = get_engine(db_url)
    _, created = configure_study(
        engine,
        "pilot",
        overlap_target=2,
        allow_ties=False,
        allow_prolific=True,
        prolific_completion_code=" C0DE42 ",
        reservation_timeout=600,
        aspect_check=True,
    )
    assert created
    stored = _study(engine, "pilot")
    assert (stored.overlap_target, stored.allow_ties, stored.allow_prolific) == (2, False, True)
    assert stored.prolific_completion_code == "C0DE42"  # trimmed, as the console does
    assert (stored.reservation_timeout, stored.aspect_check) == (600, True)
    # again: the same study, the other options untouched
    _, created = configure_study(engine, "pilot", overlap_target=4)
    assert not created
    stored = _study(engine, "pilot")
    assert (stored.overlap_target, stored.allow_ties, stored.reservation_timeout) == (4, False, 600)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"overlap_target": 0}, "overlap target must be at least 1"),
        ({"reservation_timeout": 0}, "reservation timeout must be at least 1 second"),
        ({"prolific_completion_code": "has space"}, "is not a completion code"),
        ({"scale_min": 5}, "minimum must be below its maximum"),
        # Each rating is given with one digit key: a 10 could only be clicked.
        ({"scale_max": 10}, "rating scale must lie within 0 to 9"),
        ({"scale_min": -1}, "rating scale must lie within 0 to 9"),
        ({"coin": 1}, "unknown study option(s): coin"),
    ],
)
def test_invalid_values_are_refused_and_nothing_is_written(db_url, options, message):
    engine = get_engine(db_url)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        configure_study(engine, "pilot", **options)
    with session(engine) as s:  # not even the study was created
        assert s.exec(select(Study).where(Study.name == "pilot")).first() is None


def test_meaning_options_lock_once_there_are_answers_in_both_homes(db_url, tmp_path):
    engine = get_engine(db_url)
    study_id = _answered(engine, tmp_path)
    assert "aspect_check" in LOCKED_WHEN_ANNOTATED
    for option, value in [
        ("allow_ties", False),
        ("aspect_check", True),
        ("scale_max", 7),
        ("scale_min_label", "awful"),  # what the scale's ends mean locks with the scale
        ("scale_max_label", "superb"),
    ]:
        with pytest.raises(UserError, match=f"locked because the study already has .*{option}"):
            configure_study(engine, "default", **{option: value})
        with pytest.raises(UserError, match=f"locked because the study already has .*{option}"):
            save_study_options(engine, study_id, **{option: value})
    # the same value again is no change, and the other options still change
    configure_study(engine, "default", allow_ties=True, overlap_target=5, reservation_timeout=60)
    study = _study(engine)
    assert (study.allow_ties, study.overlap_target, study.reservation_timeout) == (True, 5, 60)
    assert study.aspect_check is False


def test_configure_study_on_the_command_line(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    argv = ["--db", db, "configure-study", "pilot", "--overlap", "2", "--no-ties", "--prolific"]
    argv += ["--completion-code", "C0DE42", "--reservation-timeout", "900", "--aspect-check"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("study 'pilot' created; its options:")
    lines = dict(line.split(None, 1) for line in out.splitlines()[1:])
    assert lines["overlap"] == "2" and lines["ties"] == "no" and lines["prolific"] == "yes"
    assert lines["completion-code"] == "C0DE42" and lines["reservation-timeout"] == "900 s"
    assert lines["aspect-check"] == "yes"
    # nothing given: prints the options, changes nothing
    assert main(["--db", db, "configure-study", "pilot"]) == 0
    assert "study 'pilot' updated" in capsys.readouterr().out
    assert _study(get_engine(db), "pilot").overlap_target == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--overlap", "0"], "the overlap target must be at least 1"),
        (["--reservation-timeout", "0"], "the reservation timeout must be at least 1 second"),
        (["--completion-code", "a b"], "'a b' is not a completion code"),
    ],
)
def test_the_command_line_refuses_bad_values_in_one_sentence(tmp_path, capsys, args, message):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["--db", db, "configure-study", "pilot", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_command_line_refuses_locked_options_once_there_are_answers(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    _answered(get_engine(db), tmp_path)
    assert main(["--db", db, "configure-study", "default", "--aspect-check"]) == 2
    err = capsys.readouterr().err
    assert "locked because the study already has annotations: aspect_check" in err
    assert main(["--db", db, "configure-study", "default", "--no-ties"]) == 2
    assert "allow_ties" in capsys.readouterr().err
    assert main(["--db", db, "configure-study", "default", "--overlap", "4"]) == 0
    assert _study(get_engine(db)).overlap_target == 4


def test_saving_the_options_of_a_study_no_longer_in_the_database_says_so(tmp_path):
    """The console's Studies page saves by study id: a page left open while the database was
    replaced (a backup restored, another --db) names a study that is not there. One sentence,
    nothing changed (the id was passed on as None before, and failed as 'unknown options')."""
    engine = get_engine(f"sqlite:///{tmp_path / 'a.db'}")
    configure_study(engine, "kept", overlap_target=2)
    with pytest.raises(UserError, match="no longer in the database"):
        save_study_options(engine, 999, overlap_target=4)
    assert _study(engine, "kept").overlap_target == 2


@pytest.mark.parametrize("given", ["2-50", "2-11", "1-5", "3-3", "0-4"])
def test_adaptive_overlap_out_of_bounds_is_refused_everywhere(tmp_path, capsys, given):
    """MIN at least 2, MAX above MIN and at most 10 (analysis/design/adaptive_bounds.py): on
    the command line (configure-study and plan) and in the rules the console shares."""
    db = f"sqlite:///{tmp_path / 'x.db'}"
    for argv in (["configure-study", "pilot", "--adaptive", given], ["plan", "--adaptive", given]):
        with pytest.raises(SystemExit) as exit_:
            main(["--db", db, *argv] if argv[0] != "plan" else argv)
        assert exit_.value.code == 2
        assert "out of bounds: MIN at least 2" in capsys.readouterr().err
    low, high = (int(n) for n in given.split("-"))
    with pytest.raises(UserError, match="out of bounds"):
        configure_study(get_engine(db), "pilot", adaptive_min=low, adaptive_max=high)


def test_adaptive_bounds_are_in_the_help_and_the_widest_allowed_works(tmp_path, capsys):
    for command in ("configure-study", "plan"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert "MIN at least 2" in help_text and "at most 10" in help_text
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["--db", db, "configure-study", "pilot", "--adaptive", "2-10"]) == 0
    assert "adaptive 2-10" in " ".join(capsys.readouterr().out.split())


def test_a_study_set_before_the_bounds_still_saves_its_other_options(db_url, tmp_path):
    """The bounds apply when MIN-MAX is set: an older 1-20 study keeps working."""
    engine = get_engine(db_url)
    study_id, _ = make_study(engine, tmp_path, n_pairs=2)
    with session(engine) as s:
        study = s.get(Study, study_id)
        study.adaptive_min, study.adaptive_max = 1, 20
        s.add(study)
    save_study_options(engine, study_id, reservation_timeout=120)
    study = _study(engine)
    assert (study.adaptive_min, study.adaptive_max, study.reservation_timeout) == (1, 20, 120)
