"""Input files as the importers accept them: strict JSON with every refusal a readable
sentence, lines read in bounded memory, and a folder named as a folder.

Python's `json` module is lenient where an import must not be: it reads `NaN` and `Infinity`
(not JSON; a NaN rating was then stored as "not rated" while CSV refused it, and an extra field
holding NaN reached PostgreSQL, which refused it with a driver error), and a key repeated in
one object silently keeps its last value. Its messages ("Invalid control character at: line 1
column 201") read badly, and a deeply nested value raises an unnamed RecursionError.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from analysis.errors import UserError


class StrictJSONError(ValueError):
    """A JSON text the importers refuse; str() is a sentence without the line number (the
    caller names the line: a file line, or a record's first line in an array)."""


def _no_constants(name: str) -> NoReturn:
    raise StrictJSONError(f"{name} is not a JSON value (JSON has no NaN or infinity)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise StrictJSONError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return result


DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constants)


def describe(exc: BaseException) -> str:
    """One sentence for a failure of DECODER (`line L, column C` from the decoder's own
    position; callers that parse one line at a time pass `single_line`)."""
    if isinstance(exc, json.JSONDecodeError):
        what = exc.msg.removesuffix(" at").rstrip(":")
        what = what[:1].lower() + what[1:]
        return f"not valid JSON: {what} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "values are nested too deeply (arrays or objects inside each other)"
    return f"not valid JSON: {exc}"


def describe_line(exc: BaseException) -> str:
    """`describe` for a text that is one line of a file (its line number is the caller's)."""
    if isinstance(exc, json.JSONDecodeError):
        what = exc.msg.removesuffix(" at").rstrip(":")
        what = what[:1].lower() + what[1:]
        return f"not valid JSON: {what} at column {exc.colno}"
    return describe(exc)


def loads(text: str) -> Any:
    """json.loads with DECODER: raises JSONDecodeError, StrictJSONError or RecursionError."""
    return DECODER.decode(text)


FAILURES = (ValueError, RecursionError)  # JSONDecodeError and StrictJSONError are ValueErrors


def bounded_lines(handle: BinaryIO, limit: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(number, line, size) for every line of a binary file, reading at most `limit` + 1 bytes
    of a line into memory: a longer line comes as (number, None, its size), skipped in
    chunks (a 2 GB file without a newline took 4.3 GB when read whole)."""
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) <= limit or line.endswith(b"\n"):
            yield number, line, len(line)
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = handle.readline(1 << 20)
            if not line:
                break
            size += len(line)
        yield number, None, size


def lines_within(handle: BinaryIO, limit: int, *, chunk_bytes: int = 1 << 22) -> bool:
    """Whether no line of a binary file holds more than ``limit`` bytes before its newline (the
    lines :func:`bounded_lines` yields whole), read in chunks of 4 MB: a check of a large file
    that has no long line, where reading it line by line cost 0.14 s at 100,000 lines."""
    current = 0  # bytes of the line the last chunk ended in
    while chunk := handle.read(chunk_bytes):
        pieces = chunk.split(b"\n")
        if len(pieces) == 1:
            current += len(chunk)
            if current > limit:
                return False
            continue
        if current + len(pieces[0]) > limit or max(map(len, pieces[1:-1]), default=0) > limit:
            return False
        current = len(pieces[-1])
    return current <= limit


MAX_PROBLEMS = 20  # a file with more is refused naming these; the rest are not checked


def json_object_lines(
    handle: BinaryIO, *, limit: int
) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """((line number, record) for every JSON object line, problems) of a binary JSON Lines
    file: blank lines skipped, a leading UTF-8 byte order mark allowed, each problem a sentence
    naming its line (over `limit` bytes, not UTF-8, not strict JSON, a lone surrogate escape,
    not an object); after MAX_PROBLEMS problems the rest of the file is not read. The
    importers and every analysis reader of JSON Lines read through here, so each refuses the
    same things in the same words."""
    records: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    for number, line, size in bounded_lines(handle, limit):
        if len(problems) == MAX_PROBLEMS:
            problems.append("(further lines not checked)")
            break
        if line is None:
            problems.append(f"line {number}: {size:,} bytes, over the limit of {limit:,} bytes")
            continue
        try:
            text = line.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"line {number}: not valid UTF-8 text (byte {exc.start + 1})")
            continue
        if not text.strip():
            continue
        try:
            record = loads(text)
            if "\\u" in text:  # an escaped lone surrogate cannot be written as UTF-8
                json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # (a ValueError: before the next clause)
            problems.append(
                f"line {number}: a lone UTF-16 surrogate escape (\\udXXX) cannot be stored"
            )
            continue
        except FAILURES as exc:
            problems.append(f"line {number}: {describe_line(exc)}")
            continue
        if not isinstance(record, dict):
            kind = type(record).__name__
            problems.append(f"line {number}: expected a JSON object, got {kind}")
            continue
        records.append((number, record))
    return records, problems


def check_file(path: Path) -> None:
    """A readable sentence when `path` is not a file to read."""
    if path.is_dir():
        raise UserError(f"{path}: is a folder, not a file")
    if not path.is_file():
        raise UserError(f"{path}: no such file")
