"""Import throughput of a large pairs file, and peak memory against file size.

Generates Personalized RewardBench-like records of about 100 KB each (a profile of past posts,
rubric aspects, two long responses) as JSON Lines, then in separate processes:

- parse:  read the file and json.loads every line (the floor: no validation, no database);
- import: `annotate.studies.pair_import.import_pairs` into a new database (validation, hashing, writing);
- floor (with --floor, SQLite): the least any importer into the app's SQLite settings can do:
  parse each line and insert six of its fields with the sqlite3 module alone, no validation,
  no hashing, no SQLAlchemy, in one transaction (WAL, synchronous=FULL, the same 64 MB cache
  and 50-row batches), committed (with SQLite's automatic checkpoint, as the import's commit).

Prints seconds, MB/s, the import/parse time ratio (goal <= 3x) and each process's peak RSS, for
2,000 and 10,000 records: with streaming, peak memory must not grow with the file.

    python benchmarks/bench_import.py                     # SQLite in a temporary directory
    python benchmarks/bench_import.py --db postgresql+psycopg://postgres@127.0.0.1/bench
    python benchmarks/bench_import.py --sizes 500 2000    # quicker
    python benchmarks/bench_import.py --repeat 3 --compare /tmp/old   # old vs new, alternated
    python benchmarks/bench_import.py --sizes 10000 --floor  # and the bare sqlite3 floor

--compare DIR imports the same file with the `annotate` package found in DIR as well (for
example `git archive HEAD annotate | tar -x -C DIR`), alternating old and new in every round;
each import is timed against its own parse run just before it, and the medians are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
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


def child(mode: str, path: str, db: str | None, page_size: int | None = None) -> None:
    """Runs in its own process; prints one JSON line: seconds and peak RSS."""
    if mode == "floor":
        elapsed, n = _floor(path, str(db).removeprefix("sqlite:///"))
    elif mode == "parse":
        start = time.perf_counter()
        n = 0
        with open(path, "rb") as handle:
            for line in handle:
                json.loads(line)
                n += 1
        elapsed = time.perf_counter() - start
    else:
        from annotate.engine import get_engine
        from annotate.studies.pair_import import import_pairs

        if page_size and db and db.startswith("sqlite:///"):
            # an experiment: the app makes databases with SQLite's default 4 KiB pages
            import sqlite3

            with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
                conn.execute(f"PRAGMA page_size={page_size}")
                conn.execute("VACUUM")
        engine = get_engine(db)  # schema creation is not part of the import time
        start = time.perf_counter()
        result = import_pairs(engine, path, study_name="bench")
        elapsed = time.perf_counter() - start
        n = result.added
    print(json.dumps({"seconds": elapsed, "records": n, "peak_rss_mb": _peak_rss_mb()}))


def _floor(path: str, database: str) -> tuple[float, int]:
    import sqlite3

    conn = sqlite3.connect(database, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA cache_size=-65536")
    conn.execute(
        "CREATE TABLE pair (id INTEGER PRIMARY KEY, pair_key TEXT, question TEXT, profile TEXT,"
        " rubric_aspects TEXT, chosen TEXT, rejected TEXT)"
    )
    insert = (
        "INSERT INTO pair (pair_key, question, profile, rubric_aspects, chosen, rejected)"
        " VALUES (?, ?, ?, ?, ?, ?)"
    )
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    batch, n = [], 0
    with open(path, "rb") as handle:
        for line in handle:
            r = json.loads(line)
            batch.append(
                (
                    r["id"],
                    r["question"],
                    json.dumps(r.get("profile")),
                    json.dumps(r.get("rubric_aspects")),
                    r["chosen"],
                    r["rejected"],
                )
            )
            n += 1
            if len(batch) >= 50:
                conn.executemany(insert, batch)
                batch.clear()
    if batch:
        conn.executemany(insert, batch)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed, n


def _run_child(
    mode: str, path: Path, db: str | None, src: str | None = None, page_size: int | None = None
) -> dict:
    command = [sys.executable, __file__, "--child", mode, str(path)]
    if db:
        command += ["--db", db]
    if page_size:
        command += ["--sqlite-page-size", str(page_size)]
    env = dict(os.environ)
    if src:  # an older copy of the package: it comes first on the path
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
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
    parser.add_argument("--repeat", type=int, default=1, help="rounds per size (medians)")
    parser.add_argument("--compare", metavar="DIR", help="also import with the package in DIR")
    parser.add_argument(
        "--sqlite-page-size",
        type=int,
        help="experiment: make the new SQLite database with this page size (the app uses 4096)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="SQLite: also time a bare sqlite3 import of the same file (see above)",
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.db, args.sqlite_page_size)
        return
    variants = [("new", None)] + ([("old", args.compare)] if args.compare else [])
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        workdir = Path(tmp)
        print(
            f"{'records':>8} {'code':>4} {'file MB':>8} {'parse s':>8} {'import s':>9} "
            f"{'import MB/s':>11} {'ratio':>6} {'parse RSS MB':>12} {'import RSS MB':>13}"
        )
        summary = []
        for count in args.sizes:
            path = workdir / f"pairs-{count}.jsonl"
            write_file(path, count)
            size_mb = path.stat().st_size / 1e6
            runs: dict[str, list[dict]] = {name: [] for name, _ in variants}
            for round_ in range(args.repeat):
                # alternate which code goes first, so neither always meets a warmer cache
                for name, src in variants if round_ % 2 == 0 else variants[::-1]:
                    parsed = _run_child("parse", path, None)
                    url = _fresh_db(args.db, workdir, count)
                    try:
                        imported = _run_child("import", path, url, src, args.sqlite_page_size)
                    finally:
                        _drop_db(url)
                        for leftover in workdir.glob(f"import-{count}.db*"):
                            leftover.unlink()
                    assert imported["records"] == count, imported
                    ratio = imported["seconds"] / parsed["seconds"]
                    runs[name].append({**imported, "parse": parsed, "ratio": ratio})
                    print(
                        f"{count:>8} {name:>4} {size_mb:>8.0f} {parsed['seconds']:>8.2f} "
                        f"{imported['seconds']:>9.2f} {size_mb / imported['seconds']:>11.1f} "
                        f"{ratio:>6.2f} {parsed['peak_rss_mb']:>12.0f} "
                        f"{imported['peak_rss_mb']:>13.0f}",
                        flush=True,
                    )
                    if args.floor and name == "new" and not args.db:
                        floor = _run_child("floor", path, _fresh_db(None, workdir, count))
                        for leftover in workdir.glob(f"import-{count}.db*"):
                            leftover.unlink()
                        print(
                            f"{count:>8} {'bare sqlite3 floor':>23} {floor['seconds']:>9.2f} "
                            f"{'':>11} {floor['seconds'] / parsed['seconds']:>6.2f}",
                            flush=True,
                        )
            for name, results in runs.items():
                summary.append((count, name, results))
            path.unlink()
        if args.repeat > 1 or args.compare:
            print("medians:")
            for count, name, results in summary:
                med = statistics.median
                ratios = ", ".join(f"{r['ratio']:.2f}" for r in results)
                print(
                    f"{count:>8} {name:>4} parse {med(r['parse']['seconds'] for r in results):.2f} s"
                    f"  import {med(r['seconds'] for r in results):.2f} s"
                    f"  ratio {med(r['ratio'] for r in results):.2f}"
                    f"  peak RSS {max(r['peak_rss_mb'] for r in results):.0f} MB"
                    f"  (ratios {ratios})"
                )
        print("goal: import/parse ratio <= 3; import peak RSS about equal for every size")


if __name__ == "__main__":
    main()
