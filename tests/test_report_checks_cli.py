"""`annotate report`'s conclusion options and the study design read from files: the checks in
report.json, summary.md and report.html, --no-ties, --dimensions and absent columns."""

from __future__ import annotations

import json

import pandas as pd

from analysis.files.annotations_table import write_table
from analysis.vocabulary import RATING_COLUMNS
from tests.report_fixtures import frame, synthetic, write_pairs_file
from tests.test_report_cli import run_cli


def _files(tmp_path, table: pd.DataFrame, *, drop=()):
    annotations = tmp_path / "annotations.csv"
    if (
        drop
    ):  # write_table writes every column of the annotations table; a file from elsewhere may not
        table.drop(columns=list(drop)).to_csv(annotations, index=False)
    else:
        write_table(table, annotations)
    pairs = write_pairs_file(tmp_path / "pairs.jsonl", list(dict.fromkeys(table["pair_id"])))
    return annotations, pairs


def _report(tmp_path, annotations, pairs, *options):
    out = tmp_path / "out"
    done = run_cli(
        "report", "--annotations", str(annotations), "--pairs", str(pairs), "--out", str(out),
        "--bootstrap", "200", *options,
    )  # fmt: skip
    return done, out


def test_checks_with_thresholds_in_every_report_file(tmp_path):
    table = synthetic(80, 3, confounded=False)
    done, out = _report(tmp_path, *_files(tmp_path, table), "--label-threshold", "0.7")
    assert done.returncode == 0, done.stderr
    assert "(supported)" in done.stdout
    report = json.loads((out / "report.json").read_text())
    conclusion = report["conclusion"]
    assert conclusion["status"] == "supported"
    for check in conclusion["checks"].values():
        assert {"passed", "value", "ci95", "threshold", "n", "note"} <= set(check)
    assert conclusion["checks"]["label"]["threshold"] == 0.7
    summary = (out / "summary.md").read_text()
    assert "| Check | Outcome | Value | 95% CI | Threshold | n | Rule / note |" in summary
    assert "| label | passed |" in summary
    assert "95% CI, annotators in general" in summary
    assert '"Annotators in general" (ci95_annotators)' in summary
    html = (out / "report.html").read_text()
    assert "Conclusion checks" in html and "annotators in general" in html


def test_no_ties_uses_two_categories_and_refuses_ties(tmp_path):
    table = synthetic(40, 3, confounded=False)
    table["preference"] = table["preference"].replace("tie", "rejected")
    done, out = _report(tmp_path, *_files(tmp_path, table), "--no-ties")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["preference"]["categories"] == ["chosen", "rejected"]
    assert report["options"]["allow_ties"] is False

    with_tie = frame(table.to_dict("records"))
    with_tie.loc[4, "preference"] = "tie"
    done, _ = _report(tmp_path, *_files(tmp_path, with_tie), "--no-ties")
    assert done.returncode != 0
    assert "row 5, column 'preference': 'tie' in a study without ties" in done.stderr
    assert "Traceback" not in done.stderr


def test_dimensions_from_the_columns_present_or_the_option(tmp_path):
    table = synthetic(40, 3, confounded=False)
    helpfulness = [c for c in RATING_COLUMNS if c.startswith("helpfulness")]
    done, out = _report(tmp_path, *_files(tmp_path, table, drop=helpfulness))
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["options"]["dimensions"] == ["correctness", "relevance"]
    assert set(report["conclusion"]["checks"]["quality"]["dimensions"]) == {
        "correctness",
        "relevance",
    }
    # Columns present but the study asked all three: --dimensions says so; never rated ->
    # not enough evidence rather than dropped.
    table[helpfulness] = None
    done, out = _report(
        tmp_path, *_files(tmp_path, table), "--dimensions", "correctness,relevance,helpfulness"
    )
    report = json.loads((out / "report.json").read_text())
    quality = report["conclusion"]["checks"]["quality"]
    assert quality["dimensions"]["helpfulness"]["outcome"] == "insufficient"
    assert report["conclusion"]["status"] == "insufficient_evidence"

    done, _ = _report(tmp_path, *_files(tmp_path, table), "--dimensions", "tone")
    assert done.returncode != 0 and "unknown dimension(s) tone" in done.stderr


def test_report_help_documents_the_check_options():
    done = run_cli("report", "--help")
    for option in (
        "--label-threshold",
        "--min-rated-pairs",
        "--min-reasons",
        "--no-ties",
        "--dimensions",
    ):
        assert option in done.stdout
    assert "default 0.6" in done.stdout


def test_the_studys_design_from_the_database(tmp_path, db_url):
    """From the database, a study without ties gets two categories and the dimensions it asks,
    in `annotate report` and in the console's report alike."""
    from annotate.cli import main
    from annotate.engine import get_engine
    from annotate.results.study_report import build_study_report
    from annotate.store.db import session
    from annotate.studies.catalog import get_study

    table = synthetic(40, 3, confounded=False)
    table["preference"] = table["preference"].replace("tie", "rejected")
    annotations, pairs = _files(tmp_path, table)
    assert main(["import-pairs", "--db", db_url, str(pairs), "--study", "s"]) == 0
    assert main(["import-annotations", "--db", db_url, str(annotations), "--study", "s"]) == 0
    engine = get_engine(db_url)
    with session(engine) as s:
        study = get_study(s, "s")
        study.allow_ties = False
        study.dimensions = ["correctness", "relevance"]
        s.add(study)
    out = tmp_path / "db"
    assert (
        main(["report", "--db", db_url, "--study", "s", "--out", str(out), "--bootstrap", "50"])
        == 0
    )
    report = json.loads((out / "report.json").read_text())
    console, _, _ = build_study_report(engine, study="s", bootstrap=50)
    for result in (report, console):
        assert result["preference"]["categories"] == ["chosen", "rejected"]
        assert result["options"]["dimensions"] == ["correctness", "relevance"]
        assert set(result["conclusion"]["checks"]["quality"]["dimensions"]) == {
            "correctness",
            "relevance",
        }
    assert console["preference"] == report["preference"]

    refused = run_cli("report", "--db", db_url, "--study", "s", "--out", str(out), "--no-ties")
    assert refused.returncode != 0 and "from the database the study's own" in refused.stderr


def test_summary_says_each_note_once(tmp_path):
    """On the project's samples a note that applies to several statistics (here: too few pairs
    with three or more annotations for the interval for annotators in general) was written out
    on each row, and the quality check named the same reason once per dimension: each note is
    said once, and the rows name it."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    out = tmp_path / "out"
    done = run_cli(
        "report", "--annotations", str(data / "sample_annotations.csv"),
        "--pairs", str(data / "sample_pairs.jsonl"), "--out", str(out), "--bootstrap", "100",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = (out / "summary.md").read_text()
    note = (
        "undefined: 15 pairs with three or more annotations (3 annotators); an interval that "
        "treats the annotators as a sample needs at least 30"
    )
    report = json.loads((out / "report.json").read_text())
    label_note = report["conclusion"]["checks"]["label"]["note"].lower()
    # the label check gives its own reason, which quotes the note; beyond it, said once
    assert note in label_note
    assert summary.lower().count(note) == 1 + summary.lower().count(label_note)
    assert f"[1] {note[0].upper()}{note[1:]}" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    assert sum(row.rstrip(" |").endswith("[1]") for row in rows) >= 2
    assert summary.count("rated on both responses in 15 pairs, fewer than 30") == 1
    assert "correctness, relevance, helpfulness: rated on both responses in 15 pairs" in summary
    html = (out / "report.html").read_text().lower()
    assert html.count(note) == 1 + html.count(label_note.replace("'", "&#x27;"))
