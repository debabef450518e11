"""A short run of the crowd benchmark (benchmarks/bench_crowd.py): simulated annotators on two
real `annotate serve` replicas, over Streamlit's websocket, drafts and Submits; the JSON line has
every key and the database ends exact; a short long day (nginx in front, a replica killed twice,
a PostgreSQL cluster of the test's own restarted, a tenth of the crowd vanishing mid-pair) ends
exact too. The ten-minute runs are benchmarks, not tests."""

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


def _run(*args: str, timeout: float = 300) -> dict:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout
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


def test_a_short_long_day_keeps_every_answer_through_the_faults():
    # 40 annotators at a 10 s pace for 2.5 minutes through the documented nginx: both replicas
    # killed (SIGKILL) and started again once each, the benchmark's own PostgreSQL cluster
    # restarted once (down 5 s), 4 annotators vanishing mid-pair without a close. The hold of
    # a silent page is 20 s here (60 s by default), so that a vanished pair is free well within
    # the run.
    from tests.nginx import require_nginx
    from tests.private_postgres import postgres_bin

    require_nginx()
    if postgres_bin() is None:
        pytest.skip("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
    result = _run(
        "--faults", "--annotators", "40", "--minutes", "2.5", "--pace", "10",
        "--replicas", "2", "--private-postgres", "--posts", "30", "--calibrate", "3",
        "--ramp", "10", "--replica-kills", "2", "--db-restarts", "1", "--db-down", "5",
        "--vanish", "0.1", "--gone-hold", "20",
        timeout=600,
    )  # fmt: skip
    assert tuple(result) == KEYS
    assert result["faults"] == {"replica_kills": 2, "db_restarts": 1, "vanished": 4}
    assert result["errors"] == 0
    assert (result["lost"], result["duplicated"], result["over_target"]) == (0, 0, 0)
    assert result["stayed_idle"] == 0  # every annotator who stayed got pages after the faults
    assert result["submits"] >= 100
    # every vanished annotator's pair was free for others within two minutes (20 s hold here,
    # polled every 2 s)
    assert result["vanished_pair_release_s_max"] is not None
    assert result["vanished_pair_release_s_max"] < 120
    # no annotator who stayed waited long outside the faults (a generous bound: shared cores)
    assert result["longest_stall_s"] < 30
    assert result["server_cpu_s"] > 0 and result["db_cpu_s"] > 0 and result["client_cpu_s"] > 0
