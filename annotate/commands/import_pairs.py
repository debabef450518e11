"""annotate import-pairs FILE [--study NAME] [--update]"""

from __future__ import annotations

import argparse

from annotate.commands._common import add_study_option, engine_from
from annotate.importer import import_pairs

NAME = "import-pairs"
ORDER = 10
HELP = (
    "Import pairs (JSON Lines, JSON array or Parquet) into a study, all or nothing; "
    "re-importing the same file changes nothing."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="pairs file: .jsonl, .json or .parquet")
    add_study_option(parser)
    parser.add_argument(
        "--update", action="store_true", help="replace pairs whose id exists with changed content"
    )


def run(args: argparse.Namespace) -> int:
    result = import_pairs(
        engine_from(args), args.file, study_name=args.study, update_existing=args.update
    )
    print(result.summary())
    return 0
