"""Humans against the benchmark's automatic aspect scorer (`annotate report --aspect-scores`).

The scorer file (docs/reference/file-formats.md, model files) has two rows a pair: `id`, `response` (chosen/rejected)
and `scores`, the scorer's 0-2 match score per rubric aspect in the pair's order. JSON Lines,
CSV (`scores` as a JSON list) or Parquet. A broken file is refused whole, every problem named
with its line (JSON Lines) or row (CSV, Parquet, header not counted).

The comparison, over the (pair, aspect, response) units that humans scored:
- agreement between the scorer and the human mean score: ordinal Krippendorff alpha with two
  coders (the scorer, the annotators' mean) on the ordered values that occur, overall and per
  aspect position, intervals resampling pairs;
- the pairs where they disagree most (mean absolute difference over the pair's units);
- whether the scorer's gap (mean over aspects of chosen minus rejected) predicts the humans'
  verdict: the AUC for the human majority preferring `chosen`, the AUC for humans confirming
  the pair's construction (their own gap >= the gap threshold), and Spearman's correlation of
  the two gaps, each with a pair-bootstrap interval.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.agreement.bootstrap import MIN_INTERVAL_UNITS
from analysis.agreement.coefficients import EstimateJSON
from analysis.aspects.check import (
    Scores,
    gap_correlation,
    layout_alpha,
    pair_layout,
    percentile_interval,
    too_few_for_an_interval,
    unit_means,
)
from analysis.aspects.scores import AspectValueError, score
from analysis.errors import InputError, UserError
from analysis.files import strict_input
from analysis.report.shape import Section
from analysis.vocabulary import SIDES

SUFFIXES = (".jsonl", ".csv", ".parquet")
REQUIRED = ("id", "response", "scores")
TOP_DISAGREEMENTS = 10
_MAX_PROBLEMS = 20
MAX_LINE_BYTES = 8 * 1024**2  # a line holds a response, as long as a pair record may be


# --- reading -----------------------------------------------------------------------------------


def _records(path: Path, data: bytes | None) -> tuple[list[Section], str]:
    """(records, what a record is called in messages); ``data``: the bytes of an upload."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(
            f"{path}: unsupported file type {suffix!r}; use one of {', '.join(SUFFIXES)}"
        )
    if data is None and not path.is_file():
        raise UserError(f"{path}: no such file")

    def opened() -> BinaryIO:
        return path.open("rb") if data is None else io.BytesIO(data)

    try:
        if suffix == ".jsonl":
            with opened() as handle:
                numbered, problems = strict_input.json_object_lines(handle, limit=MAX_LINE_BYTES)
            records = [{**record, "_at": f"line {number}"} for number, record in numbered]
            if problems:
                raise InputError(str(path), problems)
            return records, "line"
        with opened() as handle:
            if suffix == ".csv":
                frame = pd.read_csv(handle, dtype=str, keep_default_na=False, na_values=[""])
            else:
                frame = pd.read_parquet(handle)
    except UnicodeDecodeError as exc:
        raise InputError(str(path), [f"not valid UTF-8 text (byte {exc.start + 1})"]) from None
    except pd.errors.EmptyDataError:
        return [], "row"
    except (ValueError, pd.errors.ParserError, OSError) as exc:
        raise InputError(str(path), [f"not a readable {suffix[1:]} file ({exc})"]) from None
    absent = [c for c in REQUIRED if c not in frame.columns]
    if absent:
        raise InputError(str(path), [f"required column '{c}' is missing" for c in absent])
    rows = frame[list(REQUIRED)].astype(object).where(frame[list(REQUIRED)].notna(), None)
    records = [
        {**{str(column): value for column, value in r.items()}, "_at": f"row {i}"}
        for i, r in enumerate(rows.to_dict("records"), start=1)
    ]
    return records, "row"


def _id(value: object) -> str | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _score_list(value: object, *, n_aspects: int) -> list[int]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise AspectValueError(f"not a JSON list ({exc.msg})") from None
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise AspectValueError(f"must be a list of 0-2 scores (got {value!r})")
    values = [score(v, what=f"score {i}") for i, v in enumerate(value, start=1)]
    if len(values) != n_aspects:
        raise AspectValueError(
            f"the pair has {n_aspects} rubric aspect{'s' if n_aspects != 1 else ''}, "
            f"got {len(values)} score{'s' if len(values) != 1 else ''}"
        )
    return values


def aspect_counts(pairs: pd.DataFrame) -> dict[str, int]:
    """Pair id -> number of rubric aspects, from a pairs frame with ``n_aspects``: what
    :func:`read_scorer_file` checks each score list against."""
    return dict(zip(pairs["pair_id"].astype(str), pairs["n_aspects"].astype(int), strict=True))


def read_scorer_file(
    path: str | Path, *, aspect_counts: Mapping[str, int], data: bytes | None = None
) -> pd.DataFrame:
    """The scorer's scores as (pair_id, aspect, side, score) rows, or InputError listing every
    problem: unknown id, unknown response, a malformed or wrongly sized score list, a value
    outside 0-2, a second row for the same response, a pair missing one of its two rows.

    ``data``: the file's bytes when it is not on disk (an upload in the console); ``path``
    then only gives the suffix and the name in messages."""
    path = Path(path)
    records, _ = _records(path, data)
    problems: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    rows = []
    for record in records:
        at = record["_at"]
        pair = _id(record.get("id"))
        response = _id(record.get("response"))
        if pair is None:
            problems.append(f"{at}, field 'id': is empty")
            continue
        if pair not in aspect_counts:
            problems.append(f"{at}, field 'id': no pair with id {pair!r}")
            continue
        if response not in SIDES:
            problems.append(
                f"{at}, field 'response': must be chosen or rejected (got {response!r})"
            )
            continue
        if (pair, response) in seen:
            problems.append(
                f"{at}: a second {response} row for pair {pair!r} (first at {seen[pair, response]})"
            )
            continue
        seen[pair, response] = at
        try:
            values = _score_list(record.get("scores"), n_aspects=aspect_counts[pair])
        except AspectValueError as exc:
            problems.append(f"{at}, field 'scores': {exc}")
            continue
        rows += [(pair, a, SIDES.index(response), v) for a, v in enumerate(values)]
    for pair, response in list(seen):
        other = SIDES[1 - SIDES.index(response)]
        if (pair, other) not in seen:
            problems.append(
                f"{seen[pair, response]}: pair {pair!r} has a {response} row but no {other} row"
            )
    if problems:
        more = len(problems) - _MAX_PROBLEMS
        shown = problems[:_MAX_PROBLEMS] + ([f"({more} more problems)"] if more > 0 else [])
        raise InputError(str(path), shown)
    if not rows:
        raise InputError(str(path), ["no scores in the file"])
    return pd.DataFrame(rows, columns=["pair_id", "aspect", "side", "score"])


# --- comparing ---------------------------------------------------------------------------------


def auc(
    scores: NDArray[np.float64], positive: NDArray[np.bool_], *, bootstrap: int, seed: int
) -> Section:
    """Area under the ROC curve of ``scores`` for ``positive`` (ties count one half), i.e. the
    Mann-Whitney U over n_positive x n_negative, with a percentile interval resampling pairs."""

    def value(s: NDArray[np.float64], y: NDArray[np.bool_]) -> float:
        pos, neg = s[y], s[~y]
        if not len(pos) or not len(neg):
            return np.nan
        greater = int((pos[:, None] > neg[None, :]).sum())
        ties = int((pos[:, None] == neg[None, :]).sum())
        return (greater + 0.5 * ties) / (len(pos) * len(neg))

    scores, positive = np.asarray(scores, dtype=np.float64), np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    out: Section = {"value": None, "ci95": None, "n_positive": n_pos, "n_negative": n_neg}
    point = value(scores, positive)
    if not np.isfinite(point):
        out["note"] = "undefined: needs pairs of both outcomes"
        return out
    out["value"] = float(point)
    if len(scores) < MIN_INTERVAL_UNITS:
        out["note"] = too_few_for_an_interval(len(scores))
    elif bootstrap > 0:
        rng = np.random.Generator(np.random.PCG64(seed))
        n = len(scores)
        samples = np.empty(bootstrap)
        for b in range(bootstrap):
            idx = rng.integers(0, n, size=n)
            samples[b] = value(scores[idx], positive[idx])
        ci, note = percentile_interval(samples, resamples=bootstrap)
        out["ci95"] = ci
        if note:
            out["note"] = note
    return out


def _two_coder_alpha(
    units: pd.DataFrame, *, n_pairs: int, bootstrap: int, seed: int
) -> EstimateJSON:
    """Ordinal alpha of scorer vs human mean, two coders per (pair, aspect, response) unit on
    the ordered values that occur, resampling pairs (the scorer is one coder: no
    annotator-aware interval)."""
    domain = np.unique(np.concatenate([units["scorer"], units["human"]]))
    n = len(units)
    two = Scores(
        pair=np.tile(units["pair"].to_numpy(), 2),
        aspect=np.tile(units["aspect"].to_numpy(), 2),
        side=np.tile(units["side"].to_numpy(), 2),
        score=np.zeros(2 * n, dtype=np.int64),
        annotator=np.repeat(np.array(["scorer", "humans"], dtype=object), n),
    )
    code = np.searchsorted(domain, np.concatenate([units["scorer"], units["human"]]))
    by_pair, _, _, _, parts = pair_layout(two, n_pairs, n_values=len(domain), code=code)
    return layout_alpha(
        by_pair, parts=parts, domain=[float(v) for v in domain], bootstrap=bootstrap, seed=seed
    ).as_dict()


def compare_with_scorer(
    scorer: pd.DataFrame,
    humans: Scores,
    *,
    pair_ids: pd.Index[str],
    majority: NDArray[np.object_],
    gap_threshold: float,
    bootstrap: int,
    seed: int,
) -> Section:
    """report.json's `aspects.scorer`. ``humans``: the annotators' scores (non-gold pairs);
    ``majority``: each report pair's strict majority label (None without one)."""
    human = unit_means(humans, len(pair_ids)).rename(columns={"mean": "human", "n": "n_humans"})
    machine = scorer.assign(pair=pair_ids.get_indexer(pd.Index(scorer["pair_id"])))
    units = machine.merge(human, on=["pair", "aspect", "side"], how="inner")
    units = units.rename(columns={"score": "scorer"})
    out: Section = {"n": int(units["pair"].nunique()), "n_units": len(units)}
    if units.empty:
        out["agreement"] = {
            "value": None,
            "ci95": None,
            "note": "undefined: no pair of the scorer file has human aspect scores",
        }
        return out
    boot = {"bootstrap": bootstrap, "seed": seed}
    out["agreement"] = _two_coder_alpha(units, n_pairs=len(pair_ids), **boot)
    out["by_aspect"] = [
        {
            # pandas-stubs types a group's key as any scalar; "aspect" holds ints.
            "aspect": int(a) + 1,  # type: ignore[arg-type]
            "n_pairs": int(part["pair"].nunique()),
            "agreement": _two_coder_alpha(part.assign(aspect=0), n_pairs=len(pair_ids), **boot),
        }
        for a, part in units.groupby("aspect", sort=True)
    ]

    units["abs_diff"] = (units["scorer"] - units["human"]).abs()
    signed = np.where(units["side"] == 0, 1.0, -1.0)
    units["scorer_signed"], units["human_signed"] = (
        units["scorer"] * signed,
        units["human"] * signed,
    )
    per_pair = units.groupby("pair").agg(
        mean_abs_diff=("abs_diff", "mean"),
        scorer_gap=("scorer_signed", "sum"),
        human_gap=("human_signed", "sum"),
        n_aspects=("aspect", "nunique"),
    )
    per_pair["scorer_gap"] /= per_pair["n_aspects"]
    per_pair["human_gap"] /= per_pair["n_aspects"]
    worst = per_pair.sort_values(["mean_abs_diff"], ascending=False, kind="stable")
    # pandas-stubs types iterrows' labels as any Hashable; per_pair's are pair positions.
    out["disagreements"] = [
        {
            "pair_id": str(pair_ids[p]),  # type: ignore[call-overload]
            "mean_abs_diff": round(float(row.mean_abs_diff), 4),
            "scorer_gap": round(float(row.scorer_gap), 4),
            "human_gap": round(float(row.human_gap), 4),
        }
        for p, row in worst.head(TOP_DISAGREEMENTS).iterrows()
    ]

    gap = per_pair["scorer_gap"].to_numpy()
    decided = np.isin(majority[per_pair.index], list(SIDES))
    out["predicts_majority"] = auc(
        gap[decided], majority[per_pair.index][decided] == "chosen", **boot
    )
    out["predicts_confirmed"] = auc(gap, per_pair["human_gap"].to_numpy() >= gap_threshold, **boot)
    out["gap_correlation"] = gap_correlation(gap, per_pair["human_gap"].to_numpy(), **boot)
    return out
