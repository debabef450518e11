"""Import a pairs file into a study: all or nothing, identical re-import is a no-op."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, func, insert, type_coerce, update
from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotate.errors import InputError
from annotate.queue.targets import refresh_targets
from annotate.store import db
from annotate.store.models import Assignment, Pair, id_of, table_of, utcnow
from annotate.store.sqlite_engine import use_large_cache
from annotate.studies.catalog import get_or_create_study
from annotate.studies.pair_versions import (
    IMPORT,
    JSON_COLUMNS,
    EncodedJSON,
    add_version,
    content_row,
    nul_field,
)
from annotate.studies.pairs_files import MAX_PROBLEMS, ValidPair, iter_valid_pairs, record_hash

_PAIR = table_of(Pair)
BATCH = 50  # rows per INSERT executemany: 100 KB records hold 5 MB, not the 20 MB of 200


@dataclass(frozen=True)
class SampleRequest:
    """import-pairs --sample N [--sample-by NAME=FILE] [--seed N]: queue only N pairs.
    `flags`, given the study's pair ids, says which ones the judge flags (None: uniform)."""

    size: int
    seed: int = 0
    flags: Callable[[list[str]], list[bool]] | None = None
    judge: str | None = None


@dataclass(frozen=True)
class SampleResult:
    size: int
    population: int
    strata: dict[str, tuple[int, int, float]]  # name: (pairs, sampled, inclusion probability)

    def summary(self) -> str:
        parts = ", ".join(
            f"{name}: {taken} of {size} (inclusion probability {p:.4g})"
            for name, (size, taken, p) in self.strata.items()
        )
        return f"{self.size} of {self.population} pairs queued for labelling ({parts})"


@dataclass(frozen=True)
class ImportResult:
    study: str
    added: int
    updated: int  # pairs revised (--update): a new version each
    unchanged: int
    sample: SampleResult | None = None
    earlier_answers: int = 0  # answers to the versions the update replaced

    def counts(self) -> str:
        """What the import did, in one sentence without the study's name."""
        text = f"{self.added:,} pairs added, "
        if self.updated:
            answers = (
                "1 answer now belongs"
                if self.earlier_answers == 1
                else f"{self.earlier_answers:,} answers now belong"
            )
            text += (
                f"{self.updated:,} revised (a new version each, queued again for its full "
                f"overlap; {answers} to an earlier version: kept, not counted), "
            )
        else:
            text += "0 revised, "
        return text + f"{self.unchanged:,} unchanged"

    def summary(self) -> str:
        text = f"study {self.study!r}: {self.counts()}"
        return text if self.sample is None else f"{text}; {self.sample.summary()}"


def _is_sampled(s: Session, *, study_id: int) -> bool:
    return (
        s.exec(
            select(Pair.id)
            .where(Pair.study_id == study_id, col(Pair.inclusion_probability).is_not(None))
            .limit(1)
        ).first()
        is not None
    )


def _apply_sample(s: Session, *, study_id: int, request: SampleRequest) -> SampleResult:
    """Draw the sample over all the study's pairs (analysis/population/sampling.py, the one draw) and
    store each pair's queued flag, inclusion probability and stratum. Refused when it would
    change the sample of a study whose labelling has begun."""
    from analysis.population.sampling import draw_sample

    rows = s.execute(
        select_columns(
            _PAIR.c.id,
            _PAIR.c.pair_key,
            _PAIR.c.queued,
            _PAIR.c.inclusion_probability,
            _PAIR.c.stratum,
        )
        .where(_PAIR.c.study_id == study_id, _PAIR.c.is_gold == False)  # noqa: E712
        .order_by(_PAIR.c.position)
    ).all()
    ids = [key for _, key, *_ in rows]
    if request.size > len(ids):
        raise InputError(
            "--sample",
            [f"asks for {request.size} pairs but the study holds {len(ids)} (not gold)"],
        )
    flags = request.flags(ids) if request.flags is not None else None
    draws = draw_sample(ids, request.size, seed=request.seed, flagged=flags)
    changed = [
        (row_id, d)
        for (row_id, _, queued, p, stratum), d in zip(rows, draws, strict=True)
        if (bool(queued), p, stratum) != (d.sampled, d.inclusion_probability, d.stratum)
    ]
    begun = s.exec(select(Assignment.id).where(Assignment.study_id == study_id).limit(1)).first()
    if changed and begun is not None:
        raise InputError(
            "--sample",
            [
                "the study's labelling has begun; drawing another sample would change which "
                "pairs are queued (import into a new study, or repeat the same --sample, "
                "--sample-by and --seed)"
            ],
        )
    if changed:
        s.connection().execute(
            update(_PAIR)
            .where(_PAIR.c.id == bindparam("b_id"))
            .values(
                queued=bindparam("b_queued"),
                inclusion_probability=bindparam("b_p"),
                stratum=bindparam("b_stratum"),
            ),
            [
                {
                    "b_id": row_id,
                    "b_queued": d.sampled,
                    "b_p": d.inclusion_probability,
                    "b_stratum": d.stratum,
                }
                for row_id, d in changed
            ],
        )
    strata: dict[str, tuple[int, int, float]] = {}
    for d in draws:
        size, taken, _ = strata.get(d.stratum, (0, 0, 0.0))
        strata[d.stratum] = (size + 1, taken + d.sampled, d.inclusion_probability)
    return SampleResult(size=request.size, population=len(ids), strata=strata)


_INSERT_COLUMNS = (
    "study_id",
    "pair_key",
    "position",
    "question",
    *JSON_COLUMNS,
    "narrative",
    "category",
    "chosen",
    "rejected",
    "record_hash",
    "imported_at",
)
# a Core executemany: the ORM's bulk insert costs more per row and would encode the JSON again
_INSERT = insert(_PAIR).values(
    {
        name: type_coerce(bindparam(f"v_{name}"), EncodedJSON())
        if name in JSON_COLUMNS
        else bindparam(f"v_{name}")
        for name in _INSERT_COLUMNS
    }
)


def _row(pair: ValidPair) -> dict[str, Any]:
    """The content columns (JSON ones pre-encoded) and the pair's key."""
    return {"pair_key": pair.key, **content_row(pair)}


def _same_content(s: Session, pair_id: int, stored: str, item: ValidPair) -> bool:
    """A record whose hash differs from the stored one may still be the same record: a
    database made before source hashes holds canonical hashes, and another file can hold the
    same record in another layout. Canonical hashes settle it; the stored row is read only
    when the stored hash is not one."""
    canonical = item.canonical_hash()
    if canonical == stored:
        return True
    return record_hash(s.get_one(Pair, pair_id).record()) == canonical  # the stored row's


def import_pairs(
    engine: Engine,
    path: str | Path,
    *,
    study_name: str = "default",
    update_existing: bool = False,
    progress: Callable[[int], None] | None = None,
    sample: SampleRequest | None = None,
) -> ImportResult:
    """Import the file's pairs (all or nothing); with `sample`, the study's pairs become the
    population and only the drawn sample is queued (import-pairs --sample)."""

    def work(s: Session) -> ImportResult:  # may run again (db.write): it starts from nothing
        problems: list[str] = []
        added = updated = unchanged = earlier_answers = 0
        # one big transaction: a fixed 64 MB page cache (SQLite) keeps it from spilling into
        # the WAL early (6,000 records of 100 KB: 34 s -> 25 s); memory stays bounded
        use_large_cache(s)
        study = get_or_create_study(s, study_name)
        study_id = id_of(study)
        existing = {
            key: (id_of_pair, digest)
            for id_of_pair, key, digest in s.exec(
                select(Pair.id, Pair.pair_key, Pair.record_hash).where(Pair.study_id == study_id)
            )
            if id_of_pair is not None  # a primary key
        }
        position = s.exec(
            select(func.coalesce(func.max(Pair.position), 0)).where(Pair.study_id == study_id)
        ).one()
        conn = s.connection()
        batch: list[dict[str, Any]] = []
        seen = 0
        for where, item in iter_valid_pairs(path):
            seen += 1
            if progress is not None and seen % 100 == 0:
                progress(seen)
            if isinstance(item, str):
                problems.append(f"{where}: {item}")
                if len(problems) >= MAX_PROBLEMS:
                    problems.append(f"stopped after {MAX_PROBLEMS} problems")
                    break
                continue
            nul = nul_field(item)
            if nul is not None:
                problems.append(f"{where}: {nul}")
                continue
            if problems:
                continue  # keep validating to report every problem, but write nothing more
            known = existing.get(item.key)
            if known is None:
                position += 1
                row = _row(item)
                row.update(study_id=study_id, position=position, imported_at=utcnow())
                batch.append({f"v_{name}": value for name, value in row.items()})
                added += 1
                if len(batch) >= BATCH:
                    conn.execute(_INSERT, batch)
                    batch.clear()
            elif known[1] == item.record_hash or _same_content(s, known[0], known[1], item):
                unchanged += 1
            elif update_existing:  # a new version; the earlier one is kept
                added_version = add_version(
                    conn, pair_id=known[0], content=item, replaced_by=IMPORT
                )
                earlier_answers += added_version.earlier_answers
                updated += 1
            else:
                problems.append(
                    f"{where}: pair id {item.key!r} already exists in study {study_name!r} with "
                    "different content (use --update to add it as a new version of the pair)"
                )
        if not problems and seen == 0:
            problems.append("the file holds no records")
        if problems:
            s.rollback()
            raise InputError(str(path), problems)
        if batch:
            conn.execute(_INSERT, batch)
        if sample is None and added and _is_sampled(s, study_id=study_id):
            s.rollback()
            raise InputError(
                str(path),
                [
                    f"study {study_name!r} is a sampled population (import-pairs --sample); "
                    f"adding {added} pairs without --sample would leave them outside the sample "
                    "design (import them with --sample to draw again, or into another study)"
                ],
            )
        drawn = None if sample is None else _apply_sample(s, study_id=study_id, request=sample)
        if (added or updated) and study.adaptive_min is not None:
            refresh_targets(conn, study_id=study_id)  # new pairs or versions, adaptive study
        if progress is not None:
            progress(seen)
        return ImportResult(
            study=study_name,
            added=added,
            updated=updated,
            unchanged=unchanged,
            sample=drawn,
            earlier_answers=earlier_answers,
        )

    return db.write(engine, work)
