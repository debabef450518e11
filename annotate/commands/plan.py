"""annotate plan [options]: pairs and annotations per pair a study needs for its conclusion."""

from __future__ import annotations

import argparse

from analysis.design.adaptive_bounds import ADAPTIVE_BOUNDS
from annotate.commands._common import non_negative_int
from annotate.commands.configure_study import min_max
from annotate.commands.report import (
    add_conclusion_checks,
    add_dimensions,
    add_equivalence_margin,
    add_min_annotations,
    add_no_ties,
)
from annotate.errors import UserError

NAME = "plan"
ORDER = 65
DATABASE = False  # simulations only: no --db
HELP = (
    "Size a study before recruiting: simulate studies at stated effect sizes through the "
    "report's own conclusion and print how often its checks pass for each design."
)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("must be comma-separated whole numbers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("must be one or more whole numbers of at least 1")
    return values


def _pair_mix(text: str) -> tuple[tuple[float, float], ...]:
    try:
        mix = tuple(
            (float(share), float(rate))
            for share, rate in (item.split(":") for item in text.split(",") if item.strip())
        )
    except ValueError:
        raise argparse.ArgumentTypeError(
            "must be SHARE:RATE pairs separated by commas, e.g. 0.75:0.9,0.25:0.55"
        ) from None
    if not mix:
        raise argparse.ArgumentTypeError("must name at least one SHARE:RATE")
    return mix


def _probability(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    design = parser.add_argument_group("designs to try")
    design.add_argument(
        "--pairs",
        type=_int_list,
        default=[50, 100, 200, 400, 800],
        metavar="LIST",
        help="numbers of pairs to try (default 50,100,200,400,800)",
    )
    design.add_argument(
        "--per-pair",
        type=_int_list,
        default=[3, 5],
        metavar="LIST",
        help="annotations per pair to try (default 3,5)",
    )
    design.add_argument(
        "--annotators",
        type=int,
        default=None,
        metavar="N",
        help="size of the annotator panel (default: as many as annotations per pair, "
        "everyone rates every pair)",
    )
    design.add_argument(
        "--power",
        type=_probability,
        default=0.8,
        metavar="P",
        help="power wanted: share of studies in which every check passes (default 0.8)",
    )
    design.add_argument(
        "--simulations",
        type=non_negative_int,
        default=200,
        metavar="N",
        help="simulated studies per design (default 200: power +- 0.03)",
    )
    design.add_argument("--seed", type=int, default=0, metavar="N", help="seed (default 0)")
    design.add_argument(
        "--adaptive",
        type=min_max,
        action="append",
        metavar="MIN-MAX",
        help="also an adaptive design: at least MIN and at most MAX annotations a pair, more "
        "while its answers leave it undecided (the labelling step's own stopping rule); "
        f"repeatable; {ADAPTIVE_BOUNDS}",
    )
    design.add_argument(
        "--agreement-sample",
        type=_probability,
        default=0.2,
        metavar="FRACTION",
        help="adaptive designs: share of pairs given exactly --agreement-overlap annotations, "
        "on which the conclusion is computed, as in the report (default 0.2)",
    )
    design.add_argument(
        "--agreement-overlap",
        type=int,
        default=3,
        metavar="K",
        help="adaptive designs: annotations of each agreement-sample pair (default 3)",
    )
    design.add_argument(
        "--json",
        action="store_true",
        help='print {"designs": [{"design", "pairs", "annotations_per_pair", '
        '"verdict_accuracy", "power", ...}]} instead of the table',
    )

    effects = parser.add_argument_group("effect sizes (what you expect the study to find)")
    effects.add_argument(
        "--chosen-rate",
        type=_probability,
        default=0.75,
        metavar="P",
        help="share of annotations that pick chosen: label agreement of one annotator "
        "(default 0.75)",
    )
    effects.add_argument(
        "--pair-mix",
        type=_pair_mix,
        default=None,
        metavar="SHARE:RATE,...",
        help="pairs differ: that share of pairs has that chosen rate, e.g. 0.75:0.9,0.25:0.55 "
        "(replaces --chosen-rate)",
    )
    effects.add_argument(
        "--tie-rate", type=_probability, default=0.0, metavar="P", help="share of ties (default 0)"
    )
    effects.add_argument(
        "--annotator-spread",
        type=float,
        default=0.0,
        metavar="SD",
        help="sd of the annotators' lasting lean to chosen, in log-odds (default 0: alike)",
    )
    effects.add_argument(
        "--quality-diff",
        type=float,
        default=0.0,
        metavar="X",
        help="true mean quality difference chosen - rejected in scale points (default 0)",
    )
    effects.add_argument(
        "--quality-sd",
        type=float,
        default=0.5,
        metavar="X",
        help="spread (sd) of the true per-pair quality difference in scale points (default 0.5)",
    )
    effects.add_argument(
        "--personal-rate",
        type=_probability,
        default=0.6,
        metavar="P",
        help="share of annotations stating personal fit or both (default 0.6)",
    )
    effects.add_argument(
        "--general-rate",
        type=_probability,
        default=0.25,
        metavar="P",
        help="share of annotations stating general quality (default 0.25)",
    )

    checks = parser.add_argument_group("the report's checks (same options and defaults)")
    add_conclusion_checks(checks)
    add_equivalence_margin(checks)
    add_min_annotations(checks)
    checks.add_argument(
        "--scale", default="1-5", metavar="LO-HI", help="rating scale (default 1-5)"
    )
    add_no_ties(checks)
    add_dimensions(checks)
    add_sample_sizing(parser)


def add_sample_sizing(parser: argparse.ArgumentParser) -> None:
    """annotate plan --population M: how many pairs of a benchmark to sample (issue 24)."""
    sizing = parser.add_argument_group(
        "benchmark sample sizing (--population M)",
        "Instead of the power table: how many of a benchmark's M pairs humans must label "
        "(import-pairs --sample N) for the report's benchmark-wide valid share to have a 95% "
        "interval of at most +-HALF-WIDTH, for three designs: uniform with humans only, "
        "uniform with a judge score (PPI++), and judge-guided (--sample-by: every flagged "
        "pair up to 80% of N, a uniform sample of the rest). README: For benchmark builders.",
    )
    sizing.add_argument(
        "--population", type=int, default=None, metavar="M", help="pairs in the benchmark"
    )
    sizing.add_argument(
        "--half-width",
        type=_probability,
        default=0.04,
        metavar="X",
        help="wanted half-width of the valid share's 95%% interval (default 0.04: 4 points)",
    )
    sizing.add_argument(
        "--valid-share",
        type=_probability,
        default=0.8,
        metavar="P",
        help="expected share of valid pairs (default 0.8)",
    )
    sizing.add_argument(
        "--judge-sensitivity",
        type=_probability,
        default=0.6,
        metavar="P",
        help="share of the not-valid pairs the judge flags (default 0.6)",
    )
    sizing.add_argument(
        "--judge-false-alarm",
        type=_probability,
        default=0.2,
        metavar="P",
        help="share of the valid pairs the judge flags (default 0.2)",
    )
    sizing.add_argument(
        "--judge-correlation",
        type=float,
        default=0.5,
        metavar="R",
        help="correlation of a judge score with the human verdict, for uniform + PPI++ "
        "(default 0.5)",
    )


def _sample_plan(args: argparse.Namespace) -> int:
    from analysis.population.sample_size import guided_plan, uniform_plan

    m = args.population
    if m < 2:
        raise UserError("--population must be at least 2 pairs")
    if not 0 < args.half_width < 0.5 or not 0 < args.valid_share < 1:
        raise UserError("--half-width must be in (0, 0.5) and --valid-share in (0, 1)")
    if not -1 < args.judge_correlation < 1:
        raise UserError("--judge-correlation must be between -1 and 1")
    keys = {"valid_share": args.valid_share, "half_width": args.half_width}
    rows = [
        ("uniform, humans only", uniform_plan(m, **keys)),
        (
            f"uniform + judge score (r = {args.judge_correlation:g}, PPI++)",
            uniform_plan(m, rho=args.judge_correlation, **keys),
        ),
        (
            f"judge-guided (flags {args.judge_sensitivity:.0%} of bad, "
            f"{args.judge_false_alarm:.0%} of good)",
            guided_plan(
                m,
                sensitivity=args.judge_sensitivity,
                false_alarm=args.judge_false_alarm,
                **keys,
            ),
        ),
    ]
    print(
        f"Pairs to label for a +-{100 * args.half_width:g}-point 95% interval of the valid "
        f"share of {m:,} pairs (expected valid share {args.valid_share:.0%})"
    )
    print()
    print("| design | pairs to sample | half-width (points) | bad pairs found |")
    print("| --- | ---: | ---: | ---: |")
    for name, row in rows:
        if row is None:
            print(f"| {name} | not reachable | | |")
            continue
        print(
            f"| {name} | {row['pairs']:,} | {100 * row['half_width']:.2f} | "
            f"{row['bad_found']:.0f} |"
        )
    return 0


def _scale(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in text.split("-"))
    except ValueError:
        raise UserError(f"--scale {text!r}: write it as LO-HI, for example 1-5") from None
    if hi <= lo:
        raise UserError(f"--scale {text!r}: the top must be above the bottom")
    return lo, hi


def run(args: argparse.Namespace) -> int:
    import json

    from analysis.agreement.intervals import MIN_ANNOTATORS, MIN_EVIDENCE_PAIRS
    from analysis.design.plan import Adaptive, Effects, plan
    from analysis.report.build import ReportOptions

    if args.population is not None:
        return _sample_plan(args)

    lo, hi = _scale(args.scale)
    if args.no_ties and args.tie_rate:
        raise UserError("--tie-rate must be 0 in a study without ties (--no-ties)")
    if args.agreement_overlap < 2:
        raise UserError("--agreement-overlap must be at least 2")
    designs = [*args.per_pair] + [
        Adaptive(low, high, args.agreement_sample, args.agreement_overlap)
        for low, high in args.adaptive or []
    ]
    most = max(d.most if isinstance(d, Adaptive) else d for d in designs)
    if args.annotators is not None and args.annotators < most:
        raise UserError(
            f"--annotators {args.annotators} is fewer than the {most} annotations "
            "per pair asked for"
        )
    try:
        effects = Effects(
            chosen_rate=args.chosen_rate,
            tie_rate=args.tie_rate,
            annotator_spread=args.annotator_spread,
            quality_diff=args.quality_diff,
            quality_sd=args.quality_sd,
            personal_rate=args.personal_rate,
            general_rate=args.general_rate,
            pair_mix=args.pair_mix,
        )
    except ValueError as error:
        raise UserError(str(error)) from None
    options = ReportOptions(
        bootstrap=0,
        seed=args.seed,
        min_annotations=args.min_annotations,
        equivalence_margin=args.equivalence_margin,
        scale_min=lo,
        scale_max=hi,
        label_threshold=args.label_threshold,
        min_rated_pairs=args.min_rated_pairs,
        min_reasons=args.min_reasons,
        allow_ties=not args.no_ties,
        dimensions=args.dimensions,
    )
    if args.simulations < 1:
        raise UserError("--simulations must be at least 1")
    result = plan(
        pairs=args.pairs,
        per_pair=designs,
        annotators=args.annotators,
        effects=effects,
        options=options,
        simulations=args.simulations,
        target=args.power,
        seed=args.seed,
    )
    if args.json:
        keys = ("design", "pairs", "annotations_per_pair", "verdict_accuracy", "power")
        extra = ("agreement_with_max", "label", "quality", "reason")
        rows = [
            {**{k: row[k] for k in keys}, **{k: row[k] for k in extra if k in row}}
            for row in result["designs"]
        ]
        print(json.dumps({"designs": rows}, indent=2))
        return 0
    print(
        f"Power of the conclusion's checks ({args.simulations} simulated studies per design; "
        f"label threshold {options.label_threshold}, margin +-{options.margin:g}, "
        f"{options.min_rated_pairs} rated pairs, {options.min_reasons} reasons)"
    )
    print()
    print(
        "| design | pairs | per pair | annotations | verdict accuracy | label | quality "
        "| reason | all |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in result["designs"]:
        print(
            f"| {row['design']} | {row['pairs']:,} | {row['annotations_per_pair']:.2f} | "
            f"{row['annotations']:,.0f} | {row['verdict_accuracy']:.3f} | "
            f"{row['label']:.2f} | {row['quality']:.2f} | {row['reason']:.2f} | {row['all']:.2f} |"
        )
    print()
    if args.adaptive:
        print(
            "Adaptive designs: the conclusion is computed on the agreement sample "
            f"({args.agreement_sample:g} of the pairs, {args.agreement_overlap} annotations "
            "each), as the report does; verdict accuracy counts every pair."
        )
    evidence = (
        f"the label check needs at least {MIN_EVIDENCE_PAIRS} pairs rated by {MIN_ANNOTATORS} or "
        "more annotators (its interval treats the annotators as a sample)"
    )
    by_name = {d.name if isinstance(d, Adaptive) else f"fixed-{d}": d for d in designs}
    for name, n in result["smallest_pairs"].items():
        design = by_name[name]
        k = design if isinstance(design, int) else None
        if k is not None:
            name = f"{k} annotations per pair"
        if n is None and k is not None and min(args.annotators or k, k) < MIN_ANNOTATORS:
            print(f"{name}: {evidence}; use --per-pair {MIN_ANNOTATORS} or more")
        elif n is None and k is not None and max(args.pairs) < MIN_EVIDENCE_PAIRS:
            print(f"{name}: {evidence}; try --pairs {MIN_EVIDENCE_PAIRS} or more")
        elif (
            n is None
            and isinstance(design, Adaptive)
            and (
                design.agreement_overlap < MIN_ANNOTATORS
                or max(args.pairs) * design.agreement_sample < MIN_EVIDENCE_PAIRS
            )
        ):
            print(
                f"{name}: {evidence}, and its agreement sample gives at most "
                f"{max(args.pairs) * design.agreement_sample:.0f} pairs with "
                f"{design.agreement_overlap} annotations; raise --agreement-sample, "
                f"--agreement-overlap (at least {MIN_ANNOTATORS}) or --pairs"
            )
        elif n is None:
            print(
                f"{name}: no design tried reaches power {args.power:g}; "
                "try more pairs (--pairs) or check the effect sizes"
            )
        else:
            print(f"{name}: {n:,} pairs reach power {args.power:g}")
    return 0
