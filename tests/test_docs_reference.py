"""The reference in docs/reference/ says what the code does: the command-line page is the one
the argument parser generates (`python -m tests.cli_reference` rewrites it), every option is on
it, every key of report.json's declared shape is on the report-keys page, the example files
import and report, and nothing in the repository points at a document users do not have."""

from __future__ import annotations

import json
import re
import subprocess
import typing
from pathlib import Path

import pytest

from analysis.report import shape
from annotate.cli import build_parser, main
from tests.cli_reference import PAGE, page, subcommands

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
EXAMPLES = REFERENCE / "examples"


def test_the_command_line_page_is_the_generated_one():
    assert PAGE.read_text(encoding="utf-8") == page(), (
        "docs/reference/command-line.md is stale: run python -m tests.cli_reference"
    )


def test_every_command_and_option_is_in_the_reference():
    text = PAGE.read_text(encoding="utf-8")
    parser = build_parser([])
    missing = []
    for name, command in {"": parser, **subcommands(parser)}.items():
        if name and f"## `annotate {name}`" not in text:
            missing.append(f"annotate {name}")
        heading = f"## `annotate {name}`" if name else "## `annotate`"
        section = text.split(heading, 1)[-1].split("\n## ", 1)[0]
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and f"`{option}`" not in section:
                    missing.append(f"annotate {name} {option}")
    assert missing == []


def _typeddicts() -> list[type]:
    return [
        value
        for value in vars(shape).values()
        if isinstance(value, type)
        and typing.is_typeddict(value)
        and value.__module__ == shape.__name__
    ]


def test_every_key_of_the_reports_shape_is_documented():
    text = (REFERENCE / "report-keys.md").read_text(encoding="utf-8")
    top_level = text.split("## Top-level keys", 1)[1].split("\n## ", 1)[0]
    assert {"Report", "Counts", "Population", "Design"} <= {t.__name__ for t in _typeddicts()}
    missing = []
    for typed in _typeddicts():
        for key in typing.get_type_hints(typed):
            if not re.search(rf"\b{re.escape(key)}\b", text):
                missing.append(f"{typed.__name__}.{key}")
    missing += [
        f"top-level {key}"
        for key in typing.get_type_hints(shape.Report)
        if f"| `{key}` |" not in top_level
    ]
    assert missing == []


def test_the_example_files_import_and_report(tmp_path, capsys):
    db = ["--db", f"sqlite:///{tmp_path / 'example.db'}"]
    assert main([*db, "import-pairs", str(EXAMPLES / "pairs.jsonl"), "--study", "ex"]) == 0
    assert main([*db, "configure-study", "ex", "--aspect-check"]) == 0
    annotations = str(EXAMPLES / "annotations.csv")
    assert main([*db, "import-annotations", annotations, "--study", "ex"]) == 0
    assert "4 new" in capsys.readouterr().out
    out = tmp_path / "report"
    arguments = [
        "report",
        "--annotations",
        annotations,
        "--pairs",
        str(EXAMPLES / "pairs.jsonl"),
        "--out",
        str(out),
        "--bootstrap",
        "20",
        "--model",
        f"judge={EXAMPLES / 'model.jsonl'}",
        "--aspect-scores",
        str(EXAMPLES / "aspect-scores.jsonl"),
    ]
    assert main(arguments) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["counts"]["annotations"] == 4
    assert [model["name"] for model in report["models"]] == ["judge"]
    assert report["aspects"]["scorer"]["n"] == 2


@pytest.mark.parametrize("phrase", ["contract section", "contracts section"])
def test_no_file_in_the_repository_points_at_a_missing_document(phrase):
    found = subprocess.run(
        ["git", "grep", "-n", "-i", phrase],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    assert [line for line in found if not line.startswith("tests/test_docs_reference.py")] == []


def test_the_documentation_cites_the_reference_by_page():
    documents = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    citing = [
        str(path.relative_to(ROOT))
        for path in documents
        if "_build" not in path.parts
        and re.search(r"\bcontracts?\b", path.read_text(encoding="utf-8"), flags=re.I)
    ]
    assert citing == []
