"""The report never crashes on a valid annotations table, and never reports NaN or a bare null."""

from __future__ import annotations

import json
import tempfile

import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analysis.files.annotations_table import validate_annotations
from analysis.report.build import ReportOptions, build_report
from analysis.report.files import write_report
from analysis.vocabulary import RATING_COLUMNS
from tests.report_fixtures import frame, row

ratings = st.one_of(st.none(), st.integers(1, 5))


@st.composite
def tables(draw) -> pd.DataFrame:
    pairs = draw(st.lists(st.sampled_from(["p1", "p2", "p3", "p4", "p5"]), min_size=1, unique=True))
    annotators = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, unique=True))
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(pairs), st.sampled_from(annotators)), min_size=0, unique=True
        )
    )
    rows = []
    for pair_id, annotator in keys:
        record = row(
            pair_id,
            annotator,
            draw(st.sampled_from(["chosen", "rejected", "tie"])),
            position=draw(st.sampled_from([None, "A", "B"])),
            reason=draw(
                st.sampled_from([None, "personal_fit", "general_quality", "both", "unsure"])
            ),
            seconds=draw(st.one_of(st.none(), st.floats(0, 1000))),
        )
        for column in RATING_COLUMNS:
            record[column] = draw(ratings)
        rows.append(record)
    return frame(rows)


ONE_ANNOTATOR = frame([row("p1", "a", "chosen"), row("p2", "a", "rejected")])
ONE_PAIR = frame([row("p1", "a", "chosen", chosen=(5, 5, 5)), row("p1", "b", "tie")])
ALL_TIES = frame([row(p, a, "tie", position="A") for p in ("p1", "p2") for a in ("a", "b")])
NO_RATINGS = frame([row(p, a, "chosen") for p in ("p1", "p2") for a in ("a", "b")])
EMPTY = frame([])


STATISTICS = {
    "value",
    "p_value",
    "first_slot_rate",
    "mean_chosen",
    "mean_rejected",
    "mean_diff",
    "tost_p",
    "equivalent",
    "both_high_share",
    "personal_fit",
    "general_quality",
    "both",
    "unsure",
    "followed_rubric_share",
    "personal_share",
}


def undefined_without_note(node, path="report") -> list[str]:
    """Paths of statistics that are null without a note next to them. (The report's only
    lists of records are the per-pair and per-annotator tables, whose empty cells need none.)"""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            if value is None and key in STATISTICS and "note" not in node:
                found.append(here)
            bare = key in ("percent_agreement", "tie_rate")
            if value is None and bare and f"{key}_note" not in node:
                found.append(here)
            found += undefined_without_note(value, here)
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(), bootstrap=st.sampled_from([0, 25]), min_annotations=st.integers(1, 3))
@example(table=ONE_ANNOTATOR, bootstrap=25, min_annotations=2)
@example(table=ONE_PAIR, bootstrap=25, min_annotations=2)
@example(table=ALL_TIES, bootstrap=25, min_annotations=2)
@example(table=NO_RATINGS, bootstrap=25, min_annotations=2)
@example(table=EMPTY, bootstrap=25, min_annotations=2)
def test_report_never_crashes_and_every_null_has_a_note(table, bootstrap, min_annotations):
    annotations = validate_annotations(table, source="generated")
    options = ReportOptions(bootstrap=bootstrap, min_annotations=min_annotations)
    pair_ids = sorted(set(annotations["pair_id"])) or ["p1"]
    pairs = pd.DataFrame(
        {
            "pair_id": pair_ids,
            "category": "c",
            "is_gold": False,
            "record": [
                {"id": p, "question": "q", "chosen": "x", "rejected": "y"} for p in pair_ids
            ],
        }
    )
    report = build_report(annotations, pairs, options=options)
    text = json.dumps(report, allow_nan=False)  # NaN or infinity would raise here
    assert json.loads(text) == report
    for key in (
        "counts",
        "preference",
        "quality",
        "main_reason",
        "conclusion",
        "pairs",
        "annotators",
    ):
        assert key in report
    assert undefined_without_note(report) == []
    assert isinstance(report["conclusion"]["personal_preference_main_factor"], bool)
    with tempfile.TemporaryDirectory() as out:
        write_report(report, out, pairs=pairs)
