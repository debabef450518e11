"""An app process killed mid-study (SIGKILL: no clean-up, no flush) loses nothing it had
acknowledged: every answer reported as saved is in the database, with its latest value."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from sqlmodel import select

from annotate.engine import get_engine
from annotate.store.db import session
from annotate.store.models import Annotation
from tests.scale_helpers import make_study

ROOT = Path(__file__).resolve().parents[1]


def test_killed_process_loses_no_acknowledged_answer(db_url, tmp_path):
    engine = get_engine(db_url)
    _, annotators = make_study(engine, tmp_path, n_pairs=200, n_annotators=4, overlap=2)
    code = textwrap.dedent(
        f"""
        import sys
        import threading
        from annotate.engine import get_engine
        from tests.scale_helpers import run_annotators

        lock = threading.Lock()

        def acknowledge(annotator_id, pair_id, answer):
            # written only after submit_answer returned, i.e. after the commit
            line = f"ack {{pair_id}} {{annotator_id}} {{answer.preference}} {{answer.comment}}\\n"
            with lock:
                sys.stdout.write(line)
                sys.stdout.flush()

        run_annotators(get_engine({db_url!r}), {annotators!r}, seed=9, on_commit=acknowledge)
        print("finished", flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged: dict[tuple[int, int], tuple[str, str]] = {}
    for line in proc.stdout:
        assert line != "finished\n", "the study finished before the kill: make it bigger"
        assert line.startswith("ack "), line
        _, pair_id, annotator_id, preference, comment = line.rstrip("\n").split(" ", 4)
        acknowledged[(int(pair_id), int(annotator_id))] = (preference, comment)
        if len(acknowledged) >= 60:
            proc.send_signal(signal.SIGKILL)  # mid-study, with other submits in flight
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    with session(engine) as s:
        stored = {
            (p, a): (pref, comment)
            for p, a, pref, comment in s.exec(
                select(
                    Annotation.pair_id,
                    Annotation.annotator_id,
                    Annotation.preference,
                    Annotation.comment,
                )
            ).all()
        }
    missing = {k: v for k, v in acknowledged.items() if k not in stored}
    assert not missing, f"acknowledged answers lost by the kill: {missing}"
    changed = {k: v for k, v in acknowledged.items() if stored[k] != v}
    # an answer re-submitted after its first acknowledgement may be newer than what we read;
    # it must then be that later version of the same annotator's answer for that pair
    for pair_id, annotator_id in changed:
        assert stored[(pair_id, annotator_id)][1].startswith(f"a{annotator_id} p{pair_id} v")
    # the database opens and is consistent after the crash
    assert len(stored) >= len(acknowledged)
