"""The public paths: annotate report / export / import-annotations, files and database."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from analysis.files.annotations_table import read_table, write_table
from annotate.cli import main
from tests.published_examples import ABSTRACTORS, DIST4CAT, EXAMPLE_A, EXAMPLE_C, RVARY2
from tests.report_fixtures import frame, row, synthetic, write_files, write_pairs_file


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "annotate.cli", *args], capture_output=True, text=True, check=False
    )


def test_published_alphas_through_annotate_report(tmp_path):
    """Example C as correctness ratings of the chosen responses (ordinal, missing data) and
    example A as preferences (0 = chosen, 1 = rejected; nominal), in one annotations file."""
    rows = []
    for observer, values in EXAMPLE_C.items():
        for unit, value in enumerate(values):
            if value is not None:
                rows.append(row(f"c{unit}", observer, "tie", chosen=(value, None, None)))
    for observer, values in enumerate(EXAMPLE_A):
        for unit, value in enumerate(values):
            rows.append(row(f"a{unit}", f"obs{observer}", ["chosen", "rejected"][value]))
    annotations, pairs = write_files(tmp_path, rows)
    out = tmp_path / "out"
    done = run_cli(
        "report", "--annotations", str(annotations), "--pairs", str(pairs), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert round(report["quality"]["correctness"]["alpha"]["value"], 3) == 0.815

    # example C's units carry ties only: run example A on its own for the preference alpha
    only_a = [r for r in rows if r["pair_id"].startswith("a")]
    annotations, pairs = write_files(tmp_path, only_a, suffix=".jsonl")
    done = run_cli(
        "report", "--annotations", str(annotations), "--pairs", str(pairs), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert round(report["preference"]["alpha"]["value"], 3) == 0.095


def preference_report(tmp_path, rows, *, ids=None) -> dict:
    """The preference section of `annotate report` on these rows (files path: no gold pairs)."""
    annotations, pairs = write_files(tmp_path, rows, ids=ids)
    out = tmp_path / "out"
    done = run_cli(
        "report", "--annotations", str(annotations), "--pairs", str(pairs), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    return json.loads((out / "report.json").read_text())["preference"]


LABELS = ["chosen", "rejected", "tie"]


def test_published_ac1_and_alpha_cont3x3abstractors_through_annotate_report(tmp_path):
    """irrCAC cont3x3abstractors: Ectopic -> chosen, AIU -> rejected, NIU -> tie."""
    rows = []
    for first, line in enumerate(ABSTRACTORS):
        for second, count in enumerate(line):
            for _ in range(count):
                pair = f"w{len(rows) // 2}"
                rows += [row(pair, "abstractor1", LABELS[first])]
                rows += [row(pair, "abstractor2", LABELS[second])]
    pref = preference_report(tmp_path, rows)
    assert pref["n_pairable_pairs"] == 100
    assert round(pref["ac1"]["value"], 7) == 0.8493305
    assert round(pref["alpha"]["value"], 7) == 0.7972585
    assert round(pref["percent_agreement"], 7) == 0.89


def test_published_ac1_cac_dist4cat_through_annotate_report(tmp_path):
    """irrCAC cac.dist4cat: a -> chosen, b -> rejected, c -> tie. The source gives only how many
    raters chose each category, which is all AC1 uses; raters are named in order per subject."""
    rows = []
    for subject, counts in enumerate(DIST4CAT):
        labels = [label for label, n in zip(LABELS, counts, strict=True) for _ in range(n)]
        rows += [row(f"s{subject}", f"r{k}", label) for k, label in enumerate(labels)]
    pref = preference_report(tmp_path, rows)
    assert pref["n_annotations"] == 60
    assert round(pref["ac1"]["value"], 7) == 0.3518903


@pytest.mark.parametrize("labels", [LABELS, LABELS[::-1]], ids=["1-chosen", "1-tie"])
def test_published_alpha_and_ac1_with_missing_ratings_through_annotate_report(tmp_path, labels):
    """Stata rvary2 via kappaetc: nominal alpha and AC1 with missing ratings. A missing rating is
    no row at all (the annotator did not label the pair), so subjects have 3 to 5 ratings. A pair
    in the pairs file that nobody labelled must change nothing (Gwet excludes unrated subjects;
    alpha needs two ratings). Both label orders give the same values: ties are a plain
    category for these coefficients."""
    rows = [
        row(f"s{subject}", f"rater{rater}", labels[value - 1])
        for subject, ratings in enumerate(RVARY2)
        for rater, value in enumerate(ratings, start=1)
        if value is not None
    ]
    ids = [f"s{subject}" for subject in range(len(RVARY2))] + ["nobody-labelled-this"]
    pref = preference_report(tmp_path, rows, ids=ids)
    assert pref["n_annotations"] == 47
    assert pref["n_pairable_pairs"] == 10
    assert round(pref["alpha"]["value"], 4) == 0.3897
    assert round(pref["ac1"]["value"], 4) == 0.3829
    assert round(pref["percent_agreement"], 4) == 0.5833


def test_report_files_and_a_safe_offline_html(tmp_path):
    table = synthetic(40, 3, confounded=False)
    evil = "<script>alert('x')</script>"
    table.loc[table["annotator"] == "a0", "annotator"] = evil
    table.loc[table["pair_id"] == "p1", "pair_id"] = "<img src=x onerror=alert(1)>"
    table.loc[table["pair_id"] == "<img src=x onerror=alert(1)>", "preference"] = "rejected"
    write_table(table, tmp_path / "a.parquet")
    write_pairs_file(tmp_path / "pairs.jsonl", table["pair_id"].unique())
    out = tmp_path / "out"
    code = main(
        [
            "report",
            "--annotations",
            str(tmp_path / "a.parquet"),
            "--pairs",
            str(tmp_path / "pairs.jsonl"),
            "--out",
            str(out),
            "--bootstrap",
            "100",
        ]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "annotators.csv",
        "pairs.csv",
        "report.html",
        "report.json",
        "summary.md",
    ]
    page = (out / "report.html").read_text()
    assert page.count("plotly.js v") == 1  # the library, inlined once
    # nothing is fetched: no external script or stylesheet (plotly.js merely mentions its CDN)
    assert "<script src=" not in page and "<link" not in page
    assert evil not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)" in page  # shown as text
    assert "kappa paradox" in page
    assert "0.800" in page and "0.667" in page
    summary = (out / "summary.md").read_text()
    assert "| Krippendorff's alpha, nominal (chosen/rejected/tie) |" in summary
    pairs_csv = pd.read_csv(out / "pairs.csv")
    assert len(pairs_csv) == 40 and "verdict" in pairs_csv
    annotators_csv = pd.read_csv(out / "annotators.csv")
    assert set(annotators_csv["annotator"]) == {evil, "a1", "a2"}


def test_export_valid_keeps_every_original_field(tmp_path):
    rows = [
        *[row("good", a, "chosen", chosen=(4, 4, 4), rejected=(4, 4, 4)) for a in ("x", "y")],
        *[row("flip", a, "rejected") for a in ("x", "y")],
    ]
    annotations, _ = write_files(tmp_path, rows)
    pairs = write_pairs_file(tmp_path / "pairs.jsonl", ["good", "flip"], source="v2", n=3)
    valid = tmp_path / "valid.jsonl"
    code = main(
        [
            "report",
            "--annotations",
            str(annotations),
            "--pairs",
            str(pairs),
            "--out",
            str(tmp_path / "out"),
            "--export-valid",
            str(valid),
        ]
    )
    assert code == 0
    records = [json.loads(line) for line in valid.read_text().splitlines()]
    original = json.loads(pairs.read_text().splitlines()[0])
    assert records == [original]


def test_invalid_annotations_file_is_refused_with_rows(tmp_path, capsys):
    pairs = write_pairs_file(tmp_path / "pairs.jsonl", ["p1"])
    bad = tmp_path / "a.csv"
    bad.write_text("pair_id,annotator,preference,helpfulness_rejected\np1,x,chosen,9\np2,y,tie,\n")
    code = main(
        ["report", "--annotations", str(bad), "--pairs", str(pairs), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "row 1, column 'helpfulness_rejected': outside the rating scale 1..5 (got 9)" in err
    assert "row 2, column 'pair_id': no pair with this id (got 'p2')" in err
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_annotations_need_pairs(tmp_path, capsys):
    code = main(["report", "--annotations", "a.csv", "--out", str(tmp_path)])
    assert code == 2
    assert "give both --annotations FILE and --pairs FILE" in capsys.readouterr().err


# --- database path -------------------------------------------------------------------------


@pytest.fixture
def study_db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    # also the environment, so no command can fall back to ./annotate.db
    monkeypatch.setenv("ANNOTATE_DATABASE_URL", url)
    write_pairs_file(tmp_path / "pairs.jsonl", [f"p{i}" for i in range(30)])
    assert main(["import-pairs", "--db", url, str(tmp_path / "pairs.jsonl"), "--study", "s"]) == 0
    return url


def rich_table() -> pd.DataFrame:
    table = synthetic(30, 3, confounded=False)
    table.loc[0, "comment"] = 'a comment, with "quotes"\nand a new line'
    table.loc[1, "submitted_at"] = "2026-03-04T05:06:07.123456+00:00"
    table.loc[2, ["correctness_chosen", "main_reason", "chosen_position", "seconds"]] = None
    return table


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_export_import_export_round_trip(tmp_path, study_db, suffix):
    write_table(rich_table(), tmp_path / f"in{suffix}")
    assert (
        main(
            ["import-annotations", "--db", study_db, str(tmp_path / f"in{suffix}"), "--study", "s"]
        )
        == 0
    )
    first, second = tmp_path / f"one{suffix}", tmp_path / f"two{suffix}"
    assert main(["export", "--db", study_db, "--study", "s", "--out", str(first)]) == 0
    assert main(["import-annotations", "--db", study_db, str(first), "--study", "s"]) == 0
    assert main(["export", "--db", study_db, "--study", "s", "--out", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    exported = read_table(first)  # every format, not only CSV
    assert len(exported) == 90
    assert exported.loc[0, "comment"] == 'a comment, with "quotes"\nand a new line'
    assert exported["submitted_at"].astype(str).str.startswith("2026-03-04T05:06:07.123456").any()


def test_import_replaces_existing_rows_and_is_all_or_nothing(tmp_path, study_db, capsys):
    write_table(frame([row("p1", "ann", "chosen"), row("p2", "ann", "tie")]), tmp_path / "a.csv")
    assert (
        main(["import-annotations", "--db", study_db, str(tmp_path / "a.csv"), "--study", "s"]) == 0
    )
    write_table(frame([row("p1", "ann", "rejected", reason="unsure")]), tmp_path / "b.csv")
    assert (
        main(["import-annotations", "--db", study_db, str(tmp_path / "b.csv"), "--study", "s"]) == 0
    )
    write_table(
        frame([row("p2", "ann", "chosen"), row("nope", "ann", "chosen")]), tmp_path / "c.csv"
    )
    assert (
        main(["import-annotations", "--db", study_db, str(tmp_path / "c.csv"), "--study", "s"]) == 2
    )
    assert "row 2, column 'pair_id': no pair with this id (got 'nope')" in capsys.readouterr().err
    main(["export", "--db", study_db, "--study", "s", "--out", str(tmp_path / "e.csv")])
    exported = pd.read_csv(tmp_path / "e.csv")
    assert exported[["pair_id", "annotator", "preference"]].values.tolist() == [
        ["p1", "ann", "rejected"],
        ["p2", "ann", "tie"],
    ]
    assert exported.loc[0, "main_reason"] == "unsure"


def test_report_from_the_database_equals_the_file_report(tmp_path, study_db):
    write_table(rich_table(), tmp_path / "a.csv")
    main(["import-annotations", "--db", study_db, str(tmp_path / "a.csv"), "--study", "s"])
    assert (
        main(
            [
                "--db",
                study_db,
                "report",
                "--study",
                "s",
                "--out",
                str(tmp_path / "db"),
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "report",
                "--annotations",
                str(tmp_path / "a.csv"),
                "--pairs",
                str(tmp_path / "pairs.jsonl"),
                "--out",
                str(tmp_path / "files"),
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    from_db = json.loads((tmp_path / "db" / "report.json").read_text())
    from_files = json.loads((tmp_path / "files" / "report.json").read_text())
    assert from_db["preference"] == from_files["preference"]
    assert from_db["quality"] == from_files["quality"]
    assert from_db["conclusion"] == from_files["conclusion"]


def test_unknown_study(tmp_path, study_db, capsys):
    assert main(["report", "--db", study_db, "--study", "other", "--out", str(tmp_path / "o")]) == 2
    assert "there is no study named 'other'" in capsys.readouterr().err


def test_hand_computed_agreement_through_annotate_report(tmp_path):
    """Two annotators, four pairs: (chosen, chosen), (chosen, rejected), (tie, tie), (chosen,
    chosen). Percent agreement 3/4. AC1 (Gwet 2008, Q = 3): pi = (0.625, 0.125, 0.25),
    pe = 0.53125 / 2, AC1 = (0.75 - 0.265625) / 0.734375. Nominal alpha from the coincidence
    matrix (o_cc = 4, o_cr = o_rc = 1, o_tt = 2; n = 5, 1, 2): 1 - 7 * 2 / (2 * 17) = 10/17."""
    rows = [
        *[row("p1", a, "chosen") for a in ("x", "y")],
        row("p2", "x", "chosen"),
        row("p2", "y", "rejected"),
        *[row("p3", a, "tie") for a in ("x", "y")],
        *[row("p4", a, "chosen") for a in ("x", "y")],
    ]
    annotations, pairs = write_files(tmp_path, rows)
    out = tmp_path / "out"
    assert (
        main(
            ["report", "--annotations", str(annotations), "--pairs", str(pairs), "--out", str(out)]
        )
        == 0
    )
    pref = json.loads((out / "report.json").read_text())["preference"]
    assert pref["percent_agreement"] == pytest.approx(0.75)
    assert pref["ac1"]["value"] == pytest.approx(0.484375 / 0.734375)
    assert pref["alpha"]["value"] == pytest.approx(10 / 17)
