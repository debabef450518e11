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
from numpy.typing import NDArray

from analysis.agreement.bootstrap import MIN_INTERVAL_UNITS, defined_resamples
from analysis.agreement.coefficients import Estimate, alpha_statistic, estimate
from analysis.agreement.panel import Panel
from analysis.report.shape import Section
from analysis.verdicts.conclusion import LABEL_THRESHOLD, check_section, ci_outcome
from analysis.verdicts.validity import label_agreement
from analysis.vocabulary import ASPECT_SCORES as SCORES
from analysis.vocabulary import SIDES

VERDICT = "rubric_not_reflected"
FLAG = "aspects:not_reflected"
DEFAULT_GAP = 0.5
_NO_UNIT = "undefined: no (pair, aspect, response) has two or more scores"
_NO_VARIATION = "undefined: every score has the same value (no variation)"


# --- the scores as a long table --------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """One row per (annotation, aspect, response): ``pair`` indexes the report's pairs."""

    pair: NDArray[np.int64]
    aspect: NDArray[np.int64]  # 0-based position in the pair's rubric
    side: NDArray[np.int64]  # 0 chosen, 1 rejected
    score: NDArray[np.int64]
    annotator: NDArray[np.object_]  # names

    @property
    def empty(self) -> bool:
        return len(self.pair) == 0

    def subset(self, mask: NDArray[np.bool_]) -> Scores:
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


def long_scores(annotations: pd.DataFrame, pair: NDArray[np.int64]) -> Scores:
    """Explode each annotation's aspects list; ``pair`` is each annotation's pair index."""
    lists: list[list[dict[str, int]]] | NDArray[np.object_]  # each annotation's aspects
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
        per_aspect: list[list[float]] = [[] for _ in range(n_pairs)]
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


def not_reflected(gap: NDArray[np.float64], *, threshold: float) -> NDArray[np.bool_]:
    """Pairs whose chosen response does not cover the aspects clearly better: a gap below the
    threshold. Pairs without scores (NaN) are never flagged."""
    with np.errstate(invalid="ignore"):
        flagged: NDArray[np.bool_] = ~np.isnan(gap) & (gap < threshold)
    return flagged


def apply_verdict(table: pd.DataFrame, coverage: pd.DataFrame, *, threshold: float) -> pd.DataFrame:
    """The pair table with the aspect columns and the verdict `rubric_not_reflected`.

    Its place in the documented order is right before `valid`, so it replaces `valid` exactly
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


def pair_layout(
    scores: Scores, n_pairs: int, *, n_values: int, code: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.str_], int]:
    """(pairs x parts*n_values counts, annotations x parts*n_values own counts, each
    annotation's pair, each annotation's annotator, parts): a pair is one row holding its
    (aspect, response) units side by side, so that a drawn pair brings all of them and leaving
    an annotator out removes all its scores (analysis.agreement.intervals)."""
    parts = 2 * (int(scores.aspect.max()) + 1 if not scores.empty else 1)
    column = (scores.aspect * 2 + scores.side) * n_values + code
    by_pair = np.zeros((n_pairs, parts * n_values), dtype=np.int64)
    np.add.at(by_pair, (scores.pair, column), 1)
    keys = pd.DataFrame({"pair": scores.pair, "annotator": scores.annotator.astype(str)})
    annotation = keys.groupby(["pair", "annotator"], sort=True).ngroup().to_numpy()
    n_annotations = int(annotation.max()) + 1 if len(annotation) else 0
    own = np.zeros((n_annotations, parts * n_values), dtype=np.int64)
    np.add.at(own, (annotation, column), 1)
    first = keys.groupby(["pair", "annotator"], sort=True).head(1).index.to_numpy()
    order = np.argsort(annotation[first], kind="stable")
    rows = first[order]
    return by_pair, own, scores.pair[rows], scores.annotator[rows].astype(str), parts


def layout_alpha(
    by_pair: NDArray[np.int64],
    *,
    parts: int,
    domain: list[float],
    bootstrap: int,
    seed: int,
    panel: Panel | None = None,
    own: NDArray[np.int64] | None = None,
) -> Estimate:
    """Ordinal alpha over the (pair, aspect, response) units of a pair layout, with the
    report's intervals: BCa over pairs, and with ``panel`` the annotator-aware one."""
    width = len(domain)
    pairable = (by_pair.reshape(len(by_pair), parts, width).sum(axis=2) >= 2).any(axis=1)
    return estimate(
        alpha_statistic(level="ordinal", domain=domain, parts=parts),
        by_pair,
        resampled=pairable,
        pairable=pairable,
        undefined_note=_NO_VARIATION,
        bootstrap=bootstrap,
        seed=seed,
        panel=panel,
        own=own,
    )


def human_alpha(scores: Scores, n_pairs: int, *, bootstrap: int, seed: int) -> Estimate:
    """Ordinal alpha of the annotators' scores on 0..2, with both intervals."""
    if scores.empty:
        return Estimate(value=None, note=_NO_UNIT)
    by_pair, own, unit, annotator, parts = pair_layout(
        scores, n_pairs, n_values=len(SCORES), code=scores.score - SCORES[0]
    )
    panel = Panel.of(unit, annotator, seed=seed)
    return layout_alpha(
        by_pair,
        parts=parts,
        domain=list(SCORES),
        bootstrap=bootstrap,
        seed=seed,
        panel=panel,
        own=own,
    )


def score_agreement(scores: Scores, n_pairs: int, *, bootstrap: int, seed: int) -> Section:
    """Ordinal alpha of the human scores, overall and per aspect position (aspect 1 of every
    pair's rubric, aspect 2, ...), units (pair, aspect, response)."""
    overall = human_alpha(scores, n_pairs, bootstrap=bootstrap, seed=seed)
    by_aspect = []
    for a in range(int(scores.aspect.max()) + 1 if not scores.empty else 0):
        part = scores.subset(scores.aspect == a)
        part = Scores(part.pair, np.zeros_like(part.aspect), part.side, part.score, part.annotator)
        estimate_a = human_alpha(part, n_pairs, bootstrap=bootstrap, seed=seed)
        by_aspect.append(
            {
                "aspect": a + 1,
                "n_pairs": len(np.unique(part.pair)),
                "chosen_mean": float(part.score[part.side == 0].mean()),
                "rejected_mean": float(part.score[part.side == 1].mean()),
                "agreement": estimate_a.as_dict(),
            }
        )
    return {"agreement": overall.as_dict(), "by_aspect": by_aspect}


def too_few_for_an_interval(n: int) -> str:
    return f"interval omitted: {n} pairs, fewer than {MIN_INTERVAL_UNITS}"


def percentile_interval(
    samples: NDArray[np.float64], *, resamples: int
) -> tuple[list[float] | None, str | None]:
    """95% percentile interval of the defined resamples of a statistic that is not a sum over
    pairs (AUC, a rank correlation), with a note on dropped ones."""
    defined, omitted, dropped_note = defined_resamples(samples, resamples=resamples)
    if omitted:
        return None, omitted
    lo, hi = np.percentile(defined, (2.5, 97.5))
    return [float(lo), float(hi)], dropped_note


# --- the fourth conclusion check -------------------------------------------------------------


# The label check's bar, for the same reason: confirmed pairs outnumber the others 3 to 2.
ASPECT_THRESHOLD = LABEL_THRESHOLD


def aspects_check(
    gaps: NDArray[np.float64], *, gap_threshold: float, threshold: float = ASPECT_THRESHOLD
) -> Section:
    """Do humans confirm the pairs' construction? The share of scored pairs whose chosen
    response covers the aspects clearly better (gap >= gap_threshold), its exact 95% interval
    (the unit is the pair, as for label agreement) compared with ``threshold`` like every
    conclusion check (analysis.verdicts.conclusion): passed when the interval lies above it, failed
    when at or below it, else insufficient. No scored pair is insufficient, never passed."""
    gaps = np.asarray(gaps, dtype=np.float64)
    gaps = gaps[~np.isnan(gaps)]
    share = label_agreement(["chosen" if g >= gap_threshold else "rejected" for g in gaps])
    rule = (
        f"lower end of the exact 95% interval of the share of aspect-scored pairs whose chosen "
        f"response covers the rubric aspects clearly better (mean gap >= {gap_threshold:g} "
        f"match-score points) above {threshold}"
    )
    note = None if share["n"] else "no pair with enough annotations has aspect scores"
    outcome = ci_outcome(share["ci95"], threshold) if share["n"] else "insufficient"
    if share["n"] and outcome != "passed":
        note = f"{share['k']} of {share['n']} pairs confirmed"
    return check_section(
        outcome,
        value=share["value"],
        ci95=share["ci95"],
        threshold=threshold,
        n=share["n"],
        rule=rule,
        note=note,
        k=share["k"],
        p_value=share["p_value"],
        gap_threshold=gap_threshold,
    )


# --- the section of the report ---------------------------------------------------------------


def aspects_section(
    scores: Scores,
    coverage: pd.DataFrame,
    *,
    counted: NDArray[np.bool_],
    gap_threshold: float,
    bootstrap: int,
    seed: int,
) -> Section:
    """report.json's `aspects`; ``counted``: the pairs that enter the set's figures (non-gold,
    with enough annotations and aspect scores)."""
    chosen = coverage["aspects_chosen_coverage"].to_numpy(dtype=np.float64)[counted]
    rejected = coverage["aspects_rejected_coverage"].to_numpy(dtype=np.float64)[counted]
    gaps = chosen - rejected
    n = int(counted.sum())
    agreement = score_agreement(scores, len(coverage), bootstrap=bootstrap, seed=seed)
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


def gap_correlation(
    x: NDArray[np.float64], y: NDArray[np.float64], *, bootstrap: int, seed: int
) -> Section:
    """Spearman's rank correlation with a pair-bootstrap interval (rows are pairs)."""
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {
            "value": None,
            "ci95": None,
            "n": n,
            "note": "undefined: fewer than 3 pairs or no variation",
        }
    from scipy import stats  # here, not at the top: a second of import, needed only here

    value = float(stats.spearmanr(x, y).statistic)
    out: Section = {"value": value, "ci95": None, "n": n}
    if n < MIN_INTERVAL_UNITS:
        out["note"] = too_few_for_an_interval(n)
    elif bootstrap > 0:
        rng = np.random.Generator(np.random.PCG64(seed))
        samples = np.full(bootstrap, np.nan)
        for b in range(bootstrap):
            idx = rng.integers(0, n, size=n)
            if np.ptp(x[idx]) and np.ptp(y[idx]):
                samples[b] = stats.spearmanr(x[idx], y[idx]).statistic
        ci, note = percentile_interval(samples, resamples=bootstrap)
        out["ci95"] = ci
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
