"""The `population` key (analysis/population/estimates.py) in summary.md and report.html."""

from __future__ import annotations

import html
from collections.abc import Sequence

from analysis.report.shape import Population, Report

HEADER = ("verdict", "share of the benchmark", "95% CI", "human only", "95% CI (human only)")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _interval(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}%"


def population_rows(report: Report) -> list[tuple[str, ...]]:
    estimates = report["population"]["estimates"]
    return [
        (
            name,
            _pct(e["share"]),
            _interval(e["ci95"]),
            _pct(e["share_human_only"]),
            _interval(e["ci95_human_only"]),
        )
        for name, e in estimates.items()
    ]


def _facts(section: Population) -> list[str]:
    strata = "; ".join(
        f"{name}: {s['labelled']:,} labelled of {s['pairs']:,}"
        for name, s in section["strata"].items()
    )
    left = section["bad_left"]
    lines = [
        f"Population: {section['pairs_total']:,} pairs, {section['pairs_sampled']:,} sampled "
        f"for labelling, {section['pairs_labelled']:,} labelled ({strata}).",
        f"Bad pairs found (labelled, verdict not valid): {section['bad_found']:,}.",
    ]
    if left.get("value") is not None:
        ci = left.get("ci95")
        span = f" (95% CI {ci[0]:.0f}-{ci[1]:.0f})" if ci else ""
        share_ci = left.get("share_of_cleaned_ci95")
        share_span = f", 95% CI {_interval(share_ci)}" if share_ci else ""
        lines.append(
            f"Bad pairs left among the unchecked: an estimated {left['value']:.0f}{span}, "
            f"{_pct(left.get('share_of_cleaned'))} of the cleaned benchmark{share_span}."
        )
    else:
        lines.append(f"Bad pairs left among the unchecked: not estimable ({left.get('note')}).")
    if section.get("note"):
        lines.append(f"Note: {section['note']}.")
    return lines


def population_markdown(report: Report) -> str:
    section = report.get("population")
    if not section:
        return ""
    lines = ["", "## The whole benchmark (sampled study)", "", section["sentence"], ""]
    lines += [f"- {fact}" for fact in _facts(section)]
    lines += ["", "| " + " | ".join(HEADER) + " |", "| --- | ---: | --- | ---: | --- |"]
    lines += ["| " + " | ".join(row) + " |" for row in population_rows(report)]
    lines += [
        "",
        "Estimates: stratified by the sample's strata with the stored inclusion "
        "probabilities and the finite-population correction; with a judge (--model), "
        "prediction-powered (PPI++, power-tuned). Normal 95% intervals.",
        "",
    ]
    return "\n".join(lines)


def population_html(report: Report) -> str:
    section = report.get("population")
    if not section:
        return ""
    e = html.escape
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>"
        for row in population_rows(report)
    )
    head = "".join(f"<th>{e(cell)}</th>" for cell in HEADER)
    facts = "".join(f"<li>{e(fact)}</li>" for fact in _facts(section))
    return (
        "<h2>The whole benchmark (sampled study)</h2>"
        f"<p class='population-sentence'>{e(section['sentence'])}</p>"
        f"<ul>{facts}</ul><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )
