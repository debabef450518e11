"""Reward models and judges against the humans (report keys ``models``, ``human_reference``,
``model_differences``), as pure functions of the report's per-pair table.

The unit is the pair. A model's credit on a pair is 1 when it picks ``chosen``, 0 when it picks
``rejected`` or its answer could not be parsed, and 1/2 for a tie (equal scores, or a
``tie`` preference): the expected credit of breaking the tie by a fair coin. Every accuracy and
agreement share is the mean credit over its pairs. Intervals are 95% percentile bootstrap
intervals over pairs; a difference between two models resamples the same pairs for both
(paired), so what the two models share cancels out of its interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.agreement.bootstrap import bootstrap_weights
from analysis.distributions import fisher_exact_p
from analysis.judges.files import CHOSEN, FAILED, PICKS, REJECTED, TIE, ModelJudgements
from analysis.report.shape import Records, Report, Section, reordered

# Credit of each pick (indexed by the codes of analysis.judges.files.PICKS).
CREDIT = np.array([1.0, 0.0, 0.5, 0.0])
# Agreement of a model's pick (columns: chosen, rejected, tie, failed) with a human majority
# (rows: chosen, rejected): the same credit rule, so a tie agrees half with either response.
AGREEMENT_WEIGHTS = np.array([[1.0, 0.0, 0.5, 0.0], [0.0, 1.0, 0.5, 0.0]])


# --- bootstrap -----------------------------------------------------------------------------


def resampled_sums(rows: NDArray[np.float64], *, resamples: int, seed: int) -> NDArray[np.float64]:
    """Sums of each row of ``rows`` (r x n pairs) over ``resamples`` bootstrap samples of the
    pairs (r x resamples); every row uses the same samples. Pairs whose columns are equal are
    grouped and drawn through a multinomial over the distinct columns, as in
    analysis.agreement.coefficients: the same distribution as drawing single pairs, at a fraction of the cost."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    r, n = rows.shape
    out = np.full((r, resamples), np.nan)
    if n == 0 or resamples == 0:
        return out
    patterns, frequencies = np.unique(rows.T, axis=0, return_counts=True)
    start = 0
    for weights in bootstrap_weights(frequencies, resamples=resamples, seed=seed):
        out[:, start : start + len(weights)] = patterns.T @ weights.T
        start += len(weights)
    return out


def percentile_interval(samples: NDArray[np.float64]) -> list[float] | None:
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return None
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [float(lo), float(hi)]


def _interval(samples: NDArray[np.float64] | None) -> tuple[list[float] | None, str | None]:
    """The 95% interval of the defined resamples (a subset can be empty in some), as the rest
    of the report does: omitted when more than half are undefined."""
    if samples is None or samples.size == 0:
        return None, "no bootstrap resamples (--bootstrap 0)"
    dropped = int((~np.isfinite(samples)).sum())
    if dropped * 2 > samples.size:
        return None, f"interval omitted: no such pair in {dropped} of {samples.size} resamples"
    note = f"{dropped} of {samples.size} resamples had no such pair" if dropped else None
    return percentile_interval(samples), note


def _estimate(
    values: NDArray[np.float64], samples: NDArray[np.float64] | None, *, what: str
) -> Section:
    """{value, ci95, n} of a mean credit; None with a note when there are no pairs."""
    n = int(values.size)
    if n == 0:
        return {"value": None, "ci95": None, "n": 0, "note": f"undefined: no {what}"}
    ci, note = _interval(samples)
    out: Section = {"value": float(values.mean()), "ci95": ci, "n": n}
    if note:
        out["ci95_note"] = note
    return out


# --- per model -----------------------------------------------------------------------------


PAIR_COLUMNS = (
    "pair_id", "is_gold", "verdict", "majority", "n_annotations", "n_chosen", "n_tie",
)  # fmt: skip


def _pair_frame(pairs: pd.DataFrame | list[Section]) -> pd.DataFrame:
    """The report's non-gold pairs with the columns the comparison needs."""
    if isinstance(pairs, list):  # records: take only these columns (a frame of all is slow)
        frame = pd.DataFrame({column: [p[column] for p in pairs] for column in PAIR_COLUMNS})
    else:
        frame = pd.DataFrame(pairs)[list(PAIR_COLUMNS)]
    frame = frame[~frame["is_gold"].astype(bool)].reset_index(drop=True)
    frame["pair_id"] = frame["pair_id"].astype(str)
    return frame


def aligned_picks(
    model: ModelJudgements, pair_ids: pd.Index[str]
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """(pick codes, chosen-first flags) in the order of ``pair_ids`` (every id must be judged);
    chosen-first is all False for models that do not show slots."""
    where = pd.Index(model.pair_id).get_indexer(pair_ids)
    if (where < 0).any():
        missing = pair_ids[where < 0][:3].tolist()
        raise ValueError(f"model {model.name!r} has no judgement for pairs {missing}")
    first = (
        np.zeros(len(where), dtype=bool)
        if model.chosen_first is None
        else model.chosen_first[where]
    )
    return model.pick[where], first


def weighted_kappa(
    human: NDArray[np.int64], pick: NDArray[np.int64]
) -> tuple[float | None, str | None]:
    """Cohen's weighted kappa (Cohen 1968) of human majorities (0 chosen, 1 rejected) against
    model picks (PICKS codes) with AGREEMENT_WEIGHTS; without ties and parse failures this is
    Cohen's (1960) kappa. (None, note) when chance agreement is already 1."""
    n = human.size
    if n == 0:
        return None, "undefined: no pair with a human majority"
    observed = AGREEMENT_WEIGHTS[human, pick].mean()
    p_human = np.bincount(human, minlength=2) / n
    p_model = np.bincount(pick, minlength=4) / n
    expected = float(p_human @ AGREEMENT_WEIGHTS @ p_model)
    if np.isclose(expected, 1.0):
        return None, "undefined: the humans and the model each give one answer only (no variation)"
    return float((observed - expected) / (1.0 - expected)), None


def position_test(pick: NDArray[np.int64], chosen_first: NDArray[np.bool_]) -> Section:
    """A pairwise judge's accuracy with chosen shown first (A) and second (B), and Fisher's
    exact two-sided test of equal accuracy in both orders (a parse failure counts as wrong)."""
    correct = pick == CHOSEN
    first, second = chosen_first, ~chosen_first
    table = [
        [int((correct & first).sum()), int((~correct & first).sum())],
        [int((correct & second).sum()), int((~correct & second).sum())],
    ]
    n_first, n_second = sum(table[0]), sum(table[1])
    answered = pick != FAILED
    out: Section = {
        "accuracy_chosen_first": table[0][0] / n_first if n_first else None,
        "accuracy_chosen_second": table[1][0] / n_second if n_second else None,
        "p_value": None,
        "n_chosen_first": n_first,
        "n_chosen_second": n_second,
        "first_slot_rate": (
            float((((pick == CHOSEN) == first) & answered).sum() / answered.sum())
            if answered.any()
            else None
        ),
    }
    if n_first and n_second:
        out["p_value"] = fisher_exact_p(table)
    else:
        out["note"] = "undefined: chosen was never shown " + ("first" if not n_first else "second")
    return out


def model_summary(
    model: ModelJudgements,
    pairs: pd.DataFrame,
    *,
    min_annotations: int,
    samples: Mapping[str, NDArray[np.float64] | None] | None,
) -> Section:
    """One entry of ``models``. ``samples``: this model's resampled means per subset."""
    pick, chosen_first = aligned_picks(model, pd.Index(pairs["pair_id"]))
    credit = CREDIT[pick]
    valid = (pairs["verdict"] == "valid").to_numpy()
    flip = (pairs["verdict"] == "preference_flip").to_numpy()
    human = _human_majority(pairs, min_annotations=min_annotations)
    decided = human >= 0
    samples = samples or {}

    accuracy = _estimate(credit, samples.get("all"), what="pairs")
    accuracy_valid = _estimate(credit[valid], samples.get("valid"), what="valid pairs")
    flipped = credit[flip]
    agreement_credit = AGREEMENT_WEIGHTS[human[decided], pick[decided]]
    kappa, kappa_note = weighted_kappa(human[decided], pick[decided])
    out: Section = {
        "name": model.name,
        "layout": model.layout,
        "n": int(credit.size),
        "accuracy": accuracy,
        "accuracy_valid": accuracy_valid,
        "accuracy_flip": {
            "value": float(flipped.mean()) if flipped.size else None,
            "n": int(flipped.size),
        },
        "agreement_with_humans": {
            "value": float(agreement_credit.mean()) if agreement_credit.size else None,
            "kappa": kappa,
            "n": int(agreement_credit.size),
        },
        "position": position_test(pick, chosen_first) if model.layout == "pairwise" else None,
        "ties": int((pick == TIE).sum()),
        "parse_failed": int((pick == FAILED).sum()) if model.parse_failed_given else None,
        "errors": error_split(
            credit,
            valid=valid,
            flip=flip,
            judged=(pairs["verdict"] != "insufficient_annotations").to_numpy(),
        ),
        "picks": {
            "chosen": int((pick == CHOSEN).sum()),
            "rejected": int((pick == REJECTED).sum()),
            "tie": int((pick == TIE).sum()),
            "failed": int((pick == FAILED).sum()),
        },
    }
    if not flipped.size:
        out["accuracy_flip"]["note"] = "undefined: no pair is a preference flip"
    if kappa_note:
        out["agreement_with_humans"]["note"] = kappa_note
    if out["position"] is None:
        out["position_note"] = "only for pairwise judges (the slots a judge saw)"
    if out["parse_failed"] is None:
        out["parse_failed_note"] = "not given: the file has no parse_failed column"
    return out


def error_split(
    credit: NDArray[np.float64],
    *,
    valid: NDArray[np.bool_],
    flip: NDArray[np.bool_],
    judged: NDArray[np.bool_],
) -> Section:
    """Where a model's errors (credit lost: 1 - credit per pair) fall: on pairs the humans
    validated, on pairs they flipped, on the other pairs they did not validate (no consensus,
    quality problems, too few annotations). The share outside valid pairs is the part of the
    error that the benchmark's labels, not the model, may own; it needs a human verdict on
    some pair (``judged``: pairs with enough annotations for one), else it is undefined."""
    lost = 1.0 - credit
    total = float(lost.sum())
    defined = bool(total) and bool(np.any(judged))
    out: Section = {
        "total": total,
        "valid": float(lost[valid].sum()),
        "preference_flip": float(lost[flip].sum()),
        "other": float(lost[~valid & ~flip].sum()),
        "share_not_valid": (total - float(lost[valid].sum())) / total if defined else None,
    }
    if not total:
        out["note"] = "undefined share: the model makes no error"
    elif not defined:
        out["note"] = "undefined share: no pair has a human verdict yet (too few annotations)"
    return out


def _human_majority(pairs: pd.DataFrame, *, min_annotations: int) -> NDArray[np.int64]:
    """Per pair 0 (majority chosen), 1 (majority rejected), -1 (no decided majority or too few
    annotations: the pairs label agreement leaves out)."""
    majority = pairs["majority"].to_numpy(dtype=object)
    enough = pairs["n_annotations"].to_numpy() >= min_annotations
    return np.select(
        [enough & (majority == "chosen"), enough & (majority == "rejected")], [0, 1], default=-1
    )


# --- the human reference ------------------------------------------------------------------


def human_pairs(pairs: pd.DataFrame, *, min_annotations: int) -> NDArray[np.bool_]:
    """The pairs the human reference is computed on: >= min_annotations (and >= 1)."""
    return pairs["n_annotations"].to_numpy() >= max(min_annotations, 1)


def human_credit(
    pairs: pd.DataFrame, *, min_annotations: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(majority credit, average single annotator's credit) per pair with >= min_annotations,
    by the models' rule: the majority scores 1 (chosen), 0 (rejected) or 1/2 (no strict
    majority for either response, as a tie); an annotator's answer 1, 0 or 1/2 (tie)."""
    keep = human_pairs(pairs, min_annotations=min_annotations)
    majority = pairs["majority"].to_numpy(dtype=object)[keep]
    majority_credit = np.select([majority == "chosen", majority == "rejected"], [1.0, 0.0], 0.5)
    chosen = pairs["n_chosen"].to_numpy()[keep]
    tie = pairs["n_tie"].to_numpy()[keep]
    annotator_credit = (chosen + 0.5 * tie) / pairs["n_annotations"].to_numpy()[keep]
    return majority_credit, annotator_credit


# --- differences ---------------------------------------------------------------------------


def paired_differences(
    names: list[str],
    means: NDArray[np.float64],
    samples: NDArray[np.float64] | None,
    *,
    subset: str,
    n: int,
) -> list[Section]:
    """Accuracy of each model minus each later one, with the paired bootstrap interval
    (``samples``: each model's accuracy in the same resamples)."""
    out = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            row: Section = {
                "a": names[a],
                "b": names[b],
                "subset": subset,
                "difference": None if n == 0 else float(means[a] - means[b]),
                "ci95": None,
                "n": n,
            }
            if n == 0:
                row["note"] = f"undefined: no {subset} pairs"
            else:
                ci, note = _interval(None if samples is None else samples[a] - samples[b])
                row["ci95"] = ci
                if note:
                    row["ci95_note"] = note
            out.append(row)
    return out


# --- the section ---------------------------------------------------------------------------


class ModelComparison(TypedDict):
    """What :func:`compare_models` gives: three report keys and the method note."""

    models: Records
    human_reference: dict[str, Section]
    model_differences: Records
    method: Section


COMPARISON_KEYS = ("models", "human_reference", "model_differences")


def compare_models(
    pairs: pd.DataFrame | list[Section],
    models: Sequence[ModelJudgements],
    *,
    min_annotations: int,
    bootstrap: int,
    seed: int,
) -> ModelComparison:
    """The report keys ``models``, ``human_reference``, ``model_differences`` and the method
    note, from the report's per-pair table (report['pairs'] or the frame behind it)."""
    frame = _pair_frame(pairs)
    n = len(frame)
    k = len(models)
    pair_ids = pd.Index(frame["pair_id"])
    credits = np.zeros((k, n))
    for i, model in enumerate(models):
        credits[i] = CREDIT[aligned_picks(model, pair_ids)[0]]
    valid = (frame["verdict"] == "valid").to_numpy()
    keep = human_pairs(frame, min_annotations=min_annotations)
    human = np.zeros((2, n))
    human[:, keep] = human_credit(frame, min_annotations=min_annotations)

    # One resampling of the report's pairs serves every interval: a subset's accuracy is
    # recomputed on the subset's pairs within each resample, and two models' accuracies in
    # the same resample give the paired difference.
    rows = np.vstack([credits, credits * valid, human, np.ones(n), valid, keep])
    samples: dict[str, NDArray[np.float64] | None] = {"all": None, "valid": None, "human": None}
    if bootstrap:
        sums = resampled_sums(rows, resamples=bootstrap, seed=seed)
        with np.errstate(invalid="ignore", divide="ignore"):
            samples["all"] = sums[:k] / sums[2 * k + 2]
            samples["valid"] = sums[k : 2 * k] / sums[2 * k + 3]
            samples["human"] = sums[2 * k : 2 * k + 2] / sums[2 * k + 4]

    def row_of(name: str, i: int) -> NDArray[np.float64] | None:
        drawn = samples[name]
        return None if drawn is None else drawn[i]

    entries = [
        model_summary(
            model,
            frame,
            min_annotations=min_annotations,
            samples={"all": row_of("all", i), "valid": row_of("valid", i)},
        )
        for i, model in enumerate(models)
    ]
    names = [m.name for m in models]
    differences = []
    for name, mask in (("all", np.ones(n, dtype=bool)), ("valid", valid)):
        count = int(mask.sum())
        means = credits[:, mask].mean(axis=1) if count else np.full(k, np.nan)
        differences += paired_differences(names, means, samples[name], subset=name, n=count)
    what = f"pairs with >= {min_annotations} annotations"
    reference = {
        key: _estimate(human[i, keep], row_of("human", i), what=what)
        for i, key in enumerate(("majority_accuracy", "annotator_accuracy"))
    }
    return {
        "models": entries,
        "human_reference": reference,
        "model_differences": differences,
        "method": method_note(min_annotations=min_annotations, bootstrap=bootstrap, seed=seed),
    }


def method_note(*, min_annotations: int, bootstrap: int, seed: int) -> Section:
    return {
        "credit": (
            "per pair: 1 when the model picks chosen, 0 when it picks rejected or its answer "
            "could not be parsed (parse_failed), 1/2 for a tie (equal scores or a tie "
            "preference); accuracies and agreement shares are mean credits over pairs"
        ),
        "accuracy": "against the constructed label, over every non-gold pair of the report",
        "accuracy_valid": "over the pairs whose human verdict is valid",
        "errors": (
            "credit lost (1 - credit) summed over valid pairs, preference flips and the other "
            "pairs; share_not_valid = the part outside valid pairs (null while no pair has "
            "enough annotations for a human verdict)"
        ),
        "accuracy_flip": (
            "over the pairs whose human majority prefers rejected (preference_flip): a low "
            "value means the model sides with the humans against the label"
        ),
        "agreement_with_humans": (
            f"over pairs with >= {min_annotations} annotations and a strict chosen or rejected "
            "majority; value = mean agreement credit with the majority; kappa = Cohen's "
            "weighted kappa with the same credits (Cohen's kappa when there are no ties)"
        ),
        "position": (
            "pairwise judges only: accuracy with chosen shown first (A) and second (B), "
            "Fisher's exact two-sided test of equal accuracy; first_slot_rate = share of "
            "parsed answers that picked A"
        ),
        "human_reference": (
            f"over pairs with >= {min_annotations} annotations, by the same credit rule: the "
            "strict majority (no strict majority for a response counts as a tie), and the "
            "average single annotator (each pair's mean credit over its annotations)"
        ),
        "intervals": (
            f"95% percentile bootstrap over the report's pairs, {bootstrap:,} resamples, seed "
            f"{seed}; one set of resamples for every number: a subset's accuracy (valid pairs, "
            "the human reference's pairs) is recomputed on its pairs in each resample, and a "
            "difference between two models uses the same resampled pairs for both (paired)"
        ),
    }


def _pairs_with_picks(pairs: list[Section], models: Sequence[ModelJudgements]) -> list[Section]:
    """Each pair's record with every model's pick beside the human verdict (``model:NAME``:
    chosen, rejected, tie or failed; None where the file has no row, e.g. a gold pair)."""
    picks = {
        f"model:{m.name}": dict(
            zip(m.pair_id.tolist(), np.array(PICKS)[m.pick].tolist(), strict=True)
        )
        for m in models
    }
    return [
        {**pair, **{column: judged.get(pair["pair_id"]) for column, judged in picks.items()}}
        for pair in pairs
    ]


def with_models(
    report: Report,
    models: Sequence[ModelJudgements],
    *,
    min_annotations: int,
    bootstrap: int,
    seed: int,
) -> Report:
    """The report with ``models``, ``human_reference`` and ``model_differences`` added (before
    ``pairs``), each pair's pick per model in ``pairs`` (``model:NAME``) and the method note
    under ``methods.models``; the report given is not changed."""
    section = compare_models(
        report["pairs"], models, min_annotations=min_annotations, bootstrap=bootstrap, seed=seed
    )
    merged: Report = {
        **report,
        "models": section["models"],
        "human_reference": section["human_reference"],
        "model_differences": section["model_differences"],
        "pairs": _pairs_with_picks(report["pairs"], models),
        "methods": {**report["methods"], "models": section["method"]},
    }
    keys = list(report)
    added = [key for key in COMPARISON_KEYS if key not in keys]
    at = keys.index("pairs")
    return reordered(merged, [*keys[:at], *added, *keys[at:]])
