"""The console's Agreement page and the aspect check (issue 15), and model files uploaded before
any human answer (issue 14), driven by Streamlit's AppTest.

The aspect data are the demo's: `annotate demo --no-serve`, then the simulated answers of
annotate.studies.demo_answers imported into the study `demo-aspects` (as docs/report.md's aspect section)."""

from __future__ import annotations

import json

import pytest
import streamlit as st

from analysis.aspects.render import aspect_rows
from annotate.cli import main
from annotate.engine import get_engine
from annotate.store.db import ENV_VAR
from annotate.studies.demo import (
    DEMO_ASPECT_STUDY,
    DEMO_MAINTAINER,
    aspect_pair_records,
    build_demo,
)
from annotate.studies.demo_answers import BROKEN_PAIR, write_simulation
from tests.test_console_app import (  # noqa: F401 (db is a fixture)
    as_token,
    db,
    maintainer,
    open_page,
    texts,
)


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """The demo database with the simulated answers of the aspect study, and its scorer file."""
    url = f"sqlite:///{tmp_path}/demo.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    st.cache_data.clear()
    accounts = build_demo(get_engine(url)).accounts
    annotations, scorer = write_simulation(tmp_path / "sim")
    imported = ["--db", url, "import-annotations", str(annotations), "--study", DEMO_ASPECT_STUDY]
    assert main(imported) == 0
    token = next(token for name, _, token in accounts if name == DEMO_MAINTAINER)
    yield {"url": url, "token": token, "scorer": scorer, "tmp": tmp_path}
    st.cache_resource.clear()
    st.cache_data.clear()


def agreement_page(token: str, study: str):
    at = open_page(as_token(token), "admin-agreement")
    at.selectbox(key="study_picker").set_value(study).run()
    assert not at.exception, at.exception
    return at


def table_with(at, column: str, cell: str):
    """The first dataframe whose `column` holds `cell`, indexed by that column."""
    for frame in at.dataframe:
        table = frame.value
        if column in table.columns and cell in set(table[column]):
            return table.set_index(column)
    raise AssertionError(f"no table with {cell!r} in column {column!r}")


def cli_report(demo, *extra: str) -> dict:
    out = demo["tmp"] / f"report{len(extra)}"
    args = ["--db", demo["url"], "report", "--study", DEMO_ASPECT_STUDY, "--out", str(out)]
    assert main([*args, *extra]) == 0
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def test_the_aspect_section_shows_the_reports_aspect_tables(demo):
    at = agreement_page(demo["token"], DEMO_ASPECT_STUDY)
    assert "Aspects" in [h.value for h in at.header]
    # the command line's report with the page's defaults: the page shows the same numbers
    report = cli_report(demo)
    assert report["conclusion"]["checks"]["aspects"]["n"] == 6
    # the HTML report's table, row for row
    shown = table_with(at, "statistic", "Coverage of the rubric aspects, chosen (0-2)")
    for statistic, value, interval, note in aspect_rows(report):
        assert shown.loc[statistic, "value"] == value, statistic
        assert shown.loc[statistic, "95% interval"] == interval, statistic
        assert shown.loc[statistic, "n / note"] == note, statistic
    assert any(s.startswith("Agreement on aspect 4 of each rubric") for s in shown.index)
    # the fourth conclusion check
    outcome = report["conclusion"]["checks"]["aspects"]["outcome"]
    assert outcome == "insufficient"  # 5 of 6 confirmed: [0.359, 0.996] reaches below 0.6
    assert "Conclusion check `aspects`: **not enough evidence** (threshold 0.6)" in texts(at)
    assert "lower end of the exact 95% interval" in texts(at)
    # per pair: coverage, gap and the verdict; the broken pair is not reflected
    pairs = table_with(at, "pair", BROKEN_PAIR)
    assert pairs.loc[BROKEN_PAIR, "verdict"] == "rubric_not_reflected"
    assert len(pairs) == len(aspect_pair_records())
    record = next(p for p in report["pairs"] if p["pair_id"] == BROKEN_PAIR)
    assert pairs.loc[BROKEN_PAIR, "gap"] == pytest.approx(record["aspects_gap"], abs=1e-3)
    assert "rubric_not_reflected` when chosen's mean coverage" in texts(at)
    assert "pairs with this verdict: 1." in texts(at)


def test_an_uploaded_scorer_file_is_compared_as_the_cli_does(demo):
    at = agreement_page(demo["token"], DEMO_ASPECT_STUDY)
    upload = demo["scorer"].read_bytes()
    at.file_uploader(key="agreement_aspect_scores").set_value(
        ("scorer.jsonl", upload, "application/jsonl")
    )
    at.run()
    assert not at.exception and not at.error
    cli = cli_report(demo, "--aspect-scores", str(demo["scorer"]))
    expected = {row[0]: row for row in aspect_rows(cli)}
    shown = table_with(at, "statistic", "Automatic scorer vs human mean score, ordinal alpha")
    scorer_rows = [s for s in expected if s.startswith(("Automatic scorer", "Scorer"))]
    assert len(scorer_rows) >= 4
    for statistic in scorer_rows:
        assert shown.loc[statistic, "value"] == expected[statistic][1], statistic
        assert shown.loc[statistic, "95% interval"] == expected[statistic][2], statistic
    worst = cli["aspects"]["scorer"]["disagreements"][0]["pair_id"]
    assert worst in set(table_with(at, "pair", worst).index)


def test_a_broken_scorer_file_is_refused_by_its_line(demo):
    """The command line's validation, problems named by line, no traceback, nothing compared."""
    at = agreement_page(demo["token"], DEMO_ASPECT_STUDY)
    lines = demo["scorer"].read_text(encoding="utf-8").splitlines()
    third = json.loads(lines[2])
    lines[2] = json.dumps({**third, "scores": [2]})  # the pair has more aspects
    lines[4] = json.dumps({**json.loads(lines[4]), "response": "maybe"})
    upload = at.file_uploader(key="agreement_aspect_scores")
    upload.set_value(("broken.jsonl", ("\n".join(lines) + "\n").encode(), "application/jsonl"))
    at.run()
    assert not at.exception
    assert at.error[0].value.startswith("broken\\.jsonl: 3 problems; nothing was compared")
    listed = at.code[0].value.splitlines()
    assert listed[0].startswith("line 3, field 'scores': the pair has ")
    assert listed[0].endswith("rubric aspects, got 1 score")
    assert listed[1] == "line 5, field 'response': must be chosen or rejected (got 'maybe')"
    assert "has a rejected row but no chosen row" in listed[2]
    assert "Automatic scorer vs human mean score" not in texts(at)

    lines[4] = "{not json"
    upload = at.file_uploader(key="agreement_aspect_scores")
    upload.set_value(("broken.jsonl", ("\n".join(lines) + "\n").encode(), "application/jsonl"))
    at.run()
    assert not at.exception
    assert at.code[0].value.startswith("line 5: not valid JSON")


def test_a_study_without_the_aspect_check_shows_no_aspect_section(db):  # noqa: F811
    at = maintainer(db, "admin-agreement")
    assert "Aspects" not in [h.value for h in at.header]
    assert not [u for u in at.get("file_uploader") if "aspect" in u.id]


def test_the_aspect_study_without_answers_says_so_and_offers_no_scorer_upload(demo):
    at = agreement_page(demo["token"], "demo")  # the demo's main study: no answers, no check
    assert not [u for u in at.get("file_uploader") if "aspect" in u.id]


def test_models_can_be_compared_before_any_human_answer(db):  # noqa: F811
    """No annotation yet: the page says so, and still compares an uploaded model with the
    constructed label (p0, p1 chosen, p2 rejected, p3 tie: (1 + 1 + 0 + 1/2) / 4); what needs
    humans is undefined, not zero."""
    at = maintainer(db, "admin-agreement")
    assert "No annotations" in texts(at)
    upload = b"pair_id,preference\np0,chosen\np1,chosen\np2,rejected\np3,tie\n"
    at.file_uploader(key="agreement_models").set_value(("early-rm.csv", upload, "text/csv"))
    at.run()
    assert not at.exception and not at.error
    models = table_with(at, "model", "early-rm")
    assert models.loc["early-rm", "accuracy"] == "0.625"
    assert "n/a" in models.loc["early-rm", "agrees with majority"]
    assert "no pair with a human majority" in texts(at)


def test_a_scorer_file_of_the_whole_study_is_compared_on_the_selected_pairs(demo):
    """The file is checked against the whole study; with a category chosen only its pairs
    enter the comparison (as the models' upload does)."""
    at = agreement_page(demo["token"], DEMO_ASPECT_STUDY)
    at.multiselect(key="agreement_categories").set_value(["Society_and_Culture"]).run()
    upload = demo["scorer"].read_bytes()
    at.file_uploader(key="agreement_aspect_scores").set_value(
        ("scorer.jsonl", upload, "application/jsonl")
    )
    at.run()
    assert not at.exception and not at.error
    shown = table_with(at, "statistic", "Automatic scorer vs human mean score, ordinal alpha")
    assert shown.loc["Automatic scorer vs human mean score, ordinal alpha", "n / note"].startswith(
        "n = 2 pairs"
    )
    pairs = table_with(at, "pair", BROKEN_PAIR)
    assert sorted(pairs.index) == ["demo-soc-01", "demo-soc-02"]
