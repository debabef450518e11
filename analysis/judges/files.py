"""Model and judge outputs (docs/reference/file-formats.md, model files): reading and validating them.

Three layouts, recognised by their columns (JSON Lines, CSV or Parquet, by suffix):

- pairwise judgements, the benchmark's evaluation output: ``id``, ``prediction`` (A/B) and
  ``pos_in_a`` (true when ``chosen`` was shown as A) or ``correct_answer`` (A/B); optional
  ``parse_failed``;
- pointwise scores: ``id``, ``label`` (chosen/rejected), ``score``; two rows a pair;
- a plain table: ``pair_id`` with ``score_chosen`` and ``score_rejected``, or with
  ``preference`` (chosen/rejected/tie).

Every file becomes one ``ModelJudgements``: per pair, what the model picked. Every problem is
listed with its line (JSON Lines, blank lines counted) or row (CSV and Parquet, from 1, the
CSV header not counted); a file with any problem is refused whole (``ModelFileError``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analysis.errors import InputError, quoted
from analysis.files import strict_input
from analysis.vocabulary import PREFERENCES, SIDES, SLOTS

# What a model picked for a pair. A parse failure picked nothing (scored as wrong).
PICKS = (*PREFERENCES, "failed")
CHOSEN, REJECTED, TIE, FAILED = range(4)
LAYOUTS = ("pairwise", "pointwise", "scores", "preference")
SUFFIXES = (".jsonl", ".csv", ".parquet")
MAX_FILE_BYTES = 512 * 1024**2
MAX_LINE_BYTES = 8 * 1024**2  # a judge's output may quote a whole response, as long as a pair's
_MAX_PROBLEMS = 200
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


class ModelFileError(InputError):
    """A model file that cannot be used: every problem, each naming its line or row."""


@dataclass(frozen=True)
class ModelJudgements:
    """One model's judgement of each pair, in file order (one entry per pair)."""

    name: str
    layout: str  # one of LAYOUTS
    pair_id: NDArray[np.object_]  # pair ids
    pick: NDArray[np.int64]  # codes into PICKS
    chosen_first: NDArray[np.bool_] | None  # pairwise judges: True when chosen was shown in slot A
    parse_failed_given: bool  # the file has a parse_failed column

    @property
    def n(self) -> int:
        return len(self.pair_id)


def layout_of(columns: Collection[str]) -> str:
    """The layout these columns are in, or a ValueError sentence naming what is accepted."""
    names = set(columns)
    if "prediction" in names:
        missing = [c for c in ("id",) if c not in names]
        if "pos_in_a" not in names and "correct_answer" not in names:
            missing.append("pos_in_a or correct_answer")
        if missing:
            raise ValueError(
                "looks like pairwise judgements (it has 'prediction') but lacks "
                + " and ".join(f"'{m}'" if " " not in m else m for m in missing)
            )
        return "pairwise"
    if "label" in names or "score" in names:
        missing = [c for c in ("id", "label", "score") if c not in names]
        if missing:
            raise ValueError(
                "looks like pointwise scores but lacks " + ", ".join(f"'{m}'" for m in missing)
            )
        return "pointwise"
    if "score_chosen" in names or "score_rejected" in names:
        missing = [c for c in ("pair_id", "score_chosen", "score_rejected") if c not in names]
        if missing:
            raise ValueError(
                "looks like a table of scores but lacks " + ", ".join(f"'{m}'" for m in missing)
            )
        return "scores"
    if "preference" in names and "pair_id" in names:
        return "preference"
    shown = ", ".join(sorted(names)[:12]) or "none"
    raise ValueError(
        f"its columns ({shown}) match no model layout: expected id, prediction and pos_in_a "
        "or correct_answer (pairwise judgements); id, label and score (pointwise scores); or "
        "pair_id with score_chosen and score_rejected, or with preference"
    )


# --- reading -------------------------------------------------------------------------------


def _records(data: bytes, suffix: str, source: str) -> tuple[pd.DataFrame, str]:
    """(raw frame with text or native values, the word for a position: line or row)."""
    if suffix == ".jsonl":
        return _json_lines(data, source), "line"
    try:
        if suffix == ".csv":
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise ModelFileError(
                    source, [f"not valid UTF-8 text (byte {exc.start + 1})"]
                ) from None
            if not text.strip():
                return pd.DataFrame(), "row"
            frame = pd.read_csv(
                io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True
            )
        else:
            frame = pd.read_parquet(io.BytesIO(data))
    except ModelFileError:
        raise
    except (ValueError, pd.errors.ParserError, OSError) as exc:
        kind = {".csv": "CSV", ".parquet": "Parquet"}[suffix]
        raise ModelFileError(source, [f"not a readable {kind} file ({exc})"]) from None
    frame.index = np.arange(1, len(frame) + 1)
    return frame, "row"


def _json_lines(data: bytes, source: str) -> pd.DataFrame:
    numbered, problems = strict_input.json_object_lines(io.BytesIO(data), limit=MAX_LINE_BYTES)
    if problems:
        raise ModelFileError(source, problems)
    records = [record for _, record in numbered]
    frame = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    frame.index = [number for number, _ in numbered]
    return frame


# --- values --------------------------------------------------------------------------------


def _blank(value: object) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _text(value: object) -> str | None:
    """Ids and labels as text: ints (and integral floats) are kept as their digits."""
    if _blank(value):
        return None
    if isinstance(value, bool | np.bool_):
        return str(value)
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def _boolean(value: object) -> bool | None:
    """True/false from JSON booleans, CSV text (true/false/1/0/yes/no) or 0/1; None if not."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def _number(value: object) -> float | None:
    """A finite number from JSON numbers or CSV text; None if it is not one (booleans neither)."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | float | np.integer | np.floating):
        try:
            number = float(value)
        except OverflowError:  # a JSON integer beyond any float
            return None
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _shown(value: object) -> str:
    return quoted(value.item() if isinstance(value, np.generic) else value)


# --- validation ----------------------------------------------------------------------------

Columns = dict[str, list[object]]  # a file's columns, one value a row
Outcome = tuple[int, bool | None] | None  # a row's pick and chosen-first, None if it is refused
# ids, picks, chosen-first (pairwise layout)
Judged = tuple[list[str], list[int], list[bool | None] | None]


class _Checker:
    def __init__(self, where: str):
        self.where = where
        self.problems: list[tuple[float, str]] = []

    def add(self, position: int, column: str | None, message: str) -> None:
        place = f"{self.where} {position}" + (f", column '{column}'" if column else "")
        self.problems.append((position, f"{place}: {message}"))

    def label(
        self,
        position: int,
        column: str,
        value: object,
        allowed: Sequence[str],
        *,
        required: bool = True,
    ) -> str | None:
        text = _text(value)
        if text is None:
            if required:
                self.add(position, column, "is empty")
            return None
        if text not in allowed:
            self.add(position, column, f"must be one of {', '.join(allowed)} (got {_shown(value)})")
            return None
        return text

    def flag(
        self, position: int, column: str, value: object, *, required: bool = True
    ) -> bool | None:
        if _blank(value):
            if required:
                self.add(position, column, "is empty")
            return None
        flag = _boolean(value)
        if flag is None:
            self.add(position, column, f"must be true or false (got {_shown(value)})")
        return flag

    def score(self, position: int, column: str, value: object) -> float | None:
        if _blank(value):
            self.add(position, column, "is empty")
            return None
        number = _number(value)
        if number is None:
            self.add(position, column, f"must be a finite number (got {_shown(value)})")
        return number


def read_model_file(
    path: str | Path,
    *,
    name: str,
    known_ids: Collection[str],
    required_ids: Collection[str] | None = None,
    data: bytes | None = None,
) -> ModelJudgements:
    """Read and validate one model file against the report's pairs.

    ``known_ids``: pair ids a row may name (others are refused). ``required_ids``: pairs that
    must have a judgement (default: all known ids). ``data``: the file's bytes when it is not on
    disk (an upload); ``path`` then only gives the suffix and the name in messages.
    """
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ModelFileError(
            source, [f"unsupported file type {suffix!r}; use one of {', '.join(SUFFIXES)}"]
        )
    if data is None:
        if not path.is_file():
            raise ModelFileError(source, ["no such file"])
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ModelFileError(
                source, [f"the file is {size:,} bytes, over the limit of {MAX_FILE_BYTES:,}"]
            )
        data = path.read_bytes()
    frame, where = _records(data, suffix, source)
    if frame.empty:
        raise ModelFileError(source, ["the file has no rows"])
    try:
        layout = layout_of(frame.columns)
    except ValueError as exc:
        raise ModelFileError(source, [str(exc)]) from None
    known = set(known_ids)
    required = known if required_ids is None else set(required_ids)
    check = _Checker(where)
    named: set[str] = set()  # known ids with a row, valid or not: not reported as missing too
    if layout == "pointwise":
        ids, picks, first = _pointwise(frame, check, known, named)
    else:
        ids, picks, first = _one_row_a_pair(frame, layout, check, known, named)
    missing = sorted(required - named)
    for pair in missing[:_MAX_PROBLEMS]:
        check.problems.append((math.inf, f"pair {quoted(pair)} has no row"))
    if len(missing) > _MAX_PROBLEMS:
        check.problems.append((math.inf, f"... and {len(missing) - _MAX_PROBLEMS:,} more pairs"))
    if check.problems:
        check.problems.sort(key=lambda p: p[0])
        raise ModelFileError(source, [message for _, message in check.problems])
    return ModelJudgements(
        name=name,
        layout=layout,
        pair_id=np.array(ids, dtype=object),
        pick=np.array(picks, dtype=np.int64),
        chosen_first=None if first is None else np.array(first, dtype=bool),
        parse_failed_given=layout == "pairwise" and "parse_failed" in frame.columns,
    )


def _pair_id(
    check: _Checker, position: int, column: str, value: object, known: set[str]
) -> str | None:
    pair = _text(value)
    if pair is None:
        check.add(position, column, "is empty")
        return None
    if pair not in known:
        check.add(position, column, f"no pair with this id in the report (got {quoted(pair)})")
        return None
    return pair


def _one_row_a_pair(
    frame: pd.DataFrame, layout: str, check: _Checker, known: set[str], named: set[str]
) -> Judged:
    """Pairwise judgements and plain tables: exactly one row per pair."""
    key = "id" if layout == "pairwise" else "pair_id"
    ids: list[str] = []
    picks: list[int] = []
    first: list[bool | None] = []  # None outside the pairwise layout
    seen: dict[str, int] = {}
    column: Columns = {str(c): frame[c].tolist() for c in frame.columns}
    empty: list[object] = [None] * len(frame)
    for i, position in enumerate(frame.index.tolist()):
        pair = _pair_id(check, position, key, column[key][i], known)
        if pair is not None:
            named.add(pair)
        outcome: Outcome
        if layout == "pairwise":
            outcome = _pairwise_row(check, position, column, empty, i)
        elif layout == "scores":
            outcome = _scores_row(check, position, column, i)
        else:
            label = check.label(position, "preference", column["preference"][i], PREFERENCES)
            outcome = None if label is None else (PICKS.index(label), None)
        if pair is None or outcome is None:
            continue
        if pair in seen:
            check.add(
                position,
                None,
                f"a second row for pair {quoted(pair)} (first at {check.where} {seen[pair]})",
            )
            continue
        seen[pair] = position
        ids.append(pair)
        picks.append(outcome[0])
        first.append(outcome[1])
    return ids, picks, (first if layout == "pairwise" else None)


def _pairwise_row(
    check: _Checker, position: int, column: Columns, empty: list[object], i: int
) -> Outcome:
    failed = check.flag(
        position, "parse_failed", (column.get("parse_failed") or empty)[i], required=False
    )
    # Chosen's slot: pos_in_a or correct_answer; with both columns, one value per row is enough.
    both = column.get("pos_in_a") is not None and column.get("correct_answer") is not None
    by_pos = by_answer = None
    if column.get("pos_in_a") is not None:
        by_pos = check.flag(position, "pos_in_a", column["pos_in_a"][i], required=not both)
    if column.get("correct_answer") is not None:
        answer = check.label(
            position, "correct_answer", column["correct_answer"][i], SLOTS, required=not both
        )
        by_answer = None if answer is None else answer == SLOTS[0]
    if both and _blank(column["pos_in_a"][i]) and _blank(column["correct_answer"][i]):
        check.add(position, None, "pos_in_a and correct_answer are both empty")
        return None
    if by_pos is not None and by_answer is not None and by_pos != by_answer:
        check.add(position, None, "pos_in_a and correct_answer name different slots for chosen")
        return None
    chosen_first = by_pos if by_pos is not None else by_answer
    if failed:
        # The judge's answer could not be parsed: whatever stands in prediction is not its pick.
        return None if chosen_first is None else (FAILED, chosen_first)
    prediction = check.label(position, "prediction", column["prediction"][i], SLOTS)
    if prediction is None or chosen_first is None:
        return None
    picked_chosen = (prediction == SLOTS[0]) == chosen_first
    return (CHOSEN if picked_chosen else REJECTED), chosen_first


def _scores_row(check: _Checker, position: int, column: Columns, i: int) -> Outcome:
    chosen = check.score(position, "score_chosen", column["score_chosen"][i])
    rejected = check.score(position, "score_rejected", column["score_rejected"][i])
    if chosen is None or rejected is None:
        return None
    return _compare(chosen, rejected), None


def _compare(chosen: float, rejected: float) -> int:
    if chosen > rejected:
        return CHOSEN
    return REJECTED if rejected > chosen else TIE


def _pointwise(frame: pd.DataFrame, check: _Checker, known: set[str], named: set[str]) -> Judged:
    """Two rows a pair, one per response: the higher score is the model's pick."""
    scores: dict[str, dict[str, tuple[float | None, int]]] = {}
    order: list[str] = []
    ids, labels, values = frame["id"].tolist(), frame["label"].tolist(), frame["score"].tolist()
    for i, position in enumerate(frame.index.tolist()):
        pair = _pair_id(check, position, "id", ids[i], known)
        if pair is not None:
            named.add(pair)
        label = check.label(position, "label", labels[i], SIDES)
        score = check.score(position, "score", values[i])
        if pair is None or label is None:
            continue
        sides = scores.setdefault(pair, {})
        if not sides:
            order.append(pair)
        if label in sides:
            first = sides[label][1]
            check.add(
                position, None,
                f"a second {label} score for pair {quoted(pair)} (first at {check.where} {first})",
            )  # fmt: skip
            continue
        sides[label] = (score, position)  # a bad score is reported already
    out_ids: list[str] = []
    picks: list[int] = []
    for pair in order:
        sides = scores[pair]
        if len(sides) == 1:
            ((label, (_, position)),) = sides.items()
            other = "rejected" if label == "chosen" else "chosen"
            check.add(
                position, None, f"pair {quoted(pair)} has a {label} score but no {other} score"
            )
            continue
        chosen, rejected = sides["chosen"][0], sides["rejected"][0]  # one of each: SIDES
        if chosen is not None and rejected is not None:
            out_ids.append(pair)
            picks.append(_compare(chosen, rejected))
    return out_ids, picks, None
