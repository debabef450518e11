"""annotate review --study S [--export FILE | --import FILE]"""

from __future__ import annotations

import argparse

from annotate.commands._common import add_study_option, engine_from

NAME = "review"
ORDER = 65
HELP = (
    "A study's review decisions (keep, drop, revise): without options, list the pairs to look "
    "at in the order the console's Review page shows them; --export writes the decisions, "
    "--import loads decisions taken elsewhere (all or nothing)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_study_option(parser)
    files = parser.add_mutually_exclusive_group()
    files.add_argument(
        "--export",
        metavar="FILE",
        help="write each decided pair's latest decision (pair_id, pair_version, decision, "
        "category, note, reviewer, decided_at) to a .csv or .jsonl file",
    )
    files.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="load decisions in the same format (.csv or .jsonl); every row is checked and on "
        "any problem nothing is written",
    )


def _queue(args: argparse.Namespace) -> int:
    from analysis.review.queue import REASONS, reason_counts, review_queue
    from annotate.results.study_report import build_study_report

    report, _, _ = build_study_report(engine_from(args), study=args.study, bootstrap=0)
    pairs = report["pairs"]
    queue = review_queue(pairs)
    counts = reason_counts(pairs)
    shown = ", ".join(f"{n:,} {REASONS[reason]}" for reason, n in counts.items() if n)
    print(f"study {args.study!r}: {len(queue):,} pairs to review ({shown or 'none'})")
    for pair in queue:
        decided = f", decided: {pair['decision']}" if pair.get("decision") else ""
        print(
            f"  {pair['pair_id']} (version {pair['pair_version']}): {pair['verdict']}, "
            f"{pair['n_chosen']} chosen / {pair['n_rejected']} rejected / {pair['n_tie']} tie"
            f"; {', '.join(REASONS[r] for r in pair['reasons'])}{decided}"
        )
    return 0


def run(args: argparse.Namespace) -> int:
    from annotate.review.files import export_decisions, import_decisions

    if args.export:
        written = export_decisions(engine_from(args), study=args.study, path=args.export)
        print(f"{written:,} decisions of study {args.study!r} written to {args.export}")
        return 0
    if args.import_file:
        result = import_decisions(engine_from(args), study=args.study, path=args.import_file)
        print(
            f"{result.rows:,} decisions read from {args.import_file} into study "
            f"{args.study!r}: {result.added:,} recorded, {result.rows - result.added:,} "
            "already the pairs' decisions"
        )
        return 0
    return _queue(args)
