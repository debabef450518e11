"""Dawid and Skene (1979): each pair's true preference class from its annotators' labels.

Each pair i has a true class k (``chosen`` preferred, ``rejected`` preferred and, where the
study allows ties, ``tie``), drawn with the study's prevalences pi. Annotator w answers label l
for a pair of class k with probability ``confusion[w, k, l]``, independently of the other
annotators. The EM algorithm alternates the pairs' posterior class probabilities (E step) and
the prevalences and confusion matrices (M step) until the posteriors stop moving.

Three choices go beyond the 1979 paper, after Passonneau and Carpenter, "The Benefits of a
Model of Annotation" (TACL 2014):

- Priors. The M step is a maximum a posteriori step. A full confusion row gets
  ``PRIOR_CORRECT`` pseudo-answers on its diagonal and ``PRIOR_WRONG`` on each other label, the
  prevalences ``PRIOR_PREVALENCE`` pseudo-pairs per class: a confusion entry of exactly 0
  (never seen an error) would make one answer decisive. A one-coin accuracy is drawn towards
  the pool's by a Beta prior estimated from the pool (:func:`pooled_accuracy`).
- One coin for thin data. With three answers a pair a full matrix is weakly identified: the
  prevalence of the rare class and the annotators' accuracy on it trade against each other,
  and the probabilities of that class come out too high (docs/annotation-model.md). So an
  annotator gets a full matrix only with at least ``ONE_COIN_BELOW`` answers on pairs of every
  class (counted from the majority start, fixed for the fit); otherwise one accuracy, the same
  for every class, errors spread evenly over the others.
- Prevalences per stratum. A study that labelled a sample drawn by strata (a judge's flag,
  a category) labels each stratum's pairs with that stratum's own share of each class: one
  prevalence for all would move the pairs of a stratum where flips are rare towards the
  flips of a stratum where they are common. The accuracies are the same in every stratum.
- Parameter uncertainty. :func:`posterior_draws` draws the parameters from their posterior
  around the fit; the pairs' probabilities averaged over the draws do not treat estimated
  accuracies as exact.

``priors=False`` and ``one_coin_below=0`` give the plain maximum-likelihood algorithm, which is
what crowd-kit's ``DawidSkene`` computes (tests/test_annotation_model_reference.py compares
them on recorded crowd-kit outputs, and on the 1979 data).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from analysis.rows import across, sum_rows

PRIOR_CORRECT = 2.0
PRIOR_WRONG = 1.0
PRIOR_PREVALENCE = 1.0
ONE_COIN_BELOW = 100
# bounds of the pool prior's strength, in pseudo-answers, and the least spread it assumes
MIN_STRENGTH, MAX_STRENGTH = 2.0, 1000.0
MIN_SPREAD = 1e-4
MAX_ITERATIONS = 500
TOLERANCE = 1e-6  # largest change of a posterior probability between two iterations


@dataclass(frozen=True)
class Labels:
    """Answers in long form: one entry per answer (an annotator may answer a pair twice, as
    the 1979 data's first observer did)."""

    item: NDArray[np.int64]
    worker: NDArray[np.int64]
    label: NDArray[np.int64]
    n_items: int
    n_workers: int
    n_classes: int

    @cached_property
    def answer(self) -> NDArray[np.int64]:
        """Each answer's (annotator, label) as one index: annotator x classes + label."""
        result: NDArray[np.int64] = self.worker * self.n_classes + self.label
        return result


@dataclass(frozen=True)
class PreferenceFit:
    posterior: NDArray[np.float64]  # items x classes; rows of items without answers = prevalence
    prevalence: NDArray[np.float64]  # classes, over all the items
    stratum_prevalence: NDArray[np.float64]  # strata x classes
    confusion: NDArray[np.float64]  # workers x classes (true) x labels (given)
    one_coin: NDArray[np.bool_]  # workers fitted with one accuracy
    iterations: int
    converged: bool
    log_likelihood: float


def majority_start(labels: Labels) -> NDArray[np.float64]:
    """Each pair's share of answers per label (the 1979 paper's start); pairs without answers
    get equal shares."""
    counts = sum_rows(labels.item, np.eye(labels.n_classes)[labels.label], labels.n_items)
    totals = counts.sum(axis=1, keepdims=True)
    return np.where(totals > 0, counts / np.maximum(totals, 1.0), 1.0 / labels.n_classes)


def _answer_counts(labels: Labels, posterior: NDArray[np.float64]) -> NDArray[np.float64]:
    """workers x true class x given label: each annotator's answers weighted by the pairs'
    probability of each class."""
    k = labels.n_classes
    # (w, l) x true; np.take: several times faster than indexing rows with an array
    counts = sum_rows(labels.answer, np.take(posterior, labels.item, axis=0), labels.n_workers * k)
    return counts.reshape(labels.n_workers, k, k).transpose(0, 2, 1)


def answers_per_class(labels: Labels, posterior: NDArray[np.float64]) -> NDArray[np.float64]:
    """workers x classes: each annotator's expected number of answers on pairs of each class."""
    return sum_rows(labels.worker, np.take(posterior, labels.item, axis=0), labels.n_workers)


def _coin(accuracy: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """Confusion matrices of one accuracy each, errors spread evenly over the other labels."""
    wrong = (1.0 - accuracy) / max(k - 1, 1)
    coin = np.broadcast_to(wrong[:, None, None], (len(accuracy), k, k)).copy()
    coin[:, np.arange(k), np.arange(k)] = accuracy[:, None]
    return coin


def _prevalence_counts(
    posterior: NDArray[np.float64], strata: NDArray[np.int64] | None, *, priors: bool
) -> NDArray[np.float64]:
    """strata x classes: the expected number of pairs of each class (plus the prior's)."""
    counts: NDArray[np.float64]
    if strata is None:
        # column by column: numpy's sum down a tall array of three columns is ten times slower
        counts = np.array([column.sum() for column in posterior.T])[None, :]
    else:
        counts = sum_rows(strata, posterior, int(strata.max(initial=-1)) + 1)
    return counts + PRIOR_PREVALENCE if priors else counts


def _m_step(
    labels: Labels,
    posterior: NDArray[np.float64],
    *,
    priors: bool,
    one_coin: NDArray[np.bool_],
    strata: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(prevalence: strata x classes, confusion: workers x classes x labels)"""
    k = labels.n_classes
    # counts[w, true k, given l] = sum over w's answers l of the pair's P(class k)
    counts = _answer_counts(labels, posterior)
    prevalence = _prevalence_counts(posterior, strata, priors=priors)
    raw = counts
    if priors:
        counts = counts + PRIOR_WRONG + (PRIOR_CORRECT - PRIOR_WRONG) * np.eye(k)
    with np.errstate(invalid="ignore", divide="ignore"):
        prevalence = prevalence / prevalence.sum(axis=1, keepdims=True)
    prevalence = np.where(np.isfinite(prevalence), prevalence, 1.0 / k)
    with np.errstate(invalid="ignore", divide="ignore"):
        confusion = counts / counts.sum(axis=2, keepdims=True)
    # a class no answer of this worker can be weighed against: their row says nothing
    confusion = np.where(np.isfinite(confusion), confusion, 1.0 / k)
    if one_coin.any():
        right = np.trace(raw[one_coin], axis1=1, axis2=2)
        answers = raw[one_coin].sum(axis=(1, 2))
        accuracy = pooled_accuracy(right, answers) if priors else right / answers
        confusion[one_coin] = _coin(accuracy, k)
    return prevalence, confusion


def pooled_accuracy(
    right: NDArray[np.float64], answers: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each one-coin annotator's accuracy under a Beta prior estimated from the pool
    (Passonneau and Carpenter's hierarchical prior, by moments): mean the pool's accuracy,
    strength such that the prior's spread is the spread of the annotators' accuracies beyond
    their binomial noise. Annotators alike are drawn together (little spread: a strong prior),
    annotators who differ keep their own (much spread: a weak one)."""
    mean = _pool_mean(right, answers)
    strength = _pool_strength(right, answers)
    result: NDArray[np.float64] = (right + mean * strength) / (answers + strength)
    return result


def _pool_mean(right: NDArray[np.float64], answers: NDArray[np.float64]) -> float:
    """The pool's accuracy, with the weak prior's pseudo-answers (never exactly 0 or 1)."""
    return float((right.sum() + PRIOR_CORRECT) / (answers.sum() + PRIOR_CORRECT + PRIOR_WRONG))


def _pool_strength(right: NDArray[np.float64], answers: NDArray[np.float64]) -> float:
    """The pool prior's strength in pseudo-answers (as :func:`pooled_accuracy` sets it)."""
    if not len(answers):
        return 0.0
    mean = _pool_mean(right, answers)
    seen = answers > 0
    share = right[seen] / answers[seen]
    noise = float(np.mean(mean * (1 - mean) / answers[seen])) if seen.any() else 0.0
    spread = float(np.var(share)) - noise if seen.sum() > 1 else 0.0
    spread = max(spread, MIN_SPREAD)
    return float(np.clip(mean * (1 - mean) / spread - 1.0, MIN_STRENGTH, MAX_STRENGTH))


def _e_step(
    labels: Labels,
    prevalence: NDArray[np.float64],
    confusion: NDArray[np.float64],
    strata: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.float64], float]:
    """``prevalence``: strata x classes, or one row (classes) without ``strata``."""
    with np.errstate(divide="ignore"):
        log_conf = np.log(confusion)
        log_prior = np.log(np.atleast_2d(prevalence))
    log_prior = log_prior[0] if strata is None else log_prior[strata]
    # rows (annotator, label), columns the true class: one gather of each answer's row
    by_answer = log_conf.transpose(0, 2, 1).reshape(-1, labels.n_classes)
    joint = log_prior + sum_rows(
        labels.item, np.take(by_answer, labels.answer, axis=0), labels.n_items
    )
    top = across(np.maximum, joint)[:, None]
    top = np.where(np.isfinite(top), top, 0.0)
    weights = np.exp(joint - top)
    total = across(np.add, weights)[:, None]
    log_likelihood = float((np.log(total) + top).sum())
    return weights / total, log_likelihood


def fit_preference(
    labels: Labels,
    *,
    priors: bool = True,
    one_coin_below: int = ONE_COIN_BELOW,
    start: NDArray[np.float64] | None = None,
    strata: NDArray[np.int64] | None = None,
    max_iterations: int = MAX_ITERATIONS,
    tolerance: float = TOLERANCE,
) -> PreferenceFit:
    """Fit the model by EM from ``start`` (default: :func:`majority_start`). ``strata``: each
    item's stratum (0, 1, ...), each with prevalences of its own; None for one."""
    posterior = majority_start(labels) if start is None else start.copy()
    one_coin = answers_per_class(labels, posterior).min(axis=1) < one_coin_below
    log_likelihood = -np.inf
    converged = False
    iterations = 0
    for iteration in range(1, max_iterations + 1):
        iterations = iteration
        prevalence, confusion = _m_step(
            labels, posterior, priors=priors, one_coin=one_coin, strata=strata
        )
        updated, log_likelihood = _e_step(labels, prevalence, confusion, strata)
        change = float(np.abs(updated - posterior).max()) if len(posterior) else 0.0
        posterior = updated
        if change < tolerance:
            converged = True
            break
    prevalence, confusion = _m_step(
        labels, posterior, priors=priors, one_coin=one_coin, strata=strata
    )
    overall = _prevalence_counts(posterior, None, priors=priors)[0]
    posterior, log_likelihood = _e_step(labels, prevalence, confusion, strata)
    return PreferenceFit(
        posterior=posterior,
        prevalence=overall / overall.sum(),
        stratum_prevalence=prevalence,
        confusion=confusion,
        one_coin=one_coin,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
    )


def _observed_prevalence_counts(
    posterior: NDArray[np.float64], strata: NDArray[np.int64] | None
) -> NDArray[np.float64]:
    """strata x classes: the Dirichlet counts of the prevalences' posterior given the answers.
    The expected class counts say how many pairs of each class there would be had the classes
    been seen; the answers carry less, by the fraction of the information that is missing
    (Louis 1982): the pairs' mean doubt, 1 - sum p^2, over the doubt of a pair drawn at the
    prevalence. The counts are scaled down by it (plus the prior's)."""
    index = np.zeros(len(posterior), dtype=np.int64) if strata is None else strata
    size = int(index.max(initial=-1)) + 1
    counts = sum_rows(index, posterior, size)
    items = np.bincount(index, minlength=size).astype(np.float64)
    doubt = np.bincount(index, weights=1.0 - (posterior**2).sum(axis=1), minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        prevalence = counts / items[:, None]
        missing = (doubt / items) / (1.0 - (prevalence**2).sum(axis=1))
    missing = np.clip(np.nan_to_num(missing, nan=0.0), 0.0, 1.0)
    observed: NDArray[np.float64] = counts * (1.0 - missing)[:, None] + PRIOR_PREVALENCE
    return observed


def posterior_draws(
    labels: Labels,
    fit: PreferenceFit,
    *,
    draws: int,
    seed: int = 0,
    strata: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """draws x items x classes: the pairs' class probabilities under ``draws`` draws of the
    model's parameters from their posterior given the fit's expected counts (the prevalences
    from a Dirichlet whose counts are scaled to the information the answers carry,
    :func:`_observed_prevalence_counts`; each one-coin accuracy from its Beta under the pool
    prior, each full confusion row from a Dirichlet). Their mean carries the parameters' uncertainty into each
    pair's probabilities; their spread, the part of a benchmark-wide share's error that all
    pairs share."""
    rng = np.random.default_rng(seed)
    k = labels.n_classes
    counts = _answer_counts(labels, fit.posterior)
    prevalence_counts = _observed_prevalence_counts(fit.posterior, strata)
    rows = counts + PRIOR_WRONG + (PRIOR_CORRECT - PRIOR_WRONG) * np.eye(k)
    coin = fit.one_coin
    right = np.trace(counts[coin], axis1=1, axis2=2)
    answers = counts[coin].sum(axis=(1, 2))
    if coin.any():
        mean = _pool_mean(right, answers)
        strength = _pool_strength(right, answers)
        # each accuracy's posterior under the pool prior (pooled_accuracy is its mean)
        beta_right = right + mean * strength
        beta_wrong = answers - right + (1 - mean) * strength
    out = np.empty((draws, labels.n_items, k))
    for d in range(draws):
        prevalence = np.stack([rng.dirichlet(row) for row in prevalence_counts])
        gamma = rng.standard_gamma(rows)
        confusion = gamma / gamma.sum(axis=2, keepdims=True)
        if coin.any():
            accuracy = rng.beta(beta_right, beta_wrong)
            confusion[coin] = _coin(accuracy, k)
        out[d], _ = _e_step(labels, prevalence, confusion, strata)
    return out
