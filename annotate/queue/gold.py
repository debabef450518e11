"""Gold checks: pairs with an expected answer, mixed into every annotator's queue unannounced.

Rules (the queue in annotate/queue/rules.py follows them):
- A gold pair is shown to every annotator of the study at most once. It never counts against
  the overlap target: gold pairs are served whatever their number of reservations, and real
  pairs' coverage ignores them. The report leaves gold annotations out of every statistic.
- Qualification (study.qualification_gold = N > 0): an annotator is first served gold pairs
  only, in an order of their own (a keyed coin, rules.next_gold). Their first N gold answers
  decide, once all N are given: all as expected = qualified, real pairs follow; any of them
  wrong = not qualified, nothing more is served. A study with fewer than N gold
  pairs cannot qualify anyone, which the console warns about.
- After qualification (or without it), a gold pair comes up at random positions of the
  annotator's queue (a coin keyed with the study's secret per position), on average once every
  GOLD_EVERY pairs, while the annotator still has real pairs to do and gold pairs they have not
  seen; the gold pairs the coin has not brought up by then come after the last real pair, so
  every annotator meets every gold pair. The progress count includes the gold checks still to
  come, so it does not move when one is shown.
- The first answer to a gold pair is final: a second tab's submit does not replace it.
- Accuracy: share of an annotator's gold answers equal to the expected answer. Answered gold
  pairs are left out of the annotator's "go back" history, so the first answer stays.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import ColumnElement, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from analysis.vocabulary import PREFERENCES
from annotate.errors import UserError, quoted
from annotate.store.db import read_session, retrying, session
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study

if TYPE_CHECKING:  # pandas only for the console's tables: the labelling step runs without it
    import pandas as pd

NONE = "none"  # the study asks for no qualification
PENDING = "pending"
PASSED = "passed"
FAILED = "failed"


class QualifiedStudy(Protocol):
    """What the qualification needs of a study (a Study row or the queue's StudyRules)."""

    @property
    def qualification_gold(self) -> int | None: ...


@dataclass(frozen=True)
class Qualification:
    state: str
    answered: int  # gold answers counted so far (at most N)
    needed: int  # N


GoldAnswer = tuple[int, str, str | None, bool]


def _gold_answers(s: Session, where: ColumnElement[bool]) -> list[GoldAnswer]:
    """(annotator id, given, expected, served) of the gold answers matching `where`: served
    ones (given here: with an assignment, not imported) in the order they were served, then
    imported ones (an imported answer has a done assignment too, so that its annotator is not
    given that pair again)."""
    rows = s.exec(
        select(
            Annotation.annotator_id,
            Annotation.preference,
            Pair.gold_answer,
            col(Assignment.id).is_not(None) & (col(Annotation.source) != "import"),
        )
        .join(Pair, col(Pair.id) == Annotation.pair_id)
        .join(
            Assignment,
            (col(Assignment.pair_id) == Annotation.pair_id)
            & (col(Assignment.annotator_id) == Annotation.annotator_id)
            & (col(Assignment.pair_version) == Annotation.pair_version),
            isouter=True,
        )
        .where(where, col(Pair.is_gold) == True)  # noqa: E712
        .order_by(col(Assignment.assigned_at), col(Assignment.id))
    ).all()
    return sorted(rows, key=lambda row: not row[3])  # stable: served order kept


def _served(answers: list[GoldAnswer]) -> list[tuple[str, str | None]]:
    return [(given, expected) for _, given, expected, served in answers if served]


def _judge(answers: list[tuple[str, str | None]], needed: int) -> Qualification:
    """The state given an annotator's (given, expected) gold answers in served order: decided
    only once all `needed` are answered, so a wrong answer is not announced by the next one
    (which would tell a throwaway account which answer was wrong)."""
    if needed <= 0:
        return Qualification(NONE, 0, 0)
    first = answers[:needed]
    if len(first) < needed:
        return Qualification(PENDING, len(first), needed)
    if any(given != expected for given, expected in first):
        return Qualification(FAILED, len(first), needed)
    return Qualification(PASSED, len(first), needed)


def qualification(s: Session, *, study: QualifiedStudy, annotator_id: int) -> Qualification:
    needed = study.qualification_gold or 0
    if needed <= 0:
        return Qualification(NONE, 0, 0)
    return _judge(_served(_gold_answers(s, col(Annotation.annotator_id) == annotator_id)), needed)


@retrying
def qualification_of(engine: Engine, *, annotator_id: int) -> Qualification:
    with read_session(engine) as s:
        annotator = s.get_one(Annotator, annotator_id)
        study = s.get_one(Study, annotator.study_id)
        return qualification(s, study=study, annotator_id=annotator_id)


MAX_LISTED = 5  # ids named in one refusal


def _listed(keys: list[str]) -> str:
    """Pair ids for a one-line refusal: the first few, each cut short (errors.quoted)."""
    shown = ", ".join(quoted(k) for k in keys[:MAX_LISTED])
    return shown + (f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else "")


@retrying
def set_gold(engine: Engine, *, study_id: int, pair_keys: Iterable[str], answer: str | None) -> int:
    """Mark pairs as gold with the expected answer (chosen, rejected or tie); None unmarks.
    Only a pair queued for labelling can be marked (a sampled study's other pairs are never
    served); a mark can always be taken off. The console's Gold page and `mark-gold` both
    come here."""
    if answer is not None and answer not in PREFERENCES:
        raise UserError(f"a gold answer is one of {', '.join(PREFERENCES)}, not {answer!r}")
    keys = sorted(set(pair_keys))
    if not keys:
        return 0
    with session(engine) as s:
        found = dict(
            s.exec(
                select(Pair.pair_key, Pair.queued).where(
                    Pair.study_id == study_id, col(Pair.pair_key).in_(keys)
                )
            ).all()
        )
        missing = [k for k in keys if k not in found]
        if missing:
            raise UserError(f"no pair with id {_listed(missing)} in this study")
        unqueued = [k for k in keys if not found[k]]
        if unqueued and answer is not None:
            raise UserError(
                f"pair {_listed(unqueued)} is not queued for labelling (the study labels a "
                "sample and this pair is not in it), so no annotator would ever be shown it "
                "as a gold check; mark a queued pair instead"
            )
        s.execute(
            update(Pair)
            .where(col(Pair.study_id) == study_id, col(Pair.pair_key).in_(keys))
            .values(is_gold=answer is not None, gold_answer=answer)
        )
    return len(keys)


@retrying
def gold_pairs(engine: Engine, *, study_id: int) -> pd.DataFrame:
    """pair_id, category, expected answer, answers, correct, accuracy for each gold pair."""
    import pandas as pd

    with read_session(engine) as s:
        pairs = s.exec(
            select(Pair.id, Pair.pair_key, Pair.category, Pair.gold_answer)
            .where(Pair.study_id == study_id, col(Pair.is_gold) == True)  # noqa: E712
            .order_by(col(Pair.position))
        ).all()
        answers = s.exec(
            select(Annotation.pair_id, Annotation.preference)
            .join(Pair, col(Pair.id) == Annotation.pair_id)
            .where(Pair.study_id == study_id, col(Pair.is_gold) == True)  # noqa: E712
        ).all()
    given = pd.DataFrame(answers, columns=["pid", "preference"])
    rows = []
    for pid, key, category, expected in pairs:
        mine = given.loc[given["pid"] == pid, "preference"]
        correct = int((mine == expected).sum())
        rows.append(
            {
                "pair_id": key,
                "category": category,
                "expected": expected,
                "answers": len(mine),
                "correct": correct,
                "accuracy": correct / len(mine) if len(mine) else None,
            }
        )
    return pd.DataFrame(
        rows, columns=["pair_id", "category", "expected", "answers", "correct", "accuracy"]
    )


@retrying
def gold_accuracy(engine: Engine, *, study_id: int) -> pd.DataFrame:
    """annotator, n_gold, n_correct, gold_accuracy and qualification state per annotator."""
    import pandas as pd

    with read_session(engine) as s:
        study = s.get_one(Study, study_id)
        people = s.exec(
            select(Annotator.id, Annotator.name)
            .where(Annotator.study_id == study_id, Annotator.is_admin == False)  # noqa: E712
            .order_by(col(Annotator.name))
        ).all()
        # all of the study's gold answers in one query, in served order (qualification counts
        # each annotator's first ones)
        answers = _gold_answers(s, col(Pair.study_id) == study_id)
    by_person: dict[int | None, list[GoldAnswer]] = {}
    for answer in answers:
        by_person.setdefault(answer[0], []).append(answer)
    rows = []
    for aid, name in people:
        mine = by_person.get(aid, [])
        n = len(mine)
        correct = sum(given == expected for _, given, expected, _ in mine)
        rows.append(
            {
                "annotator": name,
                "n_gold": n,
                "n_correct": correct,
                "gold_accuracy": correct / n if n else None,
                "qualification": _judge(_served(mine), study.qualification_gold or 0).state,
            }
        )
    return pd.DataFrame(
        rows, columns=["annotator", "n_gold", "n_correct", "gold_accuracy", "qualification"]
    )
