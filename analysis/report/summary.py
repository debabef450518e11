"""summary.md: the headline table with 95% intervals, ready to paste into a paper."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analysis.agreement.intervals import MIN_ANNOTATORS, MIN_EVIDENCE_PAIRS
from analysis.aspects.render import aspect_markdown
from analysis.report.numbers import fmt, fmt_ci, fmt_p
from analysis.report.shape import Report, Section
from analysis.vocabulary import DIMENSIONS, PREFERENCES

HEADLINE_HEADER = (
    "Statistic",
    "Value",
    "95% CI, annotators in general",
    "95% CI, these annotators",
    "n / note",
)

INTERVALS_IN_WORDS = (
    'Two 95% intervals. "These annotators" (ci95): how much the number could change with '
    "other pairs judged by the same people; it is all a study can say until at least "
    f"{MIN_EVIDENCE_PAIRS} pairs have {MIN_ANNOTATORS} or more annotations. "
    '"Annotators in general" (ci95_annotators): how much it could change with '
    "other pairs and other annotators like these, so it is the one to quote for a claim about "
    "the task; it is wider when annotators differ from each other more than chance explains."
)
# How the pair bootstrap's levels are set (analysis.agreement.bootstrap.expanded_z), in the words of the
# methods lines of summary.md and report.html.
EXPANDED_LEVELS = "its levels expanded for small samples as in Hesterberg 2015"
# The coverage benchmark (benchmarks/bench_coverage.py, README) measured studies of three to
# six annotators; below this many the annotators' part has few degrees of freedom.
FEW_ANNOTATORS = 10


def intervals_in_words(annotators: int) -> str:
    """INTERVALS_IN_WORDS, and with few annotators (3 to FEW_ANNOTATORS - 1) why the interval
    for annotators in general is approximate (with too few pairs rated by three or more there is
    none: analysis.agreement.intervals.annotator_evidence)."""
    if not 3 <= annotators < FEW_ANNOTATORS:
        return INTERVALS_IN_WORDS
    return (
        f"{INTERVALS_IN_WORDS} With {annotators} annotators this interval is approximate: "
        f"its annotators' part rests on {annotators - 1} degrees of freedom, and on simulated "
        "studies of three to six annotators it covered the value for annotators in general "
        "in 92-99% of them, depending on how much the annotators differed (README, "
        "benchmarks/bench_coverage.py). A claim about annotators in general is firmer with "
        "more annotators; annotate plan sizes a study."
    )


OUTCOME_WORDS: dict[str | None, str] = {
    "passed": "passed",
    "failed": "failed",
    "insufficient": "not enough evidence",
}
STATUS_WORDS = {
    "supported": "supported",
    "not_supported": "not supported (evidence against)",
    "insufficient_evidence": "not enough evidence to say",
}


# A row's last cell: what is counted (its n, its test) and the notes on it. A note that several
# rows share is said once, under the table (HeadlineTable.notes), and the rows name it.
NoteCell = tuple[str | None, tuple[str, ...]]


@dataclass(frozen=True)
class HeadlineTable:
    """The headline rows (HEADLINE_HEADER) and the notes they share, numbered as the rows name
    them ("[1]"), for summary.md, report.html and the console alike."""

    rows: list[tuple[str, str, str, str, str]]
    notes: list[str]  # "[1] the note", in the order the rows first name them


def headline_table(report: Report) -> HeadlineTable:
    """(statistic, value, 95% interval for annotators in general, 95% interval for these
    annotators, n / note) rows; a note that more than one row carries is a numbered note."""
    rows = _headline_cells(report)
    seen: dict[str, int] = {}
    for *_, (_, notes) in rows:
        for note in dict.fromkeys(notes):
            seen[note] = seen.get(note, 0) + 1
    shared = {note: i for i, note in enumerate((n for n, k in seen.items() if k > 1), start=1)}
    out = []
    for statistic, value, general, these, (fact, notes) in rows:
        words = [fact] if fact else []
        words += [f"[{shared[n]}]" if n in shared else n for n in dict.fromkeys(notes)]
        out.append((statistic, value, general, these, "; ".join(words)))
    return HeadlineTable(
        rows=out, notes=[f"[{i}] {note[:1].upper()}{note[1:]}" for note, i in shared.items()]
    )


def _notes(*notes: str | None) -> tuple[str, ...]:
    return tuple(n for n in notes if n)


def _headline_cells(report: Report) -> list[tuple[str, str, str, str, NoteCell]]:
    pref = report["preference"]
    rows: list[tuple[str, str, str, str, NoteCell]] = [
        (
            "Percent agreement (preference)",
            fmt(pref["percent_agreement"]),
            fmt_ci(pref.get("percent_agreement_ci95_annotators")),
            fmt_ci(pref["percent_agreement_ci95"]),
            (f"{pref['n_pairable_pairs']:,} pairs with >= 2 annotations", ()),
        ),
        (
            f"Krippendorff's alpha, nominal ({'/'.join(pref.get('categories', PREFERENCES))})",
            *_estimate(pref["alpha"]),
        ),
        ("Krippendorff's alpha, nominal, neutral orientation", *_estimate(pref["alpha_neutral"])),
        ("Gwet's AC1 (preference)", *_estimate(pref["ac1"])),
    ]
    for key, name, what in (
        ("label_confirmed", "Label confirmed (majority = chosen, all pairs)", "pairs"),
        ("label_agreement", "Label agreement (majority = chosen, decided pairs)", "decided pairs"),
    ):
        la = pref.get(key)
        if la is None:
            continue
        rows.append(
            (
                name,
                fmt(la["value"]),
                fmt_ci(la.get("ci95_annotators")),
                fmt_ci(la["ci95"]),
                _fact_or_note(
                    la.get("note"),
                    f"n = {la['n']:,} {what}, one-sided p vs 1/2 {fmt_p(la['p_value'])}",
                ),
            )
        )
    rows.append(("Tie rate", fmt(pref["tie_rate"]), "", "", (f"{pref['n_ties']:,} ties", ())))
    pb = pref["position_bias"]
    rows.append(
        (
            "First-slot rate (position bias)",
            fmt(pb["first_slot_rate"]),
            "",
            fmt_ci(pb["ci95"]),
            _fact_or_note(pb.get("note"), f"n = {pb['n']:,}, two-sided p {fmt_p(pb['p_value'])}"),
        )
    )
    for dimension in DIMENSIONS:
        q = report["quality"][dimension]
        rows.append((f"Quality alpha, ordinal: {dimension}", *_estimate(q["alpha"])))
        rows.append(
            (
                f"Quality difference chosen - rejected: {dimension}",
                fmt(q["mean_diff"]),
                "",
                "90% " + fmt_ci(q["diff_ci90"]) if q["diff_ci90"] else "",
                _fact_or_note(
                    q.get("note"),
                    f"TOST p {fmt_p(q['tost_p'])} (margin {q['margin']:g}), "
                    f"equivalent: {fmt(q['equivalent'])}",
                ),
            )
        )
        rows.append(
            (
                f"Both responses good: {dimension}",
                fmt(q["both_high_share"]),
                "",
                fmt_ci(q["both_high_ci95"]),
                (f"n = {q['n_pairs']:,} pairs", ()),
            )
        )
    reason = report["main_reason"]
    personal = None if not reason["n"] else reason["personal_fit"] + reason["both"]
    rows.append(
        (
            "Main reason: personal fit (alone or with quality)",
            fmt(personal),
            "",
            "",
            _fact_or_note(reason.get("note"), f"n = {reason['n']:,} annotations with a reason"),
        )
    )
    return rows


def _fact_or_note(note: str | None, fact: str) -> NoteCell:
    """A statistic's note when it has one (it is undefined), else what it is counted on."""
    return (None, (note,)) if note else (fact, ())


def _estimate(estimate: Section) -> tuple[str, str, str, NoteCell]:
    return (
        fmt(estimate["value"]),
        fmt_ci(estimate.get("ci95_annotators")),
        fmt_ci(estimate["ci95"]),
        (None, _notes(estimate.get("note"), estimate.get("ci95_annotators_note"))),
    )


CHECK_HEADER = ("Check", "Outcome", "Value", "95% CI", "Threshold", "n", "Rule / note")


def check_rows(report: Report) -> list[tuple[str, ...]]:
    """One row per conclusion check (whatever checks the report has), shared with the HTML."""
    rows: list[tuple[str, ...]] = []
    for name, check in report["conclusion"]["checks"].items():
        threshold = check.get("threshold")
        rows.append(
            (
                name,
                OUTCOME_WORDS.get(check.get("outcome"), fmt(check.get("passed"))),
                fmt(check.get("value")),
                fmt_ci(check.get("ci95")),
                "n/a" if threshold is None else f"{threshold:g}",
                fmt(check.get("n")),
                check.get("rule", "") + (f" ({check['note']})" if check.get("note") else ""),
            )
        )
    return rows


def conclusion_sentence(report: Report) -> str:
    conclusion = report["conclusion"]
    status = conclusion.get("status")
    return (
        "Personal preference the main discriminating factor: "
        f"**{fmt(conclusion['personal_preference_main_factor'])}** "
        f"({STATUS_WORDS.get(status, status)})."
    )


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_summary(report: Report) -> str:
    counts = report["counts"]
    boot = report["methods"]["bootstrap"]
    lines = [
        "# Agreement and pair validation",
        "",
        f"{counts['pairs']:,} pairs, {counts['annotators']:,} annotators, "
        f"{counts['annotations']:,} annotations"
        + (f" (gold pairs excluded: {counts['gold_pairs']:,})" if counts["gold_pairs"] else "")
        + ".",
        "",
        _row(HEADLINE_HEADER),
        "| --- | ---: | --- | --- | --- |",
    ]
    headline = headline_table(report)
    lines += [_row(row) for row in headline.rows]
    for note in headline.notes:
        lines += ["", note]
    verdicts = ", ".join(f"{k} {v:,}" for k, v in report["verdicts"].items())
    lines += [
        "",
        f"Pair verdicts: {verdicts}.",
        "",
        conclusion_sentence(report),
        "",
        _row(CHECK_HEADER),
        "| --- | --- | ---: | --- | ---: | ---: | --- |",
        *[_row(row) for row in check_rows(report)],
        "",
        intervals_in_words(report["counts"]["annotators"]),
        "",
        f"Methods: BCa bootstrap over pairs ({boot['resamples']:,} resamples, seed "
        f"{boot['seed']}; {EXPANDED_LEVELS}); the "
        "annotators' share from a jackknife over annotators (for label shares a bootstrap over "
        "annotators), weighted by how far the annotators' own leans exceed chance; label "
        "shares: binomial mid-p; position bias: exact; both-good shares: Wilson; quality "
        "differences: 90% t interval (TOST). Ties are a category of the agreement statistics only "
        "in studies that allow them, and are left out of position bias.",
        "",
    ]
    lines += aspect_markdown(report)
    return "\n".join(lines)


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"
