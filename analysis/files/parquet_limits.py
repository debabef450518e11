"""Memory limits for reading a Parquet pairs file, checked before its data is decoded.

Parquet compresses well enough that a 3 KB file can decode to gigabytes: a long text repeated
in a dictionary page, a page of one repeated byte, a list of fifty million empty structs. The
record limit (8 MiB) is only known after decoding, which is too late. So before any data is
read, every page header is checked (the headers are a few bytes each, read from the file
directly), and the reader keeps repeated texts as dictionaries so that the size of each row
is computed from the lengths, without building its values:

- a page (data or dictionary) may decode to at most `MAX_PAGE_BYTES`;
- a column chunk (one column of one row group) may hold at most `MAX_CHUNK_VALUES` values;
- a row whose values add up to more than the record limit is refused before it is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

if TYPE_CHECKING:  # for the annotations only: the callers have opened the file with it
    import pyarrow.parquet as pq

# A Thrift struct as read here: its integer fields and nested structs by field id.
ThriftStruct = dict[int, "int | ThriftStruct"]

MAX_PAGE_BYTES = 16 * 1024 * 1024
MAX_CHUNK_VALUES = 4_000_000


class _Compact:
    """Just enough of Thrift's compact protocol to read a Parquet page header's sizes and its
    length (the header is a struct; its nested structs and lists are skipped)."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ValueError("a page header runs past the end of the file")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ValueError("a page header holds a malformed number")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > 32:
            raise ValueError("a page header is nested too deeply")
        if kind in (1, 2):  # bool in the field header
            return
        if kind == 3:
            self.pos += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == 8:
            size = self.varint()  # (not `self.pos += ...`: varint moves pos first)
            self.pos += size
        elif kind == 12:
            self.struct(depth + 1)
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4
            if size == 15:
                size = self.varint()
            for _ in range(size):
                self.skip(head & 0x0F, depth + 1)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4, depth + 1)
                    self.skip(types & 0x0F, depth + 1)
        else:
            raise ValueError("a page header is malformed")

    def struct(self, depth: int = 0) -> ThriftStruct:
        """Read a struct; returns its integer fields and nested structs by id."""
        if depth > 32:
            raise ValueError("a page header is nested too deeply")
        fields: ThriftStruct = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, kind = head >> 4, head & 0x0F
            field_id = last + delta if delta else self.zigzag()
            last = field_id
            if kind in (5, 6):
                fields[field_id] = self.zigzag()
            elif kind == 12:
                fields[field_id] = self.struct(depth + 1)
            else:
                self.skip(kind, depth)


# PageHeader fields (parquet.thrift): 1 type, 2 uncompressed size, 3 compressed size,
# 5 data_page_header (2: encoding), 8 data_page_header_v2 (4: encoding).
_DICTIONARY_ENCODINGS = {2, 8}  # PLAIN_DICTIONARY, RLE_DICTIONARY
_DATA_PAGE, _DATA_PAGE_V2 = 0, 3


def _page_headers(
    handle: BinaryIO, start: int, length: int
) -> Iterator[tuple[int, int, int | None]]:
    """(type, uncompressed size, encoding or None) of every page in a column chunk."""
    end = start + length
    pos = start
    while pos < end:
        handle.seek(pos)
        reader = _Compact(handle.read(min(64 * 1024, end - pos + 64 * 1024)))
        fields = reader.struct()
        kind, uncompressed, compressed = fields.get(1), fields.get(2), fields.get(3)
        if not (
            isinstance(kind, int)
            and kind >= 0
            and isinstance(uncompressed, int)
            and uncompressed >= 0
            and isinstance(compressed, int)
            and compressed >= 0
        ):
            raise ValueError("a page header has no sizes")
        header = fields.get(5) if kind == _DATA_PAGE else fields.get(8)
        encoding = None
        if isinstance(header, dict):
            encoding = header.get(2 if kind == _DATA_PAGE else 4)
        if encoding is not None and not isinstance(encoding, int):
            raise ValueError("a page header is malformed (its encoding is not a number)")
        yield kind, uncompressed, encoding
        pos += reader.pos + compressed


@dataclass(frozen=True)
class Layout:
    problem: str | None  # the first limit the file breaks, as a sentence naming the rows
    dictionary_columns: list[str]  # text columns whose every data page uses the dictionary


def inspect(handle: BinaryIO, metadata: pq.FileMetaData) -> Layout:
    """Check every page header of the file against the limits (nothing is decoded)."""
    first_row = 1
    plain: set[str] = set()
    text = set(text_columns(metadata.schema))
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        rows = f"rows {first_row:,} to {first_row + row_group.num_rows - 1:,}"
        for column in range(row_group.num_columns):
            chunk = row_group.column(column)
            name = chunk.path_in_schema
            if chunk.num_values > MAX_CHUNK_VALUES:
                return Layout(
                    f"{rows}: column '{name}' holds {chunk.num_values:,} values, over the "
                    f"limit of {MAX_CHUNK_VALUES:,} in one row group; write the file with "
                    "smaller row groups (pyarrow: row_group_size=1000)",
                    [],
                )
            start = chunk.data_page_offset
            if chunk.has_dictionary_page and chunk.dictionary_page_offset:
                start = min(start, chunk.dictionary_page_offset)
            for kind, uncompressed, encoding in _page_headers(
                handle, start, chunk.total_compressed_size
            ):
                if uncompressed > MAX_PAGE_BYTES:
                    return Layout(
                        f"{rows}: a page of column '{name}' decodes to {uncompressed:,} "
                        f"bytes, over the limit of {MAX_PAGE_BYTES:,} bytes",
                        [],
                    )
                if kind in (_DATA_PAGE, _DATA_PAGE_V2) and encoding not in _DICTIONARY_ENCODINGS:
                    plain.add(name)
        first_row += row_group.num_rows
    # Only a dictionary page can repeat one text in many rows. Such columns are read as
    # dictionaries (bounded by the page limit); reading the others so would make Arrow build
    # a growing dictionary of every distinct text (slower and bigger).
    return Layout(None, sorted(text - plain))


def text_columns(schema: pq.ParquetSchema) -> list[str]:
    """The leaf columns holding text or bytes."""
    return [
        schema.column(i).path
        for i in range(len(schema))
        if schema.column(i).physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
    ]


def iter_batches(parquet: pq.ParquetFile, *, batch_size: int) -> Iterator[pa.RecordBatch]:
    """Batches of at most `batch_size` rows, one row group at a time: a batch never spans two
    row groups, so a text column read as a dictionary keeps one dictionary per batch (Arrow
    cannot build a nested dictionary column that changes within a batch)."""
    for group in range(parquet.metadata.num_row_groups):
        yield from parquet.iter_batches(batch_size=batch_size, row_groups=[group])


def row_sizes(batch: pa.RecordBatch, *, limit: int) -> NDArray[np.int64]:
    """Bytes each row of the batch takes once built (text lengths, 8 bytes per other value),
    computed without building it. A row is only measured until it is known to pass `limit`:
    the elements of a list already too long are counted, not walked."""
    total = np.zeros(batch.num_rows, dtype=np.int64)
    for column in batch.columns:
        total += _sizes(column, limit)
    return total


def _sizes(array: pa.Array, limit: int) -> NDArray[np.int64]:
    n = len(array)
    kind = array.type
    if pa.types.is_dictionary(kind):
        values = _sizes(array.dictionary, limit)
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False)
        sizes = values[indices] if len(values) else np.zeros(n, dtype=np.int64)
        dictionary_sizes: NDArray[np.int64] = np.where(
            array.is_null().to_numpy(zero_copy_only=False), 0, sizes
        )
        return dictionary_sizes
    if (
        pa.types.is_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_large_binary(kind)
    ):
        lengths = pc.binary_length(array).fill_null(0)
        text_sizes: NDArray[np.int64] = lengths.to_numpy(zero_copy_only=False).astype(np.int64)
        return text_sizes
    if pa.types.is_struct(kind):
        total = np.zeros(n, dtype=np.int64)
        for field in array.flatten():  # (flatten, unlike field(), follows a slice)
            total += _sizes(field, limit)
        return total
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        offsets: NDArray[np.int64] = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        counts = offsets[1:] - offsets[:-1]
        sizes = counts * 8
        parts = [array.keys, array.items] if pa.types.is_map(kind) else [array.values]
        for row in np.flatnonzero((sizes <= limit) & (counts > 0)):
            start, count = int(offsets[row]), int(counts[row])
            sizes[row] += sum(int(_sizes(p.slice(start, count), limit).sum()) for p in parts)
        return sizes
    return np.full(n, 8, dtype=np.int64)
