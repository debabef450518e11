"""Inter-rater agreement: Krippendorff's alpha, percent agreement, Gwet's AC1, Fleiss' kappa.

Every function takes a units x values count matrix (``counts[u, v]`` = how many ratings unit ``u``
received with value ``domain[v]``), as built by :func:`value_counts`. Units may have any number of
ratings; a unit with fewer than two ratings has no pair of ratings to compare and drops out of
every observed-agreement term.

A statistic that is undefined on the data comes back as ``Estimate(value=None, note=...)``; these
functions never raise on data and never report 0 or 1 in place of an undefined value.

Bootstrap intervals resample units with replacement, never coincidence pairs, whose bootstrap
is too narrow (Gwet 2015; Zapf et al. 2016). Units with identical count rows contribute
identically, so they are grouped first and resampled through a multinomial over the distinct
rows: by the aggregation property of the multinomial this has exactly the distribution of
resampling single units, and it makes 1,000 resamples of 100,000 units a matter of milliseconds.
The intervals are BCa; with a :class:`~analysis.agreement.panel.Panel` an interval that also treats
the annotators as a sample comes along (``analysis.agreement.intervals`` explains both).

Fewer than ``MIN_UNITS`` units with two or more ratings give a null value with a note, fewer
than ``MIN_INTERVAL_UNITS`` a null interval with a note.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from analysis.agreement.bootstrap import (
    CHUNK_BYTES,
    MIN_INTERVAL_UNITS,
    MIN_UNITS,
    grouped_units,
    pair_bootstrap,
    resample_weights,
)
from analysis.agreement.intervals import annotator_interval
from analysis.agreement.panel import Panel, SumStatistic

Level = Literal["nominal", "ordinal", "interval"]
Domain = Sequence[str | float]  # the values a rating can take, in order (labels or numbers)
CountMatrix = NDArray[np.int64]  # units x values

# Alpha's range: 1 at perfect agreement; about -1 at the most systematic disagreement (two
# values, every unit split between them: 1 - (2N - 1) / N). An interval never leaves it.
ALPHA_RANGE = (-1.0, 1.0)

# Upper bound for one chunk of bootstrap weights plus its float copy (tests shrink it).
_CHUNK_BYTES = CHUNK_BYTES


class EstimateJSON(TypedDict):
    """An estimate in report.json: ``value`` and ``ci95`` (None where undefined: ``note``
    says why); ``ci95_annotators`` (with its note) where the annotators were resampled too."""

    value: float | None
    ci95: list[float] | None
    note: NotRequired[str]
    ci95_annotators: NotRequired[list[float] | None]
    ci95_annotators_note: NotRequired[str]


@dataclass(frozen=True)
class Estimate:
    """A value with its pair-bootstrap interval and, when ``with_annotators``, the interval
    that also treats the annotators as a sample (``ci95_annotators``, with its own note)."""

    value: float | None
    ci95: tuple[float, float] | None = None
    note: str | None = None
    ci95_annotators: tuple[float, float] | None = None
    annotators_note: str | None = None
    with_annotators: bool = False

    def as_dict(self) -> EstimateJSON:
        out: EstimateJSON = {"value": _json_float(self.value), "ci95": _json_interval(self.ci95)}
        if self.note is not None:
            out["note"] = self.note
        if self.with_annotators:
            out["ci95_annotators"] = _json_interval(self.ci95_annotators)
            if self.annotators_note is not None:
                out["ci95_annotators_note"] = self.annotators_note
        return out


def _json_interval(ci: tuple[float, float] | None) -> list[float] | None:
    if ci is None:
        return None
    lo, hi = (_json_float(b) for b in ci)
    return [lo, hi] if lo is not None and hi is not None else None


def _json_float(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _undefined(note: str) -> Estimate:
    return Estimate(value=None, ci95=None, note=note)


# --------------------------------------------------------------------------------------------
# Input


def value_counts(
    labels: pd.DataFrame, *, unit: str | list[str], value: str, domain: Domain
) -> CountMatrix:
    """Long table (one row per rating) -> units x len(domain) integer count matrix.

    Rows follow the sorted order of the unit key(s). Missing values (NaN/None) are ignored, but
    their unit still gets a row (of zeros if it has no rating at all). Values outside ``domain``
    raise ``ValueError`` naming them.
    """
    unit_cols = [unit] if isinstance(unit, str) else list(unit)
    index = _domain_index(domain)
    if labels.empty:
        return np.zeros((0, len(index)), dtype=np.int64)
    if labels[unit_cols].isna().to_numpy().any():
        raise ValueError(f"missing unit ids in column(s) {unit_cols}")

    values = labels[value]
    present = values.notna().to_numpy()
    codes = index.get_indexer(pd.Index(values))
    outside = present & (codes < 0)
    if outside.any():
        bad = sorted({repr(v) for v in values[outside]})
        raise ValueError(f"values outside the domain {list(domain)!r}: {', '.join(bad)}")

    units = labels.groupby(unit_cols, sort=True).ngroup().to_numpy()
    counts = np.zeros((units.max() + 1, len(index)), dtype=np.int64)
    np.add.at(counts, (units[present], codes[present]), 1)
    return counts


def _domain_index(domain: Domain) -> pd.Index:
    index: pd.Index = pd.Index(list(domain))
    if len(index) == 0:
        raise ValueError("the domain is empty")
    if not index.is_unique:
        raise ValueError(f"the domain has duplicate values: {list(domain)!r}")
    return index


def _as_counts(counts: ArrayLike) -> CountMatrix:
    table = np.asarray(counts)
    if table.ndim != 2:
        raise ValueError(f"counts must be a units x values matrix, got shape {table.shape}")
    if table.size and (table < 0).any():
        raise ValueError("counts must be non-negative")
    return table.astype(np.int64, copy=False)


# --------------------------------------------------------------------------------------------
# Point, pair-bootstrap and annotator intervals of a sum statistic


def estimate(
    statistic: SumStatistic,
    counts: CountMatrix,
    *,
    resampled: NDArray[np.bool_],
    undefined_note: str,
    bootstrap: int,
    seed: int,
    min_units: int = MIN_UNITS,
    panel: Panel | None = None,
    own: CountMatrix | None = None,
    bounds: tuple[float | None, float | None] = (-1.0, 1.0),
    pairable: NDArray[np.bool_] | None = None,
) -> Estimate:
    """Value, BCa interval and (with ``panel``) annotator-aware interval of ``statistic``.

    ``resampled`` marks the units the pair bootstrap draws (those that enter the statistic),
    ``pairable`` those with two or more ratings (default: row sums of ``counts``).
    ``counts`` holds every unit in ``panel.unit``'s numbering; ``own`` is each annotation's
    row of counts (see :func:`analysis.agreement.intervals.annotator_interval`).
    """
    with_annotators = panel is not None

    def _undefined(note: str) -> Estimate:
        return Estimate(
            value=None,
            note=note,
            with_annotators=with_annotators,
            annotators_note=note if with_annotators else None,
        )

    n_pairable = int(((counts.sum(axis=1) >= 2) if pairable is None else pairable).sum())
    if n_pairable == 0:
        return _undefined("undefined: no unit has two or more ratings")
    if n_pairable < min_units:
        return _undefined(
            f"undefined: {n_pairable} unit(s) with two or more ratings; at least {min_units} "
            "are needed for a value that is not 0 or 1 by construction"
        )
    patterns, frequencies, inverse = grouped_units(counts[resampled])
    sums = frequencies.astype(np.float64) @ statistic.features(patterns)
    point = float(statistic.finish(sums[None, :])[0])
    if not np.isfinite(point):
        return _undefined(undefined_note)
    if bootstrap <= 0:
        return Estimate(
            value=point,
            with_annotators=with_annotators,
            annotators_note="no intervals (--bootstrap 0)" if with_annotators else None,
        )
    if n_pairable < MIN_INTERVAL_UNITS:
        note = (
            f"interval omitted: {n_pairable} units with two or more ratings, fewer than "
            f"{MIN_INTERVAL_UNITS}"
        )
        return Estimate(
            value=point,
            note=note,
            with_annotators=with_annotators,
            annotators_note=note if with_annotators else None,
        )
    weights = resample_weights(
        frequencies, inverse, resamples=bootstrap, seed=seed, chunk_bytes=_CHUNK_BYTES
    )
    pair = pair_bootstrap(
        statistic, patterns, frequencies, point=point, resamples=bootstrap, weights=weights
    )
    out = Estimate(value=point, ci95=pair.ci95, note=pair.note)
    if panel is None:
        return out
    if own is None:
        raise ValueError("own (each annotation's row of counts) comes with panel")
    ci, annotators_note = annotator_interval(
        statistic, counts, own, panel=panel, point=point, pair=pair, bounds=bounds
    )
    return Estimate(
        value=point,
        ci95=pair.ci95,
        note=pair.note,
        ci95_annotators=ci,
        annotators_note=annotators_note,
        with_annotators=True,
    )


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha


def _unit_coincidences(counts: CountMatrix) -> NDArray[np.float64]:
    """Per-unit coincidence contributions n_uc (n_uk - [c == k]) / (m_u - 1), as U x V*V.

    Units with fewer than two ratings contribute zero.
    """
    values = counts.astype(np.float64)
    n_units, n_values = values.shape
    m = values.sum(axis=1)
    # one row of products per value, over all units at once (numpy is slow over a short last
    # axis, and this runs on every bootstrap pattern and every panel of leans)
    outer = np.empty((n_units, n_values, n_values))
    for c in range(n_values):
        np.multiply(values, values[:, c : c + 1], out=outer[:, c, :])
    outer[:, np.arange(n_values), np.arange(n_values)] -= values
    pairable = m >= 2
    outer /= np.where(pairable, m - 1, 1.0)[:, None, None]
    outer[~pairable] = 0.0
    return outer.reshape(n_units, n_values * n_values)


def _distances(level: Level, domain: Domain, marginals: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared distances delta^2(c, k); shape (V, V), or (B, V, V) for ordinal.

    Ordinal distances depend on the marginal frequencies n_g of the ordered domain
    (Krippendorff 2011): (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2.
    """
    n_values = marginals.shape[-1]
    if level == "nominal":
        return 1.0 - np.eye(n_values)
    if level == "interval":
        points = np.asarray(domain, dtype=np.float64)
        return (points[:, None] - points[None, :]) ** 2
    if level == "ordinal":
        idx = np.arange(n_values)
        lo = np.minimum(idx[:, None], idx[None, :])
        hi = np.maximum(idx[:, None], idx[None, :])
        cumulative = np.cumsum(marginals, axis=-1)
        between = cumulative[..., hi] - cumulative[..., lo] + marginals[..., lo]
        ends = (marginals[..., lo] + marginals[..., hi]) / 2
        return (between - ends) ** 2
    raise ValueError(f"unknown level of measurement {level!r}")


def _alpha_from_coincidences(
    coincidences: NDArray[np.float64], *, level: Level, domain: Domain
) -> NDArray[np.float64]:
    """Alpha for each B x V*V row of summed coincidences; NaN where undefined."""
    n_values = len(domain)
    o = coincidences.reshape(-1, n_values, n_values)
    marginals = o.sum(axis=2)
    total = marginals.sum(axis=1)
    delta = _distances(level, domain, marginals)
    observed = (o * delta).sum(axis=(1, 2))
    expected_pairs = marginals[:, :, None] * marginals[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (expected_pairs * delta).sum(axis=(1, 2)) / (total - 1)
        # delta(c, c) = 0, so expected == 0 exactly when a single value is used.
        alphas: NDArray[np.float64] = 1.0 - observed / expected
    alphas[~(expected > 0)] = np.nan
    return alphas


def alpha_statistic(*, level: Level, domain: Domain, parts: int = 1) -> SumStatistic:
    """Alpha as a sum statistic. With ``parts`` > 1 a unit's counts row holds that many units
    side by side (quality: a pair's chosen and rejected response), resampled together."""
    width = len(domain)

    def features(counts: CountMatrix) -> NDArray[np.float64]:
        total = _unit_coincidences(counts[:, :width])
        for k in range(1, parts):
            total = total + _unit_coincidences(counts[:, k * width : (k + 1) * width])
        return total

    return SumStatistic(
        features=features,
        finish=lambda sums: _alpha_from_coincidences(sums, level=level, domain=domain),
        parts=parts,
    )


_NO_VARIATION = "undefined: every rating has the same value (no variation)"


def alpha(
    counts: ArrayLike,
    *,
    level: Literal["nominal", "ordinal", "interval"],
    domain: Domain,
    bootstrap: int = 0,
    seed: int = 0,
    min_units: int = MIN_UNITS,
    panel: Panel | None = None,
    own: CountMatrix | None = None,
) -> Estimate:
    """Krippendorff's alpha with an optional unit-bootstrap 95% BCa interval.

    The point value equals ``krippendorff.alpha(value_counts=counts, value_domain=domain,
    level_of_measurement=level)`` wherever that is defined and there are ``min_units`` units
    with two or more ratings. Only such units are resampled: the others carry no information
    about agreement.
    """
    table = _as_counts(counts)
    if table.shape[1] != len(domain):
        raise ValueError(f"counts has {table.shape[1]} columns but the domain has {len(domain)}")
    return estimate(
        alpha_statistic(level=level, domain=domain),
        table,
        resampled=table.sum(axis=1) >= 2,
        undefined_note=_NO_VARIATION,
        bootstrap=bootstrap,
        seed=seed,
        min_units=min_units,
        panel=panel,
        own=own,
        bounds=ALPHA_RANGE,
    )


# --------------------------------------------------------------------------------------------
# Percent agreement, Gwet's AC1, Fleiss' kappa


def _unit_agreement(counts: CountMatrix) -> NDArray[np.float64]:
    """Share of agreeing rater pairs in each unit: sum_c n_uc (n_uc - 1) / (m_u (m_u - 1)).

    Only meaningful for units with two or more ratings (NaN elsewhere).
    """
    values = counts.astype(np.float64)
    m = values.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares: NDArray[np.float64] = (values * (values - 1)).sum(axis=1) / (m * (m - 1))
    shares[m < 2] = np.nan
    return shares


def _percent_features(counts: CountMatrix) -> NDArray[np.float64]:
    shares = _unit_agreement(counts)
    pairable = ~np.isnan(shares)
    return np.column_stack([np.where(pairable, shares, 0.0), pairable.astype(np.float64)])


PERCENT_AGREEMENT = SumStatistic(
    features=_percent_features,
    finish=lambda sums: _ratio(sums[:, 0], sums[:, 1]),
)


def _ratio(numerator: NDArray[np.float64], denominator: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = numerator / denominator
    out[~(denominator > 0)] = np.nan
    return out


def percent_agreement(
    counts: ArrayLike,
    *,
    bootstrap: int = 0,
    seed: int = 0,
    min_units: int = MIN_UNITS,
    panel: Panel | None = None,
    own: CountMatrix | None = None,
) -> Estimate:
    """Mean over units with two or more ratings of the share of agreeing rater pairs.

    Every column (including a tie) is its own category.
    """
    table = _as_counts(counts)
    return estimate(
        PERCENT_AGREEMENT,
        table,
        resampled=table.sum(axis=1) >= 2,
        undefined_note="undefined: no unit has two or more ratings",
        bootstrap=bootstrap,
        seed=seed,
        min_units=min_units,
        panel=panel,
        own=own,
        bounds=(0.0, 1.0),
    )


def _ac1_features(counts: CountMatrix) -> NDArray[np.float64]:
    """Per unit: agreement share (pairable units), pairable, n_uk / m_u and rated (m_u >= 1)."""
    values = counts.astype(np.float64)
    m = values.sum(axis=1)
    pairable = m >= 2
    rated = m >= 1
    shares = np.nan_to_num(_unit_agreement(counts)) * pairable
    with np.errstate(divide="ignore", invalid="ignore"):
        classified = np.where(rated[:, None], values / np.maximum(m, 1)[:, None], 0.0)
    return np.column_stack([shares, pairable, classified, rated]).astype(np.float64)


def _ac1_finish(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """AC1 from summed features; NaN where undefined.

    Gwet (2008), Handbook of Inter-Rater Reliability (4th ed.), irrCAC ``gwet.ac1.raw``:
    pa over units with >= 2 ratings; pi_k = mean over units with >= 1 rating of n_uk / m_u;
    pe = sum_k pi_k (1 - pi_k) / (Q - 1).
    irrCAC writes pe as sum(weights) * sum_k pi_k (1 - pi_k) / (Q (Q - 1)); for AC1 the weights
    are the identity, so sum(weights) = Q. Dropping that factor would shrink pe Q-fold.
    """
    n_categories = sums.shape[1] - 3
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = sums[:, 0] / sums[:, 1]
        pi = sums[:, 2 : 2 + n_categories] / sums[:, -1:]
        pe = (pi * (1 - pi)).sum(axis=1) / (n_categories - 1)
        ac1: NDArray[np.float64] = (pa - pe) / (1 - pe)
    ac1[~np.isfinite(ac1) | (pe >= 1)] = np.nan
    return ac1


AC1 = SumStatistic(features=_ac1_features, finish=_ac1_finish)


def gwet_ac1(
    counts: ArrayLike,
    *,
    bootstrap: int = 0,
    seed: int = 0,
    min_units: int = MIN_UNITS,
    panel: Panel | None = None,
    own: CountMatrix | None = None,
) -> Estimate:
    """Gwet's AC1 for any number of raters per unit (missing ratings allowed).

    Q is the number of columns of ``counts``: the categories the study offers, used or not, as
    in irrCAC with ``categ.labels`` given. A study without ties has two (chosen, rejected):
    a third, impossible category would shrink the chance term. With no variation at all AC1 is
    1 (pe = 0): that is the coefficient's definition, not a convention added here. The
    bootstrap resamples units with at least one rating, since those all enter pi_k.
    """
    table = _as_counts(counts)
    if table.shape[1] < 2:
        return _undefined("undefined: AC1 needs at least two categories")
    return estimate(
        AC1,
        table,
        resampled=table.sum(axis=1) >= 1,
        undefined_note="undefined: chance agreement is 1",
        bootstrap=bootstrap,
        seed=seed,
        min_units=min_units,
        panel=panel,
        own=own,
        bounds=(-1.0 / (table.shape[1] - 1), 1.0),
    )


def fleiss_kappa(counts: ArrayLike) -> Estimate:
    """Fleiss' (1971) kappa; requires the same number of ratings (>= 2) for every rated unit.

    Units with no rating at all are ignored.
    """
    table = _as_counts(counts)
    rated = table[table.sum(axis=1) >= 1].astype(np.float64)
    if rated.shape[0] == 0:
        return _undefined("undefined: no rated unit")
    per_unit = np.unique(rated.sum(axis=1))
    if per_unit.size != 1:
        return _undefined(
            "undefined: Fleiss' kappa needs the same number of ratings per unit, got "
            + ", ".join(str(int(r)) for r in per_unit)
        )
    m = per_unit[0]
    if m < 2:
        return _undefined("undefined: no unit has two or more ratings")
    p_bar = ((rated * (rated - 1)).sum(axis=1) / (m * (m - 1))).mean()
    p_j = rated.sum(axis=0) / rated.sum()
    p_e = float((p_j**2).sum())
    if p_e >= 1:
        return _undefined("undefined: every rating has the same value (no variation)")
    return Estimate(value=float((p_bar - p_e) / (1 - p_e)))


# --------------------------------------------------------------------------------------------
# Label-independent orientation

_FLIP = {"chosen": "second", "rejected": "first", "tie": "tie"}
_KEEP = {"chosen": "first", "rejected": "second", "tie": "tie"}


def chosen_is_first(pair_id: str) -> bool:
    """Stable, label-independent coin for a pair: the low bit of sha256(pair id)."""
    return hashlib.sha256(str(pair_id).encode("utf-8")).digest()[0] % 2 == 0


def neutral_orientation(
    pair_ids: Sequence[str], preferences: Sequence[str | float | None]
) -> list[str | None]:
    """Map chosen/rejected/tie to first/second/tie, "first" decided per pair by a hash.

    Alpha on chosen/rejected labels suffers from lopsided marginals when most annotators pick
    ``chosen``; orienting each pair by a coin that ignores the labels removes that, and being a
    hash of the pair id it is the same in every process. Missing preferences (None/NaN) stay None.
    """
    if len(pair_ids) != len(preferences):
        raise ValueError(
            f"{len(pair_ids)} pair ids but {len(preferences)} preferences; they must align"
        )
    unknown = {p for p in preferences if not _is_missing(p) and p not in _KEEP}
    if unknown:
        raise ValueError(f"unknown preference labels: {sorted(map(repr, unknown))}")
    return [
        # str(): a label that is not missing is one of _KEEP's (checked above)
        None if _is_missing(pref) else (_KEEP if chosen_is_first(pid) else _FLIP)[str(pref)]
        for pid, pref in zip(pair_ids, preferences, strict=True)
    ]


def neutral_coding(
    counts: CountMatrix,
    own: CountMatrix,
    *,
    keep: NDArray[np.bool_],
    pair: NDArray[np.int64],
) -> tuple[CountMatrix, CountMatrix, NDArray[np.int64]]:
    """Pairs x (chosen, rejected[, tie]) counts and each annotation's row of them in the
    neutral orientation (first, second[, tie]): chosen is "first" where ``keep[pair]``, else
    "second". Also ``columns[r, c]``, the chosen/rejected/tie column that neutral column
    ``c`` shows for annotation ``r`` (``Panel.with_traits``: a lasting lean to chosen shows
    in the labels, not in the neutral coding)."""
    width = counts.shape[1]
    swap = np.array([1, 0, 2][:width])
    columns = np.where(~keep[pair][:, None], swap, np.arange(width))
    neutral = np.where(keep[:, None], counts, counts[:, swap])
    return neutral, np.take_along_axis(own, columns, axis=1), columns


def _is_missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))
