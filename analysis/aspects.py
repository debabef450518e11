"""The per-aspect rubric check: do humans see the chosen response cover this user's aspects and
the rejected one miss them? Pure functions over the annotations' `aspects` column.

Scores are the benchmark's match scores (0 not covered, 1 somewhat, 2 very well), one per
rubric aspect and response. Per pair, a response's coverage is the mean over the pair's aspects
of its annotators' mean score; the pair's gap is chosen's coverage minus rejected's. The pair's
construction is **confirmed** when the gap is at least ``gap_threshold`` (default 0.5: on average
half a match-score point more per aspect), else its verdict is ``rubric_not_reflected``.

Agreement on the scores is ordinal Krippendorff alpha with units (pair, aspect, response) on
0..2; intervals resample whole pairs (every unit of a drawn pair comes along), as every interval
of the report does.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd
from scipy import stats

# (the coincidence helpers are agreement.py's own: one home for alpha's formulas)
from analysis.agreement import (
    Estimate,
    _alpha_from_coincidences,
    _unit_coincidences,
    bootstrap_weights,
    percentile_ci,
)
from analysis.aspect_scores import SCORES, SIDES
from analysis.conclusion import SIGNIFICANCE
from analysis.validity import label_agreement

VERDICT = "rubric_not_reflected"
FLAG = "aspects:not_reflected"
DEFAULT_GAP = 0.5
_NO_UNIT = "undefined: no (pair, aspect, response) has two or more scores"
_NO_VARIATION = "undefined: every score has the same value (no variation)"


# --- the scores as a long table --------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """One row per (annotation, aspect, response): ``pair`` indexes the report's pairs."""

    pair: np.ndarray
    aspect: np.ndarray  # 0-based position in the pair's rubric
    side: np.ndarray  # 0 chosen, 1 rejected
    score: np.ndarray
    annotator: np.ndarray  # object array of names

    @property
    def empty(self) -> bool:
        return len(self.pair) == 0

    def subset(self, mask: np.ndarray) -> Scores:
        return Scores(
            self.pair[mask],
            self.aspect[mask],
            self.side[mask],
            self.score[mask],
            self.annotator[mask],
        )


def has_aspects(annotations: pd.DataFrame) -> bool:
    """Whether any annotation carries aspect scores (the report's aspect parts depend on it)."""
    return "aspects" in annotations and bool(annotations["aspects"].notna().any())


def long_scores(annotations: pd.DataFrame, pair: np.ndarray) -> Scores:
    """Explode each annotation's aspects list; ``pair`` is each annotation's pair index."""
    if "aspects" not in annotations:
        lists, given = [], np.zeros(len(annotations), dtype=bool)
    else:
        given = annotations["aspects"].notna().to_numpy()
        lists = annotations["aspects"].to_numpy(dtype=object)[given]
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    entries = list(chain.from_iterable(lists))
    n = len(entries)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    aspect = np.arange(n, dtype=np.int64) - starts
    pairs = np.repeat(pair[given], lengths)
    names = np.repeat(annotations["annotator"].to_numpy(dtype=object)[given], lengths)
    sides = [np.fromiter((e[side] for e in entries), dtype=np.int64, count=n) for side in SIDES]
    return Scores(
        pair=np.concatenate([pairs, pairs]),
        aspect=np.concatenate([aspect, aspect]),
        side=np.repeat(np.arange(len(SIDES), dtype=np.int64), n),
        score=np.concatenate(sides),
        annotator=np.concatenate([names, names]),
    )


# --- per pair --------------------------------------------------------------------------------


def unit_means(scores: Scores, n_pairs: int) -> pd.DataFrame:
    """Mean score per (pair, aspect, side) over the annotators who gave it, with their number."""
    frame = pd.DataFrame(
        {"pair": scores.pair, "aspect": scores.aspect, "side": scores.side, "score": scores.score}
    )
    grouped = frame.groupby(["pair", "aspect", "side"], sort=True)["score"]
    return grouped.agg(mean="mean", n="size").reset_index()


def pair_coverage(scores: Scores, n_pairs: int) -> pd.DataFrame:
    """Per pair: chosen and rejected coverage (mean over aspects of the annotators' mean score),
    the gap, per-aspect means (lists in rubric order) and how many annotations scored aspects.
    Pairs without scores get NaN and empty lists."""
    means = unit_means(scores, n_pairs)
    out = pd.DataFrame(index=pd.RangeIndex(n_pairs))
    for s, side in enumerate(SIDES):
        part = means[means["side"] == s]  # sorted by pair, then aspect
        out[f"aspects_{side}_coverage"] = part.groupby("pair")["mean"].mean().reindex(out.index)
        pairs, first = np.unique(part["pair"].to_numpy(), return_index=True)
        per_aspect = [[] for _ in range(n_pairs)]
        rounded = np.round(part["mean"].to_numpy(dtype=np.float64), 3)
        for p, values in zip(pairs, np.split(rounded, first[1:]), strict=True):
            per_aspect[p] = values.tolist()
        out[f"aspects_{side}_means"] = pd.Series(per_aspect, index=out.index, dtype=object)
    out["aspects_gap"] = out["aspects_chosen_coverage"] - out["aspects_rejected_coverage"]
    scored = pd.DataFrame({"pair": scores.pair, "annotator": scores.annotator}).drop_duplicates()
    out["n_aspect_annotations"] = (
        scored.groupby("pair").size().reindex(out.index, fill_value=0).astype(np.int64)
    )
    return out


def not_reflected(gap: np.ndarray, *, threshold: float) -> np.ndarray:
    """Pairs whose chosen response does not cover the aspects clearly better: a gap below the
    threshold. Pairs without scores (NaN) are never flagged."""
    with np.errstate(invalid="ignore"):
        return ~np.isnan(gap) & (gap < threshold)


def apply_verdict(table: pd.DataFrame, coverage: pd.DataFrame, *, threshold: float) -> pd.DataFrame:
    """The pair table with the aspect columns and the verdict `rubric_not_reflected`.

    Its place in the contract's order is right before `valid`, so it replaces `valid` exactly
    where it applies; the flag is set whatever the verdict, so a builder also sees it on pairs
    that failed an earlier rule.
    """
    table = table.copy()
    for column in coverage.columns:
        table[column] = coverage[column].to_numpy()
    flagged = not_reflected(coverage["aspects_gap"].to_numpy(dtype=np.float64), threshold=threshold)
    table.loc[flagged & (table["verdict"] == "valid").to_numpy(), "verdict"] = VERDICT
    flags = table["flags"].astype(str).to_numpy(dtype=object)
    for i in np.flatnonzero(flagged):
        flags[i] = f"{flags[i]};{FLAG}" if flags[i] else FLAG
    table["flags"] = flags
    return table


def verdict_counts(counts: dict[str, int], table: pd.DataFrame) -> dict[str, int]:
    """The report's verdict counts with `rubric_not_reflected` in its place (before `valid`)."""
    out = {}
    for verdict, n in counts.items():
        if verdict == "valid":
            out[VERDICT] = int((table["verdict"] == VERDICT).sum())
            n = int((table["verdict"] == "valid").sum())
        out[verdict] = n
    return out


# --- agreement -------------------------------------------------------------------------------


def _unit_counts(scores: Scores) -> tuple[np.ndarray, np.ndarray]:
    """Units (pair, aspect, side) x 3 score counts, and each unit's pair."""
    frame = pd.DataFrame(
        {"pair": scores.pair, "aspect": scores.aspect, "side": scores.side, "score": scores.score}
    )
    unit = frame.groupby(["pair", "aspect", "side"], sort=True).ngroup().to_numpy()
    counts = np.zeros((unit.max() + 1 if len(unit) else 0, len(SCORES)), dtype=np.int64)
    np.add.at(counts, (unit, scores.score), 1)
    unit_pair = np.zeros(len(counts), dtype=np.int64)
    unit_pair[unit] = scores.pair
    return counts, unit_pair


def pair_bootstrap_alpha(
    counts: np.ndarray,
    unit_pair: np.ndarray,
    *,
    level: str,
    domain: list,
    bootstrap: int,
    seed: int,
) -> Estimate:
    """Krippendorff's alpha over the units, with a percentile interval resampling pairs.

    Every unit of a drawn pair comes along, so a resample's coincidences are the pairs'
    summed unit coincidences weighted by how often each pair was drawn: the units are summed
    per pair once, identical pairs grouped, and the resamples drawn over the groups (the
    multinomial of analysis.agreement, exactly the distribution of drawing pairs)."""
    pairable = counts.sum(axis=1) >= 2
    if not pairable.any():
        return Estimate(value=None, note=_NO_UNIT)
    contributions = _unit_coincidences(counts[pairable])
    _, pair_of_unit = np.unique(unit_pair[pairable], return_inverse=True)
    per_pair = np.zeros((pair_of_unit.max() + 1, contributions.shape[1]))
    np.add.at(per_pair, pair_of_unit, contributions)
    patterns, frequencies = np.unique(per_pair, axis=0, return_counts=True)

    def alphas(weights: np.ndarray) -> np.ndarray:
        return _alpha_from_coincidences(weights @ patterns, level=level, domain=domain)

    point = alphas(frequencies[None, :].astype(np.float64))[0]
    if not np.isfinite(point):
        return Estimate(value=None, note=_NO_VARIATION)
    if bootstrap <= 0:
        return Estimate(value=float(point))
    samples = np.concatenate(
        [
            alphas(w.astype(np.float64))
            for w in bootstrap_weights(frequencies, resamples=bootstrap, seed=seed)
        ]
    )
    ci, note = percentile_ci(samples, resamples=bootstrap)
    return Estimate(value=float(point), ci95=ci, note=note)


def score_agreement(scores: Scores, *, bootstrap: int, seed: int) -> dict:
    """Ordinal alpha of the human scores, overall and per aspect position (aspect 1 of every
    pair's rubric, aspect 2, ...), units (pair, aspect, response)."""
    counts, unit_pair = _unit_counts(scores)
    overall = pair_bootstrap_alpha(
        counts, unit_pair, level="ordinal", domain=list(SCORES), bootstrap=bootstrap, seed=seed
    )
    by_aspect = []
    for a in range(int(scores.aspect.max()) + 1 if not scores.empty else 0):
        part = scores.subset(scores.aspect == a)
        c, p = _unit_counts(part)
        estimate = pair_bootstrap_alpha(
            c, p, level="ordinal", domain=list(SCORES), bootstrap=bootstrap, seed=seed
        )
        by_aspect.append(
            {
                "aspect": a + 1,
                "n_pairs": len(np.unique(part.pair)),
                "chosen_mean": float(part.score[part.side == 0].mean()),
                "rejected_mean": float(part.score[part.side == 1].mean()),
                "agreement": estimate.as_dict(),
            }
        )
    return {"agreement": overall.as_dict(), "by_aspect": by_aspect}


# --- the fourth conclusion check -------------------------------------------------------------


def aspects_check(gaps: np.ndarray, *, gap_threshold: float) -> dict:
    """Do humans confirm the pairs' construction? The share of scored pairs whose chosen
    response covers the aspects clearly better (gap >= gap_threshold) must be above 1/2, exact
    one-sided binomial p < SIGNIFICANCE (the unit is the pair, as for label agreement).

    Shape of every conclusion check: {passed, value, ci95, threshold, n, note}. No scored pair
    fails with a note: the absence of evidence never passes.
    """
    gaps = np.asarray(gaps, dtype=np.float64)
    gaps = gaps[~np.isnan(gaps)]
    share = label_agreement(["chosen" if g >= gap_threshold else "rejected" for g in gaps])
    p = share["p_value"]
    check = {
        "passed": p is not None and p < SIGNIFICANCE,
        "value": share["value"],
        "ci95": share["ci95"],
        "threshold": 0.5,
        "n": share["n"],
        "k": share["k"],
        "p_value": p,
        "gap_threshold": gap_threshold,
        "rule": (
            f"share of aspect-scored pairs whose chosen response covers the rubric aspects "
            f"clearly better (mean gap >= {gap_threshold} match-score points) > 1/2, one-sided "
            f"exact p < {SIGNIFICANCE}"
        ),
        "note": None,
    }
    if p is None:
        check["note"] = "fails: no pair with enough annotations has aspect scores"
    elif not check["passed"]:
        check["note"] = (
            f"fails: {share['k']} of {share['n']} pairs confirmed, not significantly more than half"
        )
    return check


def add_check(conclusion: dict, check: dict) -> dict:
    """The conclusion with the aspects check among its checks; a failed check makes the
    conclusion fail too (every check is required)."""
    conclusion = {**conclusion, "checks": {**conclusion["checks"], "aspects": check}}
    if not check["passed"]:
        conclusion["personal_preference_main_factor"] = False
        if conclusion.get("status") == "supported":
            conclusion["status"] = (
                "insufficient_evidence" if check["value"] is None else "not_supported"
            )
    return conclusion


# --- the section of the report ---------------------------------------------------------------


def aspects_section(
    scores: Scores,
    coverage: pd.DataFrame,
    *,
    counted: np.ndarray,
    gap_threshold: float,
    bootstrap: int,
    seed: int,
) -> dict:
    """report.json's `aspects`; ``counted``: the pairs that enter the set's figures (non-gold,
    with enough annotations and aspect scores)."""
    chosen = coverage["aspects_chosen_coverage"].to_numpy(dtype=np.float64)[counted]
    rejected = coverage["aspects_rejected_coverage"].to_numpy(dtype=np.float64)[counted]
    gaps = chosen - rejected
    n = int(counted.sum())
    agreement = score_agreement(scores, bootstrap=bootstrap, seed=seed)
    out = {
        "chosen_coverage": float(chosen.mean()) if n else None,
        "rejected_coverage": float(rejected.mean()) if n else None,
        "gap": float(gaps.mean()) if n else None,
        "gap_threshold": gap_threshold,
        "n_pairs": n,
        "n_not_reflected": int(not_reflected(gaps, threshold=gap_threshold).sum()),
        "n_annotations": int(
            pd.DataFrame({"p": scores.pair, "a": scores.annotator}).drop_duplicates().shape[0]
        ),
        "agreement": agreement["agreement"],
        "by_aspect": agreement["by_aspect"],
    }
    if not n:
        out["note"] = "undefined: no pair with enough annotations has aspect scores"
    return out


def gap_correlation(x: np.ndarray, y: np.ndarray, *, bootstrap: int, seed: int) -> dict:
    """Spearman's rank correlation with a pair-bootstrap interval (rows are pairs)."""
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {
            "value": None,
            "ci95": None,
            "n": n,
            "note": "undefined: fewer than 3 pairs or no variation",
        }
    value = float(stats.spearmanr(x, y).statistic)
    out = {"value": value, "ci95": None, "n": n}
    if bootstrap > 0:
        rng = np.random.Generator(np.random.PCG64(seed))
        samples = np.full(bootstrap, np.nan)
        for b in range(bootstrap):
            idx = rng.integers(0, n, size=n)
            if np.ptp(x[idx]) and np.ptp(y[idx]):
                samples[b] = stats.spearmanr(x[idx], y[idx]).statistic
        ci, note = percentile_ci(samples, resamples=bootstrap)
        out["ci95"] = None if ci is None else list(ci)
        if note:
            out["note"] = note
    return out


METHOD = (
    "aspect check: per pair, a response's coverage is the mean over the pair's rubric aspects "
    "of its annotators' mean match score (0 not covered, 1 somewhat, 2 very well); gap = chosen "
    "minus rejected coverage. rubric_not_reflected: gap < options.aspect_gap (comes after "
    "quality_confound, before valid; the flag aspects:not_reflected is set whatever the "
    "verdict). Agreement: ordinal Krippendorff alpha on 0..2, units (pair, aspect, response); "
    "by_aspect groups the aspects by their position in each pair's rubric; intervals resample "
    "pairs. Conclusion check `aspects`: share of pairs with >= min_annotations annotations and "
    "aspect scores whose gap >= aspect_gap, exact one-sided binomial test against 1/2. Scorer "
    "(--aspect-scores): ordinal alpha of the scorer's score and the annotators' mean score "
    "(two coders per unit, the ordered values that occur as the domain); AUC of the scorer's gap "
    "for the human majority preferring chosen and for humans confirming the pair; Spearman "
    "correlation of the scorer's and the humans' gaps; intervals resample pairs"
)
