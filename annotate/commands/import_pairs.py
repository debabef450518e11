"""annotate import-pairs FILE [--study NAME] [--update] [--sample N [--sample-by NAME=FILE] [--seed N]]"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from analysis.population.sampling import FLAGGED_SHARE
from annotate.commands._common import add_study_option, engine_from
from annotate.errors import UserError, quoted

NAME = "import-pairs"
ORDER = 10
HELP = (
    "Import pairs (JSON Lines, JSON array or Parquet) into a study, all or nothing; "
    "re-importing the same file changes nothing. With --sample N the whole file is the "
    "study's population and only N pairs are queued for labelling."
)


# "percent", not "%": argparse %-formats a help text, which a literal "%" must escape as "%%",
# and the escape was printed as it stood where the text was shown unformatted
PERCENT_FLAGGED = f"{FLAGGED_SHARE * 100:.0f}"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _judge_spec(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=FILE, got {quoted(text)}")
    return name.strip(), path.strip()


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="pairs file: .jsonl, .json or .parquet")
    add_study_option(parser)
    parser.add_argument(
        "--update", action="store_true", help="replace pairs whose id exists with changed content"
    )
    sample = parser.add_argument_group(
        "sampling (validate a whole benchmark from a sample; README: For benchmark builders)"
    )
    sample.add_argument(
        "--sample",
        type=_positive_int,
        metavar="N",
        help="queue only N pairs for labelling, the rest stay unlabelled: a uniform random "
        "sample, or with --sample-by a judge-guided one; each pair's inclusion probability is "
        "stored for the report's benchmark-wide estimates",
    )
    sample.add_argument(
        "--sample-by",
        type=_judge_spec,
        metavar="NAME=FILE",
        help="a judge's output on every pair (a --model file: pairwise judgements, scores or "
        "preferences): every pair it flags (prefers rejected, ties or fails to parse) is "
        f"queued, up to {PERCENT_FLAGGED} percent of N (a random {PERCENT_FLAGGED} percent of N when it "
        "flags more), and a uniform random sample of the other pairs fills the rest",
    )
    sample.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="the draw's seed (default 0): the same seed and pairs draw the same sample",
    )


def _judge_flags(name: str, path: str) -> Callable[[list[str]], list[bool]]:
    """ids -> flags: the judge's file read and checked against the study's pairs."""
    from analysis.judges.files import CHOSEN, ModelFileError, read_model_file
    from annotate.errors import InputError

    def flags(ids: list[str]) -> list[bool]:
        try:
            model = read_model_file(path, name=name, known_ids=set(ids), required_ids=set(ids))
        except ModelFileError as exc:
            raise InputError(f"--sample-by {exc.source}", exc.problems) from None
        picks = dict(zip(model.pair_id.tolist(), model.pick.tolist(), strict=True))
        return [picks[i] != CHOSEN for i in ids]

    return flags


def run(args: argparse.Namespace) -> int:
    from annotate.studies.pair_import import SampleRequest, import_pairs

    if args.sample is None and args.sample_by is not None:
        raise UserError("--sample-by needs --sample N (how many pairs to queue)")
    request = None
    if args.sample is not None:
        judge = args.sample_by
        request = SampleRequest(
            size=args.sample,
            seed=args.seed,
            flags=None if judge is None else _judge_flags(*judge),
            judge=None if judge is None else judge[0],
        )
    result = import_pairs(
        engine_from(args),
        args.file,
        study_name=args.study,
        update_existing=args.update,
        sample=request,
    )
    print(result.summary())
    return 0
