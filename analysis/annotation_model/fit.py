"""The model of annotation over a report's pairs (docs/annotation-model.md).

Per pair, the probability of each verdict the answers could be truly about, in the order of the
crowd's verdicts (each pair's probabilities sum to 1):

- ``preference_flip``: the user truly prefers the rejected response,
- ``no_consensus``: the responses are truly tied for this user (studies that allow ties; 0 otherwise),
- ``low_quality``: chosen is truly preferred and some response is truly below the quality threshold,
- ``quality_confound``: chosen is truly preferred, no response is low, and chosen is truly better
  than rejected by more than the pair gap on some dimension,
- ``valid``: chosen is truly preferred and neither quality problem holds.

The preference part is :mod:`analysis.annotation_model.preference`, the quality part
:mod:`analysis.annotation_model.quality`; the model takes them as independent. The crowd's other
reason for ``quality_confound`` (annotators naming general quality as their main reason) and
``rubric_not_reflected`` are the annotators' own statements, not levels to estimate: they stay
flags of the crowd's verdict, outside the probabilities.

The model's verdict (``model_verdict``) is the verdict of highest probability.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.annotation_model.preference import (
    ONE_COIN_BELOW,
    Labels,
    PreferenceFit,
    answers_per_class,
    fit_preference,
    posterior_draws,
)
from analysis.annotation_model.quality import Ratings, fit_quality
from analysis.distributions import jeffreys_interval
from analysis.frames import Coded
from analysis.report.shape import Section
from analysis.vocabulary import SIDES, TIE

VERDICTS = ("preference_flip", "no_consensus", "low_quality", "quality_confound", "valid")
PROBABILITY_COLUMNS = [f"p_{verdict}" for verdict in VERDICTS]
# An annotator is judged near random or adversarial only on this many answers or more.
MIN_JUDGED_ANSWERS = 10
MIN_CLASS_SHARE = 0.05  # classes rarer than this are left out of the balanced accuracy
# Draws of the model's parameters (the preference's prevalences and accuracies, the quality's
# reference shift): a pair's probability is the mean over them, and their spread is the
# shared part of a benchmark-wide share's error (shared_variance).
PARAMETER_DRAWS = 20


@dataclass(frozen=True)
class ModelFit:
    probabilities: pd.DataFrame  # one row per pair of coded.pair_ids: p_* columns, model_verdict
    annotators: pd.DataFrame  # annotator, accuracy, accuracy_ci95_lo/hi, balanced_accuracy, ...
    summary: Section = field(default_factory=dict)
    draws: dict[str, NDArray[np.float32]] = field(default_factory=dict)  # verdict: pairs x draws

    def shared_variance(self, weights: NDArray[np.float64]) -> dict[str, float | None]:
        """Per verdict, the variance over the parameter draws of the weighted sum of the pairs'
        probabilities (``weights``: per pair, 0 for pairs left out): the part of an estimated
        share's error that comes from the model's estimated parameters, which every pair
        shares. None where the probabilities are undefined."""
        out: dict[str, float | None] = {}
        for verdict, values in self.draws.items():
            used = weights != 0
            if np.isnan(values[used]).any():
                out[verdict] = None
                continue
            totals = weights[used] @ values[used].astype(np.float64)
            out[verdict] = float(np.var(totals, ddof=1)) if len(totals) > 1 else 0.0
        return out


def _labels(coded: Coded, classes: tuple[str, ...]) -> tuple[Labels, pd.Index[str]]:
    names = pd.Index(pd.unique(coded.annotations["annotator"].astype(str)))
    worker = names.get_indexer(pd.Index(coded.annotations["annotator"].astype(str)))
    keep = (coded.preference >= 0) & (coded.preference < len(classes))
    return (
        Labels(
            item=coded.pair[keep],
            worker=worker[keep].astype(np.int64),
            label=coded.preference[keep],
            n_items=coded.n_pairs,
            n_workers=len(names),
            n_classes=len(classes),
        ),
        names,
    )


def _ratings(coded: Coded, names: pd.Index[str], dimensions: tuple[str, ...]) -> Ratings:
    columns = [f"{d}_{side}" for side in SIDES for d in dimensions]
    values = np.column_stack([coded.rating(c) for c in columns])
    complete = ~np.isnan(values).any(axis=1)
    worker = names.get_indexer(pd.Index(coded.annotations["annotator"].astype(str)))
    return Ratings(
        pair=coded.pair[complete],
        worker=worker[complete].astype(np.int64),
        values=values[complete],
        n_pairs=coded.n_pairs,
        n_workers=len(names),
    )


def _annotators(labels: Labels, fit: PreferenceFit, names: pd.Index[str]) -> pd.DataFrame:
    """Each annotator's accuracy (the expected share of their answers that match the pair's
    true class), with a Jeffreys interval on that count, and their balanced accuracy: the mean
    over the classes of the share of their answers on pairs of that class that were right,
    from their own answers (not the model's pooled, shrunk accuracy, which would pull a
    near-random annotator towards the pool), with a normal interval. A near-random or
    adversarial annotator is named from the balanced accuracy (module constants)."""
    n = np.bincount(labels.worker, minlength=labels.n_workers).astype(np.float64)
    # each answer's probability of being right: the pair's probability of the class it names
    sure = fit.posterior[labels.item, labels.label]
    right = np.bincount(labels.worker, weights=sure, minlength=labels.n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(n > 0, right / n, np.nan)
    lo, hi = jeffreys_interval(right.astype(np.float64), n)
    counted = fit.prevalence >= MIN_CLASS_SHARE
    per_class = answers_per_class(labels, fit.posterior)[:, counted]
    hits = np.bincount(
        labels.answer, weights=sure, minlength=labels.n_workers * labels.n_classes
    ).reshape(labels.n_workers, labels.n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.clip(hits[:, counted] / per_class, 0.0, 1.0)
        seen = ~np.isnan(recall)
        classes = np.maximum(seen.sum(axis=1), 1)
        balanced = np.where(seen.any(axis=1), np.nansum(recall, axis=1) / classes, np.nan)
        variance = (
            np.nansum(recall * (1 - recall) / np.maximum(per_class, 1.0), axis=1) / classes**2
        )
    half = 1.959963984540054 * np.sqrt(variance)
    chance = 1.0 / max(int(counted.sum()), 1)
    judged = (n >= MIN_JUDGED_ANSWERS) & ~np.isnan(balanced)
    pool = float(np.median(balanced[judged])) if judged.any() else np.nan
    flag = np.where(
        judged & (balanced + half < chance),
        "adversarial",
        np.where(
            judged & (balanced - half <= chance) & (balanced + half < pool),
            "near_random",
            "",
        ),
    )
    return pd.DataFrame(
        {
            "annotator": names.to_numpy(dtype=object),
            "model_answers": n.astype(np.int64),
            "accuracy": accuracy,
            "accuracy_ci95_lo": np.where(n > 0, lo, np.nan),
            "accuracy_ci95_hi": np.where(n > 0, hi, np.nan),
            "balanced_accuracy": balanced,
            "balanced_accuracy_ci95_lo": np.clip(balanced - half, 0, 1),
            "balanced_accuracy_ci95_hi": np.clip(balanced + half, 0, 1),
            "one_coin": fit.one_coin,
            "model_flag": flag,
        }
    )


def _stratum_index(strata: NDArray[np.object_] | None) -> NDArray[np.int64] | None:
    """Each pair's stratum as 0, 1, ...; None where there is one stratum or none."""
    if strata is None:
        return None
    codes, names = pd.factorize(pd.Series(strata, dtype=object).fillna(""))
    return codes.astype(np.int64) if len(names) > 1 else None


def fit_model(
    coded: Coded,
    *,
    dimensions: tuple[str, ...],
    quality_threshold: float,
    pair_gap: float,
    allow_ties: bool,
    strata: NDArray[np.object_] | None = None,
    scale: tuple[float, float] | None = None,
    seed: int = 0,
) -> ModelFit:
    """Fit the model of annotation to the answers in ``coded`` (module docstring).
    ``strata``: each pair's sampling stratum, where the study labelled a sample drawn by
    strata; the classes' prevalences and the levels' prior weights are then the stratum's own
    (a judge-guided sample holds many more bad pairs among the flagged ones). ``scale``: the
    rating scale's ends, whose ratings are censored readings (a 5 on a 1-5 scale says "4.5 or
    more"); None reads every rating as it is."""
    classes = (*SIDES, TIE) if allow_ties else SIDES
    labels, names = _labels(coded, classes)
    index = _stratum_index(strata)
    preference = fit_preference(labels, strata=index)
    answered = np.bincount(labels.item, minlength=coded.n_pairs) > 0
    quality = (
        fit_quality(
            _ratings(coded, names, dimensions),
            threshold=quality_threshold,
            pair_gap=pair_gap,
            seed=seed,
            groups=PARAMETER_DRAWS,
            strata=index,
            scale=scale,
        )
        if dimensions
        else None
    )
    classes_k = posterior_draws(labels, preference, draws=PARAMETER_DRAWS, seed=seed, strata=index)
    chosen_k = classes_k[:, :, 0].T  # pairs x draws
    nan = np.full_like(chosen_k, np.nan)
    low_k = nan if quality is None else quality.p_low
    neither_k = nan if quality is None else quality.p_neither
    draws = {
        "preference_flip": classes_k[:, :, 1].T,
        "no_consensus": classes_k[:, :, 2].T if allow_ties else np.zeros_like(chosen_k),
        "low_quality": chosen_k * low_k,
        "quality_confound": chosen_k * (1.0 - low_k - neither_k),
        "valid": chosen_k * neither_k,
    }
    del classes_k
    # kept in single precision: a draw's probability needs no more, and a million
    # annotations' draws are a few hundred megabytes in double
    single = {name: values.astype(np.float32) for name, values in draws.items()}
    del draws
    for values in single.values():
        values[~answered] = np.nan
    frame = pd.DataFrame({f"p_{v}": single[v].mean(axis=1, dtype=np.float64) for v in VERDICTS})
    values = frame[PROBABILITY_COLUMNS].to_numpy()
    defined = ~np.isnan(values).any(axis=1)
    best = np.argmax(np.nan_to_num(values, nan=-1.0), axis=1)
    verdicts = np.array(VERDICTS, dtype=object)[best]
    verdicts[~defined] = None
    frame["model_verdict"] = verdicts
    if quality is not None:
        frame["p_gap_any"] = np.where(answered, quality.p_gap.mean(axis=1), np.nan)
    summary: Section = {
        "method": (
            "Dawid-Skene by EM (maximum a posteriori, one-coin accuracies under a prior "
            "estimated from the pool) for the preference; for quality, a normal-mixture prior "
            "of the responses' levels (extreme deconvolution) with annotator offsets and noise "
            "levels; probabilities averaged over draws of the parameters"
            + ("; prevalences and prior weights per sampling stratum" if index is not None else "")
        ),
        "classes": list(classes),
        "prevalence": {c: float(p) for c, p in zip(classes, preference.prevalence, strict=True)},
        "iterations": preference.iterations,
        "converged": preference.converged,
        "annotators_one_coin": int(preference.one_coin.sum()),
        "one_coin_rule": (
            f"one accuracy for an annotator with fewer than {ONE_COIN_BELOW} expected answers "
            "on pairs of some class; a full confusion matrix otherwise"
        ),
        "decision_rule": "model_verdict: the verdict of highest probability",
    }
    if quality is None:
        summary["quality_note"] = (
            "the study asks no quality dimension: the quality probabilities are null"
            if not dimensions
            else "too few pairs with two or more complete quality ratings to estimate the "
            "rating noise: the quality probabilities are null"
        )
    else:
        summary["rating_noise_sd"] = [float(v) for v in np.sqrt(np.diag(quality.noise_covariance))]
    summary["parameter_draws"] = PARAMETER_DRAWS
    return ModelFit(
        probabilities=frame,
        annotators=_annotators(labels, preference, names),
        summary=summary,
        draws=single,
    )
