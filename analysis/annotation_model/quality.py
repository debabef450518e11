"""Each response's true quality level per dimension, from its annotators' ratings.

A rating is the response's level on that dimension, plus the annotator's own offset on that
dimension (a lenient or a strict annotator, the same for both responses of a pair), plus
noise:

    rating[a, pair, side, d] = level[pair, side, d] + offset[a, d] + noise

Per pair the levels of both responses on every dimension form one vector (2 x D numbers). Its
prior is a mixture of ``COMPONENTS`` normal distributions fitted to the study by extreme
deconvolution (Bovy, Hogg and Roweis 2011): the spread of the pairs' mean ratings beyond what
their noise explains, so the levels of one response's dimensions, and the two responses'
levels, are as correlated as the study shows them to be. The noise of one annotator's ratings
of a pair is normal with a covariance pooled within pairs (an annotator who rates one
dimension high tends to rate the others high too), scaled by the annotator's own noise level.
The levels are read against these annotators' mean offset, which stands off that of
annotators in general by an unknown shift (about the offsets' spread over the square root of
their number): the Monte Carlo draws it too, in ``groups`` draws shared by every pair. The
posterior of the vector is a normal mixture, and a Monte Carlo over it gives, per pair and
per draw of the shift:

- ``p_low``: some level is below the quality threshold (the ``low_quality`` rule),
- ``p_gap``: on some dimension chosen's level exceeds rejected's by more than the pair gap
  (the rating part of the ``quality_confound`` rule),
- ``p_neither``: neither, read jointly (so one does not hide the other).

The offsets are random effects, shrunk towards 0 by how much the annotators' mean deviations
from the others on the same pairs exceed what noise alone gives. Levels are on the rating
scale. A rating at an end of the scale is censored (a 5 on 1-5 says "4.5 or more"): with the
scale given, the fit is repeated with those ratings replaced by draws beyond their bound
(:func:`_uncensored`). In a sample drawn by strata, each stratum has prior weights of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from analysis.distributions import normal_tail_draw
from analysis.rows import across, sum_rows

DRAWS = 1000  # Monte Carlo draws per pair (half of them antithetic)
MIN_DRAWS = 400
DRAW_BUDGET = 4_000_000  # pairs x draws above which a pair gets fewer draws
PRIOR_PAIRS = 2000
MIN_PAIRS = 10  # pairs with two or more complete ratings needed to estimate the noise
OFFSET_ROUNDS = 3
EIGEN_FLOOR = 1e-4
SCALE_PRIOR = 10.0  # pseudo-answers of typical noise in each annotator's noise scale
MIN_SCALE = 0.2
COUNT_STEP = 0.25  # effective rating counts are rounded to this, to group pairs
COMPONENTS = 2  # normal components of the levels' prior (fewer with few pairs)
CENSORED_ROUNDS = 2  # refits with the scale's end ratings replaced by draws beyond their bound


@dataclass(frozen=True)
class Ratings:
    """Complete ratings in long form: one row per annotation that rated every asked dimension
    of both responses. Columns of ``values``: the chosen response's dimensions, then the
    rejected response's, in the same order."""

    pair: NDArray[np.int64]
    worker: NDArray[np.int64]
    values: NDArray[np.float64]  # annotations x (2 * dimensions)
    n_pairs: int
    n_workers: int

    @property
    def n_dimensions(self) -> int:
        return int(self.values.shape[1] // 2)


@dataclass(frozen=True)
class QualityFit:
    """Per pair and per draw of the reference shift (pairs x groups): the probabilities; a
    pair's own probability is the mean over the groups (:attr:`marginal`)."""

    p_low: NDArray[np.float32]
    p_gap: NDArray[np.float32]
    p_neither: NDArray[np.float32]
    level_mean: NDArray[np.float64]  # pairs x (2 * dimensions), posterior means
    offsets: NDArray[np.float64]  # workers x dimensions
    prior: Mixture
    noise_covariance: NDArray[np.float64]


def _pair_means(
    ratings: Ratings, values: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = np.bincount(ratings.pair, minlength=ratings.n_pairs).astype(np.float64)
    sums = sum_rows(ratings.pair, values, ratings.n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / k[:, None]
    return k, means


def _offsets(ratings: Ratings) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each annotator's offset per dimension: their mean deviation from the other annotators
    of the same pairs, shrunk by its reliability (a random effect)."""
    d = ratings.n_dimensions
    offsets = np.zeros((ratings.n_workers, d))
    k, _ = _pair_means(ratings, ratings.values)
    multi = k[ratings.pair] >= 2
    spread = np.zeros(d)
    if not multi.any():
        return offsets, spread
    for _ in range(OFFSET_ROUNDS):
        adjusted = ratings.values - np.tile(offsets, 2)[ratings.worker]
        _, means = _pair_means(ratings, adjusted)
        kk = k[ratings.pair][multi, None]
        others = (kk * means[ratings.pair][multi] - adjusted[multi]) / (kk - 1)
        deviation = ratings.values[multi] - others  # the own offset plus noise
        per_dim = (deviation[:, :d] + deviation[:, d:]) / 2
        workers = ratings.worker[multi]
        n = np.bincount(workers, minlength=ratings.n_workers).astype(np.float64)
        raw = sum_rows(workers, per_dim, ratings.n_workers)
        seen = n > 0
        raw[seen] /= n[seen, None]
        noise = np.array([np.mean((per_dim[:, j] - raw[workers, j]) ** 2) for j in range(d)])
        spread = np.array(
            [
                np.var(raw[seen, j]) - np.mean(noise[j] / n[seen]) if seen.sum() > 1 else 0.0
                for j in range(d)
            ]
        )
        spread = np.maximum(spread, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = np.where(
                spread > 0, spread / (spread + noise / np.maximum(n, 1)[:, None]), 0.0
            )
        offsets = np.where(seen[:, None], raw * weight, 0.0)
    return offsets, spread


def _noise_scales(
    ratings: Ratings,
    adjusted: NDArray[np.float64],
    k: NDArray[np.float64],
    noise: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Each annotator's noise as a multiple of the pooled noise (1 = typical), from how far
    their ratings stray from the other annotators' mean on the same pairs, shrunk towards 1 by
    ``SCALE_PRIOR`` pseudo-answers."""
    kk = k[ratings.pair]
    multi = kk >= 2
    scale = np.ones(ratings.n_workers)
    if not multi.any():
        return scale
    _, means = _pair_means(ratings, adjusted)
    km = kk[multi, None]
    others = (km * means[ratings.pair][multi] - adjusted[multi]) / (km - 1)
    deviation = adjusted[multi] - others
    j = adjusted.shape[1]
    distance = np.einsum("nj,jk,nk->n", deviation, np.linalg.inv(noise), deviation) / j
    # E[distance] = own scale + the others' mean's, about 1 / (k - 1) of a typical one
    excess = distance - 1.0 / (kk[multi] - 1)
    workers = ratings.worker[multi]
    n = np.bincount(workers, minlength=ratings.n_workers)
    total = np.bincount(workers, weights=excess, minlength=ratings.n_workers)
    scale = (total + SCALE_PRIOR) / (n + SCALE_PRIOR)
    return np.maximum(scale, MIN_SCALE)


def _psd(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """The nearest symmetric matrix with eigenvalues of at least ``EIGEN_FLOOR`` (of each
    matrix in a stack)."""
    values, vectors = np.linalg.eigh((matrix + np.swapaxes(matrix, -1, -2)) / 2)
    floored = vectors * np.maximum(values, EIGEN_FLOOR)[..., None, :]
    result: NDArray[np.float64] = floored @ np.swapaxes(vectors, -1, -2)
    return result


@dataclass(frozen=True)
class Mixture:
    """The prior of a pair's levels: a mixture of normal distributions, whose weights may
    differ by stratum (the components are the same in every stratum)."""

    weight: NDArray[np.float64]  # strata x components
    mean: NDArray[np.float64]  # components x j
    covariance: NDArray[np.float64]  # components x j x j
    noise: NDArray[np.float64]  # j x j, one rating's

    @property
    def components(self) -> int:
        return int(self.weight.shape[1])

    def _log_weight(self, strata: NDArray[np.int64] | None, rows: int) -> NDArray[np.float64]:
        log: NDArray[np.float64] = np.log(self.weight)
        return np.broadcast_to(log[0], (rows, self.components)) if strata is None else log[strata]

    def _log_density(
        self,
        observed: NDArray[np.float64],
        counts: float | NDArray[np.float64] | CountGroups,
        strata: NDArray[np.int64] | None = None,
    ) -> NDArray[np.float64]:
        """pairs x components: log weight + log density of each pair's mean of ``counts``
        ratings (one count for all, or one per pair, or the pairs grouped by them)."""
        groups = CountGroups.of(counts, len(observed))
        unique = groups.unique
        out = self._log_weight(strata, len(observed)).copy()
        for c in range(self.components):
            total = self.covariance[c][None] + self.noise[None] / unique[:, None, None]
            chol = np.linalg.cholesky(total)
            solved = groups.apply(np.linalg.inv(chol), observed - self.mean[c])
            out[:, c] += (
                -np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)[groups.index]
                - 0.5 * across(np.add, solved**2)
                - 0.5 * observed.shape[1] * np.log(2 * np.pi)
            )
        return out

    def posterior(
        self,
        observed: NDArray[np.float64],
        count: float,
        strata: NDArray[np.int64] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """For pairs whose mean of ``count`` ratings is ``observed``: each component's posterior
        weight (pairs x c), mean (pairs x c x j) and covariance (c x j x j); with no rating
        (``count`` 0) the prior itself."""
        if count <= 0:
            weights = np.exp(self._log_weight(strata, len(observed)))
            centres = np.broadcast_to(
                self.mean, (len(observed), self.components, self.mean.shape[1])
            ).copy()
            return weights, centres, self.covariance.copy()
        weights, centres, covariances, _ = self.posteriors(observed, count, strata)
        return weights, centres, covariances[0]

    def posteriors(
        self,
        observed: NDArray[np.float64],
        counts: float | NDArray[np.float64] | CountGroups,
        strata: NDArray[np.int64] | None = None,
        *,
        log_density: NDArray[np.float64] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
        """As :meth:`posterior` for pairs with counts of their own (all above 0): the
        covariances per distinct count (counts x c x j x j) and each pair's row of them.
        ``log_density``: :meth:`_log_density` of the same arguments, where the caller has it."""
        groups = CountGroups.of(counts, len(observed))
        unique, index = groups.unique, groups.index
        log = self._log_density(observed, counts, strata) if log_density is None else log_density
        log = log - across(np.maximum, log)[:, None]
        weights = np.exp(log)
        weights /= across(np.add, weights)[:, None]
        centres = np.empty((len(observed), self.components, observed.shape[1]))
        covariances = np.empty((len(unique), *self.covariance.shape))
        for c in range(self.components):
            prior = self.covariance[c]
            gain = prior @ np.linalg.inv(prior[None] + self.noise[None] / unique[:, None, None])
            centres[:, c, :] = self.mean[c] + groups.apply(gain, observed - self.mean[c])
            covariances[:, c] = _psd(prior[None] - gain @ prior)
        return weights, centres, covariances, index


@dataclass(frozen=True)
class CountGroups:
    """The pairs grouped by their (effective) rating count: the distinct counts, each pair's
    place among them, and the pairs in order of it. A pair's matrix depends only on its
    count, so a product of every pair's matrix with its vector is a few matrix products (one
    per count, there are a handful) instead of a gather of a matrix per pair."""

    unique: NDArray[np.float64]
    index: NDArray[np.intp]
    order: NDArray[np.intp]
    bounds: NDArray[np.intp]
    in_order: bool  # the pairs come in order of their count: each group is a slice

    @classmethod
    def of(cls, counts: float | NDArray[np.float64] | CountGroups, n: int) -> CountGroups:
        if isinstance(counts, CountGroups):
            return counts
        every = np.broadcast_to(np.asarray(counts, dtype=np.float64), (n,))
        unique, index = np.unique(every, return_inverse=True)
        index = index.reshape(-1)
        order = np.argsort(index, kind="stable")
        bounds = np.searchsorted(index[order], np.arange(len(unique) + 1))
        return cls(unique, index, order, bounds, in_order=bool((np.diff(index) >= 0).all()))

    def apply(
        self, matrices: NDArray[np.float64], vectors: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Each pair's ``matrices[its count] @ vectors[pair]`` (matrices: counts x j x k)."""
        out = np.empty((len(vectors), matrices.shape[1]))
        for u in range(len(self.unique)):
            members = (
                slice(self.bounds[u], self.bounds[u + 1])
                if self.in_order
                else self.order[self.bounds[u] : self.bounds[u + 1]]
            )
            out[members] = vectors[members] @ matrices[u].T
        return out


def deconvolve(
    means: NDArray[np.float64],
    counts: NDArray[np.float64],
    *,
    noise: NDArray[np.float64],
    components: int = COMPONENTS,
    strata: NDArray[np.int64] | None = None,
    n_strata: int = 1,
    seed: int = 0,
    iterations: int = 100,
) -> Mixture:
    """The prior of the pairs' levels from their mean ratings (a mean of k ratings is the level
    plus noise of covariance noise / k): a mixture of normals fitted by extreme deconvolution
    (Bovy, Hogg and Roweis 2011, EM), started from a random split of the pairs. With
    ``strata`` (each pair's, 0, 1, ...) each stratum has weights of its own."""
    n, j = means.shape
    # the pairs in order of their count (the fit does not depend on their order): the
    # products with a matrix per count are then slices (CountGroups)
    by_count = np.argsort(counts, kind="stable")
    means, counts = means[by_count], counts[by_count]
    strata = None if strata is None else strata[by_count]
    index = np.zeros(n, dtype=np.int64) if strata is None else strata
    n_strata = max(n_strata, int(index.max(initial=0)) + 1)
    per_stratum = np.bincount(index, minlength=n_strata).astype(np.float64)
    components = max(1, min(components, n // (4 * j)))
    split = np.asarray(np.random.default_rng(seed).integers(components, size=n))[by_count]
    mean = np.array(
        [
            means[split == c].mean(axis=0) if (split == c).any() else means.mean(axis=0)
            for c in range(components)
        ]
    )
    # start from the moments: the spread of the means less the noise they carry
    moments = _psd(np.cov(means, rowvar=False) - np.mean(1.0 / counts) * noise)
    covariance = np.array([moments for _ in range(components)])
    weight = np.full((n_strata, components), 1.0 / components)
    mixture = Mixture(weight, mean, covariance, noise)
    groups = CountGroups.of(counts, n)
    previous = -np.inf
    for _ in range(iterations):
        log = mixture._log_density(means, groups, index)
        top = across(np.maximum, log)
        total = float((np.log(across(np.add, np.exp(log - top[:, None]))) + top).sum())
        resp, b, covariances, place = mixture.posteriors(means, groups, index, log_density=log)
        # each pair's posterior covariance, weighted by its responsibility, summed per component
        per_count = np.stack(
            [
                np.bincount(place, weights=resp[:, c], minlength=len(covariances))
                for c in range(components)
            ],
            axis=1,
        )
        big_b = np.einsum("uc,ucjk->cjk", per_count, covariances)
        mass = resp.sum(axis=0)
        by_stratum = np.stack(
            [np.bincount(index, weights=resp[:, c], minlength=n_strata) for c in range(components)],
            axis=1,
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = np.where(per_stratum[:, None] > 0, by_stratum / per_stratum[:, None], mass / n)
        weight = np.maximum(weight, 1e-12)
        mean = mixture.mean.copy()
        covariance = mixture.covariance.copy()
        for c in range(components):
            if mass[c] < 1e-9:  # an empty component keeps its place (and a negligible weight)
                continue
            mean[c] = resp[:, c] @ b[:, c, :] / mass[c]
            centred = b[:, c, :] - mean[c]
            covariance[c] = _psd(((resp[:, c, None] * centred).T @ centred + big_b[c]) / mass[c])
        mixture = Mixture(weight, mean, covariance, noise)
        if total - previous < 1e-6 * n:
            break
        previous = total
    return mixture


@dataclass(frozen=True)
class _Levels:
    """One pass of the levels' fit over some rating values."""

    offsets: NDArray[np.float64]  # workers x dimensions
    offset_spread: NDArray[np.float64]  # dimensions
    means: NDArray[np.float64]  # pairs x j, weighted means of the adjusted ratings
    k: NDArray[np.float64]  # pairs, effective rating counts
    weight: NDArray[np.float64]  # annotations, 1 / the annotator's noise scale
    noise: NDArray[np.float64]  # j x j
    mixture: Mixture

    def moments(self, strata: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each pair's posterior mean and variance of its levels (pairs x j)."""
        mean = np.zeros_like(self.means)
        variance = np.zeros_like(self.means)
        for count in np.unique(self.k[self.k > 0]):
            members = np.flatnonzero(self.k == count)
            weights, centres, covariances = self.mixture.posterior(
                np.nan_to_num(self.means[members]), count, strata[members]
            )
            first = np.einsum("pc,pcj->pj", weights, centres)
            second = np.einsum(
                "pc,pcj->pj",
                weights,
                centres**2 + np.diagonal(covariances, axis1=1, axis2=2)[None],
            )
            mean[members] = first
            variance[members] = np.maximum(second - first**2, 0.0)
        return mean, variance


def _fit_levels(
    ratings: Ratings,
    values: NDArray[np.float64],
    *,
    strata: NDArray[np.int64],
    seed: int,
) -> _Levels:
    """Offsets, noise and the levels' prior from these rating values."""
    ratings = Ratings(ratings.pair, ratings.worker, values, ratings.n_pairs, ratings.n_workers)
    k, _ = _pair_means(ratings, values)
    offsets, offset_spread = _offsets(ratings)
    adjusted = values - np.tile(offsets, 2)[ratings.worker]
    _, means = _pair_means(ratings, adjusted)
    within = adjusted - means[ratings.pair]
    dof = float((k[k >= 1] - 1).sum())
    noise = _psd(within.T @ within / dof)
    scale = _noise_scales(ratings, adjusted, k, noise)
    # a pair's mean weighs each annotator by the inverse of their noise scale; it is then a
    # mean of k_eff ratings of unit noise
    weight = 1.0 / scale[ratings.worker]
    k_eff = np.bincount(ratings.pair, weights=weight, minlength=ratings.n_pairs)
    k_eff = np.where(
        k_eff > 0, np.maximum(np.round(k_eff / COUNT_STEP), 1) * COUNT_STEP, 0.0
    ).astype(np.float64)
    sums = sum_rows(ratings.pair, adjusted * weight[:, None], ratings.n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / k_eff[:, None]
    within = (adjusted - means[ratings.pair]) * np.sqrt(weight)[:, None]
    noise = _psd(within.T @ within / dof)
    k = np.asarray(k_eff, dtype=np.float64)
    # the prior's few numbers are fitted on at most PRIOR_PAIRS pairs drawn at random: more
    # would cost time and change little
    fitted = np.flatnonzero(k > 0)
    if len(fitted) > PRIOR_PAIRS:
        fitted = np.sort(np.random.default_rng(seed).choice(fitted, PRIOR_PAIRS, replace=False))
    mixture = deconvolve(
        means[fitted],
        k[fitted],
        noise=noise,
        components=COMPONENTS,
        strata=strata[fitted],
        n_strata=int(strata.max(initial=0)) + 1,
        seed=seed,
    )
    return _Levels(offsets, offset_spread, means, k, weight, noise, mixture)


def _uncensored(
    ratings: Ratings,
    fit: _Levels,
    *,
    scale: tuple[float, float],
    strata: NDArray[np.int64],
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """The ratings with those at the scale's ends replaced by what they stand for: a top
    rating says the annotator's reading was at or above the top less half a step (a bottom
    one, at or below the bottom plus half), and a draw of the reading beyond that bound, under
    the pair's posterior levels, the annotator's offset and noise, takes its place (a draw,
    not the expected reading: the readings keep their spread, from which the noise is
    estimated)."""
    lo, hi = scale
    values = ratings.values.copy()
    top, bottom = values >= hi, values <= lo
    level, variance = fit.moments(strata)
    mean = level[ratings.pair] + np.tile(fit.offsets, 2)[ratings.worker]
    sd = np.sqrt(variance[ratings.pair] + np.diag(fit.noise)[None, :] / fit.weight[:, None])
    sd = np.maximum(sd, 1e-6)
    values[top] = normal_tail_draw(mean[top], sd[top], above=hi - 0.5, rng=rng)
    values[bottom] = -normal_tail_draw(-mean[bottom], sd[bottom], above=-(lo + 0.5), rng=rng)
    return values


def _exceedances(
    levels: NDArray[np.float32], *, threshold: float, pair_gap: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """For levels drawn as dimensions (chosen's, then rejected's) x pairs x draws: whether some
    level is below the threshold, and whether chosen exceeds rejected by more than the gap on
    some dimension (pairs x draws each)."""
    d = len(levels) // 2
    low = levels[0] < threshold
    for row in levels[1:]:
        low |= row < threshold
    gap = (levels[0] - levels[d]) > pair_gap
    for i in range(1, d):
        gap |= (levels[i] - levels[d + i]) > pair_gap
    return low, gap


def _group_shares(hits: NDArray[np.bool_], groups: int) -> NDArray[np.float64]:
    """pairs x groups: the share of each group's draws (equal blocks of columns) that hit."""
    per_group = hits.shape[1] // groups
    counts = np.count_nonzero(hits.reshape(len(hits), groups, per_group), axis=2)
    shares: NDArray[np.float64] = counts / per_group
    return shares


def fit_quality(
    ratings: Ratings,
    *,
    threshold: float,
    pair_gap: float,
    seed: int = 0,
    draws: int = DRAWS,
    groups: int = 20,
    strata: NDArray[np.int64] | None = None,
    scale: tuple[float, float] | None = None,
) -> QualityFit | None:
    """The model (module docstring); None when fewer than ``MIN_PAIRS`` pairs have two or more
    complete ratings (nothing to estimate the noise from). ``strata``: each pair's stratum
    (0, 1, ...), each with prior weights of its own; None for one. ``scale``: the rating
    scale's ends, whose ratings are read as censored (:func:`_uncensored`)."""
    k, _ = _pair_means(ratings, ratings.values)
    if int((k >= 2).sum()) < MIN_PAIRS:
        return None
    if strata is None:
        strata = np.zeros(ratings.n_pairs, dtype=np.int64)
    fit = _fit_levels(ratings, ratings.values, strata=strata, seed=seed)
    if scale is not None and ((ratings.values >= scale[1]) | (ratings.values <= scale[0])).any():
        rng = np.random.default_rng(seed)
        for _ in range(CENSORED_ROUNDS):
            values = _uncensored(ratings, fit, scale=scale, strata=strata, rng=rng)
            fit = _fit_levels(ratings, values, strata=strata, seed=seed)
    offsets, offset_spread, means, k = fit.offsets, fit.offset_spread, fit.means, fit.k
    noise, mixture = fit.noise, fit.mixture
    rated = k > 0
    # Monte Carlo draws per pair: DRAWS, fewer for very many pairs (the probabilities' own
    # Monte Carlo error stays below 0.025 at MIN_DRAWS; a share over thousands of pairs
    # averages it away), in whole antithetic pairs for each group
    step = 2 * groups
    per_pair = int(np.clip(DRAW_BUDGET / max(int(rated.sum()), 1), MIN_DRAWS, draws))
    draws = max(step, per_pair // step * step)

    j = ratings.values.shape[1]
    # The levels are read against these annotators' mean offset, which stands off the mean of
    # annotators in general by about the offsets' spread over the square root of their number:
    # one shift of each dimension, the same for every pair and both responses (gaps keep none).
    raters = max(int(np.unique(ratings.worker).size), 1)
    reference = np.tile(np.diag(offset_spread / raters), (2, 2))
    rng = np.random.default_rng(seed)
    half = rng.standard_normal((draws // 2, j))
    z = np.stack([half, -half], axis=1).reshape(-1, j)  # antithetic pairs side by side
    # each draw belongs to one of `groups` draws of the reference shift (antithetic too)
    group = (np.arange(len(z)) // 2) % groups
    shift_half = rng.multivariate_normal(np.zeros(j), reference, size=(groups + 1) // 2)
    shifts = np.concatenate([shift_half, -shift_half])[:groups]
    # the draws ordered by group, so that a group's draws are one block of columns
    order = np.argsort(group, kind="stable")
    z, shift_draws = z[order], shifts[group[order]]
    p_low = np.zeros((ratings.n_pairs, groups), dtype=np.float32)
    p_gap = np.zeros((ratings.n_pairs, groups), dtype=np.float32)
    p_neither = np.zeros((ratings.n_pairs, groups), dtype=np.float32)
    level_mean = np.zeros((ratings.n_pairs, j))
    for count in np.unique(k):
        members = np.flatnonzero(k == count)
        observed = np.nan_to_num(means[members])
        weights, centres, covariances = mixture.posterior(observed, count, strata[members])
        level_mean[members] = np.einsum("pc,pcj->pj", weights, centres)
        for c in range(mixture.components):
            # single precision: the draws' own error is far above float32's; dimensions first,
            # so that each test runs over whole blocks of pairs x draws
            spread_draws = np.ascontiguousarray(
                (z @ np.linalg.cholesky(covariances[c]).T + shift_draws).astype(np.float32).T
            )
            centre = np.ascontiguousarray(centres[:, c, :].astype(np.float32).T)
            for start in range(0, len(members), 256):
                rows = slice(start, start + 256)
                levels = centre[:, rows, None] + spread_draws[:, None, :]  # j x rows x draws
                low, gap = _exceedances(levels, threshold=threshold, pair_gap=pair_gap)
                w = weights[rows, c, None]
                chunk = members[rows]
                p_low[chunk] += w * _group_shares(low, groups)
                p_gap[chunk] += w * _group_shares(gap, groups)
                p_neither[chunk] += w * _group_shares(~low & ~gap, groups)
    return QualityFit(
        p_low=p_low,
        p_gap=p_gap,
        p_neither=p_neither,
        level_mean=level_mean,
        offsets=offsets,
        prior=mixture,
        noise_covariance=noise,
    )
