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

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _stopped(signum, _frame) -> None:
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
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main()


if __name__ == "__main__":
    main()
