"""Every benchmark in benchmarks/ runs to the end at a tiny size (seconds each), so a change
that breaks one shows in the suite instead of at the next measurement (#18: two broke
unnoticed). Each run is the script as a user starts it, in its own process; the checks are on
its printed result, not its numbers (speed belongs to the benchmarks, not to tests).
bench_crowd has its own, longer test (tests/test_bench_crowd.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tests.browser import require_browser
from tests.db_backends import postgres_unavailable_reason, require_postgres

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the scripts' own functions, as tests/test_bench_crowd.py

pytestmark = [pytest.mark.slow]

# The smoke test of each script (a new benchmark without one fails the suite).
SMOKED = {
    "bench_annotation_model.py",
    "bench_coverage.py",
    "bench_crowd.py",  # tests/test_bench_crowd.py
    "bench_import.py",
    "bench_label_browser.py",
    "bench_label_step.py",
    "bench_population.py",
    "bench_report.py",
    "bench_storage.py",
    "coverage_bound.py",
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
    assert {p.name for p in BENCHMARKS.glob("*.py")} == SMOKED


def test_bench_coverage(tmp_path):
    out = run(
        "bench_coverage.py", "--studies", "2", "--bootstrap", "20", "--cells", "1",
        "--workers", "1", cwd=tmp_path,
    )  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| exchangeable")]
    assert rows, out[-2000:]
    # every statistic of the cell got a coverage figure (a percentage with its error)
    assert all(re.search(r"\| \d+\.\d \+- \d+\.\d \|", row) for row in rows), rows
    # and which side of the interval the population value fell on when it was missed
    assert all(re.search(r"\| \d+\.\d / \d+\.\d \|", row) for row in rows), rows
    # covered, below and above are the same studies split three ways
    for row in rows:
        annotators = re.findall(r"\| (\d+\.\d) \+- \d+\.\d \| (\d+\.\d) / (\d+\.\d) \|", row)
        assert annotators, row
        covered, below, above = map(float, annotators[0])
        assert covered + below + above == pytest.approx(100, abs=0.15), row


def test_bench_annotation_model(tmp_path):
    out = run(
        "bench_annotation_model.py", "--studies", "2", "--population", "300", "--sample", "120",
        cwd=tmp_path,
    )  # fmt: skip
    lines = [json.loads(line) for line in out.splitlines()]
    checks = {(line["design"], line["check"]) for line in lines}
    for design in ("uniform", "judge-guided"):
        assert {
            (design, "calibration p_preference_flip"),
            (design, "calibration p_valid"),
            (design, "verdicts"),
            (design, "export --max-bad-share"),
            (design, "coverage"),
        } <= checks
    coverage = [line for line in lines if line["check"] == "coverage"]
    assert all(0 <= line["true_share_coverage"] <= 1 for line in coverage)


def test_coverage_bound(tmp_path):
    out = run(
        "coverage_bound.py", "--grid", "200", "--steps", "4", "--panel-cap", "1.2", cwd=tmp_path
    )
    rows = [line for line in out.splitlines() if re.match(r"\| (none|1\.2x) \|", line)]
    assert len(rows) == 2, out
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        bound, reached = float(cells[1].removeprefix("<= ")), float(cells[2])
        # weak duality: no rule found on the grid beats the bound
        assert reached <= bound + 1e-9, row


def test_coverage_bounds_law_of_main_effects():
    import coverage_bound as module

    s = np.linspace(0.01, 20, 50)
    # alike: the mean of two Exp(1) draws, a Gamma(2, scale 1/2)
    assert np.allclose(module.s_cdf(s, snr=0.0), stats.gamma.cdf(s, 2, scale=0.5))
    # a panel: ((1 + snr) X1 + X2) / 2 against a large simulation
    draws = np.random.default_rng(0).exponential(size=(2, 400_000))
    simulated = ((1 + 8.5) * draws[0] + draws[1]) / 2
    for p in (0.25, 0.5, 0.75):
        assert module.s_quantile(p, snr=8.5) == pytest.approx(np.quantile(simulated, p), rel=0.01)


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
