"""The process of one replica: `annotate serve` checks the database and port, then replaces
itself (exec) with `python -m annotate.web.serve_process run SCRIPT FLAGS...`, which runs
Streamlit's own command line in this process. One process a replica, no wrapper holding memory.

A stop signal (SIGTERM from a service manager, Ctrl+C, SIGHUP) is a normal end: uvicorn stops
the server, frees the port and then raises the signal again against the handlers it found at
start; those are set here to end the process at once with status 0, as `annotate serve`
always did.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Streamlit polls its config.toml files (and secrets) every 0.2 s whatever
# server.fileWatcherType says: 10 checks a second, about 0.4 % of a core per idle replica and
# a tenth of a replica's CPU at 40 annotators (benchmarks/bench_crowd.py). Every 5 s is enough
# to notice an edited config file.
CONFIG_POLL_SECONDS = 5.0


def _stopped(signum: int, _frame: FrameType | None) -> None:
    # Called when the server has stopped (uvicorn raises the signal again after its
    # shutdown), or for a signal before it started: nothing is left to clean up, and
    # Streamlit's runtime threads would otherwise keep the process alive.
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def main() -> None:
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
            signal.signal(signum, _stopped)
    from streamlit.watcher import polling_path_watcher
    from streamlit.web.cli import main as streamlit_main

    if not hasattr(polling_path_watcher, "_POLLING_PERIOD_SECS"):  # moved: say so loudly
        raise SystemExit("streamlit's polling_path_watcher changed; see CONFIG_POLL_SECONDS")
    # Streamlit declares the period Final; this process sets it once, before Streamlit starts
    vars(polling_path_watcher)["_POLLING_PERIOD_SECS"] = CONFIG_POLL_SECONDS

    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main()


if __name__ == "__main__":
    main()
