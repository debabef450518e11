"""annotate report --out DIR (--db URL [--study NAME] | --annotations FILE --pairs FILE)"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.verdicts.conclusion import LABEL_THRESHOLD, MIN_RATED_PAIRS, MIN_REASONS
from analysis.vocabulary import DIMENSIONS
from annotate.commands._common import (
    Arguments,
    add_study_option,
    non_negative_int,
    output_file,
    output_folder,
)
from annotate.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from analysis.judges.files import ModelJudgements
    from analysis.report.build import ReportOptions
    from analysis.report.shape import Report
    from analysis.verdicts.shipping import Shipment
    from annotate.results.study_report import StudyData

NAME = "report"
ORDER = 60
HELP = (
    "Compute the agreement and pair-validation report (report.json, report.html, pairs.csv, "
    "annotators.csv, summary.md; models.csv with --model) from the database or from files."
)


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("must be at least 0 and below 1")
    return value


def _dimensions(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in DIMENSIONS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown dimension(s) {', '.join(unknown)}; known: {', '.join(DIMENSIONS)}"
        )
    return names


# Options `annotate plan` takes as the report does (same names, types, defaults and help), each
# added to a parser or an argument group


def add_min_annotations(group: Arguments) -> None:
    group.add_argument(
        "--min-annotations",
        type=non_negative_int,
        default=2,
        metavar="N",
        help="annotations a pair needs for a verdict (default 2)",
    )


def add_equivalence_margin(group: Arguments) -> None:
    group.add_argument(
        "--equivalence-margin",
        type=_positive_float,
        default=None,
        metavar="X",
        help="TOST margin for equal quality, in scale points (default 0.5 on a 1-5 scale, "
        "the same share of the range on other scales: 0.75 on 1-7)",
    )


def add_conclusion_checks(group: Arguments) -> None:
    """The conclusion checks' thresholds."""
    group.add_argument(
        "--label-threshold",
        type=_share,
        default=LABEL_THRESHOLD,
        metavar="X",
        help=f"the lower 95%% bound of the share of pairs whose majority picks chosen must "
        f"exceed this (default {LABEL_THRESHOLD}: confirmed pairs outnumber flipped or split "
        "ones 3 to 2)",
    )
    group.add_argument(
        "--min-rated-pairs",
        type=non_negative_int,
        default=MIN_RATED_PAIRS,
        metavar="N",
        help=f"pairs rated on both responses each asked dimension needs (default "
        f"{MIN_RATED_PAIRS}, from where the TOST's t test is trustworthy)",
    )
    group.add_argument(
        "--min-reasons",
        type=non_negative_int,
        default=MIN_REASONS,
        metavar="N",
        help=f"stated main reasons the reason check needs (default {MIN_REASONS})",
    )


def add_no_ties(group: Arguments) -> None:
    group.add_argument(
        "--no-ties",
        action="store_true",
        help="the study did not offer a tie: chance-corrected statistics use two categories",
    )


def add_dimensions(group: Arguments) -> None:
    group.add_argument(
        "--dimensions",
        type=_dimensions,
        default=None,
        metavar="LIST",
        help="comma-separated quality dimensions the study asked (default: every dimension "
        f"with columns in the file; known: {', '.join(DIMENSIONS)})",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder for the report's files (created if missing, inside an existing folder)",
    )
    parser.add_argument(
        "--annotations", metavar="FILE", help="annotations file (.csv, .jsonl, .parquet)"
    )
    parser.add_argument("--pairs", metavar="FILE", help="pairs file (.jsonl, .json, .parquet)")
    add_study_option(parser)
    parser.add_argument(
        "--bootstrap",
        type=non_negative_int,
        default=1000,
        metavar="N",
        help="bootstrap resamples of pairs (default 1000; 0 = no intervals)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)"
    )
    add_min_annotations(parser)
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
    add_equivalence_margin(parser)
    checks = parser.add_argument_group(
        "conclusion checks", "thresholds of the checks behind the conclusion (README: Report)"
    )
    add_conclusion_checks(checks)
    design = parser.add_argument_group(
        "study design (files only; from the database the study's settings are used)"
    )
    add_no_ties(design)
    add_dimensions(design)
    parser.add_argument(
        "--aspect-scores",
        metavar="FILE",
        help="an automatic scorer's aspect scores (.jsonl, .csv, .parquet: id, response, "
        "scores) to compare with the annotators' (studies with the aspect check)",
    )
    parser.add_argument(
        "--aspect-gap",
        type=_positive_float,
        default=0.5,
        metavar="X",
        help="aspect check: how much better (0-2 match-score points, mean over aspects) the "
        "chosen response must cover the rubric for its pair not to be rubric_not_reflected "
        "(default 0.5)",
    )
    parser.add_argument(
        "--version",
        choices=("latest", "all"),
        default="latest",
        help="which versions of a revised pair count (import-pairs --update or a review "
        "revision): latest (default; answers to earlier versions are kept but not counted) or "
        "all (every version together, each annotator once per pair)",
    )
    parser.add_argument(
        "--export-valid",
        metavar="FILE",
        help="write the pairs whose verdict is valid here, in the pairs format; a reviewer's "
        "keep or drop overrides the verdict; prints what was written and dropped, by reason",
    )
    parser.add_argument(
        "--export-cleaned",
        metavar="FILE",
        help="sampled studies (import-pairs --sample): write what ships, the whole population "
        "minus the pairs whose answers show them not valid (pairs never sampled or not "
        "labelled yet are kept; a reviewer's keep or drop overrides the verdict), in the pairs "
        "format; the report's population key estimates the not-valid pairs left",
    )
    parser.add_argument(
        "--max-bad-share",
        type=_bad_share,
        metavar="X",
        help="with --export-valid or --export-cleaned: leave out the pairs least likely to be "
        "valid (the model of annotation's probabilities) until the expected share of not-valid "
        "pairs among those written is at most X (0 to 1); both print the expected good pairs "
        "dropped and bad pairs kept",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        type=_model_spec,
        metavar="NAME=FILE",
        help=(
            "compare a reward model or judge with the humans (repeatable): its judgements or "
            "scores as JSON Lines, CSV or Parquet (pairwise: id, prediction, pos_in_a or "
            "correct_answer, optional parse_failed; pointwise: id, label, score; or pair_id "
            "with score_chosen and score_rejected, or with preference); adds models.csv"
        ),
    )


def _bad_share(text: str) -> float:
    """A share from 0 to 1 (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {text!r}")
    return value


def _with_models(
    report: Report, models: list[ModelJudgements], *, options: ReportOptions
) -> Report:
    """The report with its models section (the files checked by _read_models)."""
    from analysis.judges.accuracy import with_models

    return with_models(
        report,
        models,
        min_annotations=options.min_annotations,
        bootstrap=options.bootstrap,
        seed=options.seed,
    )


def _with_population(
    report: Report, pairs: pd.DataFrame, models: list[ModelJudgements], *, cleaned: str | None
) -> Report:
    """A sampled study's report with its population key (docs/reference/report-keys.md)."""
    from analysis.population.estimates import is_sampled, with_population

    if not is_sampled(pairs):
        if cleaned:
            raise UserError(
                "--export-cleaned needs a sampled study (annotate import-pairs --sample N); "
                "this one has no sample design (use --export-valid)"
            )
        return report
    return with_population(report, pairs, models)


def _write_shipment(shipment: Shipment, pairs: pd.DataFrame, path: Path) -> int:
    """The shipment's pairs (analysis.verdicts.shipping), every original field, in the pairs
    format."""
    from annotate.studies.pairs_files import write_pairs

    if "record" not in pairs:
        raise UserError("the exports need the pairs (their original records)")
    chosen = pairs["pair_id"].astype(str).isin(set(shipment.written)).to_numpy()
    return write_pairs(pairs.loc[chosen, "record"].tolist(), path)


def _model_spec(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=FILE, got {text!r}")
    return name.strip(), path.strip()


def _read_models(specs: list[tuple[str, str]], pairs: pd.DataFrame) -> list[ModelJudgements]:
    """Every --model file validated against the report's pairs before anything is written;
    the problems of all files are listed together."""
    from analysis.judges.files import ModelFileError, read_model_file
    from annotate.errors import InputError

    names = [name for name, _ in specs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserError(f"--model names must differ; given more than once: {', '.join(repeated)}")
    ids = pairs["pair_id"].astype(str)
    gold = pairs["is_gold"].astype(bool) if "is_gold" in pairs else False
    known, required = set(ids), set(ids[~gold])
    models, failures = [], []
    for name, path in specs:
        try:
            models.append(read_model_file(path, name=name, known_ids=known, required_ids=required))
        except ModelFileError as exc:
            failures.append(exc)
    if len(failures) == 1:
        raise InputError(f"--model {failures[0].source}", failures[0].problems)
    if failures:
        problems = [f"{exc.source}: {problem}" for exc in failures for problem in exc.problems]
        raise InputError("--model files", problems)
    return models


def _from_files(
    args: argparse.Namespace,
) -> tuple[pd.DataFrame, pd.DataFrame, tuple[int, int], dict[str, Any]]:
    import pandas as pd
    import pyarrow as pa

    from analysis.aspects.scorer import aspect_counts
    from analysis.files.annotations_table import read_table, validate_annotations
    from analysis.vocabulary import DEFAULT_SCALE
    from annotate.studies.pairs_files import read_pairs

    pairs = read_pairs(args.pairs)
    frame = pd.DataFrame(
        {
            "pair_id": [p.key for p in pairs],
            "category": [p.category for p in pairs],
            "is_gold": False,
            "n_aspects": [len(p.rubric_aspects or []) for p in pairs],
            "record": [p.as_record() for p in pairs],
        }
    )
    raw = read_table(args.annotations)
    # The study asked the dimensions whose columns the file has (both responses).
    present = tuple(d for d in DIMENSIONS if {f"{d}_chosen", f"{d}_rejected"} <= set(raw.columns))
    annotations = validate_annotations(
        raw,
        source=str(args.annotations),
        scale=DEFAULT_SCALE,
        pair_ids=set(frame["pair_id"]),
        aspect_counts=aspect_counts(frame),
    )
    del raw
    pa.default_memory_pool().release_unused()
    if args.no_ties and (annotations["preference"] == "tie").any():
        first = int((annotations["preference"] == "tie").to_numpy().argmax()) + 1
        raise UserError(
            f"{args.annotations}: row {first}, column 'preference': 'tie' in a study without "
            "ties (--no-ties)"
        )
    design = {
        "allow_ties": not args.no_ties,
        "dimensions": args.dimensions if args.dimensions is not None else present,
    }
    return annotations, frame, DEFAULT_SCALE, design


def _from_database(args: argparse.Namespace) -> StudyData:
    from annotate.engine import get_engine
    from annotate.results.study_report import study_tables

    # One snapshot; full pair content (about 100 KB a pair) only for the exports.
    content = bool(args.export_valid or args.export_cleaned)
    return study_tables(get_engine(args.db), study=args.study, content=content)


def run(args: argparse.Namespace) -> int:
    from analysis.report.build import build_report, report_options
    from analysis.report.files import write_report

    if bool(args.annotations) != bool(args.pairs):
        raise UserError(
            "give both --annotations FILE and --pairs FILE, or neither (to use the database)"
        )
    # where it writes, checked before the work (a report can take minutes)
    out = output_folder(args.out, option="--out")
    export = output_file(args.export_valid, option="--export-valid") if args.export_valid else None
    cleaned = (
        output_file(args.export_cleaned, option="--export-cleaned") if args.export_cleaned else None
    )
    if args.max_bad_share is not None and not (export or cleaned):
        raise UserError("--max-bad-share goes with --export-valid or --export-cleaned")
    decisions = None  # review decisions: a study's, in the database
    if args.annotations:
        annotations, pairs, scale, design = _from_files(args)
        overlap = None  # a table of annotations does not record the study's overlap design
    else:
        if args.no_ties or args.dimensions is not None:
            raise UserError(
                "--no-ties and --dimensions describe a study read from files; from the "
                "database the study's own settings are used"
            )
        data = _from_database(args)
        annotations, pairs, scale, design = data.annotations, data.pairs, data.scale, data.design
        overlap, decisions = data.overlap, data.decisions
    options = report_options(
        scale,
        bootstrap=args.bootstrap,
        seed=args.seed,
        min_annotations=args.min_annotations,
        quality_threshold=args.quality_threshold,
        pair_gap=args.pair_gap,
        equivalence_margin=args.equivalence_margin,
        aspect_gap=args.aspect_gap,
        label_threshold=args.label_threshold,
        min_rated_pairs=args.min_rated_pairs,
        min_reasons=args.min_reasons,
        version=args.version,
        **design,
    )
    scorer = None
    if args.aspect_scores:
        from analysis.aspects.scorer import aspect_counts, read_scorer_file

        scorer = read_scorer_file(args.aspect_scores, aspect_counts=aspect_counts(pairs))
    from analysis.review.decisions import with_review
    from analysis.verdicts.shipping import cleaned_shipment, valid_shipment

    report = build_report(annotations, pairs, options=options, aspect_scores=scorer, design=overlap)
    report = with_review(report, decisions)
    models = _read_models(args.model, pairs) if args.model else []
    if models:
        report = _with_models(report, models, options=options)
    report = _with_population(report, pairs, models, cleaned=args.export_cleaned)
    write_report(report, out, pairs=pairs)
    exports: list[tuple[str, Shipment, Path]] = []
    if export is not None:
        exports.append(
            ("--export-valid", valid_shipment(report, max_bad_share=args.max_bad_share), export)
        )
    if cleaned is not None:
        exports.append(
            (
                "--export-cleaned",
                cleaned_shipment(report, max_bad_share=args.max_bad_share),
                cleaned,
            )
        )
    for _, shipment, path in exports:
        _write_shipment(shipment, pairs, path)
    counts = report["counts"]
    verdicts = report["verdicts"]
    print(
        f"report on {counts['pairs']:,} pairs, {counts['annotators']:,} annotators, "
        f"{counts['annotations']:,} annotations written to {out}/ "
        f"({verdicts['valid']:,} valid pairs); personal preference the main factor: "
        + ("yes" if report["conclusion"]["personal_preference_main_factor"] else "no")
        + f" ({report['conclusion']['status'].replace('_', ' ')})"
    )
    if "review" in report:
        review = report["review"]
        print(
            f"review: {review['reviewed']:,} pairs reviewed ({review['kept']:,} kept, "
            f"{review['dropped']:,} dropped, {review['revised']:,} revised; "
            f"{review['overridden']:,} against the crowd's verdict)"
        )
    for option, shipment, path in exports:
        print(shipment.summary(option=option, path=path))
    return 0
