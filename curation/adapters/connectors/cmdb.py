"""A CMDB export file (CSV, JSON or JSON Lines): one record per configuration item.

The cursor is the SHA-256 of the file: an unchanged export yields nothing. Every page
but the last carries the cursor the run started from, so an interrupted run reads the
whole file again rather than claiming rows it never yielded. The file is read once and
parsed before anything is yielded, so a file that is rewritten during a run, or that
does not parse, never produces half a run. With a SourcePolicy the file, symlinks
resolved, must lie within an allowed file root, and the resolved path is what is read.

With `valid_from_field` set, rows that share an id and differ in that field's instant
are versions of one item (a history export), yielded together in valid-time order
whatever their order in the file; which rows fail and why is `curation.domain.history`'s
rule. Each record says where it was read ("line 3", "item 4").
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curation.domain.errors import ConnectorError
from curation.domain.history import Row, reading_order
from curation.domain.records import FetchPage, RecordFailure, SourceRecord
from curation.domain.source_policy import SourcePolicy, file_refusal
from kernel.jsonbounds import loads_bounded

Item = SourceRecord | RecordFailure


@dataclass(frozen=True)
class _Row:
    """One configuration item as parsed: where it was, and its values or what is wrong."""

    where: str
    values: Mapping[str, Any] | None
    problem: str = ""
    raw: bytes = b""


def _csv_header(cells: list[str] | None, *, id_field: str) -> list[str]:
    if cells is None:
        return []
    names = [cell.strip() for cell in cells]
    named = [name for name in names if name]
    if len(set(named)) != len(named):
        raise ConnectorError("the CSV header names a column twice")
    if id_field not in named:
        raise ConnectorError(f"the CSV header has no {id_field!r} column")
    return names


def _csv_line(cells: list[str]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue().encode()


def csv_rows(text: str, *, id_field: str) -> list[_Row]:
    """Rows of a CSV export keyed by its header; a row of the wrong width is a problem row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[_Row] = []
    try:
        header = _csv_header(next(reader, None), id_field=id_field)
        line = reader.line_num + 1
        for cells in reader:
            where, line = f"line {line}", reader.line_num + 1
            if not any(cell.strip() for cell in cells):
                continue  # blank lines are layout, not items
            raw = _csv_line(cells)  # kept with a failure, so a failed row loses nothing
            if len(cells) != len(header):
                problem = f"{where} has {len(cells)} columns; the header has {len(header)}"
                rows.append(_Row(where, None, problem, raw))
            else:
                rows.append(_Row(where, dict(zip(header, cells, strict=True)), raw=raw))
    except csv.Error as exc:
        raise ConnectorError(
            f"the CSV cannot be parsed near line {reader.line_num}: {exc}"
        ) from exc
    return rows


def json_rows(text: str) -> list[_Row]:
    """Items of a JSON export: a list of objects, or an object with an `items` list."""
    try:
        document = loads_bounded(text)
    except ValueError as exc:
        raise ConnectorError(f"the JSON cannot be parsed: {exc}") from exc
    if isinstance(document, Mapping):
        document = document.get("items")
    if not isinstance(document, list):
        raise ConnectorError("the JSON is neither a list of items nor an object with `items`")
    return [_object_row(f"item {number}", item) for number, item in enumerate(document, 1)]


def jsonl_rows(data: bytes) -> list[_Row]:
    """One item per line; a line that is not a JSON object is a problem row, not fatal."""
    rows: list[_Row] = []
    # Split bytes on "\n" only: str.splitlines would also split at U+2028 inside strings.
    for number, raw in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
        where = f"line {number}"
        if not raw.strip():
            continue
        try:
            item = loads_bounded(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            rows.append(_Row(where, None, f"{where}: invalid UTF-8 at byte {exc.start}", raw))
            continue
        except ValueError as exc:
            rows.append(_Row(where, None, f"{where}: invalid JSON: {exc}", raw))
            continue
        rows.append(_object_row(where, item, raw))
    return rows


def _object_row(where: str, item: Any, raw: bytes = b"") -> _Row:
    if isinstance(item, Mapping):
        return _Row(where, item)
    kind = type(item).__name__ if item is not None else "null"
    return _Row(where, None, f"{where} is a JSON {kind}, not an object", raw)


def normalised(values: Mapping[str, Any]) -> dict[str, Any]:
    """Keys and string values stripped; empty strings and nulls left out."""
    fields: dict[str, Any] = {}
    for key, value in values.items():
        name = str(key).strip()
        cleaned = value.strip() if isinstance(value, str) else value
        if name and cleaned is not None and cleaned != "":
            fields[name] = cleaned
    return fields


def _identifier(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


class CmdbExportConnector:
    """Connector over one CMDB export file (see the module docstring)."""

    kind = "cmdb"

    def __init__(
        self,
        path: Path,
        *,
        id_field: str = "id",
        page_size: int = 1000,
        policy: SourcePolicy | None = None,
        valid_from_field: str | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self._path = Path(path).expanduser()
        self._policy = policy
        self._id_field = id_field
        self._page_size = page_size
        # Matched as the structured extractor matches it: trimmed, case-insensitive.
        self._valid_from_field = (valid_from_field or "").strip().lower() or None

    def __repr__(self) -> str:
        return f"CmdbExportConnector({str(self._path)!r})"

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        """Yield every item of the export, unless the file is unchanged since `cursor`."""
        data = self._read()
        digest = hashlib.sha256(data).hexdigest()
        if cursor == digest:
            return
        items = self._items(self._rows(data))
        starts = range(0, len(items), self._page_size)
        for start in starts or [0]:
            last = start + self._page_size >= len(items)
            yield FetchPage(
                items=items[start : start + self._page_size], cursor=digest if last else cursor
            )

    def _checked_path(self) -> Path:
        """The export with symlinks resolved; ConnectorError if it is outside the policy."""
        if self._policy is None:
            return self._path
        roots, denied = self._policy.file_roots, self._policy.denied_paths
        path = str(self._path)
        if reason := file_refusal(path, roots, resolve=os.path.realpath, denied=denied):
            raise ConnectorError(reason)
        return Path(os.path.realpath(self._path))

    def _read(self) -> bytes:
        path = self._checked_path()
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ConnectorError(f"the export {self._path} does not exist") from None
        except OSError as exc:
            raise ConnectorError(f"the export {self._path} cannot be read: {exc.strerror}") from exc

    def _rows(self, data: bytes) -> list[_Row]:
        suffix = self._path.suffix.lower()
        if suffix in {".jsonl", ".ndjson"}:
            return jsonl_rows(data)
        if suffix not in {".csv", ".json"}:
            raise ConnectorError(f"{self._path.name}: expected a .csv, .json or .jsonl export")
        try:
            text = data.decode("utf-8-sig")  # Excel writes a BOM
        except UnicodeDecodeError as exc:
            raise ConnectorError(f"{self._path.name}: invalid UTF-8 at byte {exc.start}") from exc
        if suffix == ".csv":
            return csv_rows(text, id_field=self._id_field)
        return json_rows(text)

    def _items(self, rows: list[_Row]) -> list[Item]:
        """Every row as a record or a failure, in reading order: file order, except that
        an item's rows are read together, its versions in valid-time order."""
        slots: list[Item | list[Item]] = []
        groups: dict[str, list[Item]] = {}
        read: list[tuple[_Row, dict[str, Any], str]] = []
        for row in rows:
            if row.values is None:
                slots.append(RecordFailure(row.where, row.problem, content=row.raw))
                continue
            fields = normalised(row.values)
            identifier = _identifier(fields.get(self._id_field))
            if identifier is None:
                reason = f"{row.where} has no usable {self._id_field!r} value"
                slots.append(RecordFailure(row.where, reason, content=row.raw))
                continue
            if identifier not in groups:
                groups[identifier] = []
                slots.append(groups[identifier])  # the item is read where it first appears
            read.append((row, fields, identifier))
        dated = [Row(ident, row.where, self._valid_from(fields)) for row, fields, ident in read]
        order = reading_order(
            dated, valid_from_field=self._valid_from_field, id_field=self._id_field
        )
        for placed in order:
            row, fields, identifier = read[placed.index]
            if placed.refusal:
                failure_id = f"{identifier}@{row.where}"
                item: Item = RecordFailure(failure_id, placed.refusal, content=row.raw)
            else:
                item = self._record(row, fields, identifier, placed.version_from)
            groups[identifier].append(item)
        return [each for slot in slots for each in (slot if isinstance(slot, list) else [slot])]

    def _valid_from(self, fields: Mapping[str, Any]) -> object:
        if self._valid_from_field is None:
            return None
        wanted = self._valid_from_field
        return next((v for k, v in fields.items() if k.lower() == wanted), None)

    def _record(
        self,
        row: _Row,
        fields: dict[str, Any],
        identifier: str,
        version_from: dt.datetime | None,
    ) -> Item:
        try:
            content = json.dumps(
                fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
        except ValueError:
            reason = f"{row.where} has a non-finite number"
            return RecordFailure(identifier, reason, content=row.raw)
        name = fields.get("name")
        return SourceRecord(
            external_id=identifier,
            content=content.encode(),
            mime="application/json",
            title=name if isinstance(name, str) else identifier,
            fields=fields,
            version_from=version_from,
            location=row.where,
        )
