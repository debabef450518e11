"""Versions of a pair in the report (docs/reference/file-formats.md and report-keys.md): which answers count, and what
each earlier version of a pair got.

A pair revised after it was labelled (import-pairs --update, a reviewer's revision) has a new
version; the answers given to an earlier version stay with it. The report counts each pair's
latest version only (`latest`, the default): an answer to earlier text says nothing about the
text the benchmark now holds. `all` counts every version together, each annotator once per
pair (their answer to the latest version they saw): the view before versions existed.

Either way `earlier_versions` lists, for each pair, every earlier version with its answers and
the verdict they gave it, by the same rules as the current version's (the caller's table
function), so a builder sees what a revision changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from analysis.frames import Coded, code
from analysis.report.shape import Section

LATEST = "latest"
ALL = "all"
VERSION_CHOICES = (LATEST, ALL)
_SEPARATOR = "\x1f"  # joins a pair id and a version into one unit id (never in an id)


def latest_versions(annotations: pd.DataFrame, pairs: pd.DataFrame | None) -> dict[str, int]:
    """Each pair's latest version: the pairs' own `pair_version` (a study's current version),
    else the highest version its answers name (a table of annotations alone), else 1."""
    latest: dict[str, int] = {}
    if "pair_version" in annotations and len(annotations):
        given = annotations[["pair_id", "pair_version"]].dropna()
        if len(given):
            highest = given.groupby("pair_id", sort=False)["pair_version"].max()
            latest.update({str(k): int(v) for k, v in highest.items()})
    if pairs is not None and "pair_version" in pairs:
        known = pairs[["pair_id", "pair_version"]].dropna()
        latest.update(
            zip(
                known["pair_id"].astype(str),
                known["pair_version"].astype(int).tolist(),
                strict=True,
            )
        )
    return latest


def _versions(
    annotations: pd.DataFrame, latest: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(each row's version, its pair's latest version); a row without one is of the latest."""
    newest = (
        annotations["pair_id"].map(latest).fillna(1).to_numpy(dtype=np.int64)
        if latest
        else np.ones(len(annotations), dtype=np.int64)
    )
    if "pair_version" not in annotations:
        return newest, newest
    given = pd.to_numeric(annotations["pair_version"], errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    version = np.where(np.isnan(given), newest, given).astype(np.int64)
    return version, newest


def select_versions(
    annotations: pd.DataFrame, latest: Mapping[str, int], *, mode: str = LATEST
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the answers the report counts, the answers to earlier versions), each in table order.
    `mode`: LATEST (each pair's latest version only) or ALL (every version; an annotator who
    answered several versions of a pair counts once, with the latest of them)."""
    if mode not in VERSION_CHOICES:
        raise ValueError(f"version must be one of {', '.join(VERSION_CHOICES)}, got {mode!r}")
    version, newest = _versions(annotations, latest)
    older = version < newest
    earlier = annotations[older].reset_index(drop=True)
    if mode == LATEST:
        if not older.any():  # no pair revised: every row counts, no copy
            return annotations.reset_index(drop=True), earlier
        return annotations[~older].reset_index(drop=True), earlier
    order = pd.DataFrame(
        {"pair_id": annotations["pair_id"], "annotator": annotations["annotator"], "v": version}
    )
    keep = ~order.sort_values("v", ascending=False, kind="stable").duplicated(
        ["pair_id", "annotator"]
    )
    counted = keep.reindex(order.index).to_numpy(dtype=bool)
    return annotations[counted].reset_index(drop=True), earlier


def earlier_versions(
    earlier: pd.DataFrame,
    pair_ids: pd.Index,
    latest: Mapping[str, int],
    *,
    table: Callable[[Coded], pd.DataFrame],
) -> list[list[Section]]:
    """For each pair of `pair_ids`, its earlier versions in order: {pair_version,
    n_annotations, verdict, decision} (a version nobody answered included, its verdict None;
    decision None here).
    `table` makes the verdict table of coded answers (the report's rules)."""
    out: list[list[Section]] = [[] for _ in range(len(pair_ids))]
    position = {pair: i for i, pair in enumerate(pair_ids)}
    verdicts: dict[tuple[str, int], tuple[int, str | None]] = {}
    if len(earlier):
        version, _ = _versions(earlier, latest)
        units = earlier["pair_id"].astype(str) + _SEPARATOR + pd.Series(version).astype(str)
        unit_ids = pd.Index(pd.unique(units.to_numpy(dtype=object)))
        rows = table(code(earlier.assign(pair_id=units.to_numpy(dtype=object)), unit_ids))
        for unit, n, verdict in zip(
            rows["pair_id"], rows["n_annotations"], rows["verdict"], strict=True
        ):
            pair, number = str(unit).rsplit(_SEPARATOR, 1)
            verdicts[pair, int(number)] = (int(n), str(verdict))
    for pair, i in position.items():
        for earlier_version in range(1, latest.get(str(pair), 1)):
            n, verdict = verdicts.get((str(pair), earlier_version), (0, None))
            out[i].append(
                {
                    "pair_version": earlier_version,
                    "n_annotations": n,
                    "verdict": verdict,
                    "decision": None,  # a review decision on it (analysis.review.decisions)
                }
            )
    return out


def history_text(versions: list[Section]) -> str:
    """`earlier_versions` in one pairs.csv cell: `v1: preference_flip (3 answers, revise)`,
    versions separated by `; `."""
    parts = []
    for entry in versions or []:
        n = entry.get("n_annotations", 0)
        details = [f"{n} answer" + ("" if n == 1 else "s")]
        if entry.get("decision"):
            details.append(str(entry["decision"]))
        verdict = entry.get("verdict") or "not labelled"
        parts.append(f"v{entry['pair_version']}: {verdict} ({', '.join(details)})")
    return "; ".join(parts)
