"""Rules with one home: the NUL-character rule (annotate/store/text.py) and UTC
(annotate/store/clock.py). Found by reading the code, so a copy added anywhere fails here."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from annotate.store.clock import as_utc, naive_utc
from annotate.store.text import nul_problem, visible_nul

ROOT = Path(__file__).resolve().parents[1]
HOMES = {"annotate/store/text.py", "annotate/store/clock.py"}


def _app_modules():
    for path in sorted((ROOT / "annotate").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name not in HOMES and "/migrations/" not in name:
            yield name, ast.parse(path.read_text(encoding="utf-8"))


def test_only_the_text_module_looks_for_nul_characters():
    copies = [
        f"{name}:{node.lineno}"
        for name, tree in _app_modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\x00" in node.value
    ]
    assert copies == []


def test_only_the_clock_module_normalises_time_zones():
    copies = [
        f"{name}:{node.lineno}"
        for name, tree in _app_modules()
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr in ("tzinfo", "astimezone"))
        or (isinstance(node, ast.keyword) and node.arg == "tzinfo")
    ]
    assert copies == []


def test_the_nul_rule():
    assert nul_problem("a\x00b", where="field 'question'") == (
        "field 'question' contains a NUL character (U+0000), which cannot be stored"
    )
    assert nul_problem("ab", where="x") is None
    assert nul_problem(3, where="x") is None
    assert visible_nul("a\x00b") == "a\ufffdb"


def test_times_are_read_as_utc_and_written_as_naive_utc():
    paris = timezone(timedelta(hours=1))
    assert as_utc("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert as_utc(datetime(2026, 1, 2, 4, 4, tzinfo=paris)) == datetime(
        2026, 1, 2, 3, 4, tzinfo=UTC
    )
    assert as_utc(datetime(2026, 1, 2, 4, 4, tzinfo=paris)).tzinfo is UTC
    assert as_utc(None) is None
    assert naive_utc(datetime(2026, 1, 2, 4, 4, tzinfo=paris)) == datetime(2026, 1, 2, 3, 4)
    assert naive_utc(datetime(2026, 1, 2, 3, 4)) == datetime(2026, 1, 2, 3, 4)


def test_streamlit_settings_are_written_only_by_annotate_serve():
    """`annotate serve` passes the app's settings as flags (STREAMLIT_FLAGS); a config.toml in
    the repository repeating them would be a second copy that drifts (and applies only when
    the server starts from the repository's root)."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files", "*.toml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert [name for name in tracked if name.endswith(".streamlit/config.toml")] == []
