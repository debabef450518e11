"""The report's files: report.json, report.html, pairs.csv, annotators.csv and summary.md (and
models.csv, and the valid pairs with --export-valid), written from a report that
analysis.report.build made."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
import pandas as pd

from analysis.errors import UserError
from analysis.files.csv_cells import neutralise_frame
from analysis.report.shape import Report, Section
from analysis.verdicts import versions
from analysis.verdicts.shipping import valid_shipment


def write_report(
    report: Report,
    out_dir: str | Path,
    *,
    pairs: pd.DataFrame | None,
    export_valid: Path | None = None,
    write_pairs: Callable[[list[Section], Path], int] | None = None,
) -> dict[str, Path]:
    """Write report.json, report.html, pairs.csv, annotators.csv, summary.md (and, with
    export_valid, the valid pairs' records written by `write_pairs`, the caller's writer of
    the pairs format, e.g. annotate.studies.pairs_files.write_pairs)."""
    from analysis.judges.render import models_markdown, write_models_csv
    from analysis.population.render import population_markdown
    from analysis.report.html_page import render_html
    from analysis.report.summary import render_summary

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        name: out / name
        for name in ("report.json", "report.html", "pairs.csv", "annotators.csv", "summary.md")
    }
    write_json(report, paths["report.json"])
    write_records_csv(report["pairs"], paths["pairs.csv"], list_columns=("flags",))
    annotators = pd.DataFrame(report["annotators"])
    if "accuracy" in annotators:
        annotators = _accuracy_columns(annotators)
    neutralise_frame(annotators).to_csv(paths["annotators.csv"], index=False)
    paths["summary.md"].write_text(
        render_summary(report) + models_markdown(report) + population_markdown(report),
        encoding="utf-8",
    )
    paths["report.html"].write_text(render_html(report), encoding="utf-8")
    if report.get("models"):
        paths["models.csv"] = out / "models.csv"
        write_models_csv(report, paths["models.csv"])
    if export_valid is not None:
        paths["valid"] = Path(export_valid)
        write_valid_pairs(report, pairs, Path(export_valid), write_pairs=write_pairs)
    return paths


# Records encoded at once by the JSON and CSV writers: a study's per-pair list is never one
# string or one frame.
CHUNK_RECORDS = 20_000


def write_json(report: Report, path: Path) -> None:
    """Compact JSON in UTF-8 by orjson (ten times the standard encoder's speed on a study's
    per-pair list), written piece by piece: the per-pair list of a million-annotation study is
    never held as one string. The report is plain JSON types already (build.json_safe: NaN
    and infinities are None)."""

    def dumps(value: object) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)

    with path.open("wb") as handle:
        handle.write(b"{")
        for i, (key, value) in enumerate(report.items()):
            handle.write((b"," if i else b"") + dumps(key) + b":")
            if isinstance(value, list) and len(value) > CHUNK_RECORDS:
                handle.write(b"[")
                for start in range(0, len(value), CHUNK_RECORDS):
                    chunk = dumps(value[start : start + CHUNK_RECORDS])[1:-1]
                    handle.write((b"," if start else b"") + chunk)
                handle.write(b"]")
            else:
                handle.write(dumps(value))
        handle.write(b"}")


def _flattened(frame: pd.DataFrame, column: str, *, prefix: str, keys: list[str]) -> pd.DataFrame:
    """A column of {key: value} dicts (or None) as one column per key, in its place."""
    values = frame[column].tolist()
    where = list(frame.columns).index(column)
    out = frame.drop(columns=[column])
    for offset, key in enumerate(keys):
        out.insert(where + offset, prefix + key, [v.get(key) if v else None for v in values])
    return out


def _accuracy_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """annotators.csv: the model's ``accuracy: {value, ci95}`` as accuracy, accuracy_ci95_lo/hi."""
    values = frame["accuracy"].tolist()
    where = list(frame.columns).index("accuracy")
    out = frame.drop(columns=["accuracy"])
    out.insert(where, "accuracy", [v.get("value") if v else None for v in values])
    for offset, side in enumerate(("lo", "hi"), start=1):
        out.insert(
            where + offset,
            f"accuracy_ci95_{side}",
            [v["ci95"][offset - 1] if v and v.get("ci95") else None for v in values],
        )
    return out


def write_records_csv(
    records: list[Section], path: Path, *, list_columns: Sequence[str] = ()
) -> None:
    """One CSV from many records, a chunk at a time; list cells are joined with ';'."""
    if not records:
        path.write_text("", encoding="utf-8")
        return
    columns = list(records[0])
    # the p_<verdict> columns named from the whole list: a chunk may hold no pair the model
    # gave probabilities, and still writes the header's columns
    keys = next((list(r["probabilities"]) for r in records if r.get("probabilities")), [])
    for start in range(0, len(records), CHUNK_RECORDS):
        chunk = pd.DataFrame.from_records(records[start : start + CHUNK_RECORDS], columns=columns)
        for column in list_columns:
            chunk[column] = chunk[column].map(";".join)
        for column in chunk.columns[chunk.columns.str.endswith("_means")]:
            chunk[column] = chunk[column].map(lambda v: ";".join(f"{x:g}" for x in v))
        if "probabilities" in chunk:  # report.json's {verdict: p}: one p_<verdict> column each
            chunk = _flattened(chunk, "probabilities", prefix="p_", keys=keys)
        if "earlier_versions" in chunk:  # a list of versions: one readable cell
            chunk["earlier_versions"] = chunk["earlier_versions"].map(versions.history_text)
        # pair ids and annotator names come from imported files: no cell may be a formula
        chunk = neutralise_frame(chunk)
        append_csv(chunk, path, header=not start)


def append_csv(frame: pd.DataFrame, path: Path, *, header: bool) -> None:
    """``frame.to_csv(path, index=False, mode="a", header=header)``, byte for byte, by the
    csv module on Python values: pandas' own writer formats each float cell through numpy and
    took twice as long on a study's pairs (tests/test_report.py checks the two agree)."""
    cells = [
        frame[name].astype(object).where(frame[name].notna(), None).tolist()
        for name in frame.columns
    ]
    with path.open("a" if not header else "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        if header:
            writer.writerow([str(name) for name in frame.columns])
        writer.writerows(zip(*cells, strict=True))


def valid_pair_ids(report: Report) -> set[str]:
    """The pairs `--export-valid` writes (analysis.verdicts.shipping: the non-gold pairs whose
    verdict is ``valid``, a reviewer's keep or drop overriding it)."""
    return set(valid_shipment(report).written)


def write_valid_pairs(
    report: Report,
    pairs: pd.DataFrame | None,
    path: Path,
    *,
    write_pairs: Callable[[list[Section], Path], int] | None,
) -> int:
    """The pairs `valid_pair_ids` names, every original field kept."""
    if pairs is None or "record" not in pairs or write_pairs is None:
        raise UserError("--export-valid needs the pairs (their original records)")
    keep = pairs["pair_id"].astype(str).isin(valid_pair_ids(report)).to_numpy()
    return write_pairs(pairs.loc[keep, "record"].tolist(), path)
