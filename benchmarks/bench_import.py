"""Import throughput of a large pairs file, and peak memory against file size.

Generates Personalized RewardBench-like records of about 100 KB each (a profile of past posts,
rubric aspects, two long responses) as JSON Lines, then in separate processes:

- parse:  read the file and json.loads every line (the floor: no validation, no database);
- import: `annotate.importer.import_pairs` into a new database (validation, hashing, writing).

Prints seconds, MB/s, the import/parse time ratio (goal <= 3x) and each process's peak RSS, for
2,000 and 10,000 records: with streaming, peak memory must not grow with the file.

    python benchmarks/bench_import.py                     # SQLite in a temporary directory
    python benchmarks/bench_import.py --db postgresql+psycopg://postgres@127.0.0.1/bench
    python benchmarks/bench_import.py --sizes 500 2000    # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    "budget",
    "hike",
    "winter",
    "stove",
    "recipe",
    "sourdough",
    "camera",
    "lens",
    "commute",
    "bike",
    "rent",
    "landlord",
    "guitar",
    "practice",
    "marathon",
    "knee",
    "injury",
    "laptop",
    "battery",
    "python",
    "course",
    "interview",
    "salary",
    "garden",
    "soil",
    "tomato",
    "toddler",
    "sleep",
    "schedule",
    "vegan",
    "protein",
    "coffee",
    "grinder",
    "travel",
    "visa",
    "apartment",
    "mortgage",
]


def _text(rng: random.Random, chars: int) -> str:
    out, size = [], 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def record(n: int, target_bytes: int = 100_000) -> dict:
    rng = random.Random(n)
    posts = [
        {"id": f"post-{n}-{i}", "category": rng.choice(WORDS), "text": _text(rng, 1_100)}
        for i in range(max(1, (target_bytes - 12_000) // 1_180))
    ]
    return {
        "id": f"pair-{n}",
        "question": _text(rng, 300) + "?",
        "profile": posts,
        "rubric_aspects": [
            {"aspect": _text(rng, 40), "evidence": _text(rng, 200), "reason": _text(rng, 200)}
            for _ in range(5)
        ],
        "narrative": _text(rng, 800),
        "category": rng.choice(["Lifestyle", "Technology", "Health"]),
        "chosen": _text(rng, 4_000),
        "rejected": _text(rng, 4_000),
        "source_model": "bench",
    }


def write_file(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(json.dumps(record(n), ensure_ascii=False) + "\n")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def child(mode: str, path: str, db: str | None) -> None:
    """Runs in its own process; prints one JSON line: seconds and peak RSS."""
    if mode == "parse":
        start = time.perf_counter()
        n = 0
        with open(path, "rb") as handle:
            for line in handle:
                json.loads(line)
                n += 1
        elapsed = time.perf_counter() - start
    else:
        from annotate.db import get_engine
        from annotate.importer import import_pairs

        engine = get_engine(db)  # schema creation is not part of the import time
        start = time.perf_counter()
        result = import_pairs(engine, path, study_name="bench")
        elapsed = time.perf_counter() - start
        n = result.added
    print(json.dumps({"seconds": elapsed, "records": n, "peak_rss_mb": _peak_rss_mb()}))


def _run_child(mode: str, path: Path, db: str | None) -> dict:
    command = [sys.executable, __file__, "--child", mode, str(path)]
    if db:
        command += ["--db", db]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fresh_db(base: str | None, workdir: Path, count: int) -> str:
    if base is None:
        return f"sqlite:///{workdir / f'import-{count}.db'}"
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(base)
    name = f"{url.database}_{count}_{os.getpid()}"
    admin = url.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.set(database=name).render_as_string(hide_password=False)


def _drop_db(url: str) -> None:
    if url.startswith("sqlite"):
        return
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000])
    parser.add_argument("--db", help="PostgreSQL URL (a database of that name + size is made)")
    parser.add_argument("--dir", help="where to write the generated files (default: a temp dir)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.db)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        workdir = Path(tmp)
        print(
            f"{'records':>8} {'file MB':>8} {'parse s':>8} {'import s':>9} {'import MB/s':>11} "
            f"{'ratio':>6} {'parse RSS MB':>12} {'import RSS MB':>13}"
        )
        for count in args.sizes:
            path = workdir / f"pairs-{count}.jsonl"
            write_file(path, count)
            size_mb = path.stat().st_size / 1e6
            parsed = _run_child("parse", path, None)
            url = _fresh_db(args.db, workdir, count)
            try:
                imported = _run_child("import", path, url)
            finally:
                _drop_db(url)
            assert imported["records"] == count, imported
            ratio = imported["seconds"] / parsed["seconds"]
            print(
                f"{count:>8} {size_mb:>8.0f} {parsed['seconds']:>8.1f} "
                f"{imported['seconds']:>9.1f} {size_mb / imported['seconds']:>11.1f} "
                f"{ratio:>6.2f} {parsed['peak_rss_mb']:>12.0f} {imported['peak_rss_mb']:>13.0f}",
                flush=True,
            )
            path.unlink()
        print("goal: import/parse ratio <= 3; import peak RSS about equal for every size")


if __name__ == "__main__":
    main()
