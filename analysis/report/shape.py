"""The shape of report.json (docs/reference/report-keys.md): its top-level keys, in the order written, and
the types of their values. `build_report` makes its report with `assemble`, so a key missing,
misspelt or of the wrong kind fails the type check (mypy --strict runs on this module).

The sections' own contents are the statistics modules' (dicts of plain JSON values); they are
typed here as such, the counts in full."""

from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict, cast

Section = dict[str, Any]  # a JSON object
Records = list[dict[str, Any]]  # one JSON object per pair or annotator


class Counts(TypedDict):
    pairs: int
    annotators: int
    annotations: int
    gold_pairs: int
    gold_annotations: int
    pairs_with_annotations: int


class Conclusion(TypedDict):
    """analysis.verdicts.conclusion.conclude: the headline and the checks behind it."""

    personal_preference_main_factor: bool
    status: str  # supported, not_supported, insufficient_evidence
    checks: dict[str, Section]  # name -> the check's outcome, value, ci95, threshold, ...


class AgreementSample(TypedDict):
    fraction: float
    overlap: int
    pairs: int


class Design(TypedDict):
    """The study's overlap design (analysis.design.stopping.OverlapDesign.section)."""

    overlap: str | None  # "adaptive" or "fixed"; None for a table without its study's design
    min: int | None
    max: int | None
    agreement_sample: NotRequired[AgreementSample]  # adaptive studies
    note: NotRequired[str]  # adaptive studies: how the agreement sample was drawn


class Stratum(TypedDict):
    pairs: int
    sampled: int
    labelled: int


class PopulationPair(TypedDict):
    pair_id: str
    sampled: bool
    inclusion_probability: float
    stratum: str


class Population(TypedDict):
    """A sampled study's whole benchmark (analysis.population.estimates.population_section)."""

    pairs_total: int
    pairs_sampled: int
    pairs_labelled: int
    strata: dict[str, Stratum]
    estimates: dict[str, Section]  # verdict -> share, ci95, method, ... (lambda with a judge)
    bad_found: int
    bad_left: Section  # value, ci95 and the share of the cleaned benchmark, or a note
    pairs: list[PopulationPair]
    note: NotRequired[str]  # sampled pairs without a verdict yet
    sentence: NotRequired[str]  # one plain sentence (added by with_population)


class Report(TypedDict):
    counts: Counts
    preference: Section
    quality: Section
    main_reason: Section
    main_reason_by_choice: dict[str, Section]  # per reason: counts per preference
    conclusion: Conclusion
    aspects: NotRequired[Section]  # studies with the aspect check
    verdicts: dict[str, int]  # pairs per verdict, every verdict named
    design: Design
    pairs: Records
    annotators: Records
    options: Section
    methods: Section
    models: NotRequired[
        Records
    ]  # report --model (analysis.judges.accuracy.with_models), one per model
    human_reference: NotRequired[dict[str, Section]]  # report --model: the humans' accuracies
    model_differences: NotRequired[Records]  # report --model: paired differences of models
    population: NotRequired[
        Population
    ]  # sampled studies (analysis.population.estimates.with_population)
    review: NotRequired[Section]  # studies with review decisions (analysis.review.decisions)
    annotation_model: NotRequired[
        Section
    ]  # the model of annotation (analysis.annotation_model.fit)


KEY_ORDER: tuple[str, ...] = tuple(Report.__annotations__)


def assemble(
    *,
    counts: Counts,
    preference: Section,
    quality: Section,
    main_reason: Section,
    main_reason_by_choice: dict[str, Section],
    conclusion: Conclusion,
    verdicts: dict[str, int],
    options: Section,
    methods: Section,
    design: Design,
    aspects: Section | None = None,
) -> Report:
    """The report before its per-pair and per-annotator records (added once the rest is made
    JSON-safe: `with_records`)."""
    report: Report = {
        "counts": counts,
        "preference": preference,
        "quality": quality,
        "main_reason": main_reason,
        "main_reason_by_choice": main_reason_by_choice,
        "conclusion": conclusion,
        "verdicts": verdicts,
        "design": design,
        "pairs": [],
        "annotators": [],
        "options": options,
        "methods": methods,
    }
    if aspects is not None:
        report["aspects"] = aspects
    return report


def with_records(report: Report, *, pairs: Records, annotators: Records) -> Report:
    """The report with its records, its keys in the order report.json shows them."""
    report["pairs"] = pairs
    report["annotators"] = annotators
    return reordered(report, KEY_ORDER)


def reordered(report: Report, keys: Iterable[str]) -> Report:
    """The same report with its keys in the order of ``keys`` (report.json shows them in that
    order), keys not in it left out."""
    items: dict[str, object] = dict(report)
    # The one cast: the keys and values are the report's own; only their order is new, which
    # a TypedDict's type cannot express.
    return cast(Report, {key: items[key] for key in keys if key in items})
