"""annotate mark-gold PAIR_ID... --study S --answer chosen|rejected|tie [--unmark]"""

from __future__ import annotations

import argparse

from analysis.vocabulary import PREFERENCES
from annotate.commands._common import add_study_option, engine_from

NAME = "mark-gold"
ORDER = 17
HELP = (
    "Mark pairs as gold checks with their expected answer (--unmark takes the mark off): the "
    "same rule as the console's Gold page."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pair_ids", nargs="+", metavar="PAIR_ID", help="pair ids of the study")
    add_study_option(parser)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--answer",
        choices=PREFERENCES,
        help="the answer a careful annotator gives for each of these pairs",
    )
    what.add_argument("--unmark", action="store_true", help="take the gold mark off")


def run(args: argparse.Namespace) -> int:
    from annotate.queue.gold import set_gold
    from annotate.store.db import read
    from annotate.store.models import id_of
    from annotate.studies.catalog import get_study

    engine = engine_from(args)
    study_id = read(engine, lambda s: id_of(get_study(s, args.study)))
    answer = None if args.unmark else args.answer
    changed = set_gold(engine, study_id=study_id, pair_keys=args.pair_ids, answer=answer)
    if answer is None:
        print(f"{changed} pair(s) of study {args.study!r} are no longer gold checks")
    else:
        print(f"{changed} pair(s) of study {args.study!r} marked as gold, expected {answer!r}")
    return 0
