"""How long one labelling step takes on the server as the study grows.

A step is what happens between an annotator pressing Submit and the next pair being rendered:
the answer is committed, the next pair reserved, progress counted and the page built. It is
measured through Streamlit's AppTest (the real page script, no browser) on two databases built
in the same run:

  small: 100 pairs, 300 annotations
  large: 10,000 pairs, 100,000 annotations (200 annotators x 500 pairs)

Steps alternate between the two databases so that machine noise hits both alike; the script
prints the median step time of each and their ratio (goal: large / small <= 1.5).

    python benchmarks/bench_label_step.py [--steps 40] [--keep DIR] [--large-pairs 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402

from annotate.engine import get_engine  # noqa: E402
from annotate.people.auth import create_annotator  # noqa: E402
from annotate.store.db import ENV_VAR, session  # noqa: E402
from annotate.store.models import (  # noqa: E402
    Annotation,
    Annotator,
    Assignment,
    Pair,
    Study,
    table_of,
    utcnow,
)
from annotate.studies.pairs_files import record_hash  # noqa: E402

POST = "I usually cook for two on weeknights and batch-cook on Sundays. " * 3


def build(url: str, *, pairs: int, annotators: int, per_annotator: int, overlap: int) -> str:
    """A study with `pairs` pairs and annotators * per_annotator annotations; returns a token."""
    engine = get_engine(url)
    rng = random.Random(0)
    now = utcnow()
    with session(engine) as s:
        study = Study(name="bench", overlap_target=overlap)
        s.add(study)
        s.flush()
        rows: list[dict[str, Any]] = []
        for i in range(pairs):
            record = {
                "id": f"p{i}",
                "question": f"Question {i}?",
                "chosen": "x" * 800,
                "rejected": "y" * 800,
            }
            rows.append(
                {
                    "study_id": study.id,
                    "pair_key": f"p{i}",
                    "position": i + 1,
                    "question": f"Question {i}: what should I cook this week for two people?",
                    "profile": [
                        {"id": f"{i}-{j}", "category": "Food", "text": POST} for j in range(20)
                    ],
                    "rubric_aspects": [
                        {"aspect": "Quick recipes", "evidence": "weeknights", "reason": "time"}
                    ],
                    "narrative": "I want to eat better without spending hours.",
                    "category": "Lifestyle_and_Personal_Development",
                    "chosen": "A plan with quick recipes. " * 40,
                    "rejected": "An elaborate tasting menu. " * 40,
                    "extra": {},
                    "record_hash": record_hash(record),
                    "n_assigned": 0,
                    "is_gold": False,
                    "imported_at": now,
                }
            )
        s.execute(insert(Pair), rows)
        s.execute(
            insert(Annotator),
            [
                {
                    "name": f"bench-{a}",
                    "study_id": study.id,
                    "is_admin": False,
                    "active": True,
                    "created_at": now,
                    "guidelines_seen": True,
                }
                for a in range(annotators)
            ],
        )
        study_id = study.id
    # Each annotator labels per_annotator pairs, spread so every pair gets about the same count.
    counts = [0] * pairs
    assignments, annotations = [], []
    for a in range(annotators):
        start = (a * per_annotator) % pairs
        for k in range(per_annotator):
            p = (start + k) % pairs
            counts[p] += 1
            position = rng.choice("AB")
            assignments.append(
                {
                    "study_id": study_id,
                    "pair_id": p + 1,
                    "annotator_id": a + 1,
                    "chosen_position": position,
                    "status": "done",
                    "assigned_at": now,
                    "completed_at": now,
                }
            )
            annotations.append(
                {
                    "study_id": study_id,
                    "pair_id": p + 1,
                    "annotator_id": a + 1,
                    "preference": rng.choice(["chosen", "chosen", "rejected", "tie"]),
                    "chosen_position": position,
                    "correctness_chosen": 4,
                    "relevance_chosen": 5,
                    "helpfulness_chosen": 4,
                    "correctness_rejected": 4,
                    "relevance_rejected": 4,
                    "helpfulness_rejected": 3,
                    "main_reason": "personal_fit",
                    "comment": None,
                    "seconds": 30.0,
                    "submitted_at": now,
                    "source": "app",
                }
            )
    with session(engine) as s:
        for start in range(0, len(assignments), 5000):
            s.execute(insert(Assignment), assignments[start : start + 5000])
            s.execute(insert(Annotation), annotations[start : start + 5000])
        for p, c in enumerate(counts):
            if c:
                s.execute(
                    table_of(Pair).update().where(table_of(Pair).c.id == p + 1).values(n_assigned=c)
                )
        _, token = create_annotator(s, name="bench-me", study_id=study_id)
        s.get_one(Annotator, annotators + 1).guidelines_seen = True
    return token


def step(at) -> float:
    """Answer the current pair and time Submit -> next pair rendered. The page is one
    component: a Submit is one event carrying the whole form, sent as the browser sends it
    (the app tests' helper), so the timed run is the Submit's own."""
    from tests.test_label_app import full_form, submit_form

    started = time.perf_counter()
    submit_form(at, full_form("A"))
    elapsed = time.perf_counter() - started
    if at.exception or at.error:
        raise RuntimeError(f"step failed: {at.exception or at.error}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--keep", help="build the databases in this folder and keep them")
    parser.add_argument(
        "--large-pairs",
        type=int,
        default=10_000,
        help="pairs of the large study (default 10,000: 200 annotators x 500 pairs; smaller "
        "sizes keep 500 pairs an annotator, or all, with one annotator per 50 pairs)",
    )
    args = parser.parse_args()
    large = args.large_pairs
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-label-"))
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {
        "small": {"pairs": 100, "annotators": 3, "per_annotator": 100, "overlap": 12},
        "large": {
            "pairs": large,
            "annotators": max(3, large // 50),
            "per_annotator": min(500, large),
            "overlap": 12,
        },
    }
    urls, tokens = {}, {}
    for name, size in sizes.items():
        urls[name] = f"sqlite:///{folder / (name + '.db')}"
        Path(folder / (name + ".db")).unlink(missing_ok=True)
        started = time.perf_counter()
        tokens[name] = build(urls[name], **size)
        print(
            f"built {name}: {size['pairs']:,} pairs, {size['annotators'] * size['per_annotator']:,} annotations in {time.perf_counter() - started:.1f} s"
        )

    from streamlit.testing.v1 import AppTest

    apps = {}
    for name in sizes:
        os.environ[ENV_VAR] = urls[name]
        at = AppTest.from_file(str(ROOT / "annotate" / "web" / "app.py"), default_timeout=60)
        at.query_params["token"] = tokens[name]
        apps[name] = at.run()
    times: dict[str, list[float]] = {name: [] for name in sizes}
    for i in range(args.steps + 3):
        for name in sizes if i % 2 == 0 else reversed(list(sizes)):
            os.environ[ENV_VAR] = urls[name]
            elapsed = step(apps[name])
            if i >= 3:  # warm-up steps are not counted
                times[name].append(elapsed)
    small, large = (statistics.median(times[n]) for n in ("small", "large"))
    print(
        f"median submit -> next pair rendered: small {small * 1000:.1f} ms, large {large * 1000:.1f} ms"
    )
    print(f"ratio large/small: {large / small:.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
