"""The labelling step's rules, written once: which pair an annotator gets next, in which A/B
order, and when a gold check comes first.

`choose_next` applies them, in this order, to a `Queue` (the storage operations):
1. an open assignment other than the pair being submitted is served again (a stale tab);
2. a deactivated annotator gets nothing;
3. the quota (study.items_per_annotator, gold answers included) ends the queue;
4. qualification (study.qualification_gold = N): gold pairs only until the first N gold
   answers decide, nothing more after a failure, which shows only once all N are answered
   (annotate/queue/gold.py); each annotator meets the gold pairs in an order of their own
   (a keyed coin, `next_gold`);
5. the least-covered real pair with room (n_assigned below its target: the study's overlap,
   or in an adaptive study the pair's own, annotate/queue/targets.py) whose current version
   this annotator has not been given; a real pair is a queued non-gold pair (a sampled study,
   import-pairs --sample, stores the whole benchmark but queues only its sample); on
   PostgreSQL one nobody is reserving right now, else one
   whose row lock it waits for;
6. a gold pair first, when the gold coin says so for the annotator's next position in their
   queue (so gold comes up at random positions, about once every GOLD_EVERY pairs, also
   after another gold pair);
7. no new real pair: the gold pairs this annotator has not met yet, coin or no coin (the
   coin only spreads them out; every annotator meets every gold pair before their queue
   ends, as the progress count promises);
8. nothing new: the pairs this annotator skipped (or whose reservation expired), while they
   still have room; then reservations held past study.reservation_timeout, those held
   past ANSWERLESS_HOLD seconds by a crowd participant who has answered nothing yet (a
   throwaway id must not hold a pair for the study's timeout), and those whose page went
   away (closed or hidden: the page says so with its draft, assignment.away_since) more
   than AWAY_HOLD seconds ago, and those whose page stopped talking (closed, crashed or cut
   off without a word: no draft, heartbeat or reservation since GONE_HOLD seconds,
   assignment.seen_at, else assigned_at) are released and the queue is tried again. A released
   reservation keeps its draft. A released pair's late answer is stored while the pair has
   room (it is reserved again); once others filled it, the answer is refused (GivenAway)
   and kept as the draft, so that no pair gets answers beyond its target.
9. a skip puts the pair at the back of this annotator's queue, but at most
   MAX_PENDING_SKIPS skipped pairs wait there (skipped or released, real pairs that still
   have room): a skip that makes more reserves the earliest of them again, right away
   (`after_skip`). So skipping cannot walk the queue to choose which pairs to answer: past
   a few skips the same few pairs come round until one is answered.

Versions (annotate/studies/pair_versions.py): every rule reads a pair's current version only.
n_assigned counts the reservations and answers of that version (an imported answer has its
done assignment too, so it counts and its annotator is not given that version again); a new
version starts at zero, and the earlier version's open and skipped assignments are closed as
'revised', so none is served again and a late Submit for one is refused (PairRevised), its
draft never applied to the new text.

Every path applies these rules: the full rules on a SQLAlchemy connection
(annotate/queue/assignment.py), the SQLite common Submit on the driver's connection (the same
function on a Queue whose rare operations say "run the full rules", `NeedsFullRules`), and
PostgreSQL's submit function, generated from the same SQL fragments (annotate/queue/sql.py)
and checked against these rules by tests/test_queue_parity.py.

The coins are keyed with the study's secret (study.coin_secret, HMAC-SHA256): without the
secret, the A/B order and the gold positions cannot be predicted from pair and annotator ids.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from annotate.errors import UserError

GOLD_EVERY = 10
# Seconds a pair stays reserved, when others need it, for an annotator with no answer yet.
ANSWERLESS_HOLD = 30
# Seconds a pair stays reserved, when others need it, once the page showing it went away
# (closed or hidden): a tab left behind gives its pair back well before the study's
# reservation timeout, and a short look at another tab costs nothing.
AWAY_HOLD = 60
# Skipped pairs that may wait at the back of one annotator's queue (rule 9).
MAX_PENDING_SKIPS = 3
# Seconds a pair stays reserved, when others need it, once the page showing it stopped
# talking: an open form says it is there every GONE_HOLD / GONE_BEATS seconds (its heartbeat,
# annotate/web/drafts.py), so a page that crashed, was killed or lost its network gives its
# pair back after a few missed heartbeats. ANNOTATE_GONE_HOLD sets it (tests use a few seconds).
GONE_HOLD_DEFAULT = 60
GONE_BEATS = 3
GONE_HOLD_VARIABLE = "ANNOTATE_GONE_HOLD"
ASSIGNMENT_COLUMNS = (
    "id",
    "study_id",
    "pair_id",
    "annotator_id",
    "chosen_position",
    "pair_version",
    "status",
    "assigned_at",
    "completed_at",
    "draft",
)


def gone_hold() -> int:
    """GONE_HOLD: ANNOTATE_GONE_HOLD's whole seconds (at least GONE_BEATS), else 60."""
    text = os.environ.get(GONE_HOLD_VARIABLE, "").strip()
    if not text:
        return GONE_HOLD_DEFAULT
    if not text.isdigit() or int(text) < GONE_BEATS:
        raise UserError(
            f"{GONE_HOLD_VARIABLE} must be a whole number of seconds, at least {GONE_BEATS}"
            f" (it is {text[:40]!r})"
        )
    return int(text)


def heartbeat_seconds() -> float:
    """How often an open form says it is there: GONE_BEATS heartbeats fit in GONE_HOLD."""
    return gone_hold() / GONE_BEATS


@dataclass(frozen=True)
class AssignmentRow:
    """A read-only copy of an assignment row: which pair (and version of it) an annotator
    holds, in which A/B order, with the draft answers saved so far."""

    id: int
    study_id: int
    pair_id: int
    annotator_id: int
    chosen_position: str
    pair_version: int
    status: str
    assigned_at: datetime
    completed_at: datetime | None = None
    draft: dict[str, Any] | None = None

    @classmethod
    def of(cls, assignment: object) -> AssignmentRow:
        """From an ORM Assignment (the rare paths)."""
        return cls(**{name: getattr(assignment, name) for name in ASSIGNMENT_COLUMNS})


class StudyRules(NamedTuple):
    """What the queue needs of the annotator's study and account, and the annotator's open
    assignment other than the pair being submitted (active_id)."""

    id: int
    overlap_target: int
    items_per_annotator: int | None
    qualification_gold: int | None
    reservation_timeout: int
    coin_secret: str | None
    annotator_active: bool
    active_id: int | None
    adaptive: bool  # each answer moves its pair's target (annotate/queue/targets.py)

    @property
    def coins(self) -> Coins:
        return coins_of(self.coin_secret)


class NeedsFullRules(Exception):
    """A fast path met a rule it does not implement: roll back, the full rules decide."""


class GivenAway(UserError):
    """A late answer for a released reservation whose pair others have filled meanwhile
    (rule 8): not stored, kept as the draft."""

    def __init__(self) -> None:
        super().__init__(
            "this pair was given to another annotator while your page was away (or after its "
            "reservation ran out), and it has all the answers it needs; yours was not needed "
            "and is kept as your draft"
        )


class PairRevised(UserError):
    """A Submit for a version of a pair that a later version replaced while it was shown: not
    stored (the answer was given to text that is no longer the pair's)."""

    def __init__(self) -> None:
        super().__init__(
            "this pair was revised while you had it open, so your answer to the earlier text "
            "was not saved and your unsaved answers to it were dropped; the new version is "
            "queued like any other pair"
        )


class AccountClosed(UserError):
    """A deactivated annotator's open tab tried to submit or to get a pair."""

    def __init__(self) -> None:
        super().__init__("this account has been deactivated; the answer was not saved")


# --- the coins ----------------------------------------------------------------------------
# Each coin's message, as parts joined by ":"; "{name}" parts are filled in. Python formats it
# (Coins), SQL builds the same text (coin_sql): one definition for both.
AB_MESSAGE = ("ab", "{pair}", "{annotator}")
GOLD_MESSAGE = ("gold", "{annotator}", "{position}")
GOLD_ORDER_MESSAGE = ("gold-order", "{annotator}", "{pair}")
AGREEMENT_MESSAGE = ("agreement", "{pair}")


def _message(parts: tuple[str, ...], **values: object) -> bytes:
    return ":".join(part.format(**values) for part in parts).encode()


class Coins:
    """The study's keyed coins: HMAC-SHA256 with study.coin_secret of a short message."""

    def __init__(self, secret: str | None):
        key = (secret or "").encode()
        self._key = key
        # RFC 2104's padded keys, for SQL that has sha256 but no hmac (PostgreSQL without
        # pgcrypto): HMAC(k, m) = sha256(outer || sha256(inner || m)).
        padded = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
        self.inner = bytes(b ^ 0x36 for b in padded)
        self.outer = bytes(b ^ 0x5C for b in padded)

    def _digest(self, parts: tuple[str, ...], **values: object) -> bytes:
        return hmac.new(self._key, _message(parts, **values), hashlib.sha256).digest()

    def chosen_position(self, *, pair_id: int, annotator_id: int) -> str:
        """Where the chosen response is shown: balanced, the same on every reload."""
        return "A" if self._digest(AB_MESSAGE, pair=pair_id, annotator=annotator_id)[0] & 1 else "B"

    def gold_due(self, *, annotator_id: int, position: int, every: int = GOLD_EVERY) -> bool:
        """Whether the pair at `position` (1 = the first pair given) of this annotator's queue
        is a gold check: true about once in `every`."""
        digest = self._digest(GOLD_MESSAGE, annotator=annotator_id, position=position)
        return int.from_bytes(digest[:4], "big") % every == 0

    def gold_rank(self, *, annotator_id: int, pair_id: int) -> bytes:
        """Where a gold pair comes in this annotator's order of gold pairs (lowest first):
        each annotator meets the gold pairs in their own order, which nobody can predict
        without the secret, so a throwaway account does not learn the next one's answer."""
        return self._digest(GOLD_ORDER_MESSAGE, annotator=annotator_id, pair=pair_id)

    def in_agreement_sample(self, *, pair_key: str, fraction: float) -> bool:
        """Whether the pair (by its key, so the same pairs in a copy of the study) belongs to
        an adaptive study's agreement sample: a uniform number in [0, 1) below `fraction`."""
        digest = self._digest(AGREEMENT_MESSAGE, pair=pair_key)
        return int.from_bytes(digest[:8], "big") / 2**64 < fraction


@functools.lru_cache(maxsize=256)
def coins_of(secret: str | None) -> Coins:
    """A study's Coins (its padded keys made once per process and secret)."""
    return Coins(secret)


def coin_sql(parts: tuple[str, ...], *, inner: str, outer: str, **values: str) -> str:
    """The coin's HMAC digest as a PostgreSQL expression (bytea): `values` are SQL
    expressions for the "{name}" parts, `inner` and `outer` the padded keys (Coins)."""

    def piece(part: str) -> str:
        if part.startswith("{"):
            return f"CAST({values[part[1:-1]]} AS text)"
        return "'" + part.replace("'", "''") + "'"

    message = " || ':' || ".join(piece(part) for part in parts)
    return f"sha256({outer} || sha256({inner} || convert_to({message}, 'UTF8')))"


def ab_coin_sql(**kw: str) -> str:
    """Coins.chosen_position in SQL: 'A' or 'B'."""
    digest = coin_sql(AB_MESSAGE, **kw)
    return f"CASE WHEN get_byte({digest}, 0) & 1 = 1 THEN 'A' ELSE 'B' END"


def gold_coin_sql(*, every: str, **kw: str) -> str:
    """Coins.gold_due in SQL: a boolean."""
    digest = coin_sql(GOLD_MESSAGE, **kw)
    return (
        f"(('x' || encode(substring({digest} FROM 1 FOR 4), 'hex'))::bit(32)::bigint % {every} = 0)"
    )


# --- the rules ----------------------------------------------------------------------------
QUALIFICATION_FAILED = "failed"
QUALIFICATION_PENDING = "pending"


class Queue(Protocol):
    """The storage operations the rules need, inside one write transaction. A fast path may
    raise NeedsFullRules from the rare ones (qualification, gold, contended, skipped, expiry)."""

    def assignment_by_id(self, assignment_id: int) -> AssignmentRow | None: ...
    def done_count(self, *, annotator_id: int) -> int: ...
    def given_count(self, *, annotator_id: int) -> int: ...
    def has_gold(self, *, study_id: int) -> bool: ...
    def reserve_least_covered(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None: ...
    def unassign(self, assignment: AssignmentRow) -> None: ...
    def qualification_state(self, *, study: StudyRules, annotator_id: int) -> str: ...
    def serve_gold(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None: ...
    def open_candidates(self, *, study: StudyRules, annotator_id: int) -> list[int]: ...
    def reserve_pair(
        self, *, study: StudyRules, pair_id: int, annotator_id: int, now: datetime
    ) -> AssignmentRow | None: ...
    def reopen_skipped(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None: ...
    def release_expired(self, *, study: StudyRules, now: datetime) -> int: ...
    def skipped_with_room(self, *, study: StudyRules, annotator_id: int) -> int: ...


def next_gold(coins: Coins, *, annotator_id: int, pair_ids: list[int]) -> int | None:
    """Which of the gold pairs this annotator has not met comes next (Coins.gold_rank)."""
    if not pair_ids:
        return None
    return min(pair_ids, key=lambda pid: coins.gold_rank(annotator_id=annotator_id, pair_id=pid))


def gold_due(coins: Coins, *, annotator_id: int, position: int) -> bool:
    """Rule 6's coin, as the rules ask it (one place, which tests can force)."""
    return coins.gold_due(annotator_id=annotator_id, position=position)


def choose_next(
    queue: Queue, *, study: StudyRules, annotator_id: int, now: datetime
) -> AssignmentRow | None:
    """The annotator's open assignment, else a newly reserved pair, else None (module
    docstring: rules 1 to 8)."""
    if study.active_id is not None:
        return queue.assignment_by_id(study.active_id)
    if not study.annotator_active:
        return None
    quota = study.items_per_annotator
    if quota is not None and queue.done_count(annotator_id=annotator_id) >= quota:
        return None
    if (study.qualification_gold or 0) > 0:
        state = queue.qualification_state(study=study, annotator_id=annotator_id)
        if state == QUALIFICATION_FAILED:
            return None
        if state == QUALIFICATION_PENDING:
            return queue.serve_gold(study=study, annotator_id=annotator_id, now=now)
    keys: dict[str, Any] = {"study": study, "annotator_id": annotator_id, "now": now}
    reserved = queue.reserve_least_covered(**keys)
    if reserved is not None:
        if _gold_first(queue, study=study, annotator_id=annotator_id, position=None):
            served = queue.serve_gold(**keys)
            if served is not None:
                queue.unassign(reserved)  # gold first: give the pair back
                return served
        return reserved
    for attempt in range(2):
        reserved = _reserve_contended_or_skipped(queue, **keys)
        if reserved is not None or attempt or not queue.release_expired(study=study, now=now):
            return reserved
    return None


def _gold_first(
    queue: Queue, *, study: StudyRules, annotator_id: int, position: int | None
) -> bool:
    if not queue.has_gold(study_id=study.id):
        return False
    if position is None:  # the pair just reserved is the newest of the annotator's rows
        position = queue.given_count(annotator_id=annotator_id)
    return gold_due(study.coins, annotator_id=annotator_id, position=position)


def _reserve_contended_or_skipped(
    queue: Queue, *, study: StudyRules, annotator_id: int, now: datetime
) -> AssignmentRow | None:
    keys: dict[str, Any] = {"study": study, "annotator_id": annotator_id, "now": now}
    candidates = queue.open_candidates(study=study, annotator_id=annotator_id)
    if candidates:
        position = queue.given_count(annotator_id=annotator_id) + 1
        if _gold_first(queue, study=study, annotator_id=annotator_id, position=position):
            served = queue.serve_gold(**keys)
            if served is not None:
                return served
    for pair_id in candidates:
        reserved = queue.reserve_pair(pair_id=pair_id, **keys)
        if reserved is not None:
            return reserved
    # No new real pair: the gold pairs the coin did not bring up in time come now (rule 7).
    if queue.has_gold(study_id=study.id):
        served = queue.serve_gold(**keys)
        if served is not None:
            return served
    # Nothing new: the pairs this annotator skipped, while they still have room.
    return queue.reopen_skipped(**keys)


def after_skip(
    queue: Queue, *, study: StudyRules, annotator_id: int, now: datetime
) -> AssignmentRow | None:
    """Rule 9, right after a skip released its pair: past MAX_PENDING_SKIPS skipped pairs
    waiting, the earliest that still has room is reserved again (and served next, rule 1)."""
    if queue.skipped_with_room(study=study, annotator_id=annotator_id) <= MAX_PENDING_SKIPS - 1:
        return None
    return queue.reopen_skipped(study=study, annotator_id=annotator_id, now=now)
