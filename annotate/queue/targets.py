"""Each pair's reservation target in an adaptive study: how many annotators it may have.

The queue (annotate/queue/rules.py, every path) serves a real pair while its reservations
(pair.n_assigned) are below its target: pair.target, or the study's overlap_target where that
is null (every pair of a fixed-overlap study). In an adaptive study pair.target follows the
pair's answers, through analysis.design.stopping (the one stopping rule, also the report's and
`annotate plan`'s):

- below MIN answers: MIN;
- undecided (`needs_more`): one more than it has, never above MAX;
- decided or at MAX: what it has, so nobody new gets it;
- a pair of the agreement sample (Coins.in_agreement_sample, keyed with the study's secret):
  always exactly agreement_overlap, whatever its answers say.

The target only ever caps the conditional reservation (`n_assigned < target`), so no pair is
handed out beyond MAX whatever runs at the same time; a late answer (an expired reservation
answered after all) is kept and counted, and the target follows it. `after_answer` runs in the
transaction that stores an answer, holding the pair's row lock, so that two answers to one
pair committed at once are counted together: the second sees the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection, Row

from analysis.design.stopping import OverlapDesign, stopping_states, target_after
from analysis.vocabulary import PREFERENCES
from annotate.queue.rules import coins_of
from annotate.store.models import Annotation, Pair, Study, table_of

_PAIR = table_of(Pair)
_ANNOTATION = table_of(Annotation)
_STUDY = table_of(Study)


@dataclass(frozen=True)
class Design:
    """A study's overlap design: fixed (adaptive_min None) or adaptive with its sample."""

    overlap_target: int
    adaptive_min: int | None
    adaptive_max: int | None
    agreement_sample: float
    agreement_overlap: int
    allow_ties: bool
    coin_secret: str | None

    @classmethod
    def of(cls, study: object) -> Design:
        return cls(**{name: getattr(study, name) for name in cls.__dataclass_fields__})

    @property
    def adaptive(self) -> bool:
        return self.adaptive_min is not None

    @property
    def bounds(self) -> tuple[int, int]:
        """An adaptive study's least and most annotations a pair gets."""
        if self.adaptive_min is None or self.adaptive_max is None:
            raise ValueError("a fixed design has no adaptive bounds")
        return self.adaptive_min, self.adaptive_max

    def in_sample(self, pair_key: str) -> bool:
        return self.adaptive and coins_of(self.coin_secret).in_agreement_sample(
            pair_key=pair_key, fraction=self.agreement_sample
        )

    def states(self, counts: np.ndarray) -> np.ndarray:
        """analysis.design.stopping's state of each pair from its (chosen, rejected, tie) counts."""
        minimum, maximum = self.bounds
        return stopping_states(counts, minimum=minimum, maximum=maximum, ties=self.allow_ties)

    def targets(self, keys: list[str], counts: np.ndarray) -> list[int | None]:
        """pair.target for these pairs (None: the study's overlap_target)."""
        if not self.adaptive:
            return [None] * len(keys)
        states = self.states(counts)
        minimum, maximum = self.bounds
        out: list[int | None] = []
        for key, row, state in zip(keys, counts, states, strict=True):
            if self.in_sample(key):
                out.append(self.agreement_overlap)
            else:
                n = int(row.sum())
                out.append(target_after(state, n=n, minimum=minimum, maximum=maximum))
        return out

    def report_design(self, pair_keys: Iterable[str]) -> OverlapDesign:
        """The design as the report reads it (analysis.design.stopping.OverlapDesign), with the
        agreement sample among these (real) pairs."""
        if not self.adaptive:
            k = self.overlap_target
            return OverlapDesign(adaptive=False, minimum=k, maximum=k, ties=self.allow_ties)
        minimum, maximum = self.bounds
        return OverlapDesign(
            adaptive=True,
            minimum=minimum,
            maximum=maximum,
            ties=self.allow_ties,
            agreement_fraction=self.agreement_sample,
            agreement_overlap=self.agreement_overlap,
            sample=frozenset(key for key in pair_keys if self.in_sample(key)),
        )


def design_of(conn: Connection, *, study_id: int) -> Design:
    columns = [_STUDY.c[name] for name in Design.__dataclass_fields__]
    row = conn.execute(select(*columns).where(_STUDY.c.id == study_id)).one()
    return Design(*row)


def _counts(
    conn: Connection, *, study_id: int, pair_ids: Iterable[int] | None
) -> dict[int, list[int]]:
    """{pair id: [chosen, rejected, tie]} of the study's answers to each pair's current
    version (a revised pair starts again)."""
    query = (
        select(_ANNOTATION.c.pair_id, _ANNOTATION.c.preference, func.count())
        .join(
            _PAIR,
            (_PAIR.c.id == _ANNOTATION.c.pair_id) & (_PAIR.c.version == _ANNOTATION.c.pair_version),
        )
        .where(_ANNOTATION.c.study_id == study_id)
        .group_by(_ANNOTATION.c.pair_id, _ANNOTATION.c.preference)
    )
    if pair_ids is not None:
        query = query.where(_ANNOTATION.c.pair_id.in_(list(pair_ids)))
    out: dict[int, list[int]] = {}
    for pair_id, preference, n in conn.execute(query):
        if preference in PREFERENCES:
            out.setdefault(pair_id, [0] * len(PREFERENCES))[PREFERENCES.index(preference)] += n
    return out


_SET_TARGET = (
    update(_PAIR).where(_PAIR.c.id == bindparam("b_pair")).values(target=bindparam("b_target"))
)


def _refresh(
    conn: Connection, *, study_id: int, pairs: Sequence[Row[*tuple[Any, ...]]], design: Design
) -> int:
    """Write the targets of these (id, key, is_gold, target) rows that changed; how many."""
    real = [p for p in pairs if not p.is_gold]
    counts = _counts(conn, study_id=study_id, pair_ids=[p.id for p in real])
    table = np.array([counts.get(p.id, [0, 0, 0]) for p in real], dtype=np.int64).reshape(-1, 3)
    wanted = design.targets([p.pair_key for p in real], table)
    changes = [
        {"b_pair": p.id, "b_target": t} for p, t in zip(real, wanted, strict=True) if p.target != t
    ]
    if changes:
        conn.execute(_SET_TARGET, changes)
    return len(changes)


def after_answer(conn: Connection, *, study_id: int, pair_id: int) -> None:
    """Inside the transaction that stored an answer for the pair (adaptive studies): its
    target from all its answers. The pair's row lock first (PostgreSQL; SQLite's write
    transaction already excludes every other writer), so that the answers read include any
    committed meanwhile: NO KEY UPDATE, which does not block the foreign-key checks of
    answers and assignments for the pair."""
    query = select(_PAIR.c.id, _PAIR.c.pair_key, _PAIR.c.is_gold, _PAIR.c.target).where(
        _PAIR.c.id == pair_id
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(key_share=True)
    pair = conn.execute(query).first()
    if pair is None or pair.is_gold:
        return
    _refresh(conn, study_id=study_id, pairs=[pair], design=design_of(conn, study_id=study_id))


def refresh_targets(conn: Connection, *, study_id: int) -> int:
    """Inside the caller's write transaction: every real pair's target from the study's
    design and answers (after its options change, pairs or answers are imported). Returns
    how many changed."""
    design = design_of(conn, study_id=study_id)
    if not design.adaptive:  # every pair follows the study's overlap: no answers to read
        return conn.execute(
            update(_PAIR)
            .where(_PAIR.c.study_id == study_id, _PAIR.c.target.is_not(None))
            .values(target=None)
        ).rowcount
    pairs = conn.execute(
        select(_PAIR.c.id, _PAIR.c.pair_key, _PAIR.c.is_gold, _PAIR.c.target).where(
            _PAIR.c.study_id == study_id
        )
    ).all()
    return _refresh(conn, study_id=study_id, pairs=pairs, design=design)
