"""Models against humans (analysis.judges.files, analysis.judges.accuracy): each layout with hand-computed
answers, refusals of broken files with their line, Cohen's kappa on a published example, and
the paired bootstrap interval of a difference."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.judges.accuracy import compare_models, human_credit, position_test, weighted_kappa
from analysis.judges.files import CHOSEN, FAILED, REJECTED, TIE, ModelFileError, read_model_file
from analysis.judges.render import error_sentences, undefined_notes
from tests.statistics_helpers import resampled_means


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def ids(n):
    return [f"p{i}" for i in range(1, n + 1)]


def pair_table(majorities, *, verdicts=None, counts=None, gold=None):
    """A report['pairs']-like table: one row per pair p1.. with its human majority."""
    n = len(majorities)
    verdicts = verdicts or [
        {"chosen": "valid", "rejected": "preference_flip"}.get(m, "no_consensus")
        for m in majorities
    ]
    counts = counts or [
        {"chosen": (3, 0, 0), "rejected": (0, 3, 0)}.get(m, (1, 1, 1)) for m in majorities
    ]
    return pd.DataFrame(
        {
            "pair_id": ids(n),
            "is_gold": gold or [False] * n,
            "verdict": verdicts,
            "majority": majorities,
            "n_annotations": [sum(c) for c in counts],
            "n_chosen": [c[0] for c in counts],
            "n_rejected": [c[1] for c in counts],
            "n_tie": [c[2] for c in counts],
        }
    )


def compare(pairs, *models, bootstrap=200, seed=0, min_annotations=2):
    return compare_models(
        pairs, list(models), min_annotations=min_annotations, bootstrap=bootstrap, seed=seed
    )


# --- the layouts ---------------------------------------------------------------------------


def test_pairwise_judge_that_always_answers_a_has_position_bias(tmp_path):
    """Chosen shown as A on p1, p3, p5 and as B on p2, p4, p6; the judge always answers A. So it
    is right exactly when chosen is A: accuracy 3/6, 1.0 with chosen first and 0.0 second.
    Fisher's exact test of [[3, 0], [0, 3]]: the two tables as extreme as this one, each with
    probability 1 / C(6, 3) = 1/20, so p = 0.1."""
    rows = [
        {"id": pair, "prediction": "A", "pos_in_a": i % 2 == 0} for i, pair in enumerate(ids(6))
    ]
    model = read_model_file(write_jsonl(tmp_path / "j.jsonl", rows), name="j", known_ids=ids(6))
    assert model.layout == "pairwise"
    assert model.pick.tolist() == [CHOSEN, REJECTED] * 3
    assert model.chosen_first.tolist() == [True, False] * 3

    result = compare(pair_table(["chosen"] * 6), model)["models"][0]
    assert result["accuracy"]["value"] == 0.5
    position = result["position"]
    assert position["accuracy_chosen_first"] == 1.0
    assert position["accuracy_chosen_second"] == 0.0
    assert position["p_value"] == pytest.approx(0.1)
    assert position["first_slot_rate"] == 1.0
    assert result["parse_failed"] is None and "parse_failed_note" in result


def test_pairwise_with_correct_answer_and_parse_failures_in_csv(tmp_path):
    """correct_answer names chosen's slot. p1: right (A, A); p2: wrong (A, B); p3: right (B, B);
    p4: parse failure (counted wrong, whatever prediction says). Accuracy 2/4; chosen first
    (p1, p2... by correct_answer A: p1, p2) 1/2; chosen second (p3, p4) 1/2."""
    path = write_csv(
        tmp_path / "j.csv",
        "id,prediction,correct_answer,parse_failed\n"
        "p1,A,A,false\np2,A,B,False\np3,B,B,\np4,,A,true\n",
    )
    model = read_model_file(path, name="j", known_ids=ids(4))
    assert model.pick.tolist() == [CHOSEN, REJECTED, CHOSEN, FAILED]
    result = compare(pair_table(["chosen"] * 4), model)["models"][0]
    assert result["accuracy"]["value"] == 0.5
    assert result["parse_failed"] == 1
    assert result["position"]["accuracy_chosen_first"] == 0.5  # p1 right, p4 failed
    assert result["position"]["accuracy_chosen_second"] == 0.5  # p3 right, p2 wrong
    assert result["position"]["p_value"] == 1.0
    assert result["position"]["first_slot_rate"] == 2 / 3  # p1 and p2 answered A, p3 B


def test_pairwise_with_both_slot_columns_needs_one_value_and_they_must_agree(tmp_path):
    path = write_csv(
        tmp_path / "j.csv",
        "id,prediction,pos_in_a,correct_answer\np1,A,true,\np2,A,,B\np3,B,true,B\np4,A,,\n",
    )
    assert refused(path) == [
        "row 3: pos_in_a and correct_answer name different slots for chosen",
        "row 4: pos_in_a and correct_answer are both empty",
    ]
    path.write_text("id,prediction,pos_in_a,correct_answer\np1,A,true,\np2,A,,B\n")
    model = read_model_file(path, name="j", known_ids=["p1", "p2"])
    assert model.pick.tolist() == [CHOSEN, REJECTED]


def test_pointwise_scores_two_rows_a_pair_with_a_tie(tmp_path):
    """p1 2 > 1: chosen; p2 1 < 3: rejected; p3 0.5 = 0.5: tie (credit 1/2); p4 5 > -1: chosen.
    Accuracy (1 + 0 + 0.5 + 1) / 4 = 0.625; one tie; no position (a reward model sees no slots)."""
    rows = [
        ("p1", "chosen", 2), ("p1", "rejected", 1),
        ("p2", "rejected", 3), ("p2", "chosen", 1),
        ("p3", "chosen", 0.5), ("p3", "rejected", 0.5),
        ("p4", "chosen", 5), ("p4", "rejected", -1),
    ]  # fmt: skip
    path = write_jsonl(
        tmp_path / "rm.jsonl", [{"id": i, "label": lab, "score": s} for i, lab, s in rows]
    )
    model = read_model_file(path, name="rm", known_ids=ids(4))
    assert model.layout == "pointwise"
    assert model.pick.tolist() == [CHOSEN, REJECTED, TIE, CHOSEN]
    result = compare(pair_table(["chosen"] * 4), model)["models"][0]
    assert result["accuracy"]["value"] == 0.625
    assert result["ties"] == 1
    assert result["position"] is None and "position_note" in result


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_plain_tables_of_scores_and_preferences_in_every_format(tmp_path, suffix):
    scores = pd.DataFrame(
        {"pair_id": ids(3), "score_chosen": [0.9, 0.2, 0.5], "score_rejected": [0.1, 0.3, 0.5]}
    )
    preferences = pd.DataFrame({"pair_id": ids(3), "preference": ["chosen", "tie", "rejected"]})
    for name, table, picks in (
        ("scores", scores, [CHOSEN, REJECTED, TIE]),
        ("preference", preferences, [CHOSEN, TIE, REJECTED]),
    ):
        path = tmp_path / f"{name}{suffix}"
        if suffix == ".csv":
            table.to_csv(path, index=False)
        elif suffix == ".jsonl":
            table.to_json(path, orient="records", lines=True)
        else:
            table.to_parquet(path, index=False)
        model = read_model_file(path, name=name, known_ids=ids(3))
        assert model.layout == name
        assert model.pick.tolist() == picks


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes("pair_id,preference\np1,tie\n".encode("utf-8-sig"))
    assert read_model_file(path, name="m", known_ids=["p1"]).pick.tolist() == [TIE]


def test_integer_ids_are_kept_as_text(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", [{"pair_id": 7, "preference": "chosen"}])
    assert read_model_file(path, name="m", known_ids=["7"]).pair_id.tolist() == ["7"]


# --- refusals ------------------------------------------------------------------------------


def refused(path, known=("p1", "p2", "p3", "p4"), **kwargs) -> list[str]:
    with pytest.raises(ModelFileError) as caught:
        read_model_file(path, name="m", known_ids=known, **kwargs)
    return caught.value.problems


def test_broken_pairwise_file_lists_every_problem_with_its_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(
        '{"id": "p1", "prediction": "A", "pos_in_a": true}\n'
        '{"id": "p1", "prediction": "B", "pos_in_a": false}\n'
        "\n"
        '{"id": "zz", "prediction": "A", "pos_in_a": true}\n'
        '{"id": "p2", "prediction": "C", "pos_in_a": "maybe"}\n'
        '{"id": "p3", "prediction": "A", "pos_in_a": true, "parse_failed": "sometimes"}\n',
        encoding="utf-8",
    )
    assert refused(path) == [
        "line 2: a second row for pair 'p1' (first at line 1)",
        "line 4, column 'id': no pair with this id in the report (got 'zz')",
        "line 5, column 'pos_in_a': must be true or false (got 'maybe')",
        "line 5, column 'prediction': must be one of A, B (got 'C')",
        "line 6, column 'parse_failed': must be true or false (got 'sometimes')",
        "pair 'p4' has no row",
    ]


def test_pointwise_pair_with_one_score_and_bad_values_are_refused_with_rows(tmp_path):
    path = write_csv(
        tmp_path / "rm.csv",
        "id,label,score\n"
        "p1,chosen,1.5\np1,rejected,0.5\n"
        "p2,chosen,2\n"
        "p3,chosen,abc\np3,rejected,1\n"
        "p4,chosen,1\np4,rejected,2\np4,rejected,3\n"
        "p1,other,1\n",
    )
    assert refused(path) == [
        "row 3: pair 'p2' has a chosen score but no rejected score",
        "row 4, column 'score': must be a finite number (got 'abc')",
        "row 8: a second rejected score for pair 'p4' (first at row 7)",
        "row 9, column 'label': must be one of chosen, rejected (got 'other')",
    ]


def test_scores_table_with_one_score_missing_is_refused(tmp_path):
    path = write_csv(tmp_path / "s.csv", "pair_id,score_chosen,score_rejected\np1,1,\np2,inf,0\n")
    assert refused(path, known=ids(2)) == [
        "row 1, column 'score_rejected': is empty",
        "row 2, column 'score_chosen': must be a finite number (got 'inf')",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file has no rows"),
        ("a,b\n1,2\n", "match no model layout"),
        ("pair_id,score_chosen\np1,1\n", "looks like a table of scores but lacks 'score_rejected'"),
        ("id,prediction\np1,A\n", "lacks pos_in_a or correct_answer"),
    ],
)
def test_unrecognised_columns_are_refused_in_one_sentence(tmp_path, text, message):
    problems = refused(write_csv(tmp_path / "m.csv", text))
    assert len(problems) == 1 and message in problems[0]


def test_json_lines_that_are_not_objects_are_refused_with_their_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"pair_id": "p1", "preference": "tie"}\n[1, 2]\n{oops\n', encoding="utf-8")
    assert refused(path) == [
        "line 2: expected a JSON object, got list",
        "line 3: not valid JSON: expecting property name enclosed in double quotes at column 2",
    ]


@pytest.mark.parametrize(
    "line, problem",
    [
        (
            '{"pair_id": "p2", "score_chosen": 1, "score_chosen": 0, "score_rejected": 0}',
            "line 2: not valid JSON: the key 'score_chosen' appears twice in one object",
        ),
        (
            '{"pair_id": "p2", "score_chosen": NaN, "score_rejected": 0}',
            "line 2: not valid JSON: NaN is not a JSON value (JSON has no NaN or infinity)",
        ),
        (
            '{"pair_id": "p2", "score_chosen": -Infinity, "score_rejected": 0}',
            "line 2: not valid JSON: -Infinity is not a JSON value (JSON has no NaN or infinity)",
        ),
    ],
)
def test_json_lines_are_strict_json_as_the_importers_read_it(tmp_path, line, problem):
    # json.loads read NaN as a number and kept the last of two keys: the importers refuse both
    path = tmp_path / "m.jsonl"
    first = '{"pair_id": "p1", "score_chosen": 1, "score_rejected": 0}'
    path.write_text(f"{first}\n{line}\n", encoding="utf-8")
    assert refused(path, known=("p1", "p2")) == [problem]


def test_json_lines_with_a_byte_order_mark_and_a_line_separator_in_a_value_are_read(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        '\ufeff{"pair_id": "p1", "preference": "tie", "note": "a\u2028b"}\n'
        '{"pair_id": "p2", "preference": "chosen"}\n',
        encoding="utf-8",
    )
    model = read_model_file(path, name="m", known_ids=["p1", "p2"])
    assert list(model.pair_id) == ["p1", "p2"] and list(model.pick) == [TIE, CHOSEN]


def test_gold_pairs_need_no_row_but_may_have_one(tmp_path):
    path = write_csv(tmp_path / "m.csv", "pair_id,preference\np1,chosen\n")
    model = read_model_file(path, name="m", known_ids=["p1", "gold"], required_ids=["p1"])
    assert model.pair_id.tolist() == ["p1"]


# --- agreement with the humans -------------------------------------------------------------


def test_cohens_kappa_published_example():
    """The worked example of Cohen's kappa in Wikipedia ("Cohen's kappa", Simple example):
    50 proposals, both readers yes 20, A yes B no 5, A no B yes 10, both no 15: p_o = 0.7,
    p_e = 0.5, kappa = 0.4. Reader A = the human majority, reader B = the model."""
    human = np.array([0] * 25 + [1] * 25)
    pick = np.array([CHOSEN] * 20 + [REJECTED] * 5 + [CHOSEN] * 10 + [REJECTED] * 15)
    kappa, note = weighted_kappa(human, pick)
    assert note is None
    assert kappa == pytest.approx(0.4)


def test_agreement_with_the_majority_counts_a_tie_half():
    """Majorities C, C, C, C, R; the model picks C, C, tie, R, R. Agreement credit
    (1 + 1 + 0.5 + 0 + 1) / 5 = 0.7. Weighted kappa: model marginals (0.4, 0.4, 0.2), human
    (0.8, 0.2); chance agreement 0.8 (0.4 + 0.1) + 0.2 (0.4 + 0.1) = 0.5; kappa 0.2 / 0.5 = 0.4.
    Without the tie (C, C, C, R, R): 0.8 and kappa (0.8 - 0.56) / 0.44 = 6/11."""
    pairs = pair_table(["chosen"] * 4 + ["rejected"])

    def model(picks):
        from analysis.judges.files import ModelJudgements

        return ModelJudgements(
            name="m",
            layout="preference",
            pair_id=np.array(ids(5), dtype=object),
            pick=np.array(picks),
            chosen_first=None,
            parse_failed_given=False,
        )

    agreement = compare(pairs, model([CHOSEN, CHOSEN, TIE, REJECTED, REJECTED]))["models"][0]
    assert agreement["agreement_with_humans"]["value"] == pytest.approx(0.7)
    assert agreement["agreement_with_humans"]["kappa"] == pytest.approx(0.4)
    assert agreement["agreement_with_humans"]["n"] == 5
    no_tie = compare(pairs, model([CHOSEN, CHOSEN, CHOSEN, REJECTED, REJECTED]))["models"][0]
    assert no_tie["agreement_with_humans"]["kappa"] == pytest.approx(6 / 11)
    # valid pairs p1-p4: credits 1, 1, 0.5, 0; the flipped pair p5: picks rejected, credit 0
    assert agreement["accuracy_valid"]["value"] == pytest.approx(2.5 / 4)
    assert agreement["accuracy_valid"]["n"] == 4
    assert agreement["accuracy_flip"] == {"value": 0.0, "n": 1}


def test_kappa_without_variation_is_undefined_with_a_note():
    kappa, note = weighted_kappa(np.zeros(4, dtype=int), np.full(4, CHOSEN))
    assert kappa is None and "no variation" in note


def test_position_test_on_fishers_tea_tasting_example():
    """Fisher (1935), the lady tasting tea: [[3, 1], [1, 3]], two-sided p = 17/70 * 2 = 17/35
    (0.4857). Here: chosen shown first on 4 pairs, right on 3; second on 4, right on 1."""
    pick = np.array([CHOSEN, CHOSEN, CHOSEN, REJECTED, CHOSEN, REJECTED, REJECTED, REJECTED])
    first = np.array([True] * 4 + [False] * 4)
    result = position_test(pick, first)
    assert (result["accuracy_chosen_first"], result["accuracy_chosen_second"]) == (0.75, 0.25)
    assert result["p_value"] == pytest.approx(17 / 35)


def test_position_needs_both_orders():
    result = position_test(np.array([CHOSEN, REJECTED]), np.array([True, True]))
    assert result["accuracy_chosen_second"] is None
    assert result["p_value"] is None and "never shown second" in result["note"]


# --- the human reference -------------------------------------------------------------------


def test_human_reference_by_hand():
    """p1: 3 chosen (majority 1, annotators 1); p2: 2 chosen 1 rejected (1, 2/3); p3: one each
    (no majority: 1/2; annotators (1 + 0.5) / 3 = 1/2); p4: 3 rejected (0, 0); p5 has one
    annotation, below --min-annotations 2, and is left out. Majority accuracy 2.5 / 4,
    average single annotator (1 + 2/3 + 1/2 + 0) / 4."""
    pairs = pair_table(
        ["chosen", "chosen", None, "rejected", "chosen"],
        counts=[(3, 0, 0), (2, 1, 0), (1, 1, 1), (0, 3, 0), (1, 0, 0)],
    )
    majority, annotator = human_credit(pairs, min_annotations=2)
    assert majority.tolist() == [1.0, 1.0, 0.5, 0.0]
    assert annotator.tolist() == pytest.approx([1, 2 / 3, 0.5, 0])
    reference = compare(pairs)["human_reference"]
    assert reference["majority_accuracy"]["value"] == 0.625
    assert reference["annotator_accuracy"]["value"] == pytest.approx((1 + 2 / 3 + 0.5) / 4)
    assert reference["majority_accuracy"]["n"] == 4
    lo, hi = reference["majority_accuracy"]["ci95"]
    assert 0 <= lo <= 0.625 <= hi <= 1


# --- bootstrap and paired differences ------------------------------------------------------


def test_resampled_means_have_the_bootstrap_mean_and_spread():
    """The bootstrap distribution of a mean of n values has mean x-bar and variance
    s^2 (n-1)/n / n (the plug-in variance over n)."""
    values = np.array([[1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 1.0]])
    samples = resampled_means(values, resamples=40_000, seed=1)[0]
    n = values.size
    assert samples.mean() == pytest.approx(values.mean(), abs=0.005)
    assert samples.var() == pytest.approx(values.var() / n, rel=0.05)


def test_paired_difference_of_two_pairs_by_hand():
    """Two pairs; model a is right on both, b on the first only. Per-pair differences (0, 1):
    a resample holds the second pair 0, 1 or 2 times (probabilities 1/4, 1/2, 1/4), so the
    resampled difference is 0, 1/2 or 1 and the 95% interval is [0, 1]."""
    samples = resampled_means(np.array([[1.0, 1.0], [1.0, 0.0]]), resamples=4000, seed=3)
    difference = samples[0] - samples[1]
    assert set(np.unique(difference)) == {0.0, 0.5, 1.0}
    assert np.mean(difference == 0.5) == pytest.approx(0.5, abs=0.03)
    from analysis.judges.accuracy import percentile_interval

    assert percentile_interval(difference) == [0.0, 1.0]


def test_identical_models_differ_by_exactly_zero_when_paired(tmp_path):
    rows = [
        {"pair_id": p, "preference": "chosen" if i % 3 else "rejected"}
        for i, p in enumerate(ids(30))
    ]
    a = read_model_file(write_jsonl(tmp_path / "a.jsonl", rows), name="a", known_ids=ids(30))
    b = read_model_file(write_jsonl(tmp_path / "b.jsonl", rows), name="b", known_ids=ids(30))
    result = compare(pair_table(["chosen"] * 30), a, b, bootstrap=500)
    first = result["model_differences"][0]
    assert (first["a"], first["b"], first["subset"]) == ("a", "b", "all")
    assert first["difference"] == 0.0 and first["ci95"] == [0.0, 0.0]
    assert result["models"][0]["accuracy"]["ci95"][1] > result["models"][0]["accuracy"]["ci95"][0]


def test_paired_interval_is_narrower_than_unpaired_for_correlated_models():
    """Two models that agree on 95% of 400 pairs: resampling the same pairs for both keeps
    what they share out of the difference's interval; independent resamples do not."""
    rng = np.random.default_rng(5)
    a = (rng.random(400) < 0.7).astype(float)
    b = np.where(rng.random(400) < 0.05, 1 - a, a)
    paired = resampled_means(np.vstack([a, b]), resamples=2000, seed=1)
    paired_width = np.subtract(*np.percentile(paired[0] - paired[1], [97.5, 2.5]))
    alone_a = resampled_means(a[None], resamples=2000, seed=2)[0]
    alone_b = resampled_means(b[None], resamples=2000, seed=3)[0]
    unpaired_width = np.subtract(*np.percentile(alone_a - alone_b, [97.5, 2.5]))
    # expected about 0.35: sd of the paired difference sqrt(0.05 / 400) against sqrt(2 * 0.21 / 400)
    assert paired_width < 0.5 * unpaired_width
    # the paired interval itself is the one the report gives
    from analysis.judges.accuracy import percentile_interval

    lo, hi = percentile_interval(paired[0] - paired[1])
    assert hi - lo == pytest.approx(paired_width)


def test_no_valid_pairs_gives_null_with_a_note_and_bootstrap_zero_no_interval(tmp_path):
    path = write_jsonl(
        tmp_path / "m.jsonl", [{"pair_id": p, "preference": "chosen"} for p in ids(2)]
    )
    model = read_model_file(path, name="m", known_ids=ids(2))
    result = compare(pair_table(["rejected", "rejected"]), model, model, bootstrap=0)
    entry = result["models"][0]
    assert (
        entry["accuracy_valid"]["value"] is None
        and "no valid pairs" in entry["accuracy_valid"]["note"]
    )
    assert entry["accuracy"]["ci95"] is None and "--bootstrap 0" in entry["accuracy"]["ci95_note"]
    valid = next(d for d in result["model_differences"] if d["subset"] == "valid")
    assert valid["difference"] is None and "note" in valid


def test_before_any_human_answer_only_the_label_accuracy_is_defined(tmp_path):
    """A model compared before annotators answered (issue 14): accuracy against the
    constructed label has its value and interval; everything that needs a human verdict is
    null with a note, the error split's share too (no pair was judged, so none was "not
    confirmed"), and the sentences say so instead of putting every error on the humans."""
    path = write_csv(tmp_path / "m.csv", "pair_id,preference\n" + "".join(
        f"{p},{'rejected' if p == 'p1' else 'chosen'}\n" for p in ids(12)
    ))  # fmt: skip
    model = read_model_file(path, name="m", known_ids=ids(12))
    pairs = pair_table(
        [None] * 12, verdicts=["insufficient_annotations"] * 12, counts=[(0, 0, 0)] * 12
    )
    result = compare(pairs, model)
    entry = result["models"][0]
    assert entry["accuracy"]["value"] == pytest.approx(11 / 12)
    assert entry["accuracy"]["ci95"] is not None
    for key in ("accuracy_valid", "accuracy_flip", "agreement_with_humans"):
        assert entry[key]["value"] is None and entry[key]["note"].startswith("undefined"), key
    assert entry["errors"]["total"] == 1.0
    assert entry["errors"]["share_not_valid"] is None
    assert "no pair has a human verdict" in entry["errors"]["note"]
    for label in ("majority_accuracy", "annotator_accuracy"):
        assert result["human_reference"][label]["value"] is None
    sentences = error_sentences({"models": result["models"]})
    assert sentences == ["m: 1 error (ties count 1/2); no pair has a human verdict yet."]
    notes = undefined_notes(result)
    assert "agrees with majority (m): undefined: no pair with a human majority" in notes
