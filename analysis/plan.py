"""Sizing a study before recruiting: how often would the conclusion's checks pass?

Studies are simulated at stated effect sizes and each one goes through the report's own
conclusion (:func:`analysis.report.conclusion_of`), so the power here is the power of exactly
the checks ``annotate report`` applies, with the same thresholds.

The simulated study: ``per_pair`` annotators from a panel of ``annotators`` rate each pair
(every panel member rates every pair when the two are equal). An annotation picks ``tie`` with
``tie_rate``, else ``chosen`` with a probability whose log-odds are those of ``chosen_rate``
plus the annotator's lasting lean (normal, sd ``annotator_spread``; 0 = annotators alike).
Each pair's true quality difference chosen minus rejected is normal (mean ``quality_diff``, sd
``quality_sd`` scale points); each rating adds normal noise (sd ``RATING_NOISE``) and is
rounded onto the scale. Every annotation states a reason: personal fit or both with
``personal_rate``, general quality with ``general_rate``, else unsure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.tables import COLUMNS, DIMENSIONS

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

    def __post_init__(self):
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
    """One simulated annotations table (contract section 3 columns)."""
    if per_pair > annotators:
        raise ValueError(f"{per_pair} annotations per pair need at least as many annotators")
    pair = np.repeat(np.arange(n_pairs), per_pair)
    if per_pair == annotators:
        who = np.tile(np.arange(per_pair), n_pairs)
    else:
        who = np.argsort(rng.random((n_pairs, annotators)), axis=1)[:, :per_pair].ravel()
    n = pair.size
    lean = rng.normal(0.0, effects.annotator_spread, annotators)
    logit = np.log(effects.chosen_rate / (1 - effects.chosen_rate)) + lean[who]
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
    return frame


def power(
    *,
    n_pairs: int,
    per_pair: int,
    annotators: int | None = None,
    effects: Effects,
    options,
    simulations: int,
    seed: int = 0,
) -> dict[str, float]:
    """Share of simulated studies in which each check, and all of them, passed."""
    from analysis.report import conclusion_of

    options = replace(options, bootstrap=0)
    rng = np.random.default_rng([seed, n_pairs, per_pair])
    passed = dict.fromkeys((*CHECKS, "all"), 0)
    for _ in range(simulations):
        study = simulate_study(
            rng,
            n_pairs=n_pairs,
            per_pair=per_pair,
            annotators=annotators or per_pair,
            effects=effects,
            scale=(options.scale_min, options.scale_max),
            dimensions=options.asked_dimensions,
        )
        conclusion = conclusion_of(study, options=options)
        for name in CHECKS:
            passed[name] += conclusion["checks"][name]["passed"]
        passed["all"] += conclusion["personal_preference_main_factor"]
    return {name: count / simulations for name, count in passed.items()}


def plan(
    *,
    pairs: Sequence[int],
    per_pair: Sequence[int],
    annotators: int | None,
    effects: Effects,
    options,
    simulations: int,
    target: float,
    seed: int = 0,
) -> dict:
    """Power of every design (pairs x annotations per pair), and for each number of annotations
    per pair the fewest pairs (of those tried) whose power of passing every check reaches
    ``target``."""
    rows = []
    smallest = {}
    for k in per_pair:
        smallest[k] = None
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
            rows.append({"pairs": n, "per_pair": k, "annotations": n * k, **result})
            if smallest[k] is None and result["all"] >= target:
                smallest[k] = n
    return {"designs": rows, "smallest_pairs": smallest, "target": target}
