"""Reading, validating and writing pairs files (JSON Lines, JSON array, Parquet).

Records stream one at a time: a real Personalized RewardBench record carries a profile of
hundreds of past posts (about 100 KB), so a file is never loaded whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from analysis.files import strict_input
from annotate.errors import InputError, UserError

SUFFIXES = (".jsonl", ".json", ".parquet")
MAX_RECORD_BYTES = 8 * 1024 * 1024
# What one import may decode from a Parquet file: its records are checked one by one, but a
# 5 KB file whose rows all name one long dictionary text decoded to 604 MB of valid records
# (#21 N12). At most MAX_EXPANSION times the file's size, and never less than
# MIN_DECODED_LIMIT (a pairs file of 1,000 records of 250 KB fits).
MIN_DECODED_LIMIT = 256 * 1024 * 1024
MAX_EXPANSION = 100
MAX_TEXT_CHARS = 200_000
MAX_PROBLEMS = 1000
CORE_FIELDS = (
    "id",
    "question",
    "profile",
    "rubric_aspects",
    "narrative",
    "category",
    "chosen",
    "rejected",
)

Text = Annotated[StrictStr, Field(max_length=MAX_TEXT_CHARS)]
RequiredText = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT_CHARS)]


class ProfilePost(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: StrictStr | StrictInt | None = None
    category: Text | None = None
    text: Text


class RubricAspect(BaseModel):
    model_config = ConfigDict(extra="allow")
    aspect: RequiredText
    evidence: Text | None = None
    reason: Text | None = None


MAX_ID_LENGTH = 200  # characters of a pair id


class PairRecord(BaseModel):
    """One pair in the Personalized RewardBench layout; unknown fields are kept."""

    model_config = ConfigDict(extra="allow")
    id: StrictStr | StrictInt
    question: RequiredText
    profile: list[ProfilePost] | None = None
    rubric_aspects: list[RubricAspect] | None = None
    narrative: Text | None = None
    category: Text | None = None
    chosen: RequiredText
    rejected: RequiredText

    @field_validator("id")
    @classmethod
    def _id_as_text(cls, value: str | int) -> str:
        text = str(value).strip()
        if not text:
            raise ValueError("must not be empty")
        if len(text) > MAX_ID_LENGTH:
            # PostgreSQL's unique index refuses keys of more than about 2,700 bytes, with SQL
            raise ValueError(f"must be at most {MAX_ID_LENGTH:,} characters (it has {len(text):,})")
        return text

    @field_validator("question", "chosen", "rejected")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _responses_differ(self) -> PairRecord:
        if self.chosen.strip() == self.rejected.strip():
            raise ValueError("fields 'chosen' and 'rejected' are the same text")
        return self


@dataclass(frozen=True)
class EncodedJSON:
    """JSON text of a record's JSON columns, to store as it is: the profile and rubric as
    written in the file when the record came from JSON text (they read back as the same
    values), else canonical text (sorted keys, not ASCII-escaped); the extra fields always
    canonical."""

    profile: str
    rubric_aspects: str
    extra: str


@dataclass(frozen=True)
class ValidPair:
    """A validated record: the fields the app needs, plus the original for writing back."""

    key: str
    question: str
    profile: list[dict[str, Any]]
    rubric_aspects: list[dict[str, Any]]
    narrative: str
    category: str
    chosen: str
    rejected: str
    extra: dict[str, Any]
    # `record_hash` when computed during validation (a record without JSON text: Parquet)
    digest: str | None = None
    # the JSON-typed fields as text, to store without encoding them (again)
    encoded: EncodedJSON | None = None
    # the record's bytes in the file, when it came from JSON text: its hash is theirs
    source_data: bytes | None = field(default=None, repr=False)

    @property
    def record_hash(self) -> str:
        """The hash stored with the pair: `source_hash` of the record's bytes in the file
        (hashed when asked for: reading a file for a report needs no hash), else the
        canonical `record_hash`."""
        if self.digest is not None:
            return self.digest
        if self.source_data is not None:
            return source_hash(self.source_data)
        return self.canonical_hash()  # read without storing in mind

    def canonical_hash(self) -> str:
        """`record_hash` of the record: the same for the same content in any file format or
        layout. `record_hash` above is that too, unless the record came from JSON text: then
        it is the hash of that text (`source_hash`), much cheaper and just as stable for an
        identical file, so compare this one before calling a record changed."""
        return record_hash(self.as_record())

    def as_record(self) -> dict[str, Any]:
        return {
            "id": self.key,
            "question": self.question,
            "profile": self.profile,
            "rubric_aspects": self.rubric_aspects,
            "narrative": self.narrative,
            "category": self.category,
            "chosen": self.chosen,
            "rejected": self.rejected,
            **self.extra,
        }


def record_hash(record: dict[str, Any]) -> str:
    """SHA-256 of the record's canonical JSON: what databases made before source hashes hold,
    and what records without JSON text (Parquet) are still stored with."""
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


_SOURCE_TAG = b"annotate-pair-source-v1\n"


def source_hash(data: bytes) -> str:
    """SHA-256 of a record's own bytes in the file (tagged, so it can never equal the hash of
    a canonical text). The same bytes always parse to the same record, so an identical
    re-import finds the same hash without encoding anything; different bytes may still be the
    same record (another layout, key order, a .json file), which `canonical_hash` settles."""
    digest = hashlib.sha256(_SOURCE_TAG)
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class Source:
    """Where a record parsed from JSON text came from: the text, the span of each top-level
    value in it, and the bytes its hash covers."""

    text: str
    spans: dict[str, tuple[int, int]]
    data: bytes


# The C scanner json.loads itself uses, and its string scanner (strict, as in json.loads):
# CPython's own, which typeshed does not declare (pyproject.toml's [tool.mypy] lists the ignores).
_scan_value: Callable[[str, int], tuple[Any, int]] = strict_input.DECODER.scan_once  # type: ignore[attr-defined]
_scan_string: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_SPACE = re.compile(r"[ \t\n\r]*")  # JSON whitespace, as json.decoder skips it


def _skip_space(text: str, index: int) -> int:
    """Where the JSON whitespace at text[index:] ends."""
    match = _SPACE.match(text, index)
    assert match is not None  # the pattern matches the empty string anywhere
    return match.end()


_surrogate_escape = re.compile(r"\\u[dD][89a-fA-F]").search


def _sourced(text: str, spans: dict[str, tuple[int, int]], data: bytes, end: int) -> Source | None:
    """The source of the record in text[:end], or None when it escapes a UTF-16 surrogate
    (\\udXXX): a lone one cannot be stored as UTF-8, and the canonical path refuses it as
    before (a pair, such as an ASCII-escaped emoji, just takes that slower path). A raw
    surrogate cannot occur: the text was decoded as strict UTF-8."""
    if text.find("\\", 0, end) >= 0 and _surrogate_escape(text, 0, end):  # find: a memchr
        return None
    return Source(text, spans, data)


def _loads_object(
    text: str, start: int = 0
) -> tuple[dict[str, Any], dict[str, tuple[int, int]], int] | None:
    """`json.loads` of the JSON object at text[start:] (returns the object and where it ends),
    with the span of each top-level value: the same C scanner parses every value, only the
    object's few keys are walked here. None for anything else (not an object, broken JSON):
    the caller falls back to `json`, which gives its usual result or message."""
    index = _skip_space(text, start)
    if text[index : index + 1] != "{":
        return None
    index = _skip_space(text, index + 1)
    values: dict[str, Any] = {}
    spans: dict[str, tuple[int, int]] = {}
    if text[index : index + 1] == "}":
        return values, spans, index + 1
    try:
        while True:
            if text[index : index + 1] != '"':
                return None
            key, index = _scan_string(text, index + 1)
            index = _skip_space(text, index)
            if text[index : index + 1] != ":":
                return None
            index = _skip_space(text, index + 1)
            if key in values:
                return None  # a repeated key: the strict decoder says so, with the key
            value, end = _scan_value(text, index)
            values[key] = value
            spans[key] = (index, end)
            index = _skip_space(text, end)
            after = text[index : index + 1]
            if after == "}":
                return values, spans, index + 1
            if after != ",":
                return None
            index = _skip_space(text, index + 1)
    except (ValueError, StopIteration):  # JSONDecodeError is a ValueError
        return None  # the caller parses again with the strict decoder, for its message


# allow_nan=False: a NaN (from a Parquet float) is no JSON value; PostgreSQL's json refused it
_encode_ascii = json.JSONEncoder(sort_keys=True, default=str, allow_nan=False).encode
_encode_text = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, default=str, allow_nan=False
).encode


_ascii_first = True  # the last value encoded needed no \\u escape: try the fast encoder first


def _canonical(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)`, about twice as fast
    for ASCII text: the ASCII-escaping encoder is faster, and its output is the same text
    whenever it wrote no \\u escape (no character outside printable ASCII, no control
    character; a literal backslash before a "u" only sends us to the slow path). Files are
    mostly all ASCII or not: after a value with non-ASCII text the plain encoder goes first,
    so such files don't pay for two encodings of every record."""
    global _ascii_first
    if _ascii_first:
        text = _encode_ascii(value)
        if "\\" not in text or "\\u" not in text:  # the first test is much faster
            return text
        _ascii_first = False
        return _encode_text(value)
    text = _encode_text(value)
    _ascii_first = text.isascii()  # constant time: CPython keeps a flag
    return text


def _canonical_short(value: Any) -> str:
    """`_canonical` for a short value (a text field, a key): the same test, no guessing."""
    text = _encode_ascii(value)
    if "\\" in text and "\\u" in text:
        return _encode_text(value)
    return text


def _hash_and_encode(
    normal: dict[str, Any], profile: str, rubric: str, extra: dict[str, Any]
) -> tuple[str, EncodedJSON]:
    """`record_hash(normal)`, computed from the same encoded texts that get stored.

    `json.dumps(d, sort_keys=True)` of a dict is "{" + ", ".join('"key": value') + "}" over the
    sorted keys, each value encoded with the same settings, so the canonical text is assembled
    from the column texts and the hash stays byte-for-byte that of `record_hash`: hashes in
    existing databases stay valid and an identical re-import is still a no-op.
    """
    parts = {}
    for key, value in normal.items():
        if key == "profile":
            parts[key] = profile
        elif key == "rubric_aspects":
            parts[key] = rubric
        else:
            parts[key] = _canonical_short(value)
    keys = {key: _canonical_short(key) for key in parts}
    canonical = "{" + ", ".join(f"{keys[k]}: {parts[k]}" for k in sorted(parts)) + "}"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    extra_text = "{" + ", ".join(f"{keys[k]}: {parts[k]}" for k in sorted(extra)) + "}"
    return digest, EncodedJSON(profile=profile, rubric_aspects=rubric, extra=extra_text)


def _describe(error: ErrorDetails) -> str:
    field = ".".join(str(p) for p in error["loc"])
    message = error["msg"]
    if not field:
        return message.removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"field '{field}' is missing"
    if error["type"] == "string_too_short":
        return f"field '{field}' must not be empty"
    if error["type"].startswith("string_too_long"):
        limit = error.get("ctx", {}).get("max_length", MAX_TEXT_CHARS)
        return f"field '{field}' is longer than the limit of {limit:,} characters"
    if error["type"] in {"string_type", "int_type", "list_type", "model_type", "dict_type"}:
        got = type(error.get("input")).__name__
        return f"field '{field}': {message.lower()} (got {got})"
    return f"field '{field}': {message.removeprefix('Value error, ')}"


_NoneType = type(None)
_POST_ID_TYPES = {str, int, _NoneType}
_CATEGORY_TYPES = {str, _NoneType}


def _profile_is_valid(profile: Any) -> bool:
    """True when `ProfilePost` would accept every post: the same checks in plain Python, each
    one a loop in C over all posts (`map`), many times cheaper than building hundreds of
    models per record. False sends the record through pydantic, which reports the problems
    (or accepts what this check is too strict for, such as a str subclass)."""
    if profile is None:
        return True
    if type(profile) is not list:
        return False
    if not profile:
        return True
    if set(map(type, profile)) != {dict}:
        return False
    texts: list[Any] = list(map(dict.get, profile, repeat("text")))
    if set(map(type, texts)) != {str} or max(map(len, texts)) > MAX_TEXT_CHARS:
        return False
    if not set(map(type, map(dict.get, profile, repeat("id")))) <= _POST_ID_TYPES:
        return False  # (bool is not int here: pydantic's strict int refuses it too)
    categories = list(map(dict.get, profile, repeat("category")))
    if not set(map(type, categories)) <= _CATEGORY_TYPES:
        return False
    return max(map(len, filter(None, categories)), default=0) <= MAX_TEXT_CHARS


def _source_text(source: Source, key: str, value: Any) -> str:
    """The file's own text of a top-level value (it parses to `value`); canonical text for an
    absent, null or empty one (stored as [])."""
    if value and key in source.spans:
        start, end = source.spans[key]
        return source.text[start:end]
    return _canonical_short(value)


def _check_json_values(record: dict[str, Any]) -> None:
    """Refuse, naming the field, a value JSON cannot hold (NaN or infinity from a Parquet
    float): it would be stored as text no JSON reader accepts."""
    for key, value in record.items():
        try:
            _canonical_short(value)
        except ValueError:
            raise ValueError(
                f"field '{key}' holds NaN or infinity, which is not a JSON value"
            ) from None


def validate_record(raw: Any, source: Source | None = None, *, to_store: bool = True) -> ValidPair:
    """Validate one raw record; raises ValueError with every problem of the record, joined.

    With its `source` (the JSON text it was parsed from) the profile and rubric are stored as
    written there, not encoded again, and the hash is `source_hash` of its bytes. Without
    `to_store` (a pairs file read for a report) nothing is encoded or hashed at all."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    try:
        if _profile_is_valid(raw.get("profile")):
            # the profile is checked: pydantic needs to see only the rest (much faster)
            model = PairRecord.model_validate({k: v for k, v in raw.items() if k != "profile"})
        else:
            model = PairRecord.model_validate(raw)  # for the messages, with field paths
    except ValidationError as exc:
        messages: list[str] = []
        for error in exc.errors():
            if error["loc"][:1] == ("id",) and error["type"] in {"string_type", "int_type"}:
                got = type(error.get("input")).__name__
                message = f"field 'id' must be a string or an integer (got {got})"
            else:
                message = _describe(error)
            if message not in messages:
                messages.append(message)
        raise ValueError("; ".join(messages)) from None
    extra = {k: v for k, v in raw.items() if k not in CORE_FIELDS}
    profile = raw.get("profile") or []
    rubric = raw.get("rubric_aspects") or []
    normal = {
        "id": model.id,
        "question": model.question,
        "profile": profile,
        "rubric_aspects": rubric,
        "narrative": model.narrative or "",
        "category": model.category or "",
        "chosen": model.chosen,
        "rejected": model.rejected,
        **extra,
    }
    if not to_store:
        digest, encoded, source = None, None, None
    elif source is None:
        _check_json_values(normal)
        digest, encoded = _hash_and_encode(normal, _canonical(profile), _canonical(rubric), extra)
    else:
        digest = None  # source_hash(source.data), when asked for
        encoded = EncodedJSON(
            profile=_source_text(source, "profile", profile),
            rubric_aspects=_source_text(source, "rubric_aspects", rubric),
            extra=_canonical_short(extra),
        )
    return ValidPair(
        key=str(model.id),  # text already (PairRecord's validator)
        question=model.question,
        profile=profile,
        rubric_aspects=rubric,
        narrative=model.narrative or "",
        category=model.category or "",
        chosen=model.chosen,
        rejected=model.rejected,
        extra=extra,
        digest=digest,
        encoded=encoded,
        source_data=None if source is None else source.data,
    )


# --- reading raw records -------------------------------------------------------------------


def _iter_jsonl(path: Path, *, sources: bool = True) -> Iterator[tuple[str, Any, Source | None]]:
    with path.open("rb") as handle:
        for number, line, size in strict_input.bounded_lines(handle, MAX_RECORD_BYTES):
            where = f"line {number}"
            if line is None or size > MAX_RECORD_BYTES:
                yield (
                    where,
                    ValueError(
                        f"record is {size:,} bytes, over the limit of {MAX_RECORD_BYTES:,} bytes"
                    ),
                    None,
                )
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield where, ValueError(f"not valid UTF-8 text (byte {exc.start + 1})"), None
                continue
            if not text or text.isspace():  # not strip(): it would copy a 100 KB line
                continue
            # the text of each value (for storing it as written) costs a walk in Python
            try:
                parsed = _loads_object(text) if sources else None
                if parsed is not None and _skip_space(text, parsed[2]) == len(text):
                    yield where, parsed[0], _sourced(text, parsed[1], line, len(text))
                    continue
                # not a JSON object, or broken: the strict decoder says what is wrong
                yield where, strict_input.loads(text), None
            except strict_input.FAILURES as exc:
                yield where, ValueError(strict_input.describe_line(exc)), None


def _iter_json_array(
    path: Path, chunk_size: int = 1 << 20
) -> Iterator[tuple[str, Any, Source | None]]:
    """Stream the elements of a top-level JSON array without loading the file whole."""
    decoder = strict_input.DECODER
    with path.open("rb") as handle:
        raw = b""
        buffer = ""
        line = 1  # line number at buffer[0]
        started = finished = eof = expect_separator = False
        index = 0

        def refill() -> bool:
            nonlocal raw, buffer, eof
            chunk = handle.read(chunk_size)
            if not chunk:
                eof = True
                if raw:
                    raise ValueError("file ends in the middle of a UTF-8 character")
                return False
            raw += chunk
            try:
                text = raw.decode("utf-8")
                raw = b""
            except UnicodeDecodeError as exc:
                if exc.end < len(raw) or exc.reason != "unexpected end of data":
                    raise ValueError(
                        f"not valid UTF-8 text near line {line + buffer.count(chr(10))}"
                    ) from None
                text = raw[: exc.start].decode("utf-8")
                raw = raw[exc.start :]
            buffer += text
            # The buffer holds at most one unfinished record and one chunk: beyond that a
            # single record is over the limit, and reading on would hold it all in memory.
            if len(buffer) > MAX_RECORD_BYTES + chunk_size:
                raise ValueError(
                    f"record {index + 1} (line {line}) is over the limit of "
                    f"{MAX_RECORD_BYTES:,} bytes"
                )
            return True

        def skip_space() -> None:
            nonlocal buffer, line
            stripped = buffer.lstrip()
            line += buffer[: len(buffer) - len(stripped)].count("\n")
            buffer = stripped

        while True:
            skip_space()
            while not buffer and not eof:
                refill()
                skip_space()
            if not buffer:
                break
            if not started:
                if buffer[0] != "[":
                    raise ValueError("a .json pairs file must hold one JSON array of records")
                started = True
                buffer = buffer[1:]
                continue
            if finished:
                raise ValueError(f"unexpected text after the array at line {line}")
            if buffer[0] == "]":
                finished = True
                buffer = buffer[1:]
                continue
            if expect_separator and buffer[0] != ",":
                raise ValueError(f"expected ',' or ']' between records at line {line}")
            if buffer[0] == ",":
                if not expect_separator:
                    raise ValueError(f"unexpected ',' at line {line}")
                expect_separator = False
                buffer = buffer[1:]
                skip_space()
                while not buffer and not eof:
                    refill()
                    skip_space()
            try:
                parsed = _loads_object(buffer)  # an object, with its values' spans
                if parsed is not None:
                    value, spans, end = parsed
                else:
                    spans = None
                    value, end = decoder.raw_decode(buffer)
            except json.JSONDecodeError as exc:
                if not eof and refill():
                    continue
                what = strict_input.describe_line(exc).rsplit(" at column", 1)[0]
                raise ValueError(
                    f"record {index + 1}: {what} at line {line + exc.lineno - 1}, "
                    f"column {exc.colno}"
                ) from None
            except strict_input.FAILURES as exc:  # a repeated key, NaN, too deep
                raise ValueError(
                    f"record {index + 1} (line {line}): {strict_input.describe(exc)}"
                ) from None
            index += 1
            # a number or literal at the end of the buffer may continue in the next chunk
            if end == len(buffer) and not eof and refill():
                index -= 1
                continue
            expect_separator = True
            source = None if spans is None else _sourced(buffer, spans, buffer[:end].encode(), end)
            yield f"record {index} (line {line})", value, source
            line += buffer[:end].count("\n")
            buffer = buffer[end:]
        if not started:
            raise ValueError("the file is empty")
        if not finished:
            raise ValueError("the JSON array is not closed with ']'")


def decoded_limit(file_bytes: int) -> int:
    """How many bytes of records one import may decode from a Parquet file of this size."""
    return max(MIN_DECODED_LIMIT, MAX_EXPANSION * file_bytes)


def _iter_parquet(path: Path) -> Iterator[tuple[str, Any, None]]:
    import pyarrow.parquet as pq

    from analysis.files import parquet_limits

    try:
        with path.open("rb") as handle:
            metadata = pq.ParquetFile(handle).metadata
            # the layout first: nothing is decoded from a file that could not fit in memory
            layout = parquet_limits.inspect(handle, metadata)
        parquet = pq.ParquetFile(path, read_dictionary=layout.dictionary_columns)
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise ValueError(f"not a readable Parquet file ({exc})") from None
    if layout.problem is not None:
        raise ValueError(layout.problem)
    row = 0
    decoded, limit = 0, decoded_limit(path.stat().st_size)
    # Small batches of rows whose texts stay dictionaries: a row's size is known before it is
    # built, so memory stays a few records' worth, however large or repetitive the file.
    for batch in parquet_limits.iter_batches(parquet, batch_size=32):
        sizes = parquet_limits.row_sizes(batch, limit=MAX_RECORD_BYTES)
        decoded += int(sizes.sum())
        if decoded > limit:  # before this batch is built; the import writes nothing
            raise ValueError(
                f"the file decodes to more than {limit:,} bytes by row {row + batch.num_rows:,}, "
                f"over the limit per import ({MAX_EXPANSION} times the file's size, at least "
                f"{MIN_DECODED_LIMIT:,} bytes): split it, or import it as JSON Lines"
            )
        fits = sizes <= MAX_RECORD_BYTES
        records = batch.to_pylist() if fits.all() else None  # the common case: all at once
        for index in range(batch.num_rows):
            row += 1
            if not fits[index]:
                size = int(sizes[index])
                problem = f"record is {size:,} bytes, over the limit of {MAX_RECORD_BYTES:,} bytes"
                yield f"row {row}", ValueError(problem), None
                continue
            record = records[index] if records else batch.slice(index, 1).to_pylist()[0]
            yield f"row {row}", record, None


def _iter_records(
    path: str | Path, *, sources: bool = True
) -> Iterator[tuple[str, Any, Source | None]]:
    """Yield (where, raw record or ValueError, the JSON text it came from or None for Parquet)
    in file order; where names the line or row."""
    path = Path(path)
    strict_input.check_file(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from _iter_jsonl(path, sources=sources)
    elif suffix == ".json":
        try:
            yield from _iter_json_array(path)
        except ValueError as exc:
            raise InputError(str(path), [str(exc)]) from None
    elif suffix == ".parquet":
        try:
            yield from _iter_parquet(path)
        except ValueError as exc:
            raise InputError(str(path), [str(exc)]) from None
    else:
        raise UserError(
            f"{path}: unsupported file type {suffix!r}; use one of {', '.join(SUFFIXES)}"
        )


def iter_valid_pairs(
    path: str | Path, *, to_store: bool = True
) -> Iterator[tuple[str, ValidPair | str]]:
    """Yield (where, ValidPair) or (where, problem) for every record, checking duplicate ids.
    `to_store=False`: read only (a report), nothing prepared for the database."""
    seen: dict[str, str] = {}
    for where, raw, source in _iter_records(path, sources=to_store):
        if isinstance(raw, ValueError):
            yield where, str(raw)
            continue
        try:
            pair = validate_record(raw, source, to_store=to_store)
        except ValueError as exc:
            yield where, str(exc)
            continue
        if pair.key in seen:
            yield where, f"field 'id': duplicate id {pair.key!r} (first at {seen[pair.key]})"
            continue
        seen[pair.key] = where
        yield where, pair


def read_pairs(path: str | Path) -> list[ValidPair]:
    """Read and validate a whole pairs file (to read, not to store); InputError lists every
    problem."""
    pairs: list[ValidPair] = []
    problems: list[str] = []
    for where, item in iter_valid_pairs(path, to_store=False):
        if isinstance(item, str):
            problems.append(f"{where}: {item}")
        else:
            pairs.append(item)
    if problems:
        raise InputError(str(path), problems)
    if not pairs:
        raise InputError(str(path), ["the file holds no records"])
    return pairs


def write_pairs(records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write records in the pairs layout; the format follows the suffix. Returns the count."""
    path = Path(path)
    suffix = path.suffix.lower()
    records = list(records)
    if suffix == ".jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    elif suffix == ".json":
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    elif suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), path)
    else:
        raise UserError(
            f"{path}: unsupported file type {suffix!r}; use one of {', '.join(SUFFIXES)}"
        )
    return len(records)
