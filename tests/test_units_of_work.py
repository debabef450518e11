"""The one way to open a unit of work (annotate/store/db.py): `db.read` and `db.write`, both retried
as a whole on transient refusals; `read` sees one snapshot."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import func, select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store import db
from annotate.store.models import Study
from annotate.web import proofs


def _locked() -> OperationalError:
    return OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked"))


def _flaky(work, failures: int):
    calls = []

    def run(s):
        calls.append(1)
        if len(calls) <= failures:
            raise _locked()
        return work(s)

    return run, calls


def test_read_and_write_are_retried_as_a_whole(db_url):
    engine = get_engine(db_url)
    work, calls = _flaky(lambda s: s.add(Study(name="x")) or "written", failures=2)
    assert db.write(engine, work) == "written" and len(calls) == 3
    work, calls = _flaky(lambda s: s.exec(select(Study.name)).all(), failures=1)
    assert db.read(engine, work) == ["x"] and len(calls) == 2


def test_a_failure_that_is_not_transient_is_not_retried(db_url):
    engine = get_engine(db_url)
    calls = []

    def broken(s):
        calls.append(1)
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        db.write(engine, broken)
    assert calls == [1]


def test_read_sees_one_snapshot(db_url):
    engine = get_engine(db_url)
    db.write(engine, lambda s: s.add(Study(name="first")))

    def count_twice(s):
        before = s.exec(select(func.count()).select_from(Study)).one()
        db.write(engine, lambda w: w.add(Study(name="meanwhile")))  # another unit commits
        after = s.exec(select(func.count()).select_from(Study)).one()
        return before, after

    assert db.read(engine, count_twice) == (1, 1)
    assert db.read(engine, lambda s: s.exec(select(func.count()).select_from(Study)).one()) == 2


def test_the_token_lookup_of_every_page_run_is_retried(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    monkeypatch.setenv(db.ENV_VAR, url)
    engine = get_engine(url)
    _, token = db.write(
        engine, lambda s: create_annotator(s, name="alice", study_id=None, is_admin=False)
    )
    real = proofs.annotator_for_token
    failures = []

    def once_locked(s, value):
        if not failures:
            failures.append(1)
            raise _locked()
        return real(s, value)

    monkeypatch.setattr(proofs, "annotator_for_token", once_locked)
    found = proofs.account_for_token(engine, token)
    assert found is not None and found.name == "alice" and failures == [1]


# Modules that open units of work another way, each with its reason.
OTHER_WAYS = {
    "annotate/web/health.py": "a health probe: one plain connection, answered at once, not retried",
    "annotate/commands/backup.py": "SQLite's VACUUM INTO through sqlite3 itself",
}
OPENERS = {"session", "read_session", "snapshot_session", "transaction", "one_statement", "Session"}
# write_transaction and autocommit: the driver-level paths, opened through db.write_driver
METHODS = {"connect", "begin", "raw_connection", "write_transaction", "autocommit", *OPENERS}


def test_units_of_work_outside_storage_go_through_read_and_write():
    """Outside annotate/store and annotate/queue a unit of work is `db.read` or `db.write`
    (retried as a whole, one snapshot for reads), not a session or connection opened by hand."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for path in sorted((root / "annotate").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith(("annotate/store/", "annotate/queue/")) or name in OTHER_WAYS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Name) and func.id in OPENERS) or (
                isinstance(func, ast.Attribute) and func.attr in METHODS
            ):
                found.append(f"{name}:{node.lineno}")
    assert found == []


def test_views_leave_storage_to_domain_functions():
    """A page (annotate/web/views) shows and calls domain functions: it opens no unit of work and
    builds no statement of its own (a view's write, the Start button's, lived there once)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for path in sorted((root / "annotate" / "web" / "views").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                module = node.module
                if module.split(".")[0] in ("sqlalchemy", "sqlmodel") or module in (
                    "annotate.store.db",
                    "annotate.store.sqlite_engine",
                ):
                    found.append(f"{path.name}:{node.lineno} {module}")
                elif module == "annotate.store" and {a.name for a in node.names} & {"db"}:
                    found.append(f"{path.name}:{node.lineno} annotate.store.db")
    assert found == []


# --- each unit of work moved onto db.read/db.write: refused once, re-run whole, done once -------


@pytest.fixture
def refuse_once(monkeypatch):
    """refuse_once(engine, when): the first statement SQLAlchemy runs on `engine` for which
    when(sql) holds fails with a transient refusal *after* it ran (inside the unit's
    transaction, so whatever it did must be rolled back); returns the list of refusals made
    (a test checks its refusal happened)."""
    from sqlalchemy import event

    def arm(engine, when):
        refused = []

        def after(conn, cursor, statement, parameters, context, executemany):
            if not refused and when(statement.lstrip().upper()):
                refused.append(statement)
                raise _locked()

        event.listen(engine, "after_cursor_execute", after)
        return refused

    return arm


@pytest.fixture
def refuse_cursor_once(monkeypatch):
    """As refuse_once, for the labelling step's statements on the driver (annotate/queue/sql.py's
    Cursor, which SQLAlchemy's events do not see): the first run of the statement `name`."""
    from annotate.queue.sql import Cursor

    def arm(name):
        refused = []
        real = Cursor._run

        def run(self, statement, params, **kwargs):
            result = real(self, statement, params, **kwargs)
            if not refused and statement == name:
                refused.append(statement)
                raise _locked()
            return result

        monkeypatch.setattr(Cursor, "_run", run)
        return refused

    return arm


def _study(engine, tmp_path, **options):
    from tests.factories import make_study

    return make_study(engine, tmp_path, n_pairs=4, annotators=1, **options)


def test_a_submit_refused_after_its_reservation_is_re_run_whole(
    db_url, tmp_path, refuse_cursor_once
):
    """The full rules' unit (db.write_connection): the answer, the close and the reservation
    commit together or not at all, so a re-run counts the reserved pair once."""
    from annotate.labelling.answers import Answer
    from annotate.labelling.step import FULL_RULES, submit_and_next
    from annotate.queue.assignment import next_assignment
    from annotate.store.models import Annotation, Assignment, Pair

    engine = get_engine(db_url)
    _, [(a, _)] = _study(engine, tmp_path)
    first = next_assignment(engine, annotator_id=a)
    refused = refuse_cursor_once("insert_assignment")  # the next pair reserved
    served: list[str] = []
    answer = Answer(preference="chosen", chosen_position=first.chosen_position)
    reserved = submit_and_next(
        engine, annotator_id=a, pair_id=first.pair_id, answer=answer, fast=False, served=served
    )
    assert len(refused) == 1 and served == [FULL_RULES]
    counts = db.read(engine, lambda s: s.exec(select(Pair.id, Pair.n_assigned)).all())
    assert dict(counts) == {pid: int(pid in (first.pair_id, reserved.pair_id)) for pid, _ in counts}
    statuses = db.read(engine, lambda s: s.exec(select(Assignment.status)).all())
    assert sorted(statuses) == ["active", "done"]
    assert (
        db.read(engine, lambda s: s.exec(select(func.count()).select_from(Annotation)).one()) == 1
    )


def test_a_fast_submit_refused_once_stores_the_submitted_answer_once(db_url, tmp_path, monkeypatch):
    """The fast unit (db.write_driver) refused after its write: on SQLite the transaction rolls
    back and is re-run; on PostgreSQL the function had committed (an acknowledgement lost) and
    the re-run hands over to the full rules. Either way one answer, with the Submit's own
    submitted_at (made once per Submit, not per attempt), and the next pair counted once."""
    from annotate.labelling.answers import Answer
    from annotate.labelling.step import FULL_RULES, submit_and_next
    from annotate.queue.assignment import next_assignment
    from annotate.queue.sql import Cursor
    from annotate.store.models import Annotation, Pair
    from tests.factories import fast_path_of

    engine = get_engine(db_url)
    _, [(a, _)] = _study(engine, tmp_path)
    first = next_assignment(engine, annotator_id=a)
    postgres = engine.dialect.name == "postgresql"
    name = "submit_in_one_call" if postgres else "store_answer"
    real = getattr(Cursor, name)
    attempts = []

    def refused_once(self, **kwargs):
        done = real(self, **kwargs)
        attempts.append(kwargs["values"]["submitted_at"])
        if len(attempts) == 1:
            raise _locked()
        return done

    monkeypatch.setattr(Cursor, name, refused_once)
    served: list[str] = []
    answer = Answer(preference="chosen", chosen_position=first.chosen_position)
    reserved = submit_and_next(
        engine, annotator_id=a, pair_id=first.pair_id, answer=answer, served=served
    )
    assert len(attempts) == 2  # on PostgreSQL the second found the pair closed: not done
    assert served == [FULL_RULES if postgres else fast_path_of(engine)]
    stored = db.read(engine, lambda s: s.exec(select(Annotation.submitted_at)).all())
    assert len(stored) == 1 and stored[0].replace(tzinfo=None) == attempts[0].replace(tzinfo=None)
    counts = dict(db.read(engine, lambda s: s.exec(select(Pair.id, Pair.n_assigned)).all()))
    assert reserved is not None and counts[reserved.pair_id] == 1
    assert sum(counts.values()) == 2


def test_an_edit_refused_after_its_upsert_is_re_run_and_stored_once(
    db_url, tmp_path, refuse_cursor_once
):
    from annotate.labelling.answers import Answer
    from annotate.labelling.step import submit_and_next, submit_answer
    from annotate.queue.assignment import next_assignment
    from annotate.store.models import Annotation

    engine = get_engine(db_url)
    _, [(a, _)] = _study(engine, tmp_path)
    first = next_assignment(engine, annotator_id=a)
    keys = {"annotator_id": a, "pair_id": first.pair_id}
    submit_and_next(engine, **keys, answer=Answer(preference="chosen", chosen_position="A"))
    postgres = engine.dialect.name == "postgresql"
    refused = refuse_cursor_once("close_and_upsert" if postgres else "upsert")
    submit_answer(engine, **keys, answer=Answer(preference="tie", chosen_position="A"))
    assert len(refused) == 1
    stored = db.read(engine, lambda s: s.exec(select(Annotation.preference)).all())
    assert stored == ["tie"]


def test_a_draft_refused_once_is_kept(db_url, tmp_path, refuse_once):
    from annotate.labelling.answers import FormState
    from annotate.labelling.drafts import save_draft
    from annotate.queue.assignment import next_assignment
    from annotate.store.models import Assignment

    engine = get_engine(db_url)
    _, [(a, _)] = _study(engine, tmp_path)
    current = next_assignment(engine, annotator_id=a)
    refused = refuse_once(engine, lambda sql: sql.startswith("UPDATE ASSIGNMENT"))
    form = FormState(slot="A", comment="half done")
    assert save_draft(engine, assignment_id=current.id, form=form, seconds=12.0)
    assert len(refused) == 1
    draft = db.read(engine, lambda s: s.get(Assignment, current.id).draft)
    assert draft["comment"] == "half done" and draft["seconds"] == 12.0


def test_the_start_button_refused_once_marks_the_guidelines_read(db_url, tmp_path, refuse_once):
    from annotate.labelling.page import mark_guidelines_seen

    engine = get_engine(db_url)
    _, [(a, _)] = _study(engine, tmp_path)
    refused = refuse_once(engine, lambda sql: sql.startswith("UPDATE ANNOTATOR"))
    mark_guidelines_seen(engine, annotator_id=a)
    assert len(refused) == 1
    from annotate.store.models import Annotator

    assert db.read(engine, lambda s: s.get(Annotator, a).guidelines_seen) is True


def test_sign_out_refused_once_retires_the_link(db_url, tmp_path, refuse_once):
    from annotate.web.login import _revoke

    engine = get_engine(db_url)
    _, [(_, token)] = _study(engine, tmp_path)
    refused = refuse_once(engine, lambda sql: sql.startswith("UPDATE ANNOTATOR"))
    _revoke(engine, token)
    assert len(refused) == 1
    assert proofs.account_for_token(engine, token) is None


def test_the_reads_of_the_labelling_page_are_retried(db_url, tmp_path, refuse_once):
    """Earlier answers (one snapshot), the pair before, and the study: each read refused once."""
    from annotate.labelling.answers import Answer
    from annotate.labelling.earlier import earlier_answers, previous_pair
    from annotate.labelling.step import submit_and_next
    from annotate.queue.assignment import next_assignment
    from tests.labelling_helpers import load_study

    engine = get_engine(db_url)
    study_id, [(a, _)] = _study(engine, tmp_path)
    answered = []
    current = next_assignment(engine, annotator_id=a)
    for _ in range(2):
        answered.append(current.pair_id)
        answer = Answer(preference="chosen", chosen_position=current.chosen_position)
        current = submit_and_next(engine, annotator_id=a, pair_id=current.pair_id, answer=answer)
    selects = lambda sql: sql.startswith("SELECT")  # noqa: E731
    refused = refuse_once(engine, selects)
    assert [e.pair_id for e in earlier_answers(engine, annotator_id=a)] == answered[::-1]
    assert len(refused) == 1
    refused = refuse_once(engine, selects)
    assert previous_pair(engine, annotator_id=a, before=answered[1]) == answered[0]
    assert len(refused) == 1
    refused = refuse_once(engine, selects)
    assert load_study(engine, study_id=study_id).id == study_id
    assert len(refused) == 1


def test_a_crowd_entry_refused_once_counts_against_the_limit_once(
    db_url, tmp_path, refuse_once, monkeypatch
):
    """The per-process limit on new participants is outside the database: a re-run of the
    unit must not take from it again (it would refuse the participant it had counted)."""
    from annotate.errors import UserError
    from annotate.people import prolific
    from annotate.store.models import Annotator

    engine = get_engine(db_url)
    study_id, _ = _study(engine, tmp_path)
    db.write(
        engine,
        lambda s: setattr(s.get(Study, study_id), "allow_prolific", True),
    )
    monkeypatch.setattr(prolific, "NEW_PER_CLIENT", 1)
    prolific.NEW_ACCOUNTS.clear()
    keys = {"study_id": "PSTUDY", "session_id": "S1", "client": "10.0.0.1"}
    refused = refuse_once(engine, lambda sql: sql.startswith("INSERT INTO ANNOTATOR"))
    try:
        entry = prolific.enter(engine, pid="P1", **keys)
        assert len(refused) == 1 and entry.created and entry.token
        names = db.read(
            engine,
            lambda s: s.exec(
                select(Annotator.name).where(Annotator.external_id.is_not(None))
            ).all(),
        )
        assert names == ["prolific:P1"]
        with pytest.raises(UserError, match="too many new participants"):
            prolific.enter(engine, pid="P2", **keys)  # the limit was taken, once
    finally:
        prolific.NEW_ACCOUNTS.clear()
