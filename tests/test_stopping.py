"""Known answers of the stopping rule of adaptive overlap (analysis/design/stopping.py), worked by
hand from its definition: decided when at least MIN answers and no one further answer could
change the pair's strict-majority verdict; else at_max at MAX; else needs_more."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.design.stopping import AT_MAX, DECIDED, NEEDS_MORE, stopping_states, target_after
from tests.statistics_helpers import stopping_state

C, R, T = "chosen", "rejected", "tie"

# (answers so far, state) with MIN 2, MAX 5, no ties: "one side leads by two"
NO_TIES = [
    ([], NEEDS_MORE),
    ([C], NEEDS_MORE),  # below MIN, even though unanimous
    ([C, C], DECIDED),  # 2-0: a rejected answer leaves 2-1
    ([R, R], DECIDED),  # a flip is decided too (preference_flip)
    ([C, R], NEEDS_MORE),  # 1-1: the next answer decides the majority
    ([C, R, C], NEEDS_MORE),  # 2-1: a rejected answer makes 2-2, no consensus
    ([C, R, C, C], DECIDED),  # 3-1
    ([C, R, R, C], NEEDS_MORE),  # 2-2
    ([C, R, C, R, C], AT_MAX),  # 3-2 at MAX: a sixth could make 3-3
    ([C, R, C, R, R], AT_MAX),
]


@pytest.mark.parametrize("answers,state", NO_TIES, ids=["-".join(a) or "none" for a, _ in NO_TIES])
def test_without_ties_one_side_leads_by_two(answers, state):
    assert stopping_state(answers, minimum=2, maximum=5, ties=False) == state


def test_at_max_is_only_for_undecided_pairs():
    # 3-2 could become 3-3 by one answer: at MAX it is at_max, below MAX it needs more
    assert stopping_state([C, C, C, R, R], minimum=2, maximum=5, ties=False) == AT_MAX
    assert stopping_state([C, C, C, R, R], minimum=2, maximum=7, ties=False) == NEEDS_MORE
    # 4-1 is decided whatever MAX is
    assert stopping_state([C, C, C, C, R], minimum=2, maximum=5, ties=False) == DECIDED


# (answers, state) with MIN 2, MAX 4, ties allowed: a tie answer counts against both sides
WITH_TIES = [
    ([C, C], DECIDED),  # + tie: 2 of 3 is still a strict majority
    ([C, T], NEEDS_MORE),  # + tie: 2 ties of 3 is a tie majority, no consensus
    ([T, T], DECIDED),  # no consensus whatever comes next (a majority of ties)
    ([C, C, T], NEEDS_MORE),  # + rejected: 2 of 4 is not a strict majority
    ([C, C, C], DECIDED),  # + anything: 3 of 4
    ([C, C, T, T], AT_MAX),
]


@pytest.mark.parametrize("answers,state", WITH_TIES)
def test_with_ties(answers, state):
    assert stopping_state(answers, minimum=2, maximum=4, ties=True) == state


def test_no_consensus_that_one_answer_cannot_break_is_decided():
    # chosen, rejected, tie: one more of anything gives 2-1-1, never a strict majority
    assert stopping_state([C, R, T], minimum=2, maximum=5, ties=True) == DECIDED
    # without ties in the study the same logic: 1-1 goes on (one answer makes a majority)
    assert stopping_state([C, R], minimum=2, maximum=5, ties=False) == NEEDS_MORE


def test_ties_allowed_or_not_changes_the_answer():
    # chosen, chosen with ties: + tie keeps the majority
    assert stopping_state([C, C], minimum=2, maximum=5, ties=True) == DECIDED
    # 3-1 without ties is decided; with ties a tie answer gives 3 of 5: still decided
    assert stopping_state([C, C, C, R], minimum=2, maximum=5, ties=True) == DECIDED
    # 2-0 with one tie: without ties in the study no tie can come, so rejected gives 2-1-1
    assert stopping_state([C, C, T], minimum=2, maximum=5, ties=False) == NEEDS_MORE


def test_fixed_overlap_is_min_equal_max():
    for answers in ([C, R, C], [C, C, C], [R, T, C]):
        assert stopping_state(answers, minimum=3, maximum=3) in (DECIDED, AT_MAX)
    assert stopping_state([C, R], minimum=3, maximum=3) == NEEDS_MORE


def test_vectorised_equals_one_by_one():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 4, size=(300, 3))
    states = stopping_states(counts, minimum=2, maximum=6, ties=True)
    for row, state in zip(counts, states, strict=True):
        answers = [C] * row[0] + [R] * row[1] + [T] * row[2]
        assert stopping_state(answers, minimum=2, maximum=6) == state


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        stopping_state([C], minimum=3, maximum=2)
    with pytest.raises(ValueError):
        stopping_state(["maybe"], minimum=1, maximum=2)


@pytest.mark.parametrize(
    "state,n,target",
    [
        (NEEDS_MORE, 0, 2),
        (NEEDS_MORE, 1, 2),
        (DECIDED, 2, 2),
        (NEEDS_MORE, 2, 3),
        (NEEDS_MORE, 4, 5),
        (AT_MAX, 5, 5),
        (AT_MAX, 6, 5),  # a late answer past MAX is kept; nothing more is served
        (DECIDED, 3, 3),
    ],
)
def test_target_after(state, n, target):
    assert target_after(state, n=n, minimum=2, maximum=5) == target


def test_expected_annotations_for_progress_and_eta():
    from analysis.design.stopping import OverlapDesign, expected_annotations

    design = OverlapDesign(
        adaptive=True, minimum=2, maximum=5, ties=False, agreement_overlap=3, sample=frozenset()
    )
    counts = np.array(
        [
            [2, 0, 0],  # decided at 2: ends with 2
            [3, 1, 0],  # decided at 4: ends with 4
            [1, 1, 0],  # open: the stopped pairs' mean, 3
            [0, 0, 0],  # not started: 3
            [2, 2, 0],  # open at 4: at least one more, 5
            [1, 0, 0],  # agreement sample: K
        ]
    )
    in_sample = np.array([False, False, False, False, False, True])
    expected = expected_annotations(counts, in_sample=in_sample, design=design)
    assert expected.tolist() == [2, 4, 3, 3, 5, 3]


def test_the_adaptive_bounds_claim_one_in_32_split_pairs_undecided_after_ten_answers():
    """analysis/design/adaptive_bounds.py says of MAX at most 10: of evenly split pairs (each
    answer chosen or rejected at 50:50, no ties), 1 in 32 is still undecided after 10 answers.
    Worked out exactly over every sequence of 10 answers through the stopping rule itself."""
    from itertools import product

    from analysis.design.adaptive_bounds import ADAPTIVE_BOUNDS, ADAPTIVE_MAX_HIGHEST

    n = ADAPTIVE_MAX_HIGHEST
    undecided = 0
    for answers in product((C, R), repeat=n):
        states = [
            stopping_state(list(answers[:k]), minimum=2, maximum=n + 1, ties=False)
            for k in range(2, n + 1)
        ]
        undecided += DECIDED not in states
    assert undecided / 2**n == 1 / 32
    assert f"1 in 32 evenly split pairs is still undecided after {n} answers" in ADAPTIVE_BOUNDS
