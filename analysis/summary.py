"""summary.md: the headline table with 95% intervals, ready to paste into a paper."""

from __future__ import annotations

from analysis.tables import DIMENSIONS


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def fmt_ci(ci) -> str:
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""


def fmt_p(p) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def headline_rows(report: dict) -> list[tuple[str, str, str, str]]:
    """(statistic, value, 95% interval, n / note) rows shared by summary.md and the HTML."""
    pref = report["preference"]
    rows = [
        (
            "Percent agreement (preference)",
            fmt(pref["percent_agreement"]),
            fmt_ci(pref["percent_agreement_ci95"]),
            f"{pref['n_pairable_pairs']:,} pairs with >= 2 annotations",
        ),
        ("Krippendorff's alpha, nominal (chosen/rejected/tie)", *_estimate(pref["alpha"])),
        ("Krippendorff's alpha, nominal, neutral orientation", *_estimate(pref["alpha_neutral"])),
        ("Gwet's AC1 (preference)", *_estimate(pref["ac1"])),
    ]
    la = pref["label_agreement"]
    rows.append(
        (
            "Label agreement (majority = chosen)",
            fmt(la["value"]),
            fmt_ci(la["ci95"]),
            la.get("note") or f"n = {la['n']:,} decided pairs, one-sided p {fmt_p(la['p_value'])}",
        )
    )
    rows.append(("Tie rate", fmt(pref["tie_rate"]), "", f"{pref['n_ties']:,} ties"))
    pb = pref["position_bias"]
    rows.append(
        (
            "First-slot rate (position bias)",
            fmt(pb["first_slot_rate"]),
            fmt_ci(pb["ci95"]),
            pb.get("note") or f"n = {pb['n']:,}, two-sided p {fmt_p(pb['p_value'])}",
        )
    )
    for dimension in DIMENSIONS:
        q = report["quality"][dimension]
        rows.append((f"Quality alpha, ordinal: {dimension}", *_estimate(q["alpha"])))
        rows.append(
            (
                f"Quality difference chosen - rejected: {dimension}",
                fmt(q["mean_diff"]),
                "90% " + fmt_ci(q["diff_ci90"]) if q["diff_ci90"] else "",
                q.get("note")
                or f"TOST p {fmt_p(q['tost_p'])} (margin {q['margin']}), equivalent: {fmt(q['equivalent'])}",
            )
        )
        rows.append(
            (
                f"Both responses good: {dimension}",
                fmt(q["both_high_share"]),
                fmt_ci(q["both_high_ci95"]),
                f"n = {q['n_pairs']:,} pairs",
            )
        )
    reason = report["main_reason"]
    personal = None if not reason["n"] else reason["personal_fit"] + reason["both"]
    rows.append(
        (
            "Main reason: personal fit (alone or with quality)",
            fmt(personal),
            "",
            reason.get("note") or f"n = {reason['n']:,} annotations with a reason",
        )
    )
    return rows


def _estimate(estimate: dict) -> tuple[str, str, str]:
    return fmt(estimate["value"]), fmt_ci(estimate["ci95"]), estimate.get("note", "")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_summary(report: dict) -> str:
    counts = report["counts"]
    boot = report["methods"]["bootstrap"]
    conclusion = report["conclusion"]
    lines = [
        "# Agreement and pair validation",
        "",
        f"{counts['pairs']:,} pairs, {counts['annotators']:,} annotators, "
        f"{counts['annotations']:,} annotations"
        + (f" (gold pairs excluded: {counts['gold_pairs']:,})" if counts["gold_pairs"] else "")
        + ".",
        "",
        "| Statistic | Value | 95% CI | n / note |",
        "| --- | ---: | --- | --- |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in headline_rows(report)]
    verdicts = ", ".join(f"{k} {v:,}" for k, v in report["verdicts"].items())
    lines += [
        "",
        f"Pair verdicts: {verdicts}.",
        "",
        "Personal preference the main discriminating factor: "
        f"**{fmt(conclusion['personal_preference_main_factor'])}** "
        "(label agreement significantly above 1/2: "
        f"{fmt(conclusion['checks']['label_agreement']['passed'])}; all rated quality dimensions "
        f"equivalent: {fmt(conclusion['checks']['equal_quality']['passed'])}; personal fit the "
        f"most frequent main reason: {fmt(conclusion['checks']['main_reason']['passed'])}).",
        "",
        f"Intervals: 95% percentile bootstrap over pairs ({boot['resamples']:,} resamples, seed "
        f"{boot['seed']}); label agreement: exact Clopper-Pearson; position bias: exact; "
        "both-good shares: Wilson; quality differences: 90% t interval (TOST). Ties are a third "
        "category in agreement statistics and are left out of label agreement and position bias.",
        "",
    ]
    return "\n".join(lines)
