"""annotate export [--study NAME] --out FILE"""

from __future__ import annotations

import argparse

from annotate.commands._common import add_study_option, output_file

NAME = "export"
ORDER = 50
HELP = (
    "Write a study's annotations (one row per pair and annotator) to a .csv, .jsonl or "
    ".parquet file; the format follows the suffix."
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_study_option(parser)
    parser.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="output file: .csv, .jsonl or .parquet, in an existing folder",
    )


def run(args: argparse.Namespace) -> int:
    from analysis.files.annotations_table import write_table
    from annotate.engine import get_engine
    from annotate.results.frames import annotations_frame

    out = output_file(args.out, option="--out")
    frame = annotations_frame(get_engine(args.db), study=args.study)
    write_table(frame, out)
    print(f"{len(frame):,} annotations of study {args.study!r} written to {args.out}")
    return 0
