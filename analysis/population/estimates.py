"""Benchmark-wide estimates from a sample of labelled pairs (docs/reference/report-keys.md, `population`).

A sampled study holds the whole benchmark (the population, M pairs) but humans label only the
pairs drawn by analysis/population/sampling.py: a stratified simple random sample without replacement,
each pair with its stored inclusion probability. For each verdict the share of the population
with that verdict is estimated two ways, both with the finite-population correction:

- human only (`share_human_only`, `ci95_human_only`): the design-based stratified estimator.
  In stratum h (M_h pairs, n_h labelled, inclusion probability n_h / M_h) the stratum's share
  is the labelled pairs' mean (the Horvitz-Thompson total sum(y / pi) over M_h), and
        share = sum_h (M_h / M) * mean_h(y)
        var   = sum_h (M_h / M)^2 * (1 - n_h / M_h) * s_h^2 / n_h     (s_h^2 with n_h - 1)
- with the judge (`share`, `ci95`, method `ppi++`): prediction-powered inference
  (Angelopoulos et al., Science 2023) with power tuning (PPI++, Angelopoulos, Duchi and Zrnic
  2023). The judge's output f is known on every pair of the population, so in each stratum
        share_h = lambda * mean over all M_h pairs of f + mean over the n_h labelled of (y - lambda f)
  The first term has no sampling error here (the whole population is judged: the estimand is
  the benchmark's own share, a finite population), so
        var_h = (1 - n_h / M_h) * s^2(y - lambda f) / n_h,
  minimised by lambda = cov(y, f) / var(f) in the labelled sample (PPI++'s tuning; lambda = 0
  is the human-only estimate, lambda = 1 plain PPI). A useless judge gets lambda near 0, so
  the interval is never much wider than the human-only one.

`ppi_mean_ci` is the paper's own estimator for an infinite population (labelled n, unlabelled
N, the imputed term's variance included), as the `ppi-python` package computes it; it is here
so the tests can check the power tuning against the paper's formulas.

A stratum whose labelled pairs all have the same value (all valid, say) would give a zero-width
interval; its variance is then taken as p(1 - p) with p = (k + 1/2) / (n + 1) (k of n valid).

Sampled pairs not yet labelled (fewer annotations than the report's minimum) are left out of
their stratum's mean (treated as missing at random within the stratum) and counted in the note.
Intervals are normal (z = 1.96), cut to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.annotation_model.fit import VERDICTS as MODEL_VERDICTS
from analysis.report.shape import Population, Report, Section

if TYPE_CHECKING:  # for the annotations only: judge_values imports them where it needs them
    from analysis.judges.files import ModelJudgements

Z95 = 1.959963984540054

NOT_LABELLED = "insufficient_annotations"
VALID = "valid"


def _ci(estimate: float | None, variance: float | None) -> list[float] | None:
    if estimate is None or variance is None:
        return None
    half = Z95 * math.sqrt(max(variance, 0.0))
    return [max(0.0, estimate - half), min(1.0, estimate + half)]


def power_tuning(y: NDArray[np.float64], f: NDArray[np.float64]) -> float:
    """lambda = cov(y, f) / var(f) (0 when f does not vary or fewer than 3 labelled pairs)."""
    if len(y) < 3:
        return 0.0
    var_f = float(np.var(f, ddof=1))
    if not var_f > 1e-12:
        return 0.0
    return float(np.cov(y, f, ddof=1)[0, 1] / var_f)


def stratum_estimate(
    y: NDArray[np.float64],
    size: int,
    *,
    f: NDArray[np.float64] | None = None,
    f_mean: float | None = None,
) -> tuple[float | None, float | None, float, str | None]:
    """(share, variance, lambda, note) of one stratum of `size` pairs from its labelled pairs'
    values `y`; with the judge's values `f` on them and its mean over the whole stratum,
    the power-tuned prediction-powered estimate."""
    if f is not None and f_mean is None:
        raise ValueError("f_mean (the judge's mean over the stratum) comes with f")
    n = len(y)
    if n == 0:
        return None, None, 0.0, "no labelled pair"
    lam = 0.0 if f is None else power_tuning(y, f)
    residual = y if f is None else y - lam * f
    share = float(residual.mean()) + (lam * f_mean if f is not None and f_mean is not None else 0.0)
    fpc = 1.0 - n / size
    if fpc <= 1e-12:
        return share, 0.0, lam, None  # a census of the stratum: no sampling error
    if n < 2:
        return share, None, lam, "one labelled pair gives no variance"
    variance = float(np.var(residual, ddof=1))
    if variance <= 1e-12:
        # every labelled pair alike (all valid, say): a zero-width interval would claim the
        # unlabelled ones are alike too; take the variance of (k + 1/2) / (n + 1) instead
        smoothed = (float(y.sum()) + 0.5) / (n + 1)
        variance = smoothed * (1 - smoothed)
    return share, fpc * variance / n, lam, None


def stratified_share(
    y: NDArray[np.float64],
    strata: NDArray[np.object_],
    sizes: dict[str, int],
    *,
    f: NDArray[np.float64] | None = None,
    f_means: dict[str, float] | None = None,
) -> Section:
    """The population share from labelled values `y` in `strata`, stratum sizes `sizes`
    (every stratum of the population, labelled or not); with the judge's `f` on the labelled
    pairs and its mean per stratum over the population, the prediction-powered version.
    Returns {share, variance, ci95, lambda: {stratum: value}, note}."""
    total = sum(sizes.values())
    share = 0.0
    variance: float | None = 0.0
    notes: list[str] = []
    lambdas: dict[str, float] = {}
    for name, size in sizes.items():
        if size == 0:
            continue
        mask = strata == name
        est, var, lam, note = stratum_estimate(
            y[mask],
            size,
            f=None if f is None else f[mask],
            f_mean=None if f_means is None else f_means[name],
        )
        lambdas[name] = lam
        if est is None:
            return {
                "share": None,
                "variance": None,
                "ci95": None,
                "lambda": lambdas,
                "note": f"stratum {name!r}: {note}, so the population share is not estimable",
            }
        share += size / total * est
        if var is None:
            notes.append(f"stratum {name!r}: {note}")
            variance = None
        elif variance is not None:
            variance += (size / total) ** 2 * var
    return {
        "share": share,
        "variance": variance,
        "ci95": _ci(share, variance),
        "lambda": lambdas,
        "note": "; ".join(notes) or None,
    }


def true_weights(
    strata: NDArray[np.object_], sizes: dict[str, int], kept: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """How the labelled pairs' probabilities enter the true shares, both linear in them:
    (share weights, bad-left weights, bad-left constant). With p the pairs' probabilities of
    being valid (or of a kind), the population share is ``share_weights @ p`` (each pair
    weighs M_h / M / n_h: its stratum's mean of p, weighted by the stratum's size) and the
    truly not-valid pairs that cleaning leaves are ``constant + bad_left_weights @ p``: each
    labelled pair that cleaning keeps (``kept``) counts 1 - p, and the M_h - n_h pairs no one
    labelled in its stratum count 1 - mean_h(p) each."""
    total = sum(sizes.values())
    share = np.zeros(len(strata))
    bad = -kept.astype(np.float64)
    constant = float(kept.sum())
    for name, size in sizes.items():
        members = strata == name
        n = int(members.sum())
        if n == 0 or size == 0:
            continue
        share[members] = size / total / n
        rest = size - n
        bad[members] -= rest / n
        constant += rest
    return share, bad, constant


def true_share(
    p: NDArray[np.float64],
    strata: NDArray[np.object_],
    sizes: dict[str, int],
    *,
    shared_variance: float = 0.0,
) -> Section:
    """The population share of pairs truly of a kind, from the labelled pairs' probabilities
    ``p`` of being of that kind (the model of annotation): ``true_weights``'s share. Its error
    against the population's true share has two parts, uncorrelated:

    - the sample's: the labelled pairs' true share against the stratum's, the sampling error
      of true indicators (their variance theta (1 - theta), theta the stratum's share);
    - the model's: its estimate of the labelled pairs' true share against that share, from
      each pair's own doubt p (1 - p) and the model's estimated parameters, which all pairs
      share (``shared_variance``, from the model's parameter draws).

    The two are uncorrelated because the model's parameters (its prevalences, its prior of
    the levels) are estimated from the same sample: its estimate follows the sample's true
    share and adds noise of its own, as any estimate does against the efficient one (the
    labelled pairs' true share, had their classes been seen). Treating the pairs' p as fixed
    instead, with the sample's part from the spread of p, left out about a third of the error
    in simulated benchmarks (docs/annotation-model.md). In stratum h, with n_h of M_h pairs
    labelled:

        var_h = (1 - n_h / M_h) * theta_h (1 - theta_h) / n_h + mean_h(p (1 - p)) / n_h
    """
    total = sum(sizes.values())
    variance = shared_variance
    for name, size in sizes.items():
        values = p[strata == name]
        n = len(values)
        if size == 0:
            continue
        if n == 0:
            return {"share": None, "ci95": None, "note": f"stratum {name!r}: no labelled pair"}
        theta = float(values.mean())
        own = float(np.mean(values * (1 - values)))
        sample = max(1 - n / size, 0.0) * theta * (1 - theta) / n
        variance += (size / total) ** 2 * (sample + own / n)
    weights, _, _ = true_weights(strata, sizes, np.zeros(len(p), dtype=bool))
    share = float(weights @ p)
    return {"share": share, "variance": variance, "ci95": _ci(share, variance)}


def truly_bad_left(
    p_valid: NDArray[np.float64],
    kept: NDArray[np.bool_],
    strata: NDArray[np.object_],
    sizes: dict[str, int],
    *,
    shared_variance: float = 0.0,
) -> Section:
    """The number of truly not-valid pairs that cleaning leaves (``true_weights``). Its error
    has the same two uncorrelated parts as :func:`true_share`'s:

    - the sample's: the pairs no one labelled, each truly valid at its stratum's rate theta,
      and that rate read from the labelled pairs (the sampling error of true indicators);
    - the model's: each labelled pair's own doubt p (1 - p), weighted by how often it counts
      (1 if cleaning keeps it, plus (M_h - n_h) / n_h for standing in for the unlabelled
      pairs of its stratum), and the model's parameters' (``shared_variance``)."""
    for name, size in sizes.items():
        if size and not (strata == name).any():
            return {"value": None, "ci95": None, "note": f"stratum {name!r}: no labelled pair"}
    _, weights, constant = true_weights(strata, sizes, kept)
    value = constant + float(weights @ p_valid)
    # the model's part: each labelled pair's doubt, counted by the bad-left weights
    variance = shared_variance + float((weights**2 * p_valid * (1 - p_valid)).sum())
    for name, size in sizes.items():
        values = p_valid[strata == name]
        rest = size - len(values)
        if rest <= 0 or not len(values):
            continue
        theta = float(values.mean())
        variance += rest * theta * (1 - theta) * (1 + rest / len(values))
    half = Z95 * math.sqrt(variance)
    return {"value": value, "ci95": [max(0.0, value - half), value + half]}


def ppi_mean_ci(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabelled: Sequence[float],
    *,
    lam: float | None = None,
) -> tuple[float, list[float], float]:
    """The paper's PPI++ mean (infinite population; labelled y with predictions yhat, N
    unlabelled predictions): (estimate, 95 % interval, lambda). lambda None: power-tuned,
    lambda = cov(y, yhat) / ((1 + n / N) var(yhat, yhat_unlabelled pooled)), clipped to
    [0, 1], as ppi-python 0.2.3 does (ppi_mean_ci: the covariance with divisor n, the pooled
    variance with n + N - 1, the standard errors with divisor n and N); lambda = 1 is plain PPI, 0 the classical mean."""
    labelled, f, u = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_unlabelled))
    n, big_n = len(labelled), len(u)
    if lam is None:
        pooled = np.concatenate([f, u])
        var_hat = float(np.var(pooled, ddof=1)) if len(pooled) > 1 else 0.0
        cov = float(np.mean((labelled - labelled.mean()) * (f - f.mean())))
        lam = float(np.clip(cov / ((1 + n / big_n) * var_hat), 0.0, 1.0)) if var_hat > 0 else 0.0
    estimate = float(lam * u.mean() + (labelled - lam * f).mean())
    se = math.sqrt(np.var(lam * u) / big_n + np.var(labelled - lam * f) / n)
    return estimate, [estimate - Z95 * se, estimate + Z95 * se], lam


def population_section(
    units: pd.DataFrame,
    *,
    judge: NDArray[np.float64] | None = None,
    judge_name: str | None = None,
    shared: Section | None = None,
) -> Population:
    """The report's `population` key. `units`: one row per pair of the population (gold pairs
    left out) with pair_id, sampled, inclusion_probability, stratum and verdict (the report's
    per-pair verdict; unsampled pairs have none that counts). `judge`: the judge's value per
    pair (1 = it prefers chosen, 0 = it does not), in the same order, or None. `shared`: the
    model of annotation's shared variances (:func:`shared_variances`), or None."""
    sampled = units["sampled"].astype(bool).to_numpy()
    verdict = units["verdict"].fillna(NOT_LABELLED).astype(str).to_numpy()
    labelled, strata, sizes = design(units)
    total = len(units)
    f = None if judge is None else np.asarray(judge, dtype=float)
    f_means = None if f is None else {name: float(f[strata == name].mean()) for name in sizes}
    verdicts = sorted({v for v in verdict[labelled]} | {VALID})
    estimates = {}
    for name in verdicts:
        y = (verdict[labelled] == name).astype(float)
        human = stratified_share(y, strata[labelled], sizes)
        entry = {
            "share_human_only": human["share"],
            "ci95_human_only": human["ci95"],
        }
        if f is None:
            entry.update(share=human["share"], ci95=human["ci95"], method="design-based")
        else:
            ppi = stratified_share(y, strata[labelled], sizes, f=f[labelled], f_means=f_means)
            entry.update(
                share=ppi["share"],
                ci95=ppi["ci95"],
                method=f"ppi++ with judge {judge_name!r}",
                **{"lambda": ppi["lambda"]},
            )
            human = ppi if ppi["note"] else human
        if human["note"]:
            entry["note"] = human["note"]
        entry.update(
            _true_entry(
                units,
                name,
                labelled,
                strata,
                sizes,
                shared=None if shared is None else shared["share"].get(name),
            )
        )
        estimates[name] = {k: entry[k] for k in ("share", "ci95", *entry.keys()) if k in entry}
    found = int((labelled & (verdict != VALID)).sum())
    unchecked = total - int(labelled.sum())
    valid = estimates[VALID]
    bad_left: Section = {"value": None, "ci95": None}
    if valid["share"] is not None:

        def left(share: float) -> float:
            return min(max(total * (1.0 - share) - found, 0.0), float(unchecked))

        bad_left["value"] = left(valid["share"])
        if valid["ci95"] is not None:
            bad_left["ci95"] = [left(valid["ci95"][1]), left(valid["ci95"][0])]
        kept = total - found
        bad_left["share_of_cleaned"] = bad_left["value"] / kept if kept else None
        bad_left["share_of_cleaned_ci95"] = (
            [v / kept for v in bad_left["ci95"]] if kept and bad_left["ci95"] else None
        )
    else:
        bad_left["note"] = valid.get("note", "the valid share is not estimable")
    column = f"p_{VALID}"
    probabilities = units[column].to_numpy(dtype=float) if column in units else None
    if probabilities is not None and not np.isnan(probabilities[labelled]).any():
        truly = truly_bad_left(
            probabilities[labelled],
            verdict[labelled] == VALID,
            strata[labelled],
            sizes,
            shared_variance=(shared or {}).get("bad_left") or 0.0,
        )
        bad_left["true_value"] = truly["value"]
        bad_left["true_ci95"] = truly["ci95"]
        if truly.get("note"):
            bad_left["true_note"] = truly["note"]
    else:
        bad_left["true_value"] = None
        bad_left["true_ci95"] = None
        bad_left["true_note"] = NO_MODEL
    not_labelled = int((sampled & ~labelled).sum())
    section: Population = {
        "pairs_total": total,
        "pairs_sampled": int(sampled.sum()),
        "pairs_labelled": int(labelled.sum()),
        "strata": {
            name: {
                "pairs": size,
                "sampled": int((sampled & (strata == name)).sum()),
                "labelled": int((labelled & (strata == name)).sum()),
            }
            for name, size in sizes.items()
        },
        "estimates": estimates,
        "bad_found": found,
        "bad_left": bad_left,
        "pairs": [
            {
                "pair_id": str(pair_id),
                "sampled": bool(s),
                "inclusion_probability": float(p),
                "stratum": str(st),
            }
            for pair_id, s, p, st in zip(
                units["pair_id"],
                sampled,
                units["inclusion_probability"],
                strata,
                strict=True,
            )
        ],
    }
    if not_labelled:
        section["note"] = (
            f"{not_labelled} sampled pairs have too few annotations for a verdict; the "
            "estimates use the labelled ones (missing at random within their stratum)"
        )
    return section


NO_MODEL = "the model of annotation gave no probabilities for these pairs"


def _true_entry(
    units: pd.DataFrame,
    name: str,
    labelled: NDArray[np.bool_],
    strata: NDArray[np.object_],
    sizes: dict[str, int],
    *,
    shared: float | None,
) -> Section:
    """``true_share`` and ``true_ci95`` of a verdict from the labelled pairs' probabilities."""
    column = f"p_{name}"
    if column not in units:
        note = (
            NO_MODEL
            if "p_valid" not in units
            else "the model of annotation does not estimate this kind (it is an evidence state, "
            "not a kind of pair)"
        )
        return {"true_share": None, "true_ci95": None, "true_note": note}
    p = units[column].to_numpy(dtype=float)[labelled]
    if np.isnan(p).any():
        return {"true_share": None, "true_ci95": None, "true_note": NO_MODEL}
    estimate = true_share(p, strata[labelled], sizes, shared_variance=shared or 0.0)
    out: Section = {"true_share": estimate["share"], "true_ci95": estimate["ci95"]}
    if estimate.get("note"):
        out["true_note"] = estimate["note"]
    return out


def population_units(pairs: pd.DataFrame, verdicts: dict[str, str]) -> pd.DataFrame:
    """The population's units (gold pairs left out) from a sampled study's pairs frame and the
    report's verdict per pair id."""
    frame = pairs[~pairs["is_gold"].astype(bool)].reset_index(drop=True)
    ids = frame["pair_id"].astype(str)
    return pd.DataFrame(
        {
            "pair_id": ids,
            "sampled": frame["queued"].astype(bool),
            "inclusion_probability": frame["inclusion_probability"].astype(float),
            "stratum": frame["stratum"].fillna("all").astype(str),
            "verdict": [verdicts.get(i) for i in ids],
        }
    )


def design(units: pd.DataFrame) -> tuple[NDArray[np.bool_], NDArray[np.object_], dict[str, int]]:
    """(labelled, strata, sizes) of the population's units: the sampled pairs with a verdict,
    each unit's stratum, and each stratum's size."""
    sampled = units["sampled"].astype(bool).to_numpy()
    verdict = units["verdict"].fillna(NOT_LABELLED).astype(str).to_numpy()
    labelled = sampled & (verdict != NOT_LABELLED)
    strata = units["stratum"].astype(str).to_numpy()
    sizes = {name: int((strata == name).sum()) for name in dict.fromkeys(strata)}
    return labelled, strata, sizes


def population_sentence(section: Population) -> str:
    """One plain sentence a paper can quote."""
    valid = section["estimates"][VALID]
    total, labelled = section["pairs_total"], section["pairs_labelled"]
    if valid["share"] is None:
        return (
            f"Humans checked {labelled:,} of the benchmark's {total:,} pairs; the share of "
            f"valid pairs is not estimable yet ({valid.get('note', '')})."
        )
    ci = valid["ci95"]
    interval = f" (95% CI {100 * ci[0]:.1f}-{100 * ci[1]:.1f}%)" if ci else ""
    left = section["bad_left"]
    left_text = ""
    if left.get("value") is not None:
        left_ci = left.get("ci95")
        span = f" (95% CI {left_ci[0]:.0f}-{left_ci[1]:.0f})" if left_ci else ""
        left_text = (
            f"; removing the {section['bad_found']:,} pairs they found not valid leaves an "
            f"estimated {left['value']:.0f} not-valid pairs{span} among the "
            f"{total - section['bad_found']:,} that remain"
        )
    truly = ""
    if valid.get("true_share") is not None:
        true_ci = valid.get("true_ci95")
        span = f" (95% CI {100 * true_ci[0]:.1f}-{100 * true_ci[1]:.1f}%)" if true_ci else ""
        truly = (
            f"; corrected for the annotators' errors by the model of annotation, an estimated "
            f"{100 * valid['true_share']:.1f}% of all pairs are truly valid{span}"
        )
    return (
        f"Humans checked {labelled:,} of the benchmark's {total:,} pairs; by the annotators' "
        f"verdicts an estimated {100 * valid['share']:.1f}% of all pairs are valid{interval}, "
        f"by {valid['method']}{truly}{left_text}."
    )


def shared_variances(
    units: pd.DataFrame, draws: dict[str, NDArray[np.float32]], positions: NDArray[np.int64]
) -> Section:
    """The model of annotation's shared variances of the true shares: per verdict, the spread
    over the model's parameter draws (``draws``: verdict -> pairs x draws, rows in the model's
    pair order; ``positions``: each unit's row there, -1 for none) of the population share,
    and of the truly bad pairs left (valid)."""
    labelled, strata, sizes = design(units)
    kept = units["verdict"].to_numpy(dtype=object)[labelled] == VALID
    share_w, bad_w, _ = true_weights(strata[labelled], sizes, kept)
    rows = positions[labelled]
    out: Section = {"share": {}, "bad_left": None}
    for name, values in draws.items():
        mine = values[rows].astype(np.float64)
        if np.isnan(mine).any() or mine.shape[1] < 2:
            out["share"][name] = None
            continue
        out["share"][name] = float(np.var(share_w @ mine, ddof=1))
        if name == VALID:
            out["bad_left"] = float(np.var(bad_w @ mine, ddof=1))
    return out


def is_sampled(pairs: pd.DataFrame | None) -> bool:
    """Whether the report's pairs carry a sample design (a study imported with --sample)."""
    return pairs is not None and "inclusion_probability" in pairs


def judge_values(model: ModelJudgements, pair_ids: pd.Index[str]) -> NDArray[np.float64]:
    """A judge's value per pair for the estimates: 1 when it prefers `chosen`, else 0 (it
    prefers `rejected`, ties or failed to parse: the pairs --sample-by flags)."""
    from analysis.judges.accuracy import aligned_picks
    from analysis.judges.files import CHOSEN

    picks, _ = aligned_picks(model, pair_ids)
    chosen: NDArray[np.bool_] = picks == CHOSEN
    return chosen.astype(np.float64)


def with_population(
    report: Report, pairs: pd.DataFrame, models: Sequence[ModelJudgements] | None = None
) -> Report:
    """The report with its `population` key (a sampled study's pairs; gold pairs left out).
    The first --model is the judge of the prediction-powered estimates."""
    by_id = {p["pair_id"]: p for p in report["pairs"]}
    units = population_units(pairs, {i: p["verdict"] for i, p in by_id.items()})
    ids = units["pair_id"]
    for name in MODEL_VERDICTS:
        units[f"p_{name}"] = [
            (by_id[i].get("probabilities") or {}).get(name, np.nan) if i in by_id else np.nan
            for i in ids
        ]
    judge = models[0] if models else None
    section = population_section(
        units,
        judge=None if judge is None else judge_values(judge, pd.Index(ids)),
        judge_name=None if judge is None else judge.name,
        shared=report.get("annotation_model", {}).get("shared_variance"),
    )
    section["sentence"] = population_sentence(section)
    return {**report, "population": section}
