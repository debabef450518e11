"""One scripted labelling scenario through every path that applies the queue's rules
(annotate/queue/rules.py): the full rules in Python, SQLite's common Submit on the
driver's connection and PostgreSQL's generated submit function. Every path, on both databases,
must serve the same sequence of (pair, A/B order).

The scenario meets every rule: gold due mid-queue (after a Submit), a skipped pair coming back
last, a stale tab, a deactivation (its open tab refused), a reservation whose page went away
goes to someone else (its holder's late answer stored only while the pair has room), the
quota, qualification (passed, and failed with a second tab that cannot replace the first
answer), and versions: imported answers counting toward a pair's overlap (their annotator is
not given that pair again), and a pair revised while an annotator holds it (their Submit
refused, the new version served to them and to those who answered the earlier one).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from sqlmodel import select

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import DRIVER_CONNECTION, FULL_RULES, SUBMIT_FUNCTION, submit_and_next
from annotate.people import accounts
from annotate.queue import gold
from annotate.queue.assignment import next_assignment, skip
from annotate.queue.rules import AWAY_HOLD, AccountClosed, Coins, GivenAway, PairRevised
from annotate.store.db import session
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study, id_of, utcnow
from annotate.studies.annotation_import import import_annotation_rows
from annotate.studies.pair_import import import_pairs
from tests.db_backends import require_postgres
from tests.factories import make_study, pair_record, write_jsonl

MAIN, QUAL = "main", "qual"


def _secret() -> str:
    """A coin secret under which the first main annotator (id 1) meets a gold check at the
    third pair of their queue (after two Submits), not before: the scenario is then the same
    whatever the random secret of a new study would have been."""
    for n in range(10_000):
        coins = Coins(f"parity-{n}")
        due = [coins.gold_due(annotator_id=1, position=p) for p in range(1, 6)]
        if due[:3] == [False, False, True] and not any(due[3:]):
            return f"parity-{n}"
    raise AssertionError("no secret found")


def _setup(engine, tmp_path) -> dict[str, int]:
    main_id, main_people = make_study(
        engine,
        tmp_path,
        n_pairs=9,
        annotators=4,
        study=MAIN,
        overlap_target=2,
        reservation_timeout=600,
    )
    qual_id, qual_people = make_study(
        engine,
        tmp_path,
        n_pairs=5,
        annotators=2,
        study=QUAL,
        overlap_target=2,
        qualification_gold=1,
        items_per_annotator=3,
    )
    gold.set_gold(engine, study_id=main_id, pair_keys=["p6", "p7", "p8"], answer="chosen")
    gold.set_gold(engine, study_id=qual_id, pair_keys=["p4"], answer="chosen")
    with session(engine) as s:
        for study_id in (main_id, qual_id):
            s.get_one(Study, study_id).coin_secret = _secret()
    names = [f"m{i}" for i in range(4)] + ["q0", "q1"]
    ids = [a for a, _ in main_people + qual_people]
    assert ids == [1, 2, 3, 4, 5, 6]  # the coin's key: the same ids on every database
    return dict(zip(names, ids, strict=True))


ADAPT = "adapt"
ADAPTIVE_PEOPLE = [f"a{i}" for i in range(5)]


def _setup_adaptive(engine, tmp_path) -> dict[str, int]:
    study_id, people = make_study(
        engine,
        tmp_path,
        n_pairs=6,
        annotators=len(ADAPTIVE_PEOPLE),
        study=ADAPT,
        allow_ties=False,
        adaptive_min=2,
        adaptive_max=4,
        agreement_sample=0.4,
        agreement_overlap=3,
    )
    with session(engine) as s:
        s.get_one(Study, study_id).coin_secret = _secret()
    with session(engine) as s:
        from annotate.queue.targets import refresh_targets

        refresh_targets(s.connection(), study_id=study_id)  # the sample under the new secret
    return dict(zip(ADAPTIVE_PEOPLE, [a for a, _ in people], strict=True))


class Script:
    """Runs the scenario's actions and records what each one served."""

    def __init__(self, engine, people: dict[str, int], *, fast: bool):
        self.engine = engine
        self.people = people
        self.fast = fast
        self.served: list[str] = []  # the path that committed each Submit
        self.log: list[tuple] = []
        self.current: dict[str, int] = {}
        self.versions: dict[str, int] = {}  # the version of the pair each one's page shows

    def _record(self, action: str, who: str, row) -> None:
        if row is None:
            self.log.append((action, who, None))
            self.current.pop(who, None)
            return
        with session(self.engine) as s:
            key = s.get_one(Pair, row.pair_id).pair_key
        if row.pair_version > 1:
            key = f"{key}@v{row.pair_version}"
        self.log.append((action, who, key, row.chosen_position))
        self.current[who] = row.pair_id
        self.versions[who] = row.pair_version

    def serve(self, who: str) -> None:
        self._record("serve", who, next_assignment(self.engine, annotator_id=self.people[who]))

    def pair_id(self, key: str, study: str) -> int:
        with session(self.engine) as s:
            return id_of(
                s.exec(
                    select(Pair).join(Study).where(Pair.pair_key == key, Study.name == study)
                ).one()
            )

    def submit(self, who: str, *, pair: int | None = None, preference="chosen") -> None:
        pair_id = pair if pair is not None else self.current[who]
        version = self.versions.get(who) if pair is None else None
        answer = Answer(preference=preference, chosen_position="A", comment=f"{who} {pair_id}")
        try:
            row = submit_and_next(
                self.engine,
                annotator_id=self.people[who],
                pair_id=pair_id,
                answer=answer,
                fast=self.fast,
                served=self.served,
                version=version,
            )
        except AccountClosed:
            self.log.append(("submit", who, "refused: account closed"))
            return
        except GivenAway:  # the page shows the next pair (serve)
            self.log.append(("submit", who, "refused: given away"))
            self.current.pop(who, None)
            return
        except PairRevised:  # the page shows the next pair (serve), maybe the new version
            self.log.append(("submit", who, "refused: revised"))
            self.current.pop(who, None)
            return
        self._record("submit", who, row)

    def skip(self, who: str) -> None:
        skip(self.engine, annotator_id=self.people[who], pair_id=self.current.pop(who))
        self.log.append(("skip", who))

    def until_done(self, who: str) -> None:
        while who in self.current:
            self.submit(who)
            assert len(self.log) < 200


VER = "ver"
VERSION_PEOPLE = ["v0", "v1", "v2"]


def _setup_versions(engine, tmp_path) -> dict[str, int]:
    """3 pairs, overlap 2; p0 complete through two imported answers, p1 answered by v0
    through an import."""
    study_id, people = make_study(
        engine, tmp_path, n_pairs=3, annotators=len(VERSION_PEOPLE), study=VER, overlap_target=2
    )
    with session(engine) as s:
        s.get_one(Study, study_id).coin_secret = _secret()
    names = dict(zip(VERSION_PEOPLE, [a for a, _ in people], strict=True))
    with session(engine) as s:
        v0 = s.get_one(Annotator, names["v0"]).name
    rows = [
        {"pair_id": "p0", "annotator": "crowd-a", "preference": "chosen"},
        {"pair_id": "p0", "annotator": "crowd-b", "preference": "rejected"},
        {"pair_id": "p1", "annotator": v0, "preference": "chosen", "chosen_position": "B"},
    ]
    import_annotation_rows(engine, study_id=study_id, rows=rows)
    return names


def _revise_p1(engine, tmp_path) -> None:
    records = [pair_record(i) for i in range(3)]
    records[1]["rejected"] = "A revised rejected response that clearly ignores the budget."
    done = import_pairs(
        engine,
        write_jsonl(tmp_path / "ver-revised.jsonl", records),
        study_name=VER,
        update_existing=True,
    )
    assert done.updated == 1


def run_scenario(engine, tmp_path, *, fast: bool) -> tuple[list[tuple], list[str]]:
    """The scenario's log, and the path that committed each Submit."""
    people = _setup(engine, tmp_path)
    run = Script(engine, people, fast=fast)
    # main study: gold due at m0's third pair, after two Submits
    run.serve("m0")
    run.submit("m0")
    run.submit("m0")  # the gold check (the coin), then
    run.submit("m0")
    skipped = run.current["m0"]
    run.skip("m0")  # comes back after everything else
    run.serve("m0")
    # a stale tab: m0 answers a pair it was never given while holding another
    run.submit("m0", pair=run.pair_id("p5", MAIN))
    run.until_done("m0")
    # m1 labels one pair, is deactivated holding the next: the open tab cannot submit it
    run.serve("m1")
    run.submit("m1")
    accounts.set_active(engine, annotator_id=people["m1"], active=False)
    run.submit("m1")
    run.serve("m1")
    # m2's page went away (closed) more than AWAY_HOLD ago: m3 gets that pair once nothing
    # else is left (an expired reservation takes the same path: tests/test_reservations.py)
    run.serve("m2")
    held_by_m2 = run.current["m2"]
    with session(engine) as s:
        for assignment in s.exec(
            select(Assignment).where(
                Assignment.annotator_id == people["m2"], Assignment.status == "active"
            )
        ).all():
            assignment.away_since = utcnow() - timedelta(seconds=AWAY_HOLD + 1)
            s.add(assignment)
    run.serve("m3")
    run.until_done("m3")
    run.submit("m2", pair=held_by_m2)  # the late answer: stored only while the pair has room
    run.serve("m2")
    run.until_done("m2")
    # qualification study: q0 passes and meets the quota; q1 fails, a second tab changes nothing
    run.serve("q0")
    run.until_done("q0")
    run.serve("q1")
    gold_pair = run.current["q1"]
    run.submit("q1", preference="rejected")
    run.submit("q1", pair=gold_pair, preference="chosen")
    run.serve("q1")
    # adaptive study: each answer moves its pair's target (the fast paths hand over to the
    # full rules), splits get more answers up to MAX, the agreement sample exactly K
    run.people.update(_setup_adaptive(engine, tmp_path))
    for index, who in enumerate(ADAPTIVE_PEOPLE):
        run.serve(who)
        while who in run.current:
            with session(engine) as s:
                key = s.get_one(Pair, run.current[who]).pair_key
            run.submit(who, preference="chosen" if (index + int(key[1:])) % 2 else "rejected")
            assert len(run.log) < 400
    # versions: imported answers count (p0 full, p1 answered by v0); p1 revised while v1
    # holds it: v1's Submit refused, version 2 served to v1 and to v0 (who answered version 1)
    run.people.update(_setup_versions(engine, tmp_path))
    run.serve("v0")
    run.until_done("v0")
    run.serve("v1")
    held_by_v1 = run.current["v1"]
    _revise_p1(engine, tmp_path)
    run.submit("v1")
    run.serve("v1")
    run.until_done("v1")
    for who in VERSION_PEOPLE:
        run.serve(who)
        run.until_done(who)
    with session(engine) as s:
        answers = {
            (a.annotator_id, a.pair_id): a.preference
            for a in s.exec(select(Annotation).where(Annotation.pair_version == 1)).all()
        }
        n_assigned = sorted(s.exec(select(Pair.pair_key, Pair.study_id, Pair.n_assigned)).all())
        keys = {p.id: p.pair_key for p in s.exec(select(Pair)).all()}
    run.log.append(("m0 skipped", keys[skipped]))
    run.log.append(("m2 held", keys[held_by_m2]))
    run.log.append(("q1 gold answer", answers[(people["q1"], gold_pair)]))
    run.log.append(("q1", gold.qualification_of(engine, annotator_id=people["q1"]).state))
    run.log.append(("m2's late answer kept", (people["m2"], held_by_m2) in answers))
    run.log.append(("v1 held", keys[held_by_v1]))
    run.log.append(("n_assigned", n_assigned))
    return run.log, run.served


def _run(backend: str, path: str, make_db_url, tmp_path) -> tuple[list[tuple], list[str]]:
    if backend == "postgresql":
        require_postgres()
    engine = get_engine(make_db_url(backend))
    return run_scenario(engine, tmp_path, fast=path != FULL_RULES)


def test_every_path_serves_the_same_sequence(make_db_url, tmp_path):
    logs = {}
    for backend, path in [
        ("sqlite", FULL_RULES),
        ("sqlite", DRIVER_CONNECTION),
        ("postgresql", FULL_RULES),
        ("postgresql", SUBMIT_FUNCTION),
    ]:
        workdir = tmp_path / backend / path.replace(" ", "-")
        workdir.mkdir(parents=True)
        log, served = _run(backend, path, make_db_url, workdir)
        logs[backend, path] = log
        # each run went the path it names: the common Submits through the fast path (a missing
        # or failing PostgreSQL function would show as full rules here), the rare ones handed
        # over to the full rules; the full-rules runs never took a fast path
        counts = Counter(served)
        if path == FULL_RULES:
            assert set(counts) == {FULL_RULES}, (backend, counts)
        else:
            assert set(counts) <= {path, f"{path} + {FULL_RULES}", FULL_RULES}, (backend, counts)
            assert counts[path] > 0, (backend, counts)
            assert counts[FULL_RULES] + counts[f"{path} + {FULL_RULES}"] > 0, (backend, counts)
    reference = logs["sqlite", FULL_RULES]
    for key, log in logs.items():
        assert log == reference, key
    facts = dict(entry for entry in reference if len(entry) == 2)
    served = [entry for entry in reference if len(entry) == 4]
    m0 = [entry[2] for entry in served if entry[1] == "m0"]
    # gold came third (after two Submits), real pairs around it
    assert m0[2] in ("p6", "p7", "p8") and m0[0] not in ("p6", "p7", "p8")
    # the skipped pair came back after every other real pair
    assert [k for k in m0 if k not in ("p6", "p7", "p8")][-1] == facts["m0 skipped"]
    assert ("submit", "m1", "refused: account closed") in reference
    assert ("serve", "m1", None) in reference
    # m3 was served m2's released reservation; m2's late answer, refused once m3 filled the
    # pair (overlap 2 with m0's answer), was not stored beyond the target
    assert facts["m2 held"] in [entry[2] for entry in served if entry[1] == "m3"]
    refused = ("submit", "m2", "refused: given away") in reference
    assert facts["m2's late answer kept"] is not refused
    assert facts["q1 gold answer"] == "rejected" and facts["q1"] == "failed"
    q0 = [entry for entry in served if entry[1] == "q0"]
    assert q0[0][2] == "p4" and len(q0) == 3  # the qualification check first, then the quota
    # adaptive: every pair between MIN and MAX, the sample's exactly K, some split past MIN
    from annotate.queue.rules import Coins

    coins = Coins(_secret())
    adapt = {key: n for key, study_id, n in facts["n_assigned"] if study_id == 3}
    for key, n in adapt.items():
        sample = coins.in_agreement_sample(pair_key=key, fraction=0.4)
        assert n == 3 if sample else 2 <= n <= 4, (key, n)
    assert any(n > 2 for key, n in adapt.items()), adapt
    # versions: v0 was not given p0 (full through imports) nor p1 (answered through an
    # import); v1's Submit on p1, revised meanwhile, was refused, and version 2 came next,
    # to v1 and to v0; v2 found both p1 version 2 and p2 full
    versioned = {who: [e[2] for e in served if e[1] == who] for who in VERSION_PEOPLE}
    assert facts["v1 held"] == "p1"
    assert versioned["v0"] == ["p2", "p1@v2"], versioned
    assert ("submit", "v1", "refused: revised") in reference
    assert versioned["v1"][:2] == ["p1", "p1@v2"], versioned
    assert versioned["v2"] == [], versioned
    ver = {key: n for key, study_id, n in facts["n_assigned"] if study_id == 4}
    assert ver == {"p0": 2, "p1": 2, "p2": 2}, ver
