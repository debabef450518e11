"""Per-pair verdicts: the reason rule pooled as the conclusion pools it, the gap rule credible
given the pair's own rating noise, and one pair's verdict by the same rules as the report's."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.files.annotations_table import validate_annotations
from analysis.frames import code
from analysis.verdicts.pairs import gap_noise, pair_table, pair_verdict
from analysis.vocabulary import COLUMNS, DIMENSIONS
from tests.report_fixtures import frame, row

RULES: dict[str, Any] = {"min_annotations": 2, "quality_threshold": 3.0, "pair_gap": 1.0}


def clean_benchmark(n_pairs: int, *, seed: int, true_gap: float = 0.0) -> pd.DataFrame:
    """The audit's clean benchmark: chosen and rejected of equal true quality (or ``true_gap``
    apart), each rating the truth plus noise sd 0.7 rounded onto 1-5, three annotators a pair,
    reasons 60% personal fit, 30% both, 10% general quality; 85% pick chosen."""
    rng = np.random.default_rng(seed)
    pair = np.repeat(np.arange(n_pairs), 3)
    n = pair.size
    table = {
        "pair_id": pair.astype(str),
        "annotator": np.char.add("a", np.tile(np.arange(3), n_pairs).astype(str)),
        "preference": np.where(rng.random(n) < 0.85, "chosen", "rejected"),
        "main_reason": rng.choice(
            ["personal_fit", "both", "general_quality"], size=n, p=[0.6, 0.3, 0.1]
        ),
    }
    for dimension in DIMENSIONS:
        truth = rng.normal(4.0, 0.4, n_pairs)
        for side, shift in (("chosen", true_gap / 2), ("rejected", -true_gap / 2)):
            noisy = truth[pair] + shift + rng.normal(0, 0.7, n)
            table[f"{dimension}_{side}"] = np.clip(np.rint(noisy), 1, 5)
    out = pd.DataFrame(table)
    for column in COLUMNS:
        if column not in out:
            out[column] = None
    return validate_annotations(out[COLUMNS], source="test")


def table_of(annotations: pd.DataFrame) -> pd.DataFrame:
    ids = pd.Index(pd.unique(annotations["pair_id"].to_numpy(dtype=object)))
    coded = code(annotations, ids)
    return pair_table(
        coded,
        gold=np.zeros(len(ids), dtype=bool),
        category=np.full(len(ids), "", dtype=object),
        noise=gap_noise(coded),
        **RULES,
    )


def flagged(table: pd.DataFrame, prefix: str) -> np.ndarray:
    return table["flags"].map(lambda f: any(x.startswith(prefix) for x in f.split(";"))).to_numpy()


def test_clean_benchmark_has_at_most_five_percent_confounds():
    table = table_of(clean_benchmark(2000, seed=1))
    confound = flagged(table, "gap:") | flagged(table, "reason:")
    # known answer of the reason rule: 2 or 3 of 3 annotators say general quality,
    # 3 * 0.1^2 * 0.9 + 0.1^3 = 0.028
    assert flagged(table, "reason:").mean() == pytest.approx(0.028, abs=0.012)
    assert flagged(table, "gap:").mean() <= 0.01
    assert confound.mean() <= 0.05


def test_the_gap_rule_still_finds_a_real_gap():
    table = table_of(clean_benchmark(500, seed=2, true_gap=2.5))
    assert flagged(table, "gap:").mean() >= 0.8


def test_reason_rule_pools_personal_fit_with_both():
    rows = [
        row("mixed", "a1", "chosen", reason="personal_fit"),
        row("mixed", "a2", "chosen", reason="general_quality"),
        row("mixed", "a3", "chosen", reason="both"),
        row("even", "a1", "chosen", reason="general_quality"),
        row("even", "a2", "chosen", reason="both"),
        row("quality", "a1", "chosen", reason="general_quality"),
        row("quality", "a2", "chosen", reason="general_quality"),
        row("quality", "a3", "chosen", reason="personal_fit"),
    ]
    table = table_of(validate_annotations(frame(rows), source="test")).set_index("pair_id")
    assert table.loc["mixed", "verdict"] == "valid"
    assert table.loc["even", "verdict"] == "valid"  # one each: not *more* general quality
    assert table.loc["quality", "verdict"] == "quality_confound"
    assert table.loc["quality", "flags"] == "reason:general_quality;unrated"


def test_gap_rule_needs_the_gap_to_stand_out_of_the_pairs_noise():
    rows = [
        # every annotator sees chosen 2 points better: credible
        *[row("steady", a, "chosen", chosen=(5, 4, 4), rejected=(3, 4, 4)) for a in "xyz"],
        # the same mean gap of 2, from gaps 4, 2, 0: not credible
        row("noisy", "x", "chosen", chosen=(5, 4, 4), rejected=(1, 4, 4)),
        row("noisy", "y", "chosen", chosen=(5, 4, 4), rejected=(3, 4, 4)),
        row("noisy", "z", "chosen", chosen=(3, 4, 4), rejected=(3, 4, 4)),
    ]
    answers = validate_annotations(frame(rows), source="test")
    alone = {
        p: pair_verdict(answers[answers["pair_id"] == p], **RULES) for p in ("steady", "noisy")
    }
    assert alone["steady"]["correctness_gap"] == 2.0
    assert alone["steady"]["correctness_gap_lower"] == 2.0  # no spread, no study prior
    assert alone["steady"]["verdict"] == "quality_confound"
    assert alone["steady"]["flags"] == ["gap:correctness"]
    assert alone["noisy"]["correctness_gap"] == pytest.approx(2.0)
    # gaps 4, 2, 0: mean 2, sd 2, t(0.95, 2) = 2.919986: bound 2 - 2.919986 * 2 / sqrt(3)
    assert alone["noisy"]["correctness_gap_lower"] == pytest.approx(
        2 - 2.919986 * 2 / np.sqrt(3), abs=1e-5
    )
    assert "gap:correctness" not in alone["noisy"]["flags"]  # (its rejected mean 7/3 is low)


def test_one_pair_alone_gets_the_report_rules_verdict():
    answers = clean_benchmark(60, seed=3)
    table = table_of(answers).set_index("pair_id")
    noise = gap_noise(code(answers, pd.Index(pd.unique(answers["pair_id"]))))
    for pair_id in table.index[:8]:
        one = pair_verdict(answers[answers["pair_id"] == pair_id], noise=noise, **RULES)
        assert one["verdict"] == table.loc[pair_id, "verdict"]
        assert one["correctness_gap_lower"] == pytest.approx(
            table.loc[pair_id, "correctness_gap_lower"]
        )


def test_pair_verdict_refuses_answers_of_two_pairs():
    answers = validate_annotations(
        frame([row("p", "a1", "chosen"), row("q", "a1", "chosen")]), source="test"
    )
    with pytest.raises(ValueError, match="exactly one pair"):
        pair_verdict(answers, **RULES)


def test_pair_verdict_gives_plain_python_values():
    """Its row is plain Python (json.dumps takes it): no NumPy scalar from the pair table."""
    answers = clean_benchmark(60, seed=3)
    first = answers["pair_id"].iloc[0]
    one = pair_verdict(answers[answers["pair_id"] == first], **RULES)
    assert [k for k, v in one.items() if isinstance(v, np.generic)] == []
    json.dumps(one)
