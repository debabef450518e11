"""`annotate report --model NAME=FILE`: the README's worked example by hand, refusals that write
nothing, and the database path (gold pairs need no judgement) on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.files.annotations_table import write_table
from annotate.cli import main
from annotate.engine import get_engine
from annotate.queue.gold import set_gold
from annotate.store.models import Study
from tests.report_fixtures import frame, row, write_pairs_file

DATA = Path(__file__).resolve().parents[1] / "data"


def report_args(out: Path, *models: str) -> list[str]:
    args = [
        "report",
        "--annotations", str(DATA / "sample_annotations.csv"),
        "--pairs", str(DATA / "sample_pairs.jsonl"),
        "--out", str(out),
        "--bootstrap", "200",
    ]  # fmt: skip
    for spec in models:
        args += ["--model", spec]
    return args


def test_worked_example_by_hand(tmp_path):
    """data/make_model_example.py: 15 pairs, 3 annotators. The judge sees chosen as A on the
    8 even positions and is right there except one parse failure (7/8); with chosen as B it is
    right on 2 of 7. Accuracy 9/15. Fisher's exact test of [[7, 1], [2, 5]] (rows 8 and 7,
    columns 9 and 6 of 15): tables with a = 7, 8 and 2 are as unlikely or less,
    (C(8,7) C(7,2) + C(8,8) C(7,1) + C(8,2) C(7,7)) / C(15,9) = (168 + 7 + 28) / 5005.
    The reward model is wrong on 3 pairs and ties once: (11 + 0.5) / 15.
    Humans: 12 pairs with a chosen majority, 2 flips, 1 without a majority (counts 1/2):
    majority accuracy 12.5 / 15; per pair annotator credits sum to 12: 12 / 15.
    The judge agrees with the 14 decided majorities on 8 chosen and both flips: 10 / 14."""
    out = tmp_path / "out"
    args = report_args(
        out, f"judge={DATA / 'sample_judge.jsonl'}", f"rm={DATA / 'sample_reward_model.csv'}"
    )
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text())
    judge, rm = report["models"]
    assert judge["name"] == "judge" and judge["n"] == 15
    assert judge["accuracy"]["value"] == pytest.approx(9 / 15)
    assert judge["position"]["accuracy_chosen_first"] == 7 / 8
    assert judge["position"]["accuracy_chosen_second"] == 2 / 7
    assert judge["position"]["p_value"] == pytest.approx(203 / 5005)
    assert judge["parse_failed"] == 1 and judge["ties"] == 0
    assert judge["agreement_with_humans"]["value"] == pytest.approx(10 / 14)
    assert judge["agreement_with_humans"]["n"] == 14
    assert judge["accuracy_flip"] == {"value": 0.0, "n": 2}
    # judge errors: art-02, life-01, life-02 (parse failure), soc-04 (valid), both flips
    assert judge["errors"] == {
        "total": 6.0, "valid": 4.0, "preference_flip": 2.0, "other": 0.0,
        "share_not_valid": pytest.approx(1 / 3),
    }  # fmt: skip
    assert rm["accuracy"]["value"] == pytest.approx(11.5 / 15)
    # rm errors: art-05 and the tie on art-03 (valid, 1 + 1/2), both flips
    assert rm["errors"]["valid"] == 1.5 and rm["errors"]["preference_flip"] == 2.0
    assert rm["ties"] == 1 and rm["parse_failed"] is None and rm["position"] is None
    reference = report["human_reference"]
    assert reference["majority_accuracy"]["value"] == pytest.approx(12.5 / 15)
    assert reference["annotator_accuracy"]["value"] == pytest.approx(12 / 15)
    valid = report["verdicts"]["valid"]
    assert judge["accuracy_valid"]["n"] == rm["accuracy_valid"]["n"] == valid
    difference = report["model_differences"][0]
    assert difference["difference"] == pytest.approx(9 / 15 - 11.5 / 15)
    lo, hi = difference["ci95"]
    assert lo <= difference["difference"] <= hi

    by_pair = {p["pair_id"]: p for p in report["pairs"]}
    assert by_pair["demo-life-03"]["verdict"] == "preference_flip"
    assert by_pair["demo-life-03"]["model:judge"] == "rejected"
    assert by_pair["demo-life-02"]["model:judge"] == "failed"
    assert by_pair["demo-art-03"]["model:rm"] == "tie"
    pairs_csv = pd.read_csv(out / "pairs.csv").set_index("pair_id")
    assert pairs_csv.loc["demo-art-03", "model:rm"] == "tie"

    table = pd.read_csv(out / "models.csv")
    assert table["name"].tolist() == ["judge", "rm"]
    assert table.loc[0, "accuracy"] == pytest.approx(0.6)
    assert table.loc[0, "position_p_value"] == pytest.approx(203 / 5005)
    summary = (out / "summary.md").read_text()
    assert "## Models against the humans" in summary
    assert "| judge | 0.600 |" in summary
    page = (out / "report.html").read_text()
    assert "Models against the humans" in page
    assert "Model accuracy against the label: all pairs vs valid pairs" in page


def test_without_models_nothing_changes(tmp_path):
    assert main(report_args(tmp_path / "out")) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "models" not in report and "human_reference" not in report
    assert not (tmp_path / "out" / "models.csv").exists()


def test_model_names_are_inert_in_every_file(tmp_path):
    rows = DATA.joinpath("sample_reward_model.csv").read_text()
    (tmp_path / "m.csv").write_text(rows)
    name = "@SUM(1)<script>alert(1)</script>|x"  # a name has no "=": NAME=FILE splits at the first
    assert main(report_args(tmp_path / "out", f"{name}={tmp_path / 'm.csv'}")) == 0
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert (tmp_path / "out" / "models.csv").read_text().splitlines()[1].startswith("'@SUM(1)")
    assert "<script>alert(1)</script>\\|x" in (tmp_path / "out" / "summary.md").read_text()


def test_a_broken_model_file_is_refused_with_its_lines_and_nothing_is_written(tmp_path, capsys):
    broken = tmp_path / "judge.jsonl"
    lines = DATA.joinpath("sample_judge.jsonl").read_text().splitlines()
    lines[1] = lines[0]  # a second row for demo-art-01, none for demo-art-02
    lines[4] = lines[4].replace('"prediction": "A"', '"prediction": "left"')
    broken.write_text("\n".join(lines) + "\n")
    other = tmp_path / "rm.csv"
    other.write_text("pair_id,score_chosen,score_rejected\nnope,1,2\n")
    out = tmp_path / "out"
    assert main(report_args(out, f"judge={broken}", f"rm={other}")) == 2
    err = capsys.readouterr().err
    assert "nothing was written" in err
    assert f"{broken}: line 2: a second row for pair 'demo-art-01' (first at line 1)" in err
    assert f"{broken}: line 5, column 'prediction': must be one of A, B (got 'left')" in err
    assert f"{broken}: pair 'demo-art-02' has no row" in err
    assert (
        f"{other}: row 1, column 'pair_id': no pair with this id in the report (got 'nope')" in err
    )
    assert "Traceback" not in err
    assert not out.exists()


def test_one_broken_file_names_itself(tmp_path, capsys):
    empty = tmp_path / "m.parquet"
    pd.DataFrame({"pair_id": [], "preference": []}).to_parquet(empty)
    assert main(report_args(tmp_path / "out", f"m={empty}")) == 2
    err = capsys.readouterr().err
    assert f"--model {empty}: 1 problem, nothing was written" in err
    assert "the file has no rows" in err


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["judge"], "expected NAME=FILE"),
        (["=x.csv"], "expected NAME=FILE"),
        (["a=x.csv", "a=y.csv"], "--model names must differ; given more than once: a"),
        (["a=x.txt"], "unsupported file type '.txt'"),
        (["a=missing.csv"], "no such file"),
    ],
)
def test_bad_model_options(tmp_path, capsys, specs, message):
    try:
        code = main(report_args(tmp_path / "out", *specs))
    except SystemExit as exc:  # argparse refuses a malformed NAME=FILE
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_database_report_with_models_and_a_gold_pair(tmp_path, db_url):
    """From the database: the gold pair g needs no judgement (and is left out if given)."""
    write_pairs_file(tmp_path / "pairs.jsonl", ["p1", "p2", "p3", "g"])
    assert (
        main(["import-pairs", "--db", db_url, str(tmp_path / "pairs.jsonl"), "--study", "s"]) == 0
    )
    engine = get_engine(db_url)
    from sqlmodel import Session, select

    with Session(engine) as s:
        study_id = s.exec(select(Study.id).where(Study.name == "s")).one()
    set_gold(engine, study_id=study_id, pair_keys=["g"], answer="chosen")
    rows = [
        row(pair, annotator, preference)
        for pair, labels in (("p1", "ccc"), ("p2", "rrc"), ("p3", "ccr"), ("g", "ccc"))
        for annotator, preference in zip(
            ("a1", "a2", "a3"), [{"c": "chosen", "r": "rejected"}[x] for x in labels], strict=True
        )
    ]
    write_table(frame(rows), tmp_path / "a.csv")
    assert (
        main(["import-annotations", "--db", db_url, str(tmp_path / "a.csv"), "--study", "s"]) == 0
    )
    (tmp_path / "m.csv").write_text("pair_id,preference\np1,chosen\np2,rejected\np3,tie\n")
    out = tmp_path / "out"
    assert (
        main(
            [
                "report",
                "--db",
                db_url,
                "--study",
                "s",
                "--out",
                str(out),
                "--bootstrap",
                "50",
                "--model",
                f"m={tmp_path / 'm.csv'}",
            ]
        )
        == 0
    )
    model = json.loads((out / "report.json").read_text())["models"][0]
    # p1 chosen (1), p2 rejected (0), p3 tie (1/2); the human majorities C, R, C: agreement
    # 1 + 1 + 1/2 over 3
    assert model["n"] == 3
    assert model["accuracy"]["value"] == pytest.approx(1.5 / 3)
    assert model["agreement_with_humans"]["value"] == pytest.approx(2.5 / 3)
    assert model["accuracy_flip"] == {"value": 0.0, "n": 1}
