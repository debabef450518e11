"""annotate report --out DIR (--db URL [--study NAME] | --annotations FILE --pairs FILE)"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from annotate.commands._common import add_study_option
from annotate.errors import UserError

NAME = "report"
ORDER = 60
HELP = (
    "Compute the agreement and pair-validation report (report.json, report.html, pairs.csv, "
    "annotators.csv, summary.md) from the database or from files."
)


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the report")
    parser.add_argument(
        "--annotations", metavar="FILE", help="annotations file (.csv, .jsonl, .parquet)"
    )
    parser.add_argument("--pairs", metavar="FILE", help="pairs file (.jsonl, .json, .parquet)")
    add_study_option(parser)
    parser.add_argument(
        "--bootstrap",
        type=_non_negative_int,
        default=1000,
        metavar="N",
        help="bootstrap resamples of pairs (default 1000; 0 = no intervals)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)"
    )
    parser.add_argument(
        "--min-annotations",
        type=_non_negative_int,
        default=2,
        metavar="N",
        help="annotations a pair needs for a verdict (default 2)",
    )
    parser.add_argument(
        "--quality-threshold",
        type=float,
        default=3.0,
        metavar="X",
        help="lowest acceptable mean quality rating (default 3)",
    )
    parser.add_argument(
        "--pair-gap",
        type=float,
        default=1.0,
        metavar="X",
        help="largest acceptable quality advantage of chosen over rejected (default 1.0)",
    )
    parser.add_argument(
        "--equivalence-margin",
        type=_positive_float,
        default=0.5,
        metavar="X",
        help="TOST margin for equal quality (default 0.5)",
    )
    parser.add_argument(
        "--export-valid",
        metavar="FILE",
        help="write the pairs whose verdict is valid here, in the pairs format",
    )


def _from_files(args) -> tuple[pd.DataFrame, pd.DataFrame, tuple[int, int]]:
    from analysis.tables import DEFAULT_SCALE, load_annotations
    from annotate.pairs_io import read_pairs

    pairs = read_pairs(args.pairs)
    frame = pd.DataFrame(
        {
            "pair_id": [p.key for p in pairs],
            "category": [p.category for p in pairs],
            "is_gold": False,
            "record": [p.as_record() for p in pairs],
        }
    )
    annotations = load_annotations(
        args.annotations, scale=DEFAULT_SCALE, pair_ids=set(frame["pair_id"])
    )
    return annotations, frame, DEFAULT_SCALE


def _from_database(args) -> tuple[pd.DataFrame, pd.DataFrame, tuple[int, int]]:
    from annotate.db import get_engine
    from annotate.study_report import study_tables

    # One snapshot; full pair content (about 100 KB a pair) only for --export-valid.
    data = study_tables(get_engine(args.db), study=args.study, content=bool(args.export_valid))
    return data.annotations, data.pairs, data.scale


def run(args: argparse.Namespace) -> int:
    from analysis.report import build_report, write_report
    from annotate.pairs_io import write_pairs
    from annotate.study_report import report_options

    if bool(args.annotations) != bool(args.pairs):
        raise UserError(
            "give both --annotations FILE and --pairs FILE, or neither (to use the database)"
        )
    if args.annotations:
        annotations, pairs, scale = _from_files(args)
    else:
        annotations, pairs, scale = _from_database(args)
    options = report_options(
        scale,
        bootstrap=args.bootstrap,
        seed=args.seed,
        min_annotations=args.min_annotations,
        quality_threshold=args.quality_threshold,
        pair_gap=args.pair_gap,
        equivalence_margin=args.equivalence_margin,
    )
    report = build_report(annotations, pairs, options=options)
    export = Path(args.export_valid) if args.export_valid else None
    paths = write_report(
        report, args.out, pairs=pairs, export_valid=export, write_pairs=write_pairs
    )
    counts = report["counts"]
    verdicts = report["verdicts"]
    print(
        f"report on {counts['pairs']:,} pairs, {counts['annotators']:,} annotators, "
        f"{counts['annotations']:,} annotations written to {Path(args.out)}/ "
        f"({verdicts['valid']:,} valid pairs"
        + (f", written to {paths['valid']}" if export else "")
        + "); personal preference the main factor: "
        + ("yes" if report["conclusion"]["personal_preference_main_factor"] else "no")
    )
    return 0
