"""The agreement and pair-validation report (docs/reference/report-keys.md), as pure functions.

``build_report`` turns an annotations table (docs/reference/file-formats.md, annotations table, as normalised by
``analysis.files.annotations_table``) and the pairs into the report.json structure;
``analysis.report.files.write_report`` writes the report files. Every statistic that is
undefined on the data is ``None`` with a sibling note.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, TypedDict, overload

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.agreement.annotators import STRAIGHT_LINING_MIN_ITEMS, annotator_table
from analysis.agreement.bootstrap import MIN_INTERVAL_UNITS, MIN_UNITS
from analysis.agreement.coefficients import (
    CountMatrix,
    alpha,
    chosen_is_first,
    gwet_ac1,
    neutral_coding,
    percent_agreement,
)
from analysis.agreement.intervals import MIN_ANNOTATORS, MIN_EVIDENCE_PAIRS
from analysis.agreement.panel import Panel
from analysis.annotation_model.fit import PROBABILITY_COLUMNS, fit_model
from analysis.annotation_model.fit import VERDICTS as MODEL_VERDICTS
from analysis.aspects import check as aspect_check
from analysis.design.stopping import OverlapDesign
from analysis.errors import UserError
from analysis.frames import Coded, code, first_slot_picked
from analysis.population.estimates import is_sampled, population_units, shared_variances
from analysis.report.shape import Conclusion, Counts, Report, Section, assemble, with_records
from analysis.verdicts import versions
from analysis.verdicts.conclusion import (
    LABEL_THRESHOLD,
    MIN_RATED_PAIRS,
    MIN_REASONS,
    SIGNIFICANCE,
    conclude,
    label_check,
    quality_check,
    reason_check,
)
from analysis.verdicts.pairs import GapNoise, gap_noise, pair_table, verdict_counts
from analysis.verdicts.quality import dimension_summary, quality_alpha, response_counts
from analysis.verdicts.validity import exact_proportion, label_share, position_bias
from analysis.vocabulary import DIMENSIONS, PREFERENCES, REASONS

# The default margin is half a point on the default 1-5 scale; other scales keep the same
# share of their range.
MARGIN_PER_SCALE_POINT = 0.5 / 4


@dataclass(frozen=True)
class ReportOptions:
    bootstrap: int = 1000
    seed: int = 0
    min_annotations: int = 2
    quality_threshold: float = 3.0
    pair_gap: float = 1.0
    equivalence_margin: float | None = None  # None: MARGIN_PER_SCALE_POINT of the scale's range
    scale_min: int = 1
    scale_max: int = 5
    # aspect check: chosen must cover the rubric aspects by at least this much (0-2 points)
    aspect_gap: float = aspect_check.DEFAULT_GAP
    label_threshold: float = LABEL_THRESHOLD
    min_rated_pairs: int = MIN_RATED_PAIRS
    min_reasons: int = MIN_REASONS
    allow_ties: bool = True  # the study's design: without ties chance agreement has 2 categories
    dimensions: tuple[str, ...] | None = None  # the dimensions the study asks; None: all
    # which versions of a revised pair count (analysis.verdicts.versions): "latest" or "all"
    version: str = versions.LATEST

    @property
    def domain(self) -> list[int]:
        return list(range(self.scale_min, self.scale_max + 1))

    @property
    def margin(self) -> float:
        if self.equivalence_margin is not None:
            return self.equivalence_margin
        return MARGIN_PER_SCALE_POINT * (self.scale_max - self.scale_min)

    @property
    def asked_dimensions(self) -> list[str]:
        return list(DIMENSIONS if self.dimensions is None else self.dimensions)

    @property
    def categories(self) -> tuple[str, ...]:
        return PREFERENCES if self.allow_ties else PREFERENCES[:2]


# --- inputs --------------------------------------------------------------------------------


def report_options(scale: tuple[int, int], **overrides: Any) -> ReportOptions:
    """The report's options for a study's rating scale (lowest, highest) and the given overrides."""
    return ReportOptions(scale_min=scale[0], scale_max=scale[1], **overrides)


def _pair_index(annotations: pd.DataFrame, pairs: pd.DataFrame | None) -> pd.DataFrame:
    """The report's pairs in file order: every pair of the pair set, plus any annotated one."""
    if pairs is None:
        ids = pd.unique(annotations["pair_id"].to_numpy(dtype=object))
        return pd.DataFrame({"pair_id": ids, "category": "", "is_gold": False})
    frame = pairs[["pair_id"]].copy()
    frame["pair_id"] = frame["pair_id"].astype(str)
    frame["category"] = pairs["category"].fillna("") if "category" in pairs else ""
    frame["is_gold"] = pairs["is_gold"].fillna(False).astype(bool) if "is_gold" in pairs else False
    extra = pd.Index(annotations["pair_id"].unique()).difference(pd.Index(frame["pair_id"]))
    if len(extra):
        frame = pd.concat(
            [frame, pd.DataFrame({"pair_id": extra, "category": "", "is_gold": False})],
            ignore_index=True,
        )
    return frame.reset_index(drop=True)


def _strata(pairs: pd.DataFrame | None, pair_ids: pd.Index[str]) -> NDArray[np.object_] | None:
    """Each pair's sampling stratum, where the pairs were drawn by strata (the population's
    design: a stratum's pairs share its prevalences in the model of annotation)."""
    if pairs is None or "stratum" not in pairs or not pairs["stratum"].notna().any():
        return None
    by_id = pd.Series(pairs["stratum"].to_numpy(dtype=object), index=pairs["pair_id"].astype(str))
    by_id = by_id[~by_id.index.duplicated()]
    return by_id.reindex(pair_ids).fillna("all").astype(str).to_numpy(dtype=object)


# --- sections ------------------------------------------------------------------------------


def _bare(value: float | None, note: str | None, name: str) -> Section:
    out: Section = {name: value}
    if value is None and note:
        out[f"{name}_note"] = note
    return out


def _one_hot(
    codes: NDArray[np.int64], width: int, *, offset: int = 0, out: CountMatrix | None = None
) -> CountMatrix:
    """Each annotation's own counts row: 1 at ``offset + code`` (nothing where code < 0)."""
    own = np.zeros((codes.size, width), dtype=np.int64) if out is None else out
    given = codes >= 0
    own[np.flatnonzero(given), offset + codes[given]] = 1
    return own


class _Boot(TypedDict):
    """The keyword arguments every agreement statistic of the report shares."""

    bootstrap: int
    seed: int
    panel: Panel
    own: CountMatrix


class _Labels(TypedDict):
    """label_share's keyword arguments for both of its shares."""

    min_annotations: int
    panel: Panel
    own: CountMatrix


def _preference(stats: Coded, options: ReportOptions, panel: Panel) -> Section:
    n_categories = len(options.categories)
    if not options.allow_ties and (stats.preference == 2).any():
        raise ValueError("the study allows no ties, but some annotations are ties")
    full = stats.per_pair(stats.preference, len(PREFERENCES))
    counts = full[:, :n_categories]
    own = _one_hot(stats.preference, n_categories)
    boot: _Boot = {"bootstrap": options.bootstrap, "seed": options.seed, "panel": panel, "own": own}
    pa = percent_agreement(counts, **boot)

    # The neutral orientation's coin per pair: chosen is shown "first" (see neutral_orientation).
    keep = np.fromiter(
        (chosen_is_first(p) for p in stats.pair_ids), dtype=bool, count=stats.n_pairs
    )
    neutral, neutral_own, neutral_columns = neutral_coding(counts, own, keep=keep, pair=stats.pair)
    n_annotations = len(stats.pair)
    ties = int((stats.preference == 2).sum())
    counted, first = first_slot_picked(stats.annotations)
    labels: _Labels = {
        "min_annotations": options.min_annotations,
        "panel": panel,
        "own": _one_hot(stats.preference, len(PREFERENCES)),
    }

    out: Section = {}
    out.update(_bare(pa.value, pa.note, "percent_agreement"))
    pa_dict = pa.as_dict()
    out["percent_agreement_ci95"] = pa_dict["ci95"]
    out["percent_agreement_ci95_annotators"] = pa_dict.get("ci95_annotators")
    if "ci95_annotators_note" in pa_dict:
        out["percent_agreement_ci95_annotators_note"] = pa_dict["ci95_annotators_note"]
    out["categories"] = list(options.categories)
    out["alpha"] = alpha(counts, level="nominal", domain=list(options.categories), **boot).as_dict()
    out["alpha_neutral"] = alpha(
        neutral,
        level="nominal",
        domain=["first", "second", "tie"][:n_categories],
        bootstrap=options.bootstrap,
        seed=options.seed,
        # the neutral coding hides a lasting lean to chosen: main effects read from the labels
        panel=panel.with_traits(own, columns=neutral_columns),
        own=neutral_own,
    ).as_dict()
    out["ac1"] = gwet_ac1(counts, **boot).as_dict()
    out["label_agreement"] = label_share(full, decided_only=True, **labels)
    out["label_confirmed"] = label_share(full, decided_only=False, **labels)
    out.update(
        _bare(
            ties / n_annotations if n_annotations else None,
            "undefined: no annotations",
            "tie_rate",
        )
    )
    out["n_ties"] = ties
    out["n_annotations"] = n_annotations
    out["n_pairable_pairs"] = int((counts.sum(axis=1) >= 2).sum())
    out["n_annotators"] = panel.n_annotators
    out["position_bias"] = position_bias(first_slot_picks=int(first.sum()), n=int(counted.sum()))
    return out


def _rating_codes(stats: Coded, column: str, lo: int) -> NDArray[np.int64]:
    values = stats.rating(column)
    return np.where(np.isnan(values), -1, values - lo).astype(np.int64)


def _quality(stats: Coded, options: ReportOptions, panel: Panel) -> Section:
    out: Section = {}
    pairs_with_annotations = np.bincount(stats.pair, minlength=stats.n_pairs) > 0
    width = len(options.domain)
    for dimension in DIMENSIONS:
        counts = response_counts(stats, dimension, options.domain)
        own = np.zeros((len(stats.pair), 2 * width), dtype=np.int64)
        for k, side in enumerate(("chosen", "rejected")):
            codes = _rating_codes(stats, f"{dimension}_{side}", options.scale_min)
            _one_hot(codes, 2 * width, offset=k * width, out=own)
        section: Section = {
            "alpha": quality_alpha(
                counts,
                domain=options.domain,
                bootstrap=options.bootstrap,
                seed=options.seed,
                panel=panel,
                own=own,
            )
        }
        chosen = stats.pair_mean(f"{dimension}_chosen")[pairs_with_annotations]
        rejected = stats.pair_mean(f"{dimension}_rejected")[pairs_with_annotations]
        rated = counts.sum(axis=1).reshape(-1, 2)[pairs_with_annotations]
        section.update(
            dimension_summary(
                chosen,
                rejected,
                margin=options.margin,
                threshold=options.quality_threshold,
                chosen_counts=rated[:, 0],
                rejected_counts=rated[:, 1],
            )
        )
        section["asked"] = dimension in options.asked_dimensions
        section["rating_counts"] = {
            side: dict(
                zip(
                    [str(v) for v in options.domain],
                    counts[i::2].sum(axis=0).tolist(),
                    strict=True,
                )
            )
            for i, side in enumerate(("chosen", "rejected"))
        }
        out[dimension] = section
    return out


def _main_reason(stats: Coded) -> tuple[Section, dict[str, Section]]:
    given = stats.reason >= 0
    n = int(given.sum())
    counts = np.bincount(stats.reason[given], minlength=len(REASONS))
    shares = {reason: (float(counts[i] / n) if n else None) for i, reason in enumerate(REASONS)}
    out: Section = {**shares, "n": n, "counts": dict(zip(REASONS, counts.tolist(), strict=True))}
    if not n:
        out["note"] = "undefined: no annotation gave a main reason"
    out["by_pair"] = _reasons_by_pair(stats)

    cross = np.zeros((len(REASONS), len(PREFERENCES)), dtype=np.int64)
    np.add.at(cross, (stats.reason[given], stats.preference[given]), 1)
    by_choice: dict[str, Section] = {}
    for i, reason in enumerate(REASONS):
        row = cross[i]
        decisive = int(row[0] + row[1])
        by_choice[reason] = {
            **dict(zip(PREFERENCES, row.tolist(), strict=True)),
            "followed_rubric_share": float(row[0] / decisive) if decisive else None,
        }
        if not decisive:
            by_choice[reason]["note"] = "undefined: no decisive annotation gave this reason"
    return out, by_choice


def _reasons_by_pair(stats: Coded) -> Section:
    """Pairs in which personal fit (alone or with quality) was stated more often than general
    quality, among the pairs where the two counts differ: pairs, not annotations, are the
    independent units (annotations of one pair share its responses)."""
    per_pair = stats.per_pair(stats.reason, len(REASONS))
    personal = per_pair[:, REASONS.index("personal_fit")] + per_pair[:, REASONS.index("both")]
    general = per_pair[:, REASONS.index("general_quality")]
    differ = personal != general
    out = exact_proportion(
        int((personal > general).sum()),
        int(differ.sum()),
        undefined="no pair where personal fit and general quality were stated unequally often",
    )
    out["pairs_general_more"] = int((general > personal).sum())
    return out


def _methods(options: ReportOptions, *, n_gold_pairs: int) -> Section:
    return {
        "bootstrap": {
            "resamples": options.bootstrap,
            "seed": options.seed,
            "unit": "pair",
            "interval": (
                "95% BCa (bias-corrected and accelerated) interval of the resampled statistic, "
                "its levels at sqrt(n / (n - 1)) t(n - 1) for n pairs instead of 1.96 "
                "(Hesterberg 2015)"
            ),
            "detail": (
                "pairs are drawn with replacement (never coincidence pairs); for quality alpha "
                "both responses of a drawn pair come along. Resamples where a statistic is "
                "undefined are dropped and counted in its note; the interval is omitted when "
                "more than half are undefined."
            ),
        },
        "intervals": {
            "ci95": (
                "holds for these annotators: it says how much the value could change with "
                "other pairs rated by the same people"
            ),
            "ci95_annotators": (
                "holds for annotators in general (like these, from the same pool): it adds how "
                "much the value could change with other annotators. That part is the larger "
                "of two. One: 2.5 times how much the statistic moves over 100 panels of leans "
                "the size of the annotators' own lasting leans beyond chance (each panel's "
                "value taken at its expectation over the labels, so without pair noise). Two: "
                "the jackknife over annotators (leave one out at a time) beyond what shuffling "
                "annotators within pairs gives on average (8 to 20 shuffles, more with fewer "
                "annotators), counted as far as it stands above that floor (it sees what "
                "leans do not, such as quality alpha's bias with a few annotators who differ). "
                "For label_confirmed, a majority, the part is a bootstrap over annotators that "
                "re-labels each pair with stand-ins' answers, beyond the same on the shuffles, "
                "growing up to twice with the leans. Each goes through a smooth positive part "
                "(a few annotators cannot show that they do not differ) and is weighted by how "
                "far the annotators' own lasting leans exceed chance (0 when they show none: "
                "then this is the pairs' interval), added to the pairs' variance and cut to "
                "the statistic's range; "
                f"null with fewer than {MIN_EVIDENCE_PAIRS} pairs rated by {MIN_ANNOTATORS} or "
                "more annotators (the note says how many more would suffice): annotators' names "
                "are not evidence, pairs they rated together are. The headline and the label "
                "check use it; without it the label check is insufficient. README, "
                "'Do the intervals cover?', gives its measured coverage"
            ),
            "too_few_units": (
                f"an agreement statistic needs {MIN_UNITS} pairs with two or more annotations "
                f"(with fewer it is 0 or 1 by construction) and its interval {MIN_INTERVAL_UNITS}"
            ),
        },
        "ties": {
            "percent_agreement": "a tie is a third label; two annotators agree when their labels are equal",
            "alpha": "nominal over chosen/rejected/tie: a tie is its own category",
            "alpha_neutral": "nominal over first/second/tie: a tie is its own category",
            "ac1": (
                "the study's categories: chosen/rejected/tie, or chosen/rejected in a study "
                "without ties (an impossible third category would halve the chance term)"
            ),
            "tie_rate": "ties / all annotations of non-gold pairs",
            "label_agreement": "over decided pairs only: pairs whose strict majority is chosen or rejected; tie majorities and pairs without a majority are left out",
            "label_confirmed": "over all pairs with enough annotations: a tie majority or no majority counts as not confirming",
            "position_bias": "ties pick no slot and are left out",
            "annotator_label_agreement": "share of chosen among the annotator's chosen/rejected answers; ties left out",
            "peer_agreement": "a tie is a label like any other",
            "majority": "a strict majority: more than half of the pair's annotations; a tie majority is no consensus",
        },
        "quality_confound": (
            "reason: general_quality given by more annotators than personal_fit and both "
            "together; gap: the one-sided 95% lower bound of the pair's mean per-annotator gap "
            "(its variance shrunk towards the study's pooled gap variance, 4 degrees of "
            "freedom) above --pair-gap (pairs.csv: <dimension>_gap_lower)"
        ),
        "orientation": (
            "preference labels are already mapped back from the A/B slots to chosen/rejected. "
            "alpha_neutral orients each pair's responses by a stable sha256 hash of the pair id "
            "(label-independent), so lopsided chosen/rejected marginals do not depress it"
        ),
        "gold": (
            f"{n_gold_pairs} gold pairs (quality checks) are excluded from every agreement, "
            "validity and annotator statistic; they still get a verdict in the pairs table"
        ),
        "label_agreement": (
            f"unit = pair: pairs with >= {options.min_annotations} annotations and a decided "
            "majority; exact one-sided binomial test against 1/2, mid-p interval. "
            "label_confirmed: the same share over all pairs with enough annotations"
        ),
        "conclusion": (
            f"label: the lower end of label_confirmed's annotator-aware 95% interval above "
            f"{options.label_threshold} (needs {MIN_EVIDENCE_PAIRS} pairs with "
            f"{MIN_ANNOTATORS}+ annotations); quality: every asked dimension "
            f"({', '.join(options.asked_dimensions) or 'none'}) rated on both responses of >= "
            f"{options.min_rated_pairs} pairs and TOST-equivalent within +-{options.margin:g} "
            "(a test without spread is no evidence); reason: >= "
            f"{options.min_reasons} stated reasons and, over pairs, personal fit stated more "
            "often than general quality in significantly more than half of the pairs where "
            "they differ. supported: all pass; not_supported: one fails with evidence against; "
            "insufficient_evidence: otherwise"
        ),
        "quality": (
            f"ordinal Krippendorff alpha with units (pair, response) on the scale "
            f"{options.scale_min}..{options.scale_max}. Means, differences and TOST use each "
            "pair once, with its annotators' mean rating per response, over pairs where both "
            f"responses were rated. TOST margin +-{options.margin:g} scale points; "
            f"both_high_share: both responses' means >= {options.quality_threshold} "
            "(Wilson interval)"
        ),
        "main_reason": "shares among annotations that gave a reason; main_reason_by_choice cross-tabulates them with the preference",
        "annotators": (
            "label_agreement: share of chosen among decisive answers; peer_agreement: agreement "
            "with the strict majority of the other annotators of the same pair; first_slot_rate: "
            f"share of decisive answers with a known slot that picked slot A; straight_lining: "
            f"one single rating value over all rated items, with >= {STRAIGHT_LINING_MIN_ITEMS} rated items"
        ),
        "significance": SIGNIFICANCE,
        "reference_values": "Krippendorff (2004): alpha >= 0.800 reliable; 0.667-0.800 tentative conclusions only",
    }


def _aspects(
    coded: Coded,
    table: pd.DataFrame,
    *,
    gold: NDArray[np.bool_],
    options: ReportOptions,
    scorer: pd.DataFrame | None,
) -> tuple[pd.DataFrame, Section, Section]:
    """The aspect check's parts: the pair table with its aspect columns and verdict, the
    report's `aspects` section and the conclusion's `aspects` check."""
    scores = aspect_check.long_scores(coded.annotations, coded.pair)
    coverage = aspect_check.pair_coverage(scores, coded.n_pairs)
    table = aspect_check.apply_verdict(table, coverage, threshold=options.aspect_gap)
    counted = (
        ~gold
        & (table["n_annotations"].to_numpy() >= options.min_annotations)
        & (coverage["n_aspect_annotations"].to_numpy() > 0)
    )
    humans = scores.subset(~gold[scores.pair])
    section = aspect_check.aspects_section(
        humans,
        coverage,
        counted=counted,
        gap_threshold=options.aspect_gap,
        bootstrap=options.bootstrap,
        seed=options.seed,
    )
    if scorer is not None:
        section["scorer"] = _scorer_comparison(
            scorer,
            humans,
            pair_ids=coded.pair_ids,
            gold=gold,
            majority=table["majority"].to_numpy(dtype=object),
            gap_threshold=options.aspect_gap,
            bootstrap=options.bootstrap,
            seed=options.seed,
        )
    gaps = coverage["aspects_gap"].to_numpy(dtype=np.float64)[counted]
    check = aspect_check.aspects_check(gaps, gap_threshold=options.aspect_gap)
    return table, section, check


def _scorer_comparison(
    scorer: pd.DataFrame,
    humans: aspect_check.Scores,
    *,
    pair_ids: pd.Index,
    gold: NDArray[np.bool_],
    majority: NDArray[np.object_],
    gap_threshold: float,
    bootstrap: int,
    seed: int,
) -> Section:
    """`aspects.scorer`: the scorer's rows of non-gold pairs against the annotators' scores."""
    from analysis.aspects.scorer import compare_with_scorer

    where = pair_ids.get_indexer(pd.Index(scorer["pair_id"]))
    if (where < 0).any():
        raise ValueError("the scorer's rows name pairs that are not in the report")
    return compare_with_scorer(
        scorer[~gold[where]],
        humans,
        pair_ids=pair_ids,
        majority=majority,
        gap_threshold=gap_threshold,
        bootstrap=bootstrap,
        seed=seed,
    )


_NO_ASPECT_SCORES = (
    "--aspect-scores needs annotations with aspect scores (studies with the aspect check); "
    "these annotations have none"
)


def with_aspect_scores(
    report: Report, annotations: pd.DataFrame, pairs: pd.DataFrame | None, scorer: pd.DataFrame
) -> Report:
    """The report with `aspects.scorer` added, as ``build_report(annotations, pairs,
    aspect_scores=scorer)`` gives it, without computing the rest again (the console compares
    an uploaded scorer file with a report it has already). ``report`` must have been built
    from these annotations and pairs; it is not changed. Every row of ``scorer`` must name a
    pair of the report (analysis.aspects.scorer.read_scorer_file checks the ids)."""
    if "aspects" not in report:
        raise UserError(_NO_ASPECT_SCORES)
    index = _pair_index(annotations, pairs)
    pair_ids = pd.Index(index["pair_id"].to_numpy(dtype=object))
    gold = index["is_gold"].to_numpy(dtype=bool)
    coded = code(annotations, pair_ids)
    scores = aspect_check.long_scores(coded.annotations, coded.pair)
    majority = pd.Series(
        [p["majority"] for p in report["pairs"]],
        index=[p["pair_id"] for p in report["pairs"]],
        dtype=object,
    )
    options = report["options"]
    section = _scorer_comparison(
        scorer,
        scores.subset(~gold[scores.pair]),
        pair_ids=pair_ids,
        gold=gold,
        majority=majority.reindex(pair_ids).to_numpy(dtype=object),
        gap_threshold=options["aspect_gap"],
        bootstrap=options["bootstrap"],
        seed=options["seed"],
    )
    return {**report, "aspects": {**report["aspects"], "scorer": json_safe(section)}}


# --- the report ----------------------------------------------------------------------------


def conclusion_checks(
    preference: Section, quality: Section, main_reason: Section, options: ReportOptions
) -> dict[str, Section]:
    """The label, quality and reason checks (analysis.verdicts.conclusion documents their shape); a
    caller with more evidence (aspect scores) adds its own check to this mapping before
    ``conclude``."""
    return {
        "label": label_check(
            preference["label_confirmed"],
            decided=preference["label_agreement"],
            threshold=options.label_threshold,
        ),
        "quality": quality_check(
            quality,
            dimensions=options.asked_dimensions,
            margin=options.margin,
            min_pairs=options.min_rated_pairs,
        ),
        "reason": reason_check(main_reason, min_reasons=options.min_reasons),
    }


def conclusion_of(annotations: pd.DataFrame, *, options: ReportOptions) -> Conclusion:
    """The conclusion alone, through the same sections as :func:`build_report` (no gold pairs,
    no pair or annotator tables): what ``annotate plan`` simulates."""
    pair_ids = pd.Index(pd.unique(annotations["pair_id"].to_numpy(dtype=object)))
    stats = code(annotations, pair_ids)
    panel = Panel.of(stats.pair, stats.annotations["annotator"].to_numpy(), seed=options.seed)
    preference = _preference(stats, options, panel)
    quality = _quality(stats, options, panel)
    main_reason, _ = _main_reason(stats)
    return conclude(conclusion_checks(preference, quality, main_reason, options))


def build_report(
    annotations: pd.DataFrame,
    pairs: pd.DataFrame | None,
    *,
    options: ReportOptions,
    aspect_scores: pd.DataFrame | None = None,
    design: OverlapDesign | None = None,
) -> Report:
    """The report.json structure (docs/reference/report-keys.md) for one annotations table.

    ``aspect_scores``: an automatic scorer's aspect scores (analysis.aspects.scorer) to compare
    with the annotators' (needs aspect scores in the annotations). ``design``: the study's
    overlap design (a study in the database knows it; a table of annotations does not): in
    an adaptive study the agreement statistics and the conclusion's checks use the agreement
    sample only (analysis.design.stopping.SAMPLE_METHOD), and each pair says why it ``stopped``."""
    latest = versions.latest_versions(annotations, pairs)
    annotations, earlier = versions.select_versions(annotations, latest, mode=options.version)
    index = _pair_index(annotations, pairs)
    pair_ids = pd.Index(index["pair_id"].to_numpy(dtype=object))
    gold = index["is_gold"].to_numpy(dtype=bool)
    coded = code(annotations, pair_ids)
    gold_annotation = gold[coded.pair]
    stats = coded.subset(~gold_annotation)

    noise = gap_noise(stats)
    table = pair_table(
        coded,
        gold=gold,
        category=index["category"].to_numpy(dtype=object),
        min_annotations=options.min_annotations,
        quality_threshold=options.quality_threshold,
        pair_gap=options.pair_gap,
        noise=noise,
    )
    with_aspects = aspect_check.has_aspects(annotations)
    if with_aspects:
        table, aspects_section, aspects_check = _aspects(
            coded, table, gold=gold, options=options, scorer=aspect_scores
        )
    elif aspect_scores is not None:
        raise UserError(_NO_ASPECT_SCORES)
    gold_counts = coded.annotations.loc[gold_annotation, "annotator"].value_counts()
    annotators = annotator_table(stats, gold_counts=gold_counts)
    if len(gold_counts):
        missing = gold_counts.index.difference(annotators["annotator"])
        annotators = pd.concat(
            [
                annotators,
                pd.DataFrame({"annotator": missing, "n": 0, "n_gold": gold_counts[missing].values}),
            ],
            ignore_index=True,
        )

    model = fit_model(
        stats,
        dimensions=tuple(options.asked_dimensions),
        quality_threshold=options.quality_threshold,
        pair_gap=options.pair_gap,
        allow_ties=options.allow_ties,
        strata=_strata(pairs, pair_ids),
        scale=(options.scale_min, options.scale_max),
        seed=options.seed,
    )
    table = _with_model(table, model.probabilities)
    annotators = annotators.merge(model.annotators, on="annotator", how="left")

    if design is not None:
        counts = table[[f"n_{label}" for label in PREFERENCES]].to_numpy()
        stopped = design.stopped(list(table["pair_id"]), counts)
        table.insert(list(table.columns).index("n_annotations") + 1, "stopped", stopped)
    table = _with_versions(
        table, earlier, pair_ids, latest, options=options, noise=noise, aspects=with_aspects
    )
    agreement = stats
    if design is not None and design.adaptive:
        in_sample = np.isin(pair_ids.to_numpy(dtype=object), list(design.sample))
        agreement = stats.subset(in_sample[stats.pair])
    panel = Panel.of(
        agreement.pair, agreement.annotations["annotator"].to_numpy(), seed=options.seed
    )
    preference = _preference(agreement, options, panel)
    quality = _quality(agreement, options, panel)
    main_reason, by_choice = _main_reason(agreement)
    report = assemble(
        counts=Counts(
            pairs=int((~gold).sum()),
            annotators=int(stats.annotations["annotator"].nunique()),
            annotations=len(stats.pair),
            gold_pairs=int(gold.sum()),
            gold_annotations=int(gold_annotation.sum()),
            pairs_with_annotations=int((table.loc[~gold, "n_annotations"] > 0).sum()),
        ),
        preference=preference,
        quality=quality,
        main_reason=main_reason,
        main_reason_by_choice=by_choice,
        conclusion=conclude(
            {
                **conclusion_checks(preference, quality, main_reason, options),
                **({"aspects": aspects_check} if with_aspects else {}),
            }
        ),
        verdicts=verdict_counts(table[~table["is_gold"]]),
        options={
            **asdict(options),
            "equivalence_margin": options.margin,
            "dimensions": options.asked_dimensions,
        },
        methods=_methods(options, n_gold_pairs=int(gold.sum())),
        design=(
            design.section()
            if design is not None
            else {
                "overlap": None,
                "min": None,
                "max": None,
                "note": "a table of annotations does not record its study's overlap design",
            }
        ),
        aspects=aspects_section if with_aspects else None,
    )
    report["annotation_model"] = json_safe(model.summary)
    if is_sampled(pairs) and pairs is not None:
        units = population_units(pairs, dict(zip(table["pair_id"], table["verdict"], strict=True)))
        positions = pair_ids.get_indexer(pd.Index(units["pair_id"]))
        report["annotation_model"]["shared_variance"] = shared_variances(
            units, model.draws, positions.astype(np.int64)
        )
    if with_aspects:
        report["verdicts"] = aspect_check.verdict_counts(
            report["verdicts"], table[~table["is_gold"]]
        )
        report["methods"]["aspects"] = aspect_check.METHOD
    # Records are plain Python values already (NaN -> None in _records): no second pass.
    return with_records(
        json_safe(report),
        pairs=_records(_nested_probabilities(table), list_columns=("flags",)),
        annotators=[_nest_accuracy(r) for r in _records(annotators)],
    )


def _with_model(table: pd.DataFrame, probabilities: pd.DataFrame) -> pd.DataFrame:
    """The pair table with the model's probabilities and verdict after the crowd's verdict
    columns (rows in the same pair order)."""
    out = table.copy()
    where = list(out.columns).index("flags") + 1
    for offset, column in enumerate([*PROBABILITY_COLUMNS, "model_verdict"]):
        out.insert(where + offset, column, probabilities[column].to_numpy())
    return out


def _nested_probabilities(table: pd.DataFrame) -> pd.DataFrame:
    """report.json's pairs carry ``probabilities: {verdict: p}``, last, or null where the model
    gives none (pairs.csv: p_* columns)."""
    values = table[PROBABILITY_COLUMNS].to_numpy(dtype=np.float64)
    defined = (~np.isnan(values).any(axis=1)).tolist()
    nested = [
        dict(zip(MODEL_VERDICTS, row, strict=True)) if ok else None
        for row, ok in zip(values.tolist(), defined, strict=True)
    ]
    out = table.drop(columns=PROBABILITY_COLUMNS)
    out["probabilities"] = pd.Series(nested, index=table.index, dtype=object)
    return out


def _nest_accuracy(record: Section) -> Section:
    """annotators' ``accuracy: {value, ci95}`` from the model's flat columns."""
    out = {
        k: v
        for k, v in record.items()
        if k not in ("accuracy", "accuracy_ci95_lo", "accuracy_ci95_hi")
    }
    value, lo, hi = (record.get(k) for k in ("accuracy", "accuracy_ci95_lo", "accuracy_ci95_hi"))
    out["accuracy"] = {"value": value, "ci95": None if lo is None else [lo, hi]}
    return out


def _with_versions(
    table: pd.DataFrame,
    earlier: pd.DataFrame,
    pair_ids: pd.Index,
    latest: dict[str, int],
    *,
    options: ReportOptions,
    noise: GapNoise,
    aspects: bool,
) -> pd.DataFrame:
    """The pair table with each pair's version (`pair_version`: its latest), its review
    `decision` and `decision_category` (None here: analysis.review.decisions adds them) and
    `earlier_versions` (each with the verdict its own answers gave, by the same rules and the
    study's gap prior)."""

    def verdicts(coded: Coded) -> pd.DataFrame:
        earlier_table = pair_table(
            coded,
            gold=np.zeros(coded.n_pairs, dtype=bool),
            category=np.full(coded.n_pairs, "", dtype=object),
            min_annotations=options.min_annotations,
            quality_threshold=options.quality_threshold,
            pair_gap=options.pair_gap,
            noise=noise,
        )
        if aspects:
            scores = aspect_check.long_scores(coded.annotations, coded.pair)
            coverage = aspect_check.pair_coverage(scores, coded.n_pairs)
            earlier_table = aspect_check.apply_verdict(
                earlier_table, coverage, threshold=options.aspect_gap
            )
        return earlier_table

    table = table.copy()
    table.insert(1, "pair_version", [latest.get(pair, 1) for pair in table["pair_id"]])
    at = list(table.columns).index("verdict") + 1
    table.insert(at, "decision", None)
    table.insert(at + 1, "decision_category", None)
    history = versions.earlier_versions(earlier, pair_ids, latest, table=verdicts)
    table["earlier_versions"] = pd.Series(history, index=table.index, dtype=object)
    return table


def _records(frame: pd.DataFrame, list_columns: tuple[str, ...] = ()) -> list[Section]:
    """Rows as dicts of plain Python values, missing -> None (column-wise: to_dict is slow)."""
    columns = []
    for name in frame.columns:
        values = frame[name]
        if name in list_columns:
            columns.append([v.split(";") if v else [] for v in values.tolist()])
            continue
        missing = values.isna().to_numpy()
        plain = (
            values.astype(object).tolist() if values.dtype == object else values.to_numpy().tolist()
        )
        for i in np.flatnonzero(missing):
            plain[i] = None
        columns.append(plain)
    names = list(frame.columns)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


@overload
def json_safe(value: Report) -> Report: ...
@overload
def json_safe(value: Section) -> Section: ...
@overload
def json_safe(value: object) -> object: ...


def json_safe(value: object) -> object:
    """Plain JSON types; NaN and infinities become None (the caller adds the note). An object
    keeps its keys and a list its length, so a report or section keeps its shape (its
    numbers are the report's counts, never NaN, where the shape says int)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is pd.NA or value is pd.NaT:
        return None
    return value
