"""Running the `annotate` command line in a child process, as a user's shell would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_annotate(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m annotate.cli ARGS` in `cwd`: its exit code, stdout and stderr as text."""
    return subprocess.run(
        [sys.executable, "-m", "annotate.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
