"""The models section of summary.md, report.html, models.csv and the console: tables and the
accuracy chart, from the report keys ``models``, ``human_reference`` and ``model_differences``.

Model names come from the command line or an upload: they are escaped in HTML (plotly renders
a subset of HTML in labels too) and in Markdown table cells.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from analysis.files.csv_cells import neutralise_frame
from analysis.report.numbers import fmt, fmt_ci, fmt_p
from analysis.report.shape import Report, Section

MODEL_HEADER = (
    "model",
    "accuracy",
    "95% CI",
    "valid pairs",
    "95% CI (valid)",
    "flipped pairs",
    "agrees with majority",
    "kappa",
    "chosen first / second",
    "position p",
    "ties",
    "parse failures",
)
DIFFERENCE_HEADER = ("models", "pairs", "difference", "paired 95% CI", "n")
HUMAN_HEADER = ("human reference", "accuracy", "95% CI", "n pairs")
_ALL, _VALID, _BAND = "#2166ac", "#1b7837", "rgba(90,90,90,0.25)"


def has_models(report: Report) -> bool:
    return bool(report.get("models"))


def model_rows(report: Report) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for m in report["models"]:
        pos = m["position"]
        agreement = m["agreement_with_humans"]
        rows.append(
            (
                m["name"],
                fmt(m["accuracy"]["value"]),
                fmt_ci(m["accuracy"]["ci95"]),
                f"{fmt(m['accuracy_valid']['value'])} (n = {m['accuracy_valid']['n']:,})",
                fmt_ci(m["accuracy_valid"]["ci95"]),
                f"{fmt(m['accuracy_flip']['value'])} (n = {m['accuracy_flip']['n']:,})",
                f"{fmt(agreement['value'])} (n = {agreement['n']:,})",
                fmt(agreement["kappa"]),
                (
                    f"{fmt(pos['accuracy_chosen_first'])} / {fmt(pos['accuracy_chosen_second'])}"
                    if pos
                    else "n/a (scores)"
                ),
                fmt_p(pos["p_value"]) if pos else "",
                f"{m['ties']:,}",
                "n/a" if m["parse_failed"] is None else f"{m['parse_failed']:,}",
            )
        )
    return rows


def human_rows(report: Report) -> list[tuple[str, ...]]:
    ref = report["human_reference"]
    return [
        (label, fmt(e["value"]), fmt_ci(e["ci95"]), f"{e['n']:,}")
        for label, e in (
            ("majority of annotators", ref["majority_accuracy"]),
            ("average single annotator", ref["annotator_accuracy"]),
        )
    ]


_NOTED = (
    ("accuracy", "ci95_note", "accuracy's interval"),
    ("accuracy_valid", "note", "valid pairs"),
    ("accuracy_valid", "ci95_note", "valid pairs' interval"),
    ("accuracy_flip", "note", "flipped pairs"),
    ("agreement_with_humans", "note", "agrees with majority"),
    ("position", "note", "chosen first / second"),
)


def undefined_notes(report: Report) -> list[str]:
    """Why the tables show n/a (or no interval) where they do: each note of the models and
    of the human reference once, with the models it applies to (most depend on the human
    answers, not on the model)."""
    models: dict[tuple[str, str], list[str]] = {}
    for m in report["models"]:
        for key, note_key, label in _NOTED:
            note = (m[key] or {}).get(note_key)  # position: None for scores
            if note:
                models.setdefault((label, note), []).append(m["name"])
    out = [f"{label} ({', '.join(names)}): {note}" for (label, note), names in models.items()]
    for label, key in (
        ("majority of annotators", "majority_accuracy"),
        ("average single annotator", "annotator_accuracy"),
    ):
        note = report["human_reference"][key].get("note")
        if note:
            out.append(f"human reference, {label}: {note}")
    return out


def difference_rows(report: Report) -> list[tuple[str, ...]]:
    return [
        (
            f"{d['a']} - {d['b']}",
            "all" if d["subset"] == "all" else "valid only",
            fmt(d["difference"]),
            fmt_ci(d["ci95"]),
            f"{d['n']:,}",
        )
        for d in report["model_differences"]
    ]


RULES = (
    "Accuracy is against the constructed label (chosen), per pair: 1 for chosen, 0 for "
    "rejected or an unparsed answer, 1/2 for a tie. Valid and flipped pairs are those whose "
    "human verdict is valid or preference_flip; on flipped pairs a low accuracy means the model "
    "sides with the humans. Agreement is with the strict human majority (kappa: Cohen's "
    "weighted kappa, ties half). Position: accuracy with chosen shown first and second (pairwise "
    "judges), Fisher's exact test. Intervals: 95% bootstrap over pairs; differences resample "
    "the same pairs for both models (paired)."
)


def _md_cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]


def error_sentences(report: Report) -> list[str]:
    """Per model, where its errors fall (the benchmark's share of them)."""
    out = []
    for m in report["models"]:
        e = m["errors"]
        if not e["total"]:
            out.append(f"{m['name']}: no errors.")
            continue
        errors = f"{e['total']:g} error{'' if e['total'] == 1 else 's'} (ties count 1/2)"
        if e["share_not_valid"] is None:  # no human verdict on any pair yet
            out.append(f"{m['name']}: {errors}; no pair has a human verdict yet.")
            continue
        out.append(
            f"{m['name']}: {errors}: {e['preference_flip']:g} on "
            f"pairs the humans flipped, {e['other']:g} on other pairs they did not validate, "
            f"{e['valid']:g} on valid pairs; {e['share_not_valid']:.0%} of its error is on "
            "pairs whose label the humans did not confirm."
        )
    return out


def models_markdown(report: Report) -> str:
    """The summary.md section (empty without models)."""
    if not has_models(report):
        return ""
    lines = ["", "## Models against the humans", ""]
    lines += _md_table(MODEL_HEADER, model_rows(report))
    lines += ["", *[f"- {_md_cell(sentence)}" for sentence in error_sentences(report)]]
    lines += ["", "Human reference (the ceiling), by the same rule:", ""]
    lines += _md_table(HUMAN_HEADER, human_rows(report))
    if report["model_differences"]:
        lines += ["", "Differences between models (accuracy, paired bootstrap):", ""]
        lines += _md_table(DIFFERENCE_HEADER, difference_rows(report))
    return "\n".join([*lines, "", RULES, ""])


def models_figure(report: Report) -> Section:
    """Each model's accuracy on all pairs and on valid pairs (95% intervals), with the human
    reference on all pairs (average single annotator to majority) as a band."""
    names = [html.escape(m["name"], quote=True) for m in report["models"]]
    traces = []
    for key, label, colour in (
        ("accuracy", "all pairs", _ALL),
        ("accuracy_valid", "valid pairs only", _VALID),
    ):
        values = [m[key]["value"] for m in report["models"]]
        cis = [m[key]["ci95"] for m in report["models"]]
        traces.append(
            {
                "type": "bar",
                "name": label,
                "x": names,
                "y": values,
                "marker": {"color": colour},
                "error_y": {
                    "type": "data",
                    "array": [
                        ci[1] - v if ci and v is not None else 0
                        for v, ci in zip(values, cis, strict=True)
                    ],
                    "arrayminus": [
                        v - ci[0] if ci and v is not None else 0
                        for v, ci in zip(values, cis, strict=True)
                    ],
                },
                "hovertemplate": f"%{{x}}, {label}: %{{y:.3f}}<extra></extra>",
            }
        )
    ref = report["human_reference"]
    low, high = ref["annotator_accuracy"]["value"], ref["majority_accuracy"]["value"]
    shapes, notes = [], []
    if low is not None and high is not None:
        lo, hi = sorted((low, high))
        # Above the bars (translucent): below them a tall bar would hide the ceiling.
        shapes.append(
            {"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "y0": lo, "y1": hi,
             "fillcolor": _BAND, "line": {"width": 1, "color": "grey", "dash": "dot"},
             "layer": "above"}
        )  # fmt: skip
        notes.append(
            {"xref": "paper", "yref": "paper", "x": 0, "y": 1.0, "xanchor": "left",
             "yanchor": "bottom", "showarrow": False,
             "text": f"grey band: humans on all pairs, from the average single annotator "
                     f"({low:.3f}) to the majority ({high:.3f})"}
        )  # fmt: skip
    return {
        "data": traces,
        "layout": {
            "font": {"family": "system-ui, sans-serif"},
            "title": {"text": "Model accuracy against the label: all pairs vs valid pairs"},
            "barmode": "group",
            "yaxis": {"range": [0, 1.05], "tickformat": ".0%", "title": {"text": "accuracy"}},
            "xaxis": {"type": "category"},
            "shapes": shapes,
            "annotations": notes,
            "height": 420,
            "margin": {"t": 90},
        },
    }


def _html_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def models_html(report: Report, *, include_plotlyjs: bool = False) -> str:
    """The report.html section (empty without models); plotly.js is already in the page."""
    if not has_models(report):
        return ""
    import plotly.io as pio

    chart = pio.to_html(
        models_figure(report),
        full_html=False,
        include_plotlyjs=include_plotlyjs,
        validate=False,
        config={"displaylogo": False},
    )
    parts = [
        "<h2>Models against the humans</h2>",
        _html_table(MODEL_HEADER, model_rows(report)),
        "<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in error_sentences(report)) + "</ul>",
        "<p>Human reference (the ceiling), by the same rule:</p>",
        _html_table(HUMAN_HEADER, human_rows(report)),
    ]
    if report["model_differences"]:
        parts += [
            "<p>Differences between models (accuracy, paired bootstrap):</p>",
            _html_table(DIFFERENCE_HEADER, difference_rows(report)),
        ]
    parts += [chart, f"<p>{html.escape(RULES)}</p>"]
    return "\n".join(parts)


CSV_COLUMNS = (
    "name", "layout", "n",
    "accuracy", "accuracy_ci95_low", "accuracy_ci95_high",
    "accuracy_valid", "accuracy_valid_ci95_low", "accuracy_valid_ci95_high", "n_valid",
    "accuracy_flip", "n_flip",
    "agreement_with_humans", "kappa", "n_agreement",
    "accuracy_chosen_first", "accuracy_chosen_second", "position_p_value",
    "ties", "parse_failed", "errors", "errors_valid", "errors_flip", "errors_other",
)  # fmt: skip


def models_frame(report: Report) -> pd.DataFrame:
    """models.csv: one row per model, the numbers of report.json's ``models``."""
    rows = []
    for m in report["models"]:
        pos = m["position"] or {}
        acc, valid = m["accuracy"], m["accuracy_valid"]
        agreement = m["agreement_with_humans"]
        rows.append(
            (
                m["name"], m["layout"], m["n"],
                acc["value"], *(acc["ci95"] or (None, None)),
                valid["value"], *(valid["ci95"] or (None, None)), valid["n"],
                m["accuracy_flip"]["value"], m["accuracy_flip"]["n"],
                agreement["value"], agreement["kappa"], agreement["n"],
                pos.get("accuracy_chosen_first"), pos.get("accuracy_chosen_second"),
                pos.get("p_value"), m["ties"], m["parse_failed"],
                m["errors"]["total"], m["errors"]["valid"], m["errors"]["preference_flip"],
                m["errors"]["other"],
            )
        )  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
    return frame.astype({"parse_failed": "Int64"})


def models_csv_bytes(report: Report) -> bytes:
    # Model names are user text: no cell may become a spreadsheet formula (csv_cells).
    return neutralise_frame(models_frame(report)).to_csv(index=False).encode("utf-8")


def write_models_csv(report: Report, path: Path) -> None:
    path.write_bytes(models_csv_bytes(report))
