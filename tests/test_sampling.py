"""The sample draw (analysis/population/sampling.py): sizes, inclusion probabilities, reproducibility."""

from __future__ import annotations

import hashlib

import pytest

from analysis.population.sampling import FLAGGED_SHARE, draw_sample, stratum_sizes


def _smallest(ids, n, seed):
    """The draw recomputed from its documented rule: the n smallest sha256("SEED:ID")."""
    return set(sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).digest())[:n])


def test_uniform_draw_is_the_smallest_keyed_hashes_with_probability_n_over_m():
    ids = [f"p{i}" for i in range(50)]
    draws = draw_sample(ids, 10, seed=7)
    assert [d.pair_id for d in draws] == ids
    assert {d.pair_id for d in draws if d.sampled} == _smallest(ids, 10, 7)
    assert {(d.inclusion_probability, d.stratum) for d in draws} == {(10 / 50, "all")}


def test_same_seed_same_sample_whatever_the_order_and_another_seed_another_sample():
    ids = [f"p{i}" for i in range(200)]
    first = {d.pair_id for d in draw_sample(ids, 30, seed=3) if d.sampled}
    again = {d.pair_id for d in draw_sample(list(reversed(ids)), 30, seed=3) if d.sampled}
    other = {d.pair_id for d in draw_sample(ids, 30, seed=4) if d.sampled}
    assert first == again
    assert first != other


def test_judge_guided_takes_every_flagged_pair_when_they_fit_in_the_share():
    ids = [f"p{i}" for i in range(100)]
    flagged = [i < 20 for i in range(100)]  # 20 flagged, 80 others
    draws = draw_sample(ids, 30, seed=1, flagged=flagged)
    by_id = {d.pair_id: d for d in draws}
    assert all(by_id[f"p{i}"].sampled for i in range(20))
    assert all(by_id[f"p{i}"].inclusion_probability == 1.0 for i in range(20))
    assert {by_id[f"p{i}"].stratum for i in range(20)} == {"flagged"}
    rest = [f"p{i}" for i in range(20, 100)]
    assert {i for i in rest if by_id[i].sampled} == _smallest(rest, 10, 1)
    assert {by_id[i].inclusion_probability for i in rest} == {10 / 80}


def test_flagged_pairs_beyond_the_share_are_sampled_too():
    ids = [f"p{i}" for i in range(100)]
    flagged = [i < 60 for i in range(100)]
    draws = draw_sample(ids, 20, seed=5, flagged=flagged)
    taken = [d for d in draws if d.sampled]
    assert len(taken) == 20
    assert sum(d.stratum == "flagged" for d in taken) == int(FLAGGED_SHARE * 20)
    assert {d.inclusion_probability for d in draws if d.stratum == "flagged"} == {16 / 60}
    assert {d.inclusion_probability for d in draws if d.stratum == "rest"} == {4 / 40}


@pytest.mark.parametrize(
    ("total", "flagged", "n", "expected"),
    [
        (3000, 840, 1056, (840, 216)),  # the worked case
        (100, 60, 20, (16, 4)),
        (100, 95, 20, (16, 4)),
        (100, 98, 20, (18, 2)),  # the rest stratum too small: flagged takes the places left
        (100, 0, 20, (0, 20)),
    ],
)
def test_stratum_sizes(total, flagged, n, expected):
    assert stratum_sizes(total, flagged, n, flagged_share=FLAGGED_SHARE) == expected


def test_bad_sizes_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="between 1 and the 3 pairs"):
        draw_sample(["a", "b", "c"], 4, seed=0)
    with pytest.raises(ValueError, match="unique"):
        draw_sample(["a", "a"], 1, seed=0)
