"""report.json's shape is the TypedDict of analysis/report/shape.py: the report built holds
its required keys, in its order, and the counts in full."""

from __future__ import annotations

from typing import get_type_hints

from analysis.files.annotations_table import validate_annotations
from analysis.report.build import ReportOptions, build_report
from analysis.report.shape import KEY_ORDER, Counts, Report
from tests.report_fixtures import synthetic


def test_a_report_has_the_typed_shape_in_its_order():
    table = validate_annotations(synthetic(12, 3, confounded=False), source="test")
    report = build_report(table, None, options=ReportOptions(bootstrap=0))
    keys = list(report)
    assert set(Report.__required_keys__) <= set(keys) <= set(KEY_ORDER)
    assert keys == [key for key in KEY_ORDER if key in report]
    assert set(report["counts"]) == set(get_type_hints(Counts))
    assert all(isinstance(value, int) for value in report["counts"].values())
