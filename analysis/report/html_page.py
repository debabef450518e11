"""report.html: one self-contained offline page (plotly.js inlined once, no network).

Every text that comes from the data (pair ids, annotator names, categories) is escaped: in the
page with html.escape, in chart labels too, because plotly renders a subset of HTML in them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence

import plotly.io as pio

from analysis.aspects.render import aspect_html
from analysis.report.numbers import fmt, fmt_p
from analysis.report.shape import Report, Section
from analysis.report.summary import (
    CHECK_HEADER,
    EXPANDED_LEVELS,
    HEADLINE_HEADER,
    OUTCOME_WORDS,
    STATUS_WORDS,
    check_rows,
    headline_table,
    intervals_in_words,
)
from analysis.vocabulary import DIMENSIONS, PREFERENCES

RELIABLE, TENTATIVE = 0.800, 0.667
_CHOSEN, _REJECTED = "#1b7837", "#b2182b"
MAX_LISTED_PAIRS = 50


# Legends go above the plots, right-aligned, not at the right edge where they crowd the last
# plot (console Agreement page at 1440x900 and 1280x720).
LEGEND_ABOVE = {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


# --- charts --------------------------------------------------------------------------------
# Figures are plain plotly dicts rendered without validation: building graph_objects costs
# more than a second of validator loading per report.


def _figure(data: list[Section], layout: Section) -> Section:
    return {"data": data, "layout": {"font": {"family": "system-ui, sans-serif"}, **layout}}


def _dotted_line(
    *, x: float | None = None, y: float | None = None, label: str, side: str = "center"
) -> tuple[Section, Section]:
    """A dotted reference line with its label; `side`: where a vertical line's label sits
    ("left" of the line, "right" of it or centred on it), so that two lines close together
    keep their labels apart."""
    if x is not None:
        shape: Section = {"type": "line", "x0": x, "x1": x, "yref": "paper", "y0": 0, "y1": 1}
        anchor = {"left": "right", "right": "left", "center": "center"}[side]
        note = {"x": x, "y": 1.0, "yref": "paper", "text": label, "showarrow": False,
                "xanchor": anchor, "yanchor": "bottom"}  # fmt: skip
    else:
        shape = {"type": "line", "y0": y, "y1": y, "xref": "paper", "x0": 0, "x1": 1}
        # outside the plot, right of the line's end: never over a bar or a point
        note = {"y": y, "x": 1, "xref": "paper", "text": label, "showarrow": False,
                "xanchor": "left", "yanchor": "middle"}  # fmt: skip
    shape["line"] = {"dash": "dot", "color": "grey"}
    return shape, note


def _alpha_chart(report: Report) -> Section:
    pref = report["preference"]
    items = [
        (
            f"preference alpha ({'/'.join(pref.get('categories', PREFERENCES))})",
            pref["alpha"],
        ),
        ("preference alpha (neutral orientation)", pref["alpha_neutral"]),
        ("preference AC1", pref["ac1"]),
        *[(f"quality alpha: {d}", report["quality"][d]["alpha"]) for d in DIMENSIONS],
    ]
    names, values, plus, minus, notes = [], [], [], [], []
    for name, estimate in items:
        names.append(name)
        value = estimate["value"]
        values.append(value)
        ci = estimate.get("ci95_annotators") or estimate["ci95"]
        plus.append(ci[1] - value if ci and value is not None else 0)
        minus.append(value - ci[0] if ci and value is not None else 0)
        notes.append(_e(estimate.get("note", "")))
    # 0.667 and 0.800 lie close on the axis: each label on its own side of its line
    lines = [_dotted_line(x=RELIABLE, label="reliable 0.800", side="right"),
             _dotted_line(x=TENTATIVE, label="tentative 0.667", side="left")]  # fmt: skip
    trace = {
        "type": "scatter",
        "x": values,
        "y": names,
        "mode": "markers",
        "marker": {"size": 11, "color": "#2166ac"},
        "error_x": {"type": "data", "array": plus, "arrayminus": minus, "visible": True},
        "text": notes,
        "hovertemplate": "%{y}: %{x:.3f}<br>%{text}<extra></extra>",
    }
    return _figure(
        [trace],
        {
            "title": {
                "text": "Agreement per question, with 95% intervals for annotators in general "
                "(these annotators only where too few pairs have three or more annotations)"
            },
            "xaxis": {"title": {"text": "coefficient"}},
            "yaxis": {"autorange": "reversed"},
            "shapes": [shape for shape, _ in lines],
            "annotations": [note for _, note in lines],
            "height": 380,
            "margin": {"l": 280},
        },
    )


def _quality_chart(report: Report) -> Section:
    traces, layout = [], {}
    width = 1 / len(DIMENSIONS)
    for col, dimension in enumerate(DIMENSIONS, start=1):
        suffix = "" if col == 1 else str(col)
        counts = report["quality"][dimension]["rating_counts"]
        for side, colour in (("chosen", _CHOSEN), ("rejected", _REJECTED)):
            total = sum(counts[side].values())
            traces.append(
                {
                    "type": "bar",
                    "x": list(counts[side].keys()),
                    "y": [v / total if total else 0 for v in counts[side].values()],
                    "name": side,
                    "marker": {"color": colour},
                    "showlegend": col == 1,
                    "legendgroup": side,
                    "customdata": list(counts[side].values()),
                    "hovertemplate": f"{side}, rating %{{x}}: %{{y:.1%}} (%{{customdata}})<extra></extra>",
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                }
            )
        # each later subplot leaves room on its left for its own percent ticks
        domain = [(col - 1) * width + (0.04 if col > 1 else 0), col * width - 0.02]
        layout[f"xaxis{suffix}"] = {
            "domain": domain,
            "anchor": f"y{suffix}",
            "title": {"text": dimension},
            "type": "category",
        }
        layout[f"yaxis{suffix}"] = {"tickformat": ".0%", "anchor": f"x{suffix}"}
    return _figure(
        traces,
        {
            "title": {
                "text": "General quality ratings: chosen vs rejected (share of ratings per value)"
            },
            "barmode": "group",
            "height": 360,
            # above the plots, not at the right edge where it crowds the last one
            "legend": LEGEND_ABOVE,
            **layout,
        },
    )


# One colour per verdict, by name: with the aspect check there are seven, and a list by
# position gave `valid` no colour and `rubric_not_reflected` valid's green.
VERDICT_COLOURS = {
    "insufficient_annotations": "#999999",
    "no_consensus": "#fdae61",
    "preference_flip": "#d73027",
    "low_quality": "#f46d43",
    "quality_confound": "#fee090",
    "rubric_not_reflected": "#9970ab",
    "valid": "#1a9850",
}


def _verdict_chart(report: Report) -> Section:
    verdicts = report["verdicts"]
    trace = {
        "type": "bar",
        "x": list(verdicts),
        "y": list(verdicts.values()),
        "marker": {"color": [VERDICT_COLOURS.get(v, "#666666") for v in verdicts]},
        "text": list(verdicts.values()),
        "textposition": "outside",  # above each bar, in the page's text colour
        "cliponaxis": False,
    }
    return _figure(
        [trace],
        {
            "title": {"text": "Pair verdicts (gold pairs excluded)"},
            "yaxis": {"title": {"text": "pairs"}},
            "height": 340,
        },
    )


# Names beside the annotators' points: plotly places text without avoiding other text, so each
# name takes the first of these places (offsets in px from the point: the box's left, bottom)
# whose box is clear of the names placed before it, on a plot assumed no larger than
# NAME_PLOT_PX (a larger plot only spreads the boxes further apart).
NAME_PLOT_PX = (800, 150)
NamePoint = tuple[float | None, float | None, str, str]  # x, y, name, preferred place
Box = tuple[float, float, float, float]  # left, bottom, right, top in px
NAME_CHAR_PX, NAME_HEIGHT_PX = 6.6, 15
_NAME_PLACES: dict[str, Callable[[float, float], tuple[float, float]]] = {
    "top right": lambda w, h: (2, 5),
    "bottom right": lambda w, h: (2, -5 - h),
    "top left": lambda w, h: (-2 - w, 5),
    "bottom left": lambda w, h: (-2 - w, -5 - h),
    "middle right": lambda w, h: (8, -h / 2),
    "middle left": lambda w, h: (-8 - w, -h / 2),
}


def _name_places(
    points: list[NamePoint], *, x_range: Sequence[float], y_range: Sequence[float]
) -> list[str]:
    """A text position for each (x, y, name, preferred place) point, so that names do not
    overlap (greedily, in the order given; the least crowded place when every one is taken)."""
    (x0, x1), (y0, y1) = x_range, y_range
    width, height = NAME_PLOT_PX
    placed: list[Box] = []
    out: list[str] = []
    for x, y, name, preferred in points:
        if x is None or y is None:
            out.append(preferred)
            continue
        px, py = (x - x0) / (x1 - x0) * width, (y - y0) / (y1 - y0) * height
        w, h = len(name) * NAME_CHAR_PX, NAME_HEIGHT_PX
        best: tuple[float, str, Box] = (math.inf, preferred, (px, py, px + w, py + h))
        for place in [preferred, *(p for p in _NAME_PLACES if p != preferred)]:
            dx, dy = _NAME_PLACES[place](w, h)
            box = (px + dx, py + dy, px + dx + w, py + dy + h)
            crowd = sum(
                max(0.0, min(box[2], o[2]) - max(box[0], o[0]))
                * max(0.0, min(box[3], o[3]) - max(box[1], o[1]))
                for o in placed
            )
            if crowd < best[0]:
                best = (crowd, place, box)
            if crowd == 0:
                break
        placed.append(best[2])
        out.append(best[1])
    return out


def _annotator_chart(report: Report) -> Section:
    rows = [a for a in report["annotators"] if a.get("n")]
    names = [_e(a["annotator"]) for a in rows]
    measures = (
        ("label_agreement", "picks chosen (ties left out)", _CHOSEN, "top right"),
        ("peer_agreement", "agrees with the other annotators' majority", "#2166ac", "bottom right"),
    )
    seconds = [a["median_seconds"] for a in rows if a.get("median_seconds") is not None]
    # room right of the slowest annotator for the name, and above 1 and below 0
    x_range = [0, max(seconds) * 1.3 if seconds and max(seconds) > 0 else 1]
    y_range = [-0.2, 1.2]
    # each point named; an annotator's two points (one a measure) and annotators of about the
    # same speed and shares keep their names apart (_name_places)
    places = _name_places(
        [
            (a["median_seconds"], a[key], name, preferred)
            for key, _, _, preferred in measures
            for a, name in zip(rows, names, strict=True)
        ],
        x_range=x_range,
        y_range=y_range,
    )
    traces = [
        {
            "type": "scatter",
            "x": [a["median_seconds"] for a in rows],
            "y": [a[key] for a in rows],
            "mode": "markers+text",
            "textposition": places[i * len(rows) : (i + 1) * len(rows)],
            "textfont": {"size": 11},
            "name": label,
            "marker": {
                "color": colour,
                "size": [min(30, 6 + a["n"] ** 0.5) for a in rows],
                "opacity": 0.7,
            },
            "text": names,
            "customdata": [a["n"] for a in rows],
            "hovertemplate": "%{text}: %{y:.2f}, median %{x:.0f} s, n = %{customdata}<extra></extra>",
        }
        for i, (key, label, colour, _) in enumerate(measures)
    ]
    return _figure(
        traces,
        {
            "title": {
                "text": "Per annotator: agreement vs median seconds per item (marker size ~ items)"
            },
            "xaxis": {"title": {"text": "median seconds per item"}, "range": x_range},
            "yaxis": {"title": {"text": "share"}, "range": y_range},
            "legend": {"orientation": "h", "x": 0, "y": -0.22, "yanchor": "top"},
            "height": 420,
        },
    )


def _position_chart(report: Report) -> Section:
    pb = report["preference"]["position_bias"]
    rows = sorted(
        (a for a in report["annotators"] if a.get("first_slot_rate") is not None),
        key=lambda a: a["first_slot_rate"],
    )
    traces = []
    if pb["first_slot_rate"] is not None:
        lo, hi = pb["ci95"]
        rate = pb["first_slot_rate"]
        traces.append(
            {
                "type": "bar",
                "x": ["all annotators"],
                "y": [rate],
                "name": "overall",
                "marker": {"color": "#5e3c99"},
                "error_y": {"type": "data", "array": [hi - rate], "arrayminus": [rate - lo]},
            }
        )
    traces.append(
        {
            "type": "bar",
            "x": [_e(a["annotator"]) for a in rows],
            "y": [a["first_slot_rate"] for a in rows],
            "name": "per annotator",
            "marker": {"color": "#b2abd2"},
            "customdata": [a["n_slot"] for a in rows],
            "hovertemplate": "%{x}: %{y:.2f} of %{customdata}<extra></extra>",
        }
    )
    shape, note = _dotted_line(y=0.5, label="no bias (0.5)")
    return _figure(
        traces,
        {
            "title": {
                "text": "Position bias: share of decisive picks of the first slot (A); ties left out"
            },
            "yaxis": {"range": [0, 1], "tickformat": ".0%"},
            "xaxis": {"type": "category"},
            "shapes": [shape],
            "annotations": [note],
            "margin": {"r": 110},  # the line's label
            "legend": LEGEND_ABOVE,
            "height": 360,
        },
    )


def figures(report: Report) -> list[tuple[str, Section]]:
    """The report's charts as (title, plotly figure dict), in page order."""
    return [
        ("Agreement on the preference", _alpha_chart(report)),
        ("General quality of chosen and rejected", _quality_chart(report)),
        ("Pair verdicts", _verdict_chart(report)),
        ("Annotators", _annotator_chart(report)),
        ("Position bias", _position_chart(report)),
    ]


# --- text ----------------------------------------------------------------------------------


def _band(value: float | None) -> str:
    if value is None:
        return "undefined"
    if value >= RELIABLE:
        return "reliable (>= 0.800)"
    if value >= TENTATIVE:
        return "good enough for tentative conclusions only (0.667-0.800)"
    return "below the 0.667 that Krippendorff treats as the minimum"


def reading(report: Report) -> list[str]:
    """A short plain-language reading of the numbers, one paragraph per item."""
    pref = report["preference"]
    paragraphs = []
    pa, a, an, ac1 = (
        pref["percent_agreement"],
        pref["alpha"]["value"],
        pref["alpha_neutral"]["value"],
        pref["ac1"]["value"],
    )
    paragraphs.append(
        f"Annotators agreed on {fmt(pa)} of the pairs of judgements they share (percent "
        f"agreement), which after correcting for chance gives Krippendorff's alpha {fmt(a)} "
        f"on chosen/rejected/tie, {fmt(an)} when each pair's responses are ordered by a neutral "
        f"hash of its id, and Gwet's AC1 {fmt(ac1)}."
    )
    paragraphs.append(
        "Why these can disagree (the kappa paradox): alpha subtracts the agreement expected by "
        "chance, estimated from how often each label is used overall. When nearly everyone "
        "picks chosen, as a well-built benchmark hopes, chance agreement is already high, so "
        "even 80-90% raw agreement can leave alpha near zero. The neutral orientation removes "
        "the lopsidedness that comes from the label itself, and AC1 uses a chance term that "
        "stays small with skewed labels; read the three together with percent agreement."
    )
    checked = report["conclusion"]["checks"].get("quality", {}).get("dimensions", {})
    for dimension in DIMENSIONS:
        q = report["quality"][dimension]
        # the sentence follows the quality check where it looked at the dimension, so that the
        # reading never calls equivalent what the check does not accept (too few pairs)
        check = checked.get(dimension)
        shown = check["outcome"] == "passed" if check else q["equivalent"]
        why = (check or {}).get("note") or f"TOST p {fmt_p(q['tost_p'])}"
        paragraphs.append(
            f"Quality ({dimension}): ordinal alpha {fmt(q['alpha']['value'])}, "
            f"{_band(q['alpha']['value'])}. Chosen averaged {fmt(q['mean_chosen'], 2)} and "
            f"rejected {fmt(q['mean_rejected'], 2)} (difference {fmt(q['mean_diff'], 2)}); "
            + (
                "the equivalence test shows the two within "
                f"+-{q['margin']} (TOST p {fmt_p(q['tost_p'])})."
                if shown
                else f"equivalence within +-{q['margin']} is not shown ({why})."
            )
        )
    conclusion = report["conclusion"]
    verdict = {
        "supported": "Personal preference was the main factor that separated the pairs: ",
        "not_supported": "The data speak against personal preference as the main factor: ",
        "insufficient_evidence": "The data are too few to say whether personal preference "
        "was the main factor: ",
    }.get(conclusion.get("status"), "")
    parts = [
        f"the {name} check {'found ' if check.get('outcome') == 'insufficient' else ''}{OUTCOME_WORDS.get(check.get('outcome'), '')}"
        + (f" ({check['note']})" if check.get("note") else "")
        for name, check in conclusion["checks"].items()
    ]
    paragraphs.append(verdict + "; ".join(parts) + ".")
    paragraphs.append(intervals_in_words(report["counts"]["annotators"]))
    return paragraphs


def _table(rows: Iterable[Sequence[object]], header: Sequence[str]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _pairs_to_check(report: Report) -> str:
    rows = [p for p in report["pairs"] if p["verdict"] != "valid" and not p["is_gold"]]
    shown = [
        (p["pair_id"], p["verdict"], p["n_annotations"], p["majority"] or "", ", ".join(p["flags"]))
        for p in rows[:MAX_LISTED_PAIRS]
    ]
    more = (
        f"<p>{len(rows) - MAX_LISTED_PAIRS:,} more in pairs.csv.</p>"
        if len(rows) > MAX_LISTED_PAIRS
        else ""
    )
    return _table(shown, ("pair", "verdict", "annotations", "majority", "flags")) + more


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.verdict{font-size:1.15em;padding:.6em 1em;border-radius:6px}
.yes{background:#e5f5e0}.no{background:#fee0d2}
"""


def render_html(report: Report) -> str:
    from analysis.judges.render import models_html  # the models section (issue 14)
    from analysis.population.render import population_html  # sampled studies (issue 24)

    charts = [
        pio.to_html(
            figure,
            full_html=False,
            include_plotlyjs=(i == 0),
            validate=False,
            config={"displaylogo": False},
        )
        for i, (_, figure) in enumerate(figures(report))
    ]
    counts = report["counts"]
    main = report["conclusion"]["personal_preference_main_factor"]
    status = report["conclusion"].get("status")
    boot = report["methods"]["bootstrap"]
    headline = headline_table(report)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>Agreement and pair validation report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Agreement and pair validation</h1>",
        f"<p>{counts['pairs']:,} pairs, {counts['annotators']:,} annotators, "
        f"{counts['annotations']:,} annotations; {counts['gold_pairs']:,} gold pairs left out "
        "of the statistics.</p>",
        f"<p class='verdict {'yes' if main else 'no'}'>Personal preference the main "
        f"discriminating factor: <b>{'yes' if main else 'no'}</b> "
        f"({_e(STATUS_WORDS.get(status, status))})</p>",
        "<h2>Conclusion checks</h2>",
        _table(check_rows(report), CHECK_HEADER),
        "<h2>Reading the results</h2>",
        *[f"<p>{_e(p)}</p>" for p in reading(report)],
        "<h2>Headline numbers</h2>",
        _table(headline.rows, HEADLINE_HEADER),
        *[f"<p>{_e(note)}</p>" for note in headline.notes],
        f"<p>Intervals: 95% BCa bootstrap over pairs, {boot['resamples']:,} resamples, "
        f"seed {boot['seed']}, {EXPANDED_LEVELS}. "
        f"Reference values for alpha (Krippendorff 2004): >= {RELIABLE:.3f} reliable, "
        f"{TENTATIVE:.3f}-{RELIABLE:.3f} tentative conclusions only.</p>",
        "<h2>Charts</h2>",
        *charts,
        *aspect_html(report),
        "<h2>Pairs to look at</h2>",
        _pairs_to_check(report),
        models_html(report),
        population_html(report),
        "<h2>Method notes</h2>",
        _table(_method_rows(report["methods"]), ("topic", "note")),
        "</body></html>",
    ]
    return "\n".join(parts)


def _method_rows(methods: Section, prefix: str = "") -> list[tuple[str, str]]:
    rows = []
    for key, value in methods.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _method_rows(value, prefix=f"{name}: ")
        else:
            rows.append((name, str(value)))
    return rows
