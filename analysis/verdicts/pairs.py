"""Per-pair verdicts (docs/reference/report-keys.md): the first rule that applies, in the documented order.

The rules live in :func:`pair_table`, vectorised over every pair of a report;
:func:`pair_verdict` applies the very same rules to one pair's answers (what a stopping rule
or a sample's estimate needs), so there is one home for them.

The gap rule. A pair is a quality confound on a dimension when chosen's lead over rejected is
credibly above ``pair_gap``: the one-sided 95% lower bound of the mean of its annotators' own
gaps (each annotator's chosen rating minus their rejected rating) exceeds ``pair_gap``. Three
annotators' gaps say little about their spread (two degrees of freedom), so the pair's
variance is shrunk towards the study's pooled within-pair variance of the gaps, which counts
as ``PRIOR_DF`` more degrees of freedom (the moderated t of Smyth 2004, with a fixed prior
weight): ``s2 = (PRIOR_DF * s0^2 + (k - 1) * s^2) / (PRIOR_DF + k - 1)``, bound
``mean - t(0.95, PRIOR_DF + k - 1) * sqrt(s2 / k)``. Without a study (one pair on its own)
only the pair's own spread is used; one annotator's gap alone never flags a pair. The old rule
(mean gap above 1.0) flagged 18% of equal-quality pairs rated with noise sd 0.7 by three
annotators; this one flags well under 1% of them (``tests/test_pair_verdicts.py`` measures it).

The reason rule pools personal fit with both, as the conclusion's reason check does: a pair is
a confound when ``general_quality`` is given by more of its annotators than ``personal_fit``
and ``both`` together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special

from analysis.frames import Coded, code
from analysis.majority import strict_majority
from analysis.report.shape import Section
from analysis.vocabulary import DIMENSIONS, PREFERENCES, REASONS, SIDES

VERDICTS = (
    "insufficient_annotations",
    "no_consensus",
    "preference_flip",
    "low_quality",
    "quality_confound",
    "valid",
)
# Weight of the study's pooled gap variance in a pair's, in degrees of freedom: as much as five
# more annotators' gaps. Large enough that a pair whose three annotators happen to agree exactly
# (rounded ratings often do) is not taken as noise-free, small enough that a pair whose
# annotators disagree widely keeps a wide bound.
PRIOR_DF = 4.0
GAP_LEVEL = 0.95


@dataclass(frozen=True)
class GapNoise:
    """The study's pooled within-pair variance of an annotator's gap, per dimension (NaN when
    no pair has two gaps): the prior of the gap rule."""

    variance: dict[str, float]

    @classmethod
    def none(cls) -> GapNoise:
        return cls({d: np.nan for d in DIMENSIONS})


def _gap_moments(
    coded: Coded, dimension: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per pair: number of annotators who rated both sides, mean and variance (ddof 1) of their
    gaps; NaN where undefined."""
    gap = coded.rating(f"{dimension}_chosen") - coded.rating(f"{dimension}_rejected")
    both = ~np.isnan(gap)
    pair = coded.pair[both]
    k = np.bincount(pair, minlength=coded.n_pairs).astype(np.float64)
    total = np.bincount(pair, weights=gap[both], minlength=coded.n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(k > 0, total / k, np.nan)
        squares = np.bincount(pair, weights=(gap[both] - mean[pair]) ** 2, minlength=coded.n_pairs)
        variance = np.where(k > 1, squares / (k - 1), np.nan)
    return k, mean, variance


def gap_noise(coded: Coded) -> GapNoise:
    """The pooled within-pair variance of the annotators' gaps over the pairs in ``coded``."""
    out = {}
    for dimension in DIMENSIONS:
        k, _, variance = _gap_moments(coded, dimension)
        df = np.where(k > 1, k - 1, 0.0)
        pooled = np.nansum(df * np.nan_to_num(variance)) / df.sum() if df.sum() else np.nan
        out[dimension] = float(pooled)
    return GapNoise(out)


def gap_lower_bound(
    k: NDArray[np.float64],
    mean: NDArray[np.float64],
    variance: NDArray[np.float64],
    *,
    prior_variance: float,
) -> NDArray[np.float64]:
    """One-sided 95% lower bound of each pair's mean gap (see the module docstring); NaN where
    nothing bounds it (no gap, or one gap and no study prior)."""
    prior_df = PRIOR_DF if np.isfinite(prior_variance) else 0.0
    own_df = np.maximum(k - 1, 0.0)
    df = prior_df + own_df
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = (prior_df * np.nan_to_num(prior_variance) + own_df * np.nan_to_num(variance)) / df
        bound = mean - special.stdtrit(np.maximum(df, 1.0), GAP_LEVEL) * np.sqrt(pooled / k)
    return np.where((k > 0) & (df > 0), bound, np.nan)


def pair_table(
    coded: Coded,
    *,
    gold: NDArray[np.bool_],
    category: NDArray[np.object_],
    min_annotations: int,
    quality_threshold: float,
    pair_gap: float,
    noise: GapNoise | None = None,
) -> pd.DataFrame:
    """One row per pair of ``coded.pair_ids``: counts, majority, quality means, verdict, flags,
    and the numbers behind each flag. ``noise``: the study's gap prior (:func:`gap_noise`);
    None uses each pair's own spread only."""
    noise = noise or GapNoise.none()
    counts = coded.per_pair(coded.preference, len(PREFERENCES))
    reasons = coded.per_pair(coded.reason, len(REASONS))
    n = counts.sum(axis=1)
    majority = strict_majority(counts)
    frame = pd.DataFrame(
        {
            "pair_id": coded.pair_ids.to_numpy(dtype=object),
            "category": category,
            "is_gold": gold,
            "n_annotations": n,
            "majority": majority,
        }
    )
    for i, label in enumerate(PREFERENCES):
        frame[f"n_{label}"] = counts[:, i]
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["share_chosen"] = np.where(n > 0, counts[:, 0] / np.maximum(n, 1), np.nan)

    low = np.zeros(coded.n_pairs, dtype=bool)
    gap_flag = np.zeros(coded.n_pairs, dtype=bool)
    flags: list[pd.Series] = [_flag(gold, "gold")]
    rated_any = np.zeros(coded.n_pairs, dtype=bool)
    for dimension in DIMENSIONS:
        means = {side: coded.pair_mean(f"{dimension}_{side}") for side in SIDES}
        for side in SIDES:
            frame[f"{dimension}_{side}_mean"] = means[side]
            below = means[side] < quality_threshold  # NaN (not rated) is never below
            low |= below
            rated_any |= ~np.isnan(means[side])
            flags.append(_flag(below, f"low:{dimension}_{side}"))
        frame[f"{dimension}_gap"] = means["chosen"] - means["rejected"]
        k, mean, variance = _gap_moments(coded, dimension)
        lower = gap_lower_bound(k, mean, variance, prior_variance=noise.variance[dimension])
        frame[f"{dimension}_gap_lower"] = lower
        wide = lower > pair_gap  # NaN (nothing bounds it) is never above
        gap_flag |= wide
        flags.append(_flag(wide, f"gap:{dimension}"))

    for i, reason in enumerate(REASONS):
        frame[f"reason_{reason}"] = reasons[:, i]
    general = reasons[:, REASONS.index("general_quality")]
    personal = reasons[:, REASONS.index("personal_fit")] + reasons[:, REASONS.index("both")]
    quality_reason = general > personal
    flags.append(_flag(quality_reason, "reason:general_quality"))
    flags.append(_flag(~rated_any & (n > 0), "unrated"))
    flags.append(_flag((n > 0) & (n < min_annotations), "few_annotations"))

    decided = (majority == "chosen") | (majority == "rejected")
    frame["verdict"] = np.select(
        [
            n < min_annotations,
            ~decided,
            majority == "rejected",
            low,
            gap_flag | quality_reason,
        ],
        list(VERDICTS[:-1]),
        default="valid",
    )
    joined = pd.concat(flags, axis=1).sum(axis=1).str.rstrip(";")
    frame["flags"] = joined.to_numpy(dtype=object)
    ordered = [
        "pair_id",
        "category",
        "is_gold",
        "verdict",
        "n_annotations",
        "majority",
        *[f"n_{label}" for label in PREFERENCES],
        "share_chosen",
        *[f"{d}_{s}_mean" for d in DIMENSIONS for s in SIDES],
        *[f"{d}_gap" for d in DIMENSIONS],
        *[f"{d}_gap_lower" for d in DIMENSIONS],
        *[f"reason_{r}" for r in REASONS],
        "flags",
    ]
    return frame[ordered]


def pair_verdict(
    answers: pd.DataFrame,
    *,
    min_annotations: int,
    quality_threshold: float,
    pair_gap: float,
    noise: GapNoise | None = None,
) -> Section:
    """The verdict of one pair from its answers (rows of the annotations table,
    docs/reference/file-formats.md, as ``analysis.files.annotations_table`` normalises them; all with the same ``pair_id``), by the
    rules of :func:`pair_table`: its row as a dict, ``flags`` a list. ``noise``: the study's
    gap prior, when the pair belongs to one."""
    ids = pd.unique(answers["pair_id"].to_numpy(dtype=object))
    if len(ids) != 1:
        raise ValueError(f"answers of exactly one pair expected, got {len(ids)} pair ids")
    table = pair_table(
        code(answers, pd.Index(ids)),
        gold=np.zeros(1, dtype=bool),
        category=np.array([""], dtype=object),
        min_annotations=min_annotations,
        quality_threshold=quality_threshold,
        pair_gap=pair_gap,
        noise=noise,
    )
    row: Section = {str(column): value for column, value in table.iloc[0].to_dict().items()}
    row["flags"] = row["flags"].split(";") if row["flags"] else []
    return row


def _flag(mask: NDArray[np.bool_], name: str) -> pd.Series:
    return pd.Series(np.where(mask, name + ";", ""), dtype=object)


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    counts = table["verdict"].value_counts()
    return {v: int(counts.get(v, 0)) for v in VERDICTS}
