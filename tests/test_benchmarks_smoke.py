"""Every benchmark in benchmarks/ runs to the end at a tiny size (seconds each), so a change
that breaks one shows in the suite instead of at the next measurement (#18: two broke
unnoticed). Each run is the script as a user starts it, in its own process; the checks are on
its printed result, not its numbers (speed belongs to the benchmarks, not to tests).
bench_crowd has its own, longer test (tests/test_bench_crowd.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import require_browser
from tests.db_backends import postgres_unavailable_reason, require_postgres

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

pytestmark = [pytest.mark.slow]

# The smoke test of each script (a new benchmark without one fails the suite).
SMOKED = {
    "bench_coverage.py",
    "bench_crowd.py",  # tests/test_bench_crowd.py
    "bench_import.py",
    "bench_label_browser.py",
    "bench_label_step.py",
    "bench_population.py",
    "bench_report.py",
    "bench_storage.py",
}


def run(script: str, *args: str, cwd: Path) -> str:
    """The script's standard output; its standard error's tail when it failed."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def test_every_benchmark_has_a_smoke_test():
    assert {p.name for p in BENCHMARKS.glob("bench_*.py")} == SMOKED


def test_bench_coverage(tmp_path):
    out = run(
        "bench_coverage.py", "--studies", "2", "--bootstrap", "20", "--cells", "1",
        "--workers", "1", cwd=tmp_path,
    )  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| exchangeable")]
    assert rows, out[-2000:]
    # every statistic of the cell got a coverage figure (a percentage with its error)
    assert all(re.search(r"\| \d+\.\d \+- \d+\.\d \|", row) for row in rows), rows


def test_bench_import(tmp_path):
    out = run("bench_import.py", "--sizes", "50", "--dir", str(tmp_path), cwd=tmp_path)
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["50"])
    assert row[1] == "new", out[-2000:]
    assert float(row[4]) > 0 and float(row[6]) > 0  # import seconds, ratio to the parse


def test_bench_label_step(tmp_path):
    out = run(
        "bench_label_step.py", "--steps", "1", "--large-pairs", "200", "--keep", str(tmp_path),
        cwd=tmp_path,
    )  # fmt: skip
    assert "built large: 200 pairs, 800 annotations" in out, out[-2000:]
    assert re.search(r"ratio large/small: \d+\.\d\d", out), out[-2000:]


def test_bench_label_browser(tmp_path):
    require_browser()
    out = run(
        "bench_label_browser.py", "--pairs", "5", "--label", "2", "--posts", "5",
        "--keep", str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    # both Submits reached the database, each with its own round trip(s)
    assert "pairs=5 labelled=2 stored annotations=2" in out, out[-2000:]
    assert re.search(r"Submit to next pair: p50 \d+\.\d+ s", out), out[-2000:]


def test_bench_population(tmp_path):
    out = run("bench_population.py", "--benchmarks", "2", cwd=tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("| uniform")]
    assert len(rows) == 3, out[-2000:]


def test_bench_report(tmp_path):
    out = run("bench_report.py", "--rows", "500", "--bootstrap", "20", cwd=tmp_path)
    assert "500 annotations" in out, out[-2000:]
    assert re.search(r"ratio report / baseline: \d+\.\d\dx wall", out), out[-2000:]


def test_bench_storage(tmp_path):
    backend = "both"
    if postgres_unavailable_reason() is not None:
        require_postgres()  # fails under ANNOTATE_TEST_POSTGRES=require, else skips with why
    out = run("bench_storage.py", "--pairs", "1", "--backend", backend, cwd=tmp_path)
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    assert set(rows) == {"sqlite", "postgresql"}, out[-2000:]
    for row in rows.values():
        assert int(row[2]) == 32  # one pair, 32 writers, one annotation each
