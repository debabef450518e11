"""The type checks' configuration (pyproject.toml's [tool.mypy]): every line ignore is listed
there with its reason, every benchmark script is checked, and a type error planted in a web
view fails the check that CI runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IGNORE = re.compile(r"#\s*type:\s*ignore\[([^\]]+)\]")
LISTED = re.compile(r"^#\s+(\S+\.py) ([a-z-]+): ", re.M)


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def line_ignores(root: Path) -> Counter[tuple[str, str]]:
    """(file, error code) of every line ignore (type, colon, ignore, [codes]) in the checked
    code, counted."""
    found: Counter[tuple[str, str]] = Counter()
    for folder in ("annotate", "analysis", "tests", "benchmarks"):
        for path in (root / folder).rglob("*.py"):
            relative = path.relative_to(root).as_posix()
            for codes in IGNORE.findall(path.read_text(encoding="utf-8")):
                found.update((relative, code.strip()) for code in codes.split(","))
    return found


def test_every_line_ignore_is_listed_with_its_reason() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    listed = Counter(LISTED.findall(section))
    assert line_ignores(ROOT) == listed
    bare = [
        path.relative_to(ROOT).as_posix()
        for folder in ("annotate", "analysis", "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"#\s*type:\s*ignore(?!\[)", path.read_text(encoding="utf-8"))
    ]
    assert bare == []  # an ignore names its error code


def test_the_app_is_strict_and_every_benchmark_is_checked() -> None:
    config = _config()
    assert config["strict"] is True
    assert set(config["files"]) == {"annotate", "analysis", "tests", "benchmarks"}
    [relaxed] = [o for o in config["overrides"] if "tests.*" in o["module"]]
    scripts = {path.stem for path in (ROOT / "benchmarks").glob("*.py")}
    assert scripts <= set(relaxed["module"])  # at the default level, not left out
    assert not any(m.startswith(("annotate", "analysis")) for m in relaxed["module"])


# An annotator id that may be None (an unsaved account's) passed where the queue needs one:
# the kind of mistake the strict check exists for.
PLANTED = """

def _planted(user: Annotator) -> None:
    previous_pair(engine(), annotator_id=user.id, before=None)
"""


@pytest.mark.slow
def test_a_type_error_planted_in_a_web_view_fails_the_check(tmp_path: Path) -> None:
    """`mypy` (the command .ci/run runs, with pyproject.toml's configuration) on a copy of the
    app: clean, then failing on one type error planted in the labelling page."""
    for folder in ("annotate", "analysis"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if (ROOT / ".mypy_cache").is_dir():  # a warm cache: the copy is checked incrementally
        shutil.copytree(ROOT / ".mypy_cache", tmp_path / ".mypy_cache")
    command = [sys.executable, "-m", "mypy", "annotate", "analysis"]

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False
        )

    clean = check()
    assert clean.returncode == 0, clean.stdout
    view = tmp_path / "annotate" / "web" / "views" / "label.py"
    view.write_text(view.read_text(encoding="utf-8") + PLANTED, encoding="utf-8")
    planted = check()
    assert planted.returncode == 1
    errors = [line for line in planted.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith("annotate/web/views/label.py:"), errors
    assert '"annotator_id"' in errors[0] and '"int | None"' in errors[0]
