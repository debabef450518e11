"""Sizing a benchmark's sample (analysis/population/sample_size.py, `annotate plan --population`)."""

from __future__ import annotations

import math

import pytest

from analysis.population.estimates import Z95
from analysis.population.sample_size import guided_plan, uniform_plan
from annotate.cli import main


def test_uniform_size_by_hand():
    # (1 - n/M) p (1 - p) / n <= (h / z)^2  <=>  n >= p(1-p) / ((h/z)^2 + p(1-p)/M)
    bound = 0.16 / ((0.04 / Z95) ** 2 + 0.16 / 3000)
    assert bound == pytest.approx(340.6, abs=0.1)
    got = uniform_plan(3000, valid_share=0.8, half_width=0.04)
    assert got["pairs"] == math.ceil(bound) == 341
    assert got["half_width"] <= 0.04
    assert got["bad_found"] == pytest.approx(341 * 0.2)


def test_a_correlated_judge_needs_fewer_pairs_by_one_minus_rho_squared():
    human = uniform_plan(3000, valid_share=0.8, half_width=0.02)["pairs"]
    judged = uniform_plan(3000, valid_share=0.8, half_width=0.02, rho=0.8)["pairs"]
    bound = 0.16 * 0.36 / ((0.02 / Z95) ** 2 + 0.16 * 0.36 / 3000)
    assert judged == math.ceil(bound) < human


def test_guided_plan_at_the_issues_worked_case():
    # 3,000 pairs, 20 % bad; the judge flags 60 % of bad (360) and 20 % of good (480)
    got = guided_plan(3000, valid_share=0.8, half_width=0.04, sensitivity=0.6, false_alarm=0.2)
    assert got["half_width"] <= 0.04
    assert got["flagged"] + got["rest"] == got["pairs"]
    # with all 840 flagged pairs in, the rest stratum (2,160 pairs, 240 bad) needs
    # (2160/3000)^2 (1 - r/2160) q (1 - q) / r <= (0.04 / z)^2 ...
    full = guided_plan(3000, valid_share=0.8, half_width=0.0286, sensitivity=0.6, false_alarm=0.2)
    assert full["flagged"] == 840
    assert full["bad_found"] == pytest.approx(360 + full["rest"] * 240 / 2160)


def test_plan_population_prints_the_three_designs(capsys):
    assert main(["plan", "--population", "3000", "--half-width", "0.04"]) == 0
    out = capsys.readouterr().out
    assert "| uniform, humans only | 341 |" in out
    assert "judge-guided" in out and "PPI++" in out
