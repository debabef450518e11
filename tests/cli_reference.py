"""docs/reference/command-line.md, generated from the argument parser (annotate/cli.py) so that
it cannot drift: `python -m tests.cli_reference` rewrites it; tests/test_docs_reference.py fails
while it differs from what this prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from annotate.cli import build_parser

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "command-line.md"

INTRO = """\
# Command line

Every command and option of `annotate`, generated from its argument parser. Every command has
`--help`, exits 0 on success and non-zero on failure, and prints an error as one sentence on
stderr (`--debug` shows the traceback).

The database: `--db URL` on any command that reads one, else the environment variable
`ANNOTATE_DATABASE_URL`, else the SQLite file `annotate.db` in the working directory.
PostgreSQL URLs look like `postgresql+psycopg://user@host/dbname`. `annotate serve` and
`annotate demo` create or upgrade the schema when they start and `annotate migrate` does it
explicitly; the other commands create the schema in an empty database but stop on one made by
an older release with a sentence naming `annotate migrate`.

The files the commands read and write are described in [File formats](file-formats.md), the
report's keys in [Report keys](report-keys.md).
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _name(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{s}`" for s in action.option_strings)
        if action.nargs == 0:
            return names
        metavar = action.metavar or action.dest.upper()
        return f"{names} `{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
    metavar = action.metavar or action.dest
    return f"`{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    formatter = parser._get_formatter()
    return _cell(formatter._expand_help(action))


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | meaning |", "| --- | --- |"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        rows.append(f"| {_name(action)} | {_help(parser, action)} |")
    return rows


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def page() -> str:
    parser = build_parser([])
    out = [INTRO, "## `annotate`", "", "Options given before the command.", ""]
    out += _options(parser)
    for name, command in subcommands(parser).items():
        out += ["", f"## `annotate {name}`", "", _cell(command.description or ""), ""]
        out += _options(command)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    PAGE.write_text(page(), encoding="utf-8")
    sys.exit(0)
