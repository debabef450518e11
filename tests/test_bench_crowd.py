"""A short run of the crowd benchmark (benchmarks/bench_crowd.py): simulated annotators on two
real `annotate serve` replicas, over Streamlit's websocket, drafts and Submits; the JSON line has
every key and the database ends exact. The ten-minute crowd run is a benchmark, not a test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_crowd.py"

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_crowd import KEYS  # noqa: E402


def _run(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_short_crowd_run_stores_every_answer_once(pg_url):
    # 10 annotators at a 6 s pace for 15 s on two replicas of one PostgreSQL database, the
    # launch-day layout: every path of the simulated tab (sign-in by link, page load, keys,
    # drafts, Submit, next pair) runs many times (about 16 Submits and 13 drafts). The
    # benchmark's code is the same on SQLite, which the other server tests run on.
    result = _run(
        "--annotators", "10", "--minutes", "0.25", "--pace", "6", "--replicas", "2",
        "--db", pg_url, "--posts", "30", "--calibrate", "5", "--ramp", "2",
    )  # fmt: skip
    assert tuple(result) == KEYS
    assert result["errors"] == 0
    assert (result["lost"], result["duplicated"], result["over_target"]) == (0, 0, 0)
    assert result["submits"] >= 6 and result["drafts"] >= 6
    assert result["step_p50"] is not None and result["step_p95"] >= result["step_p50"]
    assert result["cpu_s_per_pair"] > 0 and result["annotators_per_core"] > 0
    assert result["draft_cpu_vs_submit"] is not None
    assert result["page_cpu_s"] > 0
    assert [set(r) for r in result["rss_mb"]] == [{"warm", "end"}] * 2
