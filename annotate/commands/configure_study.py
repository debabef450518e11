"""annotate configure-study NAME [options]: set a study's options, creating it if missing.

The same rules as the console's Studies page (annotate/studies/catalog.py): values are checked, and
the options that define what an answer means (ties, scale, dimensions, reasons, the aspect
check) are refused once the study has answers. Options not given stay as they are.
"""

from __future__ import annotations

import argparse
from typing import Any

from analysis.design.adaptive_bounds import ADAPTIVE_BOUNDS, adaptive_range_problem

NAME = "configure-study"
ORDER = 15
HELP = (
    "Set a study's options (created if missing) with the console's checks and locks, and "
    "print them."
)

# command-line option -> Study column
_COLUMNS = {
    "overlap": "overlap_target",
    "ties": "allow_ties",
    "prolific": "allow_prolific",
    "completion_code": "prolific_completion_code",
    "screened_out_code": "prolific_screened_out_code",
    "prolific_study_id": "prolific_study_id",
    "reservation_timeout": "reservation_timeout",
    "aspect_check": "aspect_check",
    "pairs_per_annotator": "items_per_annotator",
    "qualification_gold": "qualification_gold",
    "agreement_sample": "agreement_sample",
    "agreement_overlap": "agreement_overlap",
}
_NOT_ADAPTIVE = (None, None)


def min_max(text: str) -> tuple[int, int]:
    """MIN-MAX, e.g. 2-5, within the stopping rule's bounds (also `annotate plan --adaptive`)."""
    low, dash, high = text.partition("-")
    try:
        if not dash:
            raise ValueError
        low_n, high_n = int(low), int(high)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN-MAX, e.g. 2-5") from None
    problem = adaptive_range_problem(low_n, high_n)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return low_n, high_n


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a share of pairs is between 0 and 1")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the study's name (created if missing)")
    parser.add_argument(
        "--overlap", type=_int, metavar="N", help="annotations wanted per pair (at least 1)"
    )
    adaptive = parser.add_mutually_exclusive_group()
    adaptive.add_argument(
        "--adaptive",
        type=min_max,
        metavar="MIN-MAX",
        help="adaptive overlap: each pair gets at least MIN annotations and more, up to MAX, "
        f"while its answers leave it undecided ({ADAPTIVE_BOUNDS})",
    )
    adaptive.add_argument(
        "--no-adaptive",
        dest="adaptive",
        action="store_const",
        const=_NOT_ADAPTIVE,
        help="back to the fixed --overlap for every pair",
    )
    parser.add_argument(
        "--agreement-sample",
        type=_fraction,
        metavar="FRACTION",
        help="adaptive studies: the keyed random share of pairs that always gets exactly "
        "--agreement-overlap annotations; agreement statistics use these pairs (default 0.2; "
        "locked once there are answers)",
    )
    parser.add_argument(
        "--agreement-overlap",
        type=_int,
        metavar="K",
        help="annotations of each agreement-sample pair (default 3; locked once there are answers)",
    )
    parser.add_argument(
        "--ties",
        action=argparse.BooleanOptionalAction,
        help="offer 'no preference' (locked once the study has answers)",
    )
    parser.add_argument(
        "--aspect-check",
        action=argparse.BooleanOptionalAction,
        help="ask a 0-2 score per rubric aspect and response (locked once there are answers)",
    )
    parser.add_argument(
        "--reservation-timeout",
        type=_int,
        metavar="SECONDS",
        help="how long a shown pair stays reserved for an annotator who does not answer it",
    )
    parser.add_argument(
        "--pairs-per-annotator",
        type=_int,
        metavar="N",
        help="most pairs one annotator labels (0 = no limit)",
    )
    parser.add_argument(
        "--qualification-gold",
        type=_int,
        metavar="N",
        help="gold checks to pass before real pairs (0 = none)",
    )
    parser.add_argument(
        "--prolific",
        action=argparse.BooleanOptionalAction,
        help="accept Prolific participants (/?PROLIFIC_PID=...)",
    )
    parser.add_argument("--prolific-study-id", metavar="ID", help="Prolific's STUDY_ID ('' = any)")
    parser.add_argument(
        "--completion-code",
        metavar="CODE",
        help="the Prolific completion code shown when a participant is done ('' = none)",
    )
    parser.add_argument(
        "--screened-out-code",
        metavar="CODE",
        help=(
            "Prolific's 'screened out' code, shown instead of the completion code to a "
            "participant who failed the qualification ('' = none: such a participant gets no "
            "code)"
        ),
    )


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The Study columns the command line sets (those given)."""
    options = {
        column: getattr(args, option)
        for option, column in _COLUMNS.items()
        if getattr(args, option) is not None
    }
    if options.get("items_per_annotator") == 0:
        options["items_per_annotator"] = None
    if args.adaptive is not None:
        options["adaptive_min"], options["adaptive_max"] = args.adaptive
    return options


def run(args: argparse.Namespace) -> int:
    from annotate.commands._common import engine_from
    from annotate.studies.catalog import configure_study, option_lines

    study, created = configure_study(engine_from(args), args.name, **options_from(args))
    print(f"study {study.name!r} {'created' if created else 'updated'}; its options:")
    width = max(len(key) for key, _ in option_lines(study))
    for key, value in option_lines(study):
        print(f"  {key:<{width}}  {value}")
    return 0
