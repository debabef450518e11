"""Sizing a study before recruiting: how often would the conclusion's checks pass?

Studies are simulated at stated effect sizes and each one goes through the report's own
conclusion (:func:`analysis.report.build.conclusion_of`), so the power here is the power of exactly
the checks ``annotate report`` applies, with the same thresholds.

The simulated study: ``per_pair`` annotators from a panel of ``annotators`` rate each pair
(every panel member rates every pair when the two are equal). An annotation picks ``tie`` with
``tie_rate``, else ``chosen`` with a probability whose log-odds are those of ``chosen_rate``
plus the annotator's lasting lean (normal, sd ``annotator_spread``; 0 = annotators alike).
Each pair's true quality difference chosen minus rejected is normal (mean ``quality_diff``, sd
``quality_sd`` scale points); each rating adds normal noise (sd ``RATING_NOISE``) and is
rounded onto the scale. Every annotation states a reason: personal fit or both with
``personal_rate``, general quality with ``general_rate``, else unsure. With ``pair_mix``
pairs differ: each pair's chosen rate is drawn from (share, rate) classes instead.

An adaptive design (:class:`Adaptive`) is simulated through the labelling step's own stopping
rule (:func:`analysis.design.stopping.stopping_states`): every pair is drawn with its maximum number of
annotations, in the order they would arrive, and kept up to the first answer after which the
rule says stop (a pair of the agreement sample keeps exactly its K). Its conclusion is the
report's for an adaptive study: on the agreement sample only. ``verdict_accuracy`` is the
share of pairs whose strict majority is the pair's true majority (chosen where its chosen rate
is above one half), and ``agreement_with_max`` (adaptive designs) the share whose strict
majority is the one the same pair's MAX answers would have given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.design.stopping import NEEDS_MORE, stopping_states
from analysis.majority import strict_majority
from analysis.report.shape import Section
from analysis.vocabulary import COLUMNS, DIMENSIONS, PREFERENCES

if TYPE_CHECKING:  # for the annotations only: power() imports the report where it runs one
    from analysis.report.build import ReportOptions

RATING_NOISE = 0.7
CHECKS = ("label", "quality", "reason")


@dataclass(frozen=True)
class Effects:
    chosen_rate: float = 0.75
    tie_rate: float = 0.0
    annotator_spread: float = 0.0
    quality_diff: float = 0.0
    quality_sd: float = 0.5
    personal_rate: float = 0.6
    general_rate: float = 0.25
    pair_mix: tuple[tuple[float, float], ...] | None = None  # (share, chosen rate) classes

    def __post_init__(self) -> None:
        if self.pair_mix is not None:
            shares = [share for share, _ in self.pair_mix]
            if any(not 0 < share <= 1 for share in shares) or abs(sum(shares) - 1) > 1e-9:
                raise ValueError("the pair mix's shares must be above 0 and add up to 1")
            if any(not 0 < rate < 1 for _, rate in self.pair_mix):
                raise ValueError("the pair mix's chosen rates must be strictly between 0 and 1")
        for name in ("chosen_rate", "tie_rate", "personal_rate", "general_rate"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if not 0 < self.chosen_rate < 1:
            raise ValueError(
                f"chosen_rate must be strictly between 0 and 1, got {self.chosen_rate}"
            )
        if self.personal_rate + self.general_rate > 1:
            raise ValueError("personal_rate + general_rate must be at most 1")
        if self.annotator_spread < 0 or self.quality_sd < 0:
            raise ValueError("annotator_spread and quality_sd must be 0 or more")


def simulate_study(
    rng: np.random.Generator,
    *,
    n_pairs: int,
    per_pair: int,
    annotators: int,
    effects: Effects,
    scale: tuple[int, int],
    dimensions: Sequence[str] = DIMENSIONS,
) -> pd.DataFrame:
    """One simulated annotations table (docs/reference/file-formats.md, annotations table columns), each pair's annotations
    in the order they arrive; its ``attrs["pair_rate"]`` holds each pair's chosen rate."""
    if per_pair > annotators:
        raise ValueError(f"{per_pair} annotations per pair need at least as many annotators")
    pair = np.repeat(np.arange(n_pairs), per_pair)
    if per_pair == annotators:
        who = np.tile(np.arange(per_pair), n_pairs)
    else:
        who = np.argsort(rng.random((n_pairs, annotators)), axis=1)[:, :per_pair].ravel()
    n = pair.size
    if effects.pair_mix is None:
        pair_rate = np.full(n_pairs, effects.chosen_rate)
    else:
        shares, rates = (np.array(v, dtype=float) for v in zip(*effects.pair_mix, strict=True))
        pair_rate = rates[rng.choice(len(rates), size=n_pairs, p=shares / shares.sum())]
    lean = rng.normal(0.0, effects.annotator_spread, annotators)
    logit = np.log(pair_rate / (1 - pair_rate))[pair] + lean[who]
    picks_chosen = rng.random(n) < 1 / (1 + np.exp(-logit))
    tie = rng.random(n) < effects.tie_rate
    preference = np.where(tie, "tie", np.where(picks_chosen, "chosen", "rejected"))

    lo, hi = scale
    middle = lo + 0.7 * (hi - lo)
    table = {
        "pair_id": pair.astype(str),
        "annotator": np.char.add("a", who.astype(str)),
        "preference": preference,
    }
    for dimension in DIMENSIONS:
        for side in ("chosen", "rejected"):
            table[f"{dimension}_{side}"] = np.full(n, np.nan)
    for dimension in dimensions:
        base = rng.normal(middle, 0.5, n_pairs)
        diff = rng.normal(effects.quality_diff, effects.quality_sd, n_pairs)
        for side, sign in (("chosen", 0.5), ("rejected", -0.5)):
            true = (base + sign * diff)[pair]
            rating = np.rint(true + rng.normal(0, RATING_NOISE, n))
            table[f"{dimension}_{side}"] = np.clip(rating, lo, hi)
    draw = rng.random(n)
    personal = np.where(rng.random(n) < 0.5, "personal_fit", "both")
    table["main_reason"] = np.where(
        draw < effects.personal_rate,
        personal,
        np.where(draw < effects.personal_rate + effects.general_rate, "general_quality", "unsure"),
    )
    frame = pd.DataFrame(table)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = None
    frame = frame[COLUMNS]
    for column in ("pair_id", "annotator", "preference", "main_reason"):
        frame[column] = frame[column].astype("string")
    frame.attrs["pair_rate"] = pair_rate
    return frame


@dataclass(frozen=True)
class Adaptive:
    """An adaptive design: at least ``minimum``, at most ``maximum`` annotations a pair, by
    the stopping rule; a share ``agreement_sample`` of pairs gets exactly ``agreement_overlap``."""

    minimum: int
    maximum: int
    agreement_sample: float = 0.2
    agreement_overlap: int = 3

    @property
    def name(self) -> str:
        return f"adaptive-{self.minimum}-{self.maximum}"

    @property
    def most(self) -> int:
        return max(self.maximum, self.agreement_overlap)


def _pair_counts(study: pd.DataFrame, n_pairs: int) -> NDArray[np.int64]:
    """pairs x (chosen, rejected, tie) counts of a simulated study (pair ids 0..n-1)."""
    pair = study["pair_id"].to_numpy(dtype=object).astype(int)
    labels = study["preference"].to_numpy(dtype=object)
    codes = np.zeros(len(labels), dtype=np.int64)
    for i, label in enumerate(PREFERENCES):
        codes[labels == label] = i
    return np.bincount(pair * 3 + codes, minlength=n_pairs * 3).reshape(n_pairs, 3)


def adaptive_stop(
    study: pd.DataFrame, design: Adaptive, *, ties: bool, sample: NDArray[np.bool_]
) -> NDArray[np.int64]:
    """How many of each pair's annotations (drawn in arrival order, ``design.most`` each) an
    adaptive study keeps: the first count at which analysis.design.stopping says it is decided or at
    its maximum; exactly K for pairs of the agreement sample."""
    n_pairs = len(sample)
    per_pair = design.most
    labels = study["preference"].to_numpy(dtype=object).reshape(n_pairs, per_pair)
    codes = np.zeros((n_pairs, per_pair), dtype=np.int64)
    for i, label in enumerate(PREFERENCES):
        codes[labels == label] = i
    stop = np.full(n_pairs, design.maximum)
    open_ = np.ones(n_pairs, dtype=bool)
    counts = np.zeros((n_pairs, 3), dtype=np.int64)
    for k in range(1, design.maximum + 1):
        counts[np.arange(n_pairs), codes[:, k - 1]] += 1
        states = stopping_states(counts, minimum=design.minimum, maximum=design.maximum, ties=ties)
        done = open_ & (states != NEEDS_MORE)
        stop[done] = k
        open_ &= ~done
    return np.where(sample, design.agreement_overlap, stop)


def power(
    *,
    n_pairs: int,
    per_pair: int | Adaptive,
    annotators: int | None = None,
    effects: Effects,
    options: ReportOptions,
    simulations: int,
    seed: int = 0,
) -> dict[str, float]:
    """Share of simulated studies in which each check, and all of them, passed; with
    ``annotations_per_pair``, ``verdict_accuracy`` and (adaptive) ``agreement_with_max``."""
    from analysis.report.build import conclusion_of

    options = replace(options, bootstrap=0)
    adaptive = per_pair if isinstance(per_pair, Adaptive) else None
    drawn = per_pair.most if isinstance(per_pair, Adaptive) else per_pair
    # Common random numbers: every design that draws as many annotations a pair (fixed 5 and
    # adaptive 2-5) sees the same simulated answers, so their difference is the designs', not
    # simulation noise; the agreement sample's coin has a stream of its own.
    rng = np.random.default_rng([seed, n_pairs, drawn])
    coin = np.random.default_rng([seed, n_pairs, drawn, 1])
    passed = dict.fromkeys((*CHECKS, "all"), 0)
    kept_total = right = with_max = 0
    for _ in range(simulations):
        study = simulate_study(
            rng,
            n_pairs=n_pairs,
            per_pair=drawn,
            annotators=annotators or drawn,
            effects=effects,
            scale=(options.scale_min, options.scale_max),
            dimensions=options.asked_dimensions,
        )
        truth = np.where(study.attrs["pair_rate"] > 0.5, "chosen", "rejected")
        checked = study
        if adaptive is not None:
            sample = coin.random(n_pairs) < adaptive.agreement_sample
            stop = adaptive_stop(study, adaptive, ties=options.allow_ties, sample=sample)
            rank = np.tile(np.arange(drawn), n_pairs)
            full = _pair_counts(study[rank < adaptive.maximum], n_pairs)
            study = study[rank < np.repeat(stop, drawn)].reset_index(drop=True)
            checked = study[np.repeat(sample, stop)].reset_index(drop=True)
        counts = _pair_counts(study, n_pairs)
        majority = strict_majority(counts)
        right += int((majority == truth).sum())
        if adaptive is not None:
            with_max += int((majority == strict_majority(full)).sum())
        kept_total += len(study)
        conclusion = conclusion_of(checked, options=options) if len(checked) else None
        for name in CHECKS:
            passed[name] += bool(conclusion and conclusion["checks"][name]["passed"])
        passed["all"] += bool(conclusion and conclusion["personal_preference_main_factor"])
    out = {name: count / simulations for name, count in passed.items()}
    pairs_seen = simulations * n_pairs
    out["annotations_per_pair"] = kept_total / pairs_seen
    out["verdict_accuracy"] = right / pairs_seen
    if adaptive is not None:
        out["agreement_with_max"] = with_max / pairs_seen
    return out


def plan(
    *,
    pairs: Sequence[int],
    per_pair: Sequence[int | Adaptive],
    annotators: int | None,
    effects: Effects,
    options: ReportOptions,
    simulations: int,
    target: float,
    seed: int = 0,
) -> Section:
    """Power of every design (pairs x annotations per pair, fixed or adaptive), and for each
    design the fewest pairs (of those tried) whose power of passing every check reaches
    ``target``."""
    rows = []
    smallest: Section = {}
    for k in per_pair:
        name = k.name if isinstance(k, Adaptive) else f"fixed-{k}"
        smallest[name] = None
        for n in sorted(pairs):
            result = power(
                n_pairs=n,
                per_pair=k,
                annotators=annotators,
                effects=effects,
                options=options,
                simulations=simulations,
                seed=seed,
            )
            rows.append(
                {
                    "design": name,
                    "pairs": n,
                    "per_pair": k if not isinstance(k, Adaptive) else None,
                    "annotations": n * result["annotations_per_pair"],
                    "power": result["all"],
                    **result,
                }
            )
            if smallest[name] is None and result["all"] >= target:
                smallest[name] = n
    return {"designs": rows, "smallest_pairs": smallest, "target": target}
