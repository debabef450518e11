""".ci/run runs the README's test command word for word, and that command type-checks with
pyproject.toml's configuration (all of annotate/ and analysis/ strictly, tests and benchmarks at
mypy's default level: tests/test_type_config.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^python3 -m venv \.venv .*&& pytest$", text, flags=re.MULTILINE)
    assert len(commands) == 1, f"expected one test command in the README, found {commands}"
    return commands[0]


def test_ci_runs_the_readme_test_command_word_for_word():
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert lines[-1] == readme_test_command()


def test_the_test_command_type_checks_with_the_configuration():
    steps = [step.strip() for step in readme_test_command().split("&&")]
    assert "mypy" in steps  # no paths or flags: [tool.mypy] says what and how strictly


def test_the_test_command_installs_the_lock_then_the_project_without_dependencies():
    """CI tests the versions users deploy (requirements.lock), not the newest allowed."""
    steps = [step.strip() for step in readme_test_command().split("&&")]
    lock = steps.index("pip install -q -r requirements.lock")
    assert steps[lock + 1] == "pip install -q --no-deps -e ."
    assert not [step for step in steps if "[test]" in step]
