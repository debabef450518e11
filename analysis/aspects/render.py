"""The aspect check's section of summary.md and report.html (present with aspect scores)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from analysis.report.numbers import fmt, fmt_ci, fmt_p
from analysis.report.shape import Report, Section

TITLE = "Rubric aspects: do humans see chosen cover them and rejected miss them?"
LISTED_DISAGREEMENTS = 5


def _estimate(estimate: Section | None, n: str = "") -> tuple[str, str, str]:
    if not estimate:
        return "n/a", "", n
    note = "; ".join(part for part in (n, estimate.get("note")) if part)
    return fmt(estimate.get("value")), fmt_ci(estimate.get("ci95")), note


ROW_HEADER = ("statistic", "value", "95% interval", "n / note")
SCALE_SENTENCE = (
    "Annotators gave each rubric aspect a match score for each response (0 not covered, "
    "1 somewhat, 2 very well, the benchmark's scorer's scale)."
)


def verdict_sentence(report: Report, *, verdict: str = "rubric_not_reflected") -> str:
    """How a pair gets the verdict and how many have it; ``verdict``: the verdict's name as
    the caller marks it up (already escaped for HTML)."""
    section = report["aspects"]
    return (
        f"A pair is {verdict} when chosen's mean coverage exceeds rejected's by less than "
        f"{fmt(section['gap_threshold'], 2)}; pairs with this verdict: "
        f"{report['verdicts'].get('rubric_not_reflected', 0):,}."
    )


def aspect_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """(statistic, value, 95% interval, n / note) rows of the aspect check: the annotators'
    rows, then the scorer's (with --aspect-scores)."""
    return human_rows(report) + scorer_rows(report)


def human_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """The rows of the annotators' own scores."""
    section = report["aspects"]
    check = report["conclusion"]["checks"]["aspects"]
    n_pairs = f"n = {section['n_pairs']:,} pairs with aspect scores"
    rows = [
        (
            "Coverage of the rubric aspects, chosen (0-2)",
            fmt(section["chosen_coverage"]),
            "",
            n_pairs,
        ),
        (
            "Coverage of the rubric aspects, rejected (0-2)",
            fmt(section["rejected_coverage"]),
            "",
            n_pairs,
        ),
        (
            f"Pairs whose construction humans confirm (gap >= {fmt(section['gap_threshold'], 2)})",
            fmt(check["value"]),
            fmt_ci(check["ci95"]),
            check.get("note")
            or f"{check['k']:,} of {check['n']:,} pairs, one-sided p {fmt_p(check['p_value'])}",
        ),
        (
            "Agreement on the scores, ordinal alpha (pair, aspect, response)",
            *_estimate(section["agreement"], f"{section['n_annotations']:,} annotations"),
        ),
    ]
    for part in section["by_aspect"]:
        rows.append(
            (
                f"Agreement on aspect {part['aspect']} of each rubric",
                *_estimate(part["agreement"], f"n = {part['n_pairs']:,} pairs"),
            )
        )
    return rows


def scorer_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """The rows comparing the automatic scorer with the annotators (none without a scorer)."""
    scorer = report["aspects"].get("scorer")
    rows = []
    if scorer:
        rows.append(
            (
                "Automatic scorer vs human mean score, ordinal alpha",
                *_estimate(scorer["agreement"], f"n = {scorer['n']:,} pairs"),
            )
        )
        for part in scorer.get("by_aspect", []):
            rows.append(
                (
                    f"Scorer vs humans on aspect {part['aspect']}",
                    *_estimate(part["agreement"], f"n = {part['n_pairs']:,} pairs"),
                )
            )
        for key, label in (
            ("predicts_majority", "Scorer's gap predicts the human majority for chosen (AUC)"),
            ("predicts_confirmed", "Scorer's gap predicts humans confirming the pair (AUC)"),
        ):
            if key in scorer:
                a = scorer[key]
                rows.append(
                    (label, *_estimate(a, f"{a['n_positive']:,} vs {a['n_negative']:,} pairs"))
                )
        if "gap_correlation" in scorer:
            c = scorer["gap_correlation"]
            rows.append(
                ("Scorer's gap vs humans' gap, Spearman", *_estimate(c, f"n = {c['n']:,} pairs"))
            )
    return rows


def disagreement_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """The pairs where the scorer and the annotators disagree most (DISAGREEMENT_HEADER)."""
    scorer = report["aspects"].get("scorer") or {}
    return [
        (d["pair_id"], fmt(d["mean_abs_diff"]), fmt(d["scorer_gap"]), fmt(d["human_gap"]))
        for d in scorer.get("disagreements", [])[:LISTED_DISAGREEMENTS]
    ]


DISAGREEMENT_HEADER = ("pair", "mean absolute difference", "scorer's gap", "humans' gap")
COVERAGE_HEADER = (
    "pair",
    "verdict",
    "chosen coverage",
    "rejected coverage",
    "gap",
    "chosen per aspect",
    "rejected per aspect",
    "annotations",
)


def coverage_rows(report: Report) -> list[tuple[object, ...]]:
    """Per non-gold pair with aspect scores (COVERAGE_HEADER), the smallest gap first: its
    verdict, chosen's and rejected's coverage (numbers, 0-2), the gap, the annotators' mean
    score per aspect in rubric order, and how many annotations scored its aspects."""
    pairs = [p for p in report["pairs"] if not p["is_gold"] and p.get("n_aspect_annotations")]
    pairs.sort(key=lambda p: (p["aspects_gap"] is None, p["aspects_gap"]))

    def means(values: Sequence[float | None] | None) -> str:
        return ", ".join(fmt(v, 2) for v in values or [])

    return [
        (
            p["pair_id"],
            p["verdict"],
            p["aspects_chosen_coverage"],
            p["aspects_rejected_coverage"],
            p["aspects_gap"],
            means(p["aspects_chosen_means"]),
            means(p["aspects_rejected_means"]),
            p["n_aspect_annotations"],
        )
        for p in pairs
    ]


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def aspect_markdown(report: Report) -> list[str]:
    """summary.md lines of the section (none without aspect scores)."""
    if "aspects" not in report:
        return []
    verdicts = report["verdicts"]
    lines = [
        f"## {TITLE}",
        "",
        "| Statistic | Value | 95% CI | n / note |",
        "| --- | ---: | --- | --- |",
        *["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in aspect_rows(report)],
        "",
        f"Pairs whose chosen response does not cover the aspects clearly better "
        f"(`rubric_not_reflected`): {verdicts.get('rubric_not_reflected', 0):,}. "
        f"Conclusion check `aspects`: "
        f"{report['conclusion']['checks']['aspects']['outcome']} (threshold "
        f"{report['conclusion']['checks']['aspects']['threshold']}).",
        "",
    ]
    rows = disagreement_rows(report)
    if rows:
        lines += [
            "Pairs where the automatic scorer and the annotators disagree most:",
            "",
            "| " + " | ".join(DISAGREEMENT_HEADER) + " |",
            "| --- | ---: | ---: | ---: |",
            *["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows],
            "",
        ]
    return lines


def _html_table(rows: Iterable[Sequence[object]], header: Sequence[str]) -> str:
    e = html.escape
    head = "".join(f"<th>{e(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def aspect_html(report: Report) -> list[str]:
    """report.html parts of the section (none without aspect scores)."""
    if "aspects" not in report:
        return []
    parts = [
        f"<h2>{html.escape(TITLE)}</h2>",
        f"<p>{html.escape(SCALE_SENTENCE, quote=False)} "
        f"{verdict_sentence(report, verdict='<code>rubric_not_reflected</code>')}</p>",
        _html_table(aspect_rows(report), ROW_HEADER),
    ]
    rows = disagreement_rows(report)
    if rows:
        parts += [
            "<p>Pairs where the automatic scorer and the annotators disagree most:</p>",
            _html_table(rows, DISAGREEMENT_HEADER),
        ]
    return parts
