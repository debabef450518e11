"""The console's Agreement page compares uploaded model files with the annotators (AppTest)."""

from __future__ import annotations

from tests.test_console_app import (  # noqa: F401 (db is a fixture)
    answer,
    db,
    download_buttons,
    maintainer,
    pair_ids,
)


def test_agreement_page_compares_uploaded_models(db):  # noqa: F811
    """p0, p1, p3: both annotators chosen (valid); p2: both rejected (a flip). The model picks
    chosen, rejected, rejected, tie: accuracy (1 + 0 + 0 + 1/2) / 4, on valid pairs
    (1 + 0 + 1/2) / 3, agreement with the majorities (1 + 0 + 1 + 1/2) / 4."""
    engine, study_id = db["engine"], db["study_id"]
    ids = pair_ids(engine, study_id)
    (a, _), (b, _) = db["people"]
    for key in ids:
        for annotator in (a, b):
            answer(engine, annotator, ids[key], "rejected" if key == "p2" else "chosen")
    at = maintainer(db, "admin-agreement")
    upload = b"pair_id,preference\np0,chosen\np1,rejected\np2,rejected\np3,tie\n"
    at.file_uploader(key="agreement_models").set_value(("my-rm.csv", upload, "text/csv"))
    at.run()
    assert not at.exception and not at.error
    tables = [t.value for t in at.dataframe]
    models = next(t for t in tables if "model" in t.columns).set_index("model")
    assert models.loc["my-rm", "accuracy"] == "0.375"
    assert models.loc["my-rm", "valid pairs"] == "0.500 (n = 3)"
    assert models.loc["my-rm", "agrees with majority"] == "0.625 (n = 4)"
    assert models.loc["my-rm", "ties"] == "1"
    assert any("human reference" in t.columns for t in tables)
    assert any(chart.proto.id.endswith("chart_models") or "chart_models" in chart.id
               for chart in at.get("plotly_chart"))  # fmt: skip
    # the page offers the command line's models.csv (analysis.judges.render.models_csv_bytes,
    # checked through `annotate report --models`); AppTest cannot fetch a download's bytes
    # without patching Streamlit
    assert download_buttons(at)["agreement_download_models.csv"] == "models.csv"


def test_agreement_page_refuses_a_broken_model_file_with_its_lines(db):  # noqa: F811
    engine, study_id = db["engine"], db["study_id"]
    (a, _), _ = db["people"]
    answer(engine, a, pair_ids(engine, study_id)["p0"], "chosen")
    at = maintainer(db, "admin-agreement")
    upload = b"pair_id,preference\np0,maybe\nnope,chosen\n"
    at.file_uploader(key="agreement_models").set_value(("bad.csv", upload, "text/csv"))
    at.run()
    assert not at.exception
    assert at.error[0].value.startswith("5 problems in the model files; nothing was compared")
    listed = at.code[0].value
    assert "bad.csv: row 1, column 'preference': must be one of chosen, rejected, tie" in listed
    assert (
        "bad.csv: row 2, column 'pair_id': no pair with this id in the report (got 'nope')"
        in listed
    )
    assert "bad.csv: pair 'p1' has no row" in listed
