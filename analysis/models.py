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

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from analysis.model_files import CHOSEN, FAILED, REJECTED, TIE, ModelJudgements

# Credit of each pick (indexed by the codes of analysis.model_files.PICKS).
CREDIT = np.array([1.0, 0.0, 0.5, 0.0])
# Agreement of a model's pick (columns: chosen, rejected, tie, failed) with a human majority
# (rows: chosen, rejected): the same credit rule, so a tie agrees half with either response.
AGREEMENT_WEIGHTS = np.array([[1.0, 0.0, 0.5, 0.0], [0.0, 1.0, 0.5, 0.0]])
_CHUNK_CELLS = 4_000_000  # resamples x pairs drawn at once


# --- bootstrap -----------------------------------------------------------------------------


def resampled_means(values: np.ndarray, *, resamples: int, seed: int | Sequence[int]) -> np.ndarray:
    """Means of each row of ``values`` (k x n) over ``resamples`` bootstrap samples of its n
    columns; every row uses the same samples (k x resamples). Empty n gives NaN."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    k, n = values.shape
    out = np.full((k, resamples), np.nan)
    if n == 0 or resamples == 0:
        return out
    rng = np.random.default_rng(seed)
    step = max(1, _CHUNK_CELLS // n)
    for start in range(0, resamples, step):
        m = min(step, resamples - start)
        drawn = rng.integers(0, n, size=(m, n))
        # counts[r, i]: how often pair i is in resample r; a mean is then one matrix product.
        counts = np.bincount((drawn + n * np.arange(m)[:, None]).ravel(), minlength=m * n)
        out[:, start : start + m] = values @ counts.reshape(m, n).T / n
    return out


def percentile_interval(samples: np.ndarray) -> list[float] | None:
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return None
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [float(lo), float(hi)]


def _estimate(values: np.ndarray, samples: np.ndarray | None, *, what: str) -> dict:
    """{value, ci95, n} of a mean credit; None with a note when there are no pairs."""
    n = int(values.size)
    if n == 0:
        return {"value": None, "ci95": None, "n": 0, "note": f"undefined: no {what}"}
    out = {"value": float(values.mean()), "ci95": None, "n": n}
    if samples is not None:
        out["ci95"] = percentile_interval(samples)
    if out["ci95"] is None:
        out["ci95_note"] = "no bootstrap resamples (--bootstrap 0)"
    return out


# --- per model -----------------------------------------------------------------------------


def _pair_frame(pairs: pd.DataFrame | list[dict]) -> pd.DataFrame:
    """The report's non-gold pairs with the columns the comparison needs."""
    frame = pd.DataFrame(pairs)
    frame = frame[~frame["is_gold"].astype(bool)].reset_index(drop=True)
    frame["pair_id"] = frame["pair_id"].astype(str)
    return frame


def aligned_picks(model: ModelJudgements, pair_ids: pd.Index) -> tuple[np.ndarray, np.ndarray]:
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


def weighted_kappa(human: np.ndarray, pick: np.ndarray) -> tuple[float | None, str | None]:
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


def position_test(pick: np.ndarray, chosen_first: np.ndarray) -> dict:
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
    out = {
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
        out["p_value"] = float(stats.fisher_exact(table).pvalue)
    else:
        out["note"] = "undefined: chosen was never shown " + ("first" if not n_first else "second")
    return out


def model_summary(
    model: ModelJudgements,
    pairs: pd.DataFrame,
    *,
    min_annotations: int,
    samples: dict[str, np.ndarray] | None,
) -> dict:
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
    out = {
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


def _human_majority(pairs: pd.DataFrame, *, min_annotations: int) -> np.ndarray:
    """Per pair 0 (majority chosen), 1 (majority rejected), -1 (no decided majority or too few
    annotations: the pairs label agreement leaves out)."""
    majority = pairs["majority"].to_numpy(dtype=object)
    enough = pairs["n_annotations"].to_numpy() >= min_annotations
    return np.select(
        [enough & (majority == "chosen"), enough & (majority == "rejected")], [0, 1], default=-1
    )


# --- the human reference ------------------------------------------------------------------


def human_credit(pairs: pd.DataFrame, *, min_annotations: int) -> tuple[np.ndarray, np.ndarray]:
    """(majority credit, average single annotator's credit) per pair with >= min_annotations,
    by the models' rule: the majority scores 1 (chosen), 0 (rejected) or 1/2 (no strict
    majority for either response, as a tie); an annotator's answer 1, 0 or 1/2 (tie)."""
    n = pairs["n_annotations"].to_numpy()
    keep = (n >= max(min_annotations, 1)) & (n > 0)
    majority = pairs["majority"].to_numpy(dtype=object)[keep]
    majority_credit = np.select([majority == "chosen", majority == "rejected"], [1.0, 0.0], 0.5)
    chosen = pairs["n_chosen"].to_numpy()[keep]
    tie = pairs["n_tie"].to_numpy()[keep]
    annotator_credit = (chosen + 0.5 * tie) / n[keep]
    return majority_credit, annotator_credit


def human_reference(
    pairs: pd.DataFrame, *, min_annotations: int, bootstrap: int, seed: int
) -> dict:
    majority, annotator = human_credit(pairs, min_annotations=min_annotations)
    samples = resampled_means(np.vstack([majority, annotator]), resamples=bootstrap, seed=[seed, 3])
    what = f"pairs with >= {min_annotations} annotations"
    return {
        "majority_accuracy": _estimate(majority, samples[0] if bootstrap else None, what=what),
        "annotator_accuracy": _estimate(annotator, samples[1] if bootstrap else None, what=what),
    }


# --- differences ---------------------------------------------------------------------------


def paired_differences(
    names: list[str], means: np.ndarray, samples: np.ndarray | None, *, subset: str, n: int
) -> list[dict]:
    """Accuracy of each model minus each later one, with the paired bootstrap interval."""
    out = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            row = {
                "a": names[a],
                "b": names[b],
                "subset": subset,
                "difference": None if n == 0 else float(means[a] - means[b]),
                "ci95": None,
                "n": n,
            }
            if n and samples is not None:
                row["ci95"] = percentile_interval(samples[a] - samples[b])
            if n == 0:
                row["note"] = f"undefined: no {subset} pairs"
            out.append(row)
    return out


# --- the section ---------------------------------------------------------------------------


def compare_models(
    pairs: pd.DataFrame | list[dict],
    models: Sequence[ModelJudgements],
    *,
    min_annotations: int,
    bootstrap: int,
    seed: int,
) -> dict:
    """The report keys ``models``, ``human_reference``, ``model_differences`` and the method
    note, from the report's per-pair table (report['pairs'] or the frame behind it)."""
    frame = _pair_frame(pairs)
    pair_ids = pd.Index(frame["pair_id"])
    credits = (
        np.vstack([CREDIT[aligned_picks(m, pair_ids)[0]] for m in models])
        if models
        else np.zeros((0, len(frame)))
    )
    valid = (frame["verdict"] == "valid").to_numpy()
    subsets = {"all": np.ones(len(frame), dtype=bool), "valid": valid}
    samples = {
        name: (
            resampled_means(credits[:, mask], resamples=bootstrap, seed=[seed, tag])
            if bootstrap
            else None
        )
        for tag, (name, mask) in enumerate(subsets.items(), start=1)
    }
    entries = [
        model_summary(
            model,
            frame,
            min_annotations=min_annotations,
            samples={k: v[i] for k, v in samples.items() if v is not None},
        )
        for i, model in enumerate(models)
    ]
    names = [m.name for m in models]
    differences = []
    for name, mask in subsets.items():
        n = int(mask.sum())
        means = credits[:, mask].mean(axis=1) if n else np.full(len(models), np.nan)
        differences += paired_differences(names, means, samples[name], subset=name, n=n)
    return {
        "models": entries,
        "human_reference": human_reference(
            frame, min_annotations=min_annotations, bootstrap=bootstrap, seed=seed
        ),
        "model_differences": differences,
        "method": method_note(min_annotations=min_annotations, bootstrap=bootstrap, seed=seed),
    }


def method_note(*, min_annotations: int, bootstrap: int, seed: int) -> dict:
    return {
        "credit": (
            "per pair: 1 when the model picks chosen, 0 when it picks rejected or its answer "
            "could not be parsed (parse_failed), 1/2 for a tie (equal scores or a tie "
            "preference); accuracies and agreement shares are mean credits over pairs"
        ),
        "accuracy": "against the constructed label, over every non-gold pair of the report",
        "accuracy_valid": "over the pairs whose human verdict is valid",
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
            f"95% percentile bootstrap over pairs, {bootstrap:,} resamples, seed {seed}; "
            "differences between models resample the same pairs for both (paired)"
        ),
    }


def with_models(
    report: dict,
    models: Sequence[ModelJudgements],
    *,
    min_annotations: int,
    bootstrap: int,
    seed: int,
) -> dict:
    """The report with ``models``, ``human_reference`` and ``model_differences`` added (after
    ``verdicts``) and their method note under ``methods.models``; the report itself is kept."""
    section = compare_models(
        report["pairs"], models, min_annotations=min_annotations, bootstrap=bootstrap, seed=seed
    )
    methods = {**report.get("methods", {}), "models": section.pop("method")}
    out = {}
    for key, value in report.items():
        if key == "pairs":
            out.update(section)
        out[key] = methods if key == "methods" else value
    out.update({k: v for k, v in section.items() if k not in out})
    if "methods" not in out:
        out["methods"] = methods
    return out
