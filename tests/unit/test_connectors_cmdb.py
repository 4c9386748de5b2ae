"""CmdbExportConnector over CSV, JSON and JSON Lines exports written to a temporary folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from curation.adapters.connectors.cmdb import CmdbExportConnector
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord

CSV = (
    "id,name,type,owner,location\n"
    "srv-1, db1 ,server,Lan Nguyễn,Hà Nội\n"
    "srv-2,web1,server,,Đà Nẵng\n"
)


def _export(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _items(path: Path, **options: object) -> list[SourceRecord | RecordFailure]:
    pages = CmdbExportConnector(path, **options).pages(cursor=None)  # type: ignore[arg-type]
    return [item for page in pages for item in page.items]


def _failures(items: list[SourceRecord | RecordFailure]) -> list[str]:
    return [item.reason for item in items if isinstance(item, RecordFailure)]


# --- CSV -----------------------------------------------------------------------------------


def test_csv_row_becomes_a_record_when_it_is_complete(tmp_path: Path) -> None:
    first = _items(_export(tmp_path, "cmdb.csv", CSV))[0]
    fields = {
        "id": "srv-1",
        "location": "Hà Nội",
        "name": "db1",
        "owner": "Lan Nguyễn",
        "type": "server",
    }
    assert first == SourceRecord(
        external_id="srv-1",
        content=json.dumps(
            fields, sort_keys=True, ensure_ascii=False, separators=(",", ":")
        ).encode(),
        mime="application/json",
        title="db1",
        fields=fields,
        location="line 2",
    )


def test_content_keeps_accents_as_utf8_when_values_are_vietnamese(tmp_path: Path) -> None:
    first = _items(_export(tmp_path, "cmdb.csv", CSV))[0]
    assert "Hà Nội".encode() in first.content
    assert b"\\u" not in first.content


def test_empty_values_are_omitted_when_a_column_is_blank(tmp_path: Path) -> None:
    second = _items(_export(tmp_path, "cmdb.csv", CSV))[1]
    assert isinstance(second, SourceRecord)
    assert "owner" not in second.fields


def test_header_is_read_when_the_csv_starts_with_a_bom(tmp_path: Path) -> None:
    items = _items(_export(tmp_path, "cmdb.csv", b"\xef\xbb\xbf" + CSV.encode()))
    assert [item.external_id for item in items] == ["srv-1", "srv-2"]


def test_row_of_the_wrong_width_fails_with_its_line_when_others_are_fine(tmp_path: Path) -> None:
    text = CSV + "srv-3,app1,server\nsrv-4,app2,server,Minh,HCM\n"
    items = _items(_export(tmp_path, "cmdb.csv", text))
    assert _failures(items) == ["line 4 has 3 columns; the header has 5"]
    assert [item.external_id for item in items] == ["srv-1", "srv-2", "line 4", "srv-4"]


def test_line_numbers_count_physical_lines_when_a_quoted_value_spans_two(tmp_path: Path) -> None:
    text = 'id,name\nsrv-1,"two\nlines"\n,no id\n'
    items = _items(_export(tmp_path, "cmdb.csv", text))
    assert _failures(items) == ["line 4 has no usable 'id' value"]


def test_row_without_an_id_fails_when_the_id_cell_is_blank(tmp_path: Path) -> None:
    items = _items(_export(tmp_path, "cmdb.csv", CSV + "  ,orphan,server,,\n"))
    assert _failures(items) == ["line 4 has no usable 'id' value"]


def test_repeated_id_fails_when_an_item_appears_twice(tmp_path: Path) -> None:
    items = _items(_export(tmp_path, "cmdb.csv", CSV + "srv-1,dup,server,,\n"))
    assert _failures(items) == [
        "line 4 repeats id 'srv-1' (first on line 2); "
        "set valid_from_field to read the rows of one 'id' as its history"
    ]


# --- History exports (one id, several periods) -----------------------------------------------

HISTORY = (
    "id,name,manager,since\n"
    "E1,Noah Dubois,Ana,2023-01-01\n"
    "E2,Mai Tran,Ana,2020-05-01\n"
    "E1,Noah Dubois,Ben,2019-01-01\n"
    "E1,Noah Dubois,Cy,2021-06-01\n"
)


def _versions(items: list[SourceRecord | RecordFailure]) -> list[tuple[str, str, str]]:
    return [
        (item.external_id, item.location, f"{item.version_from:%Y-%m-%d}")
        for item in items
        if isinstance(item, SourceRecord) and item.version_from is not None
    ]


def test_rows_of_one_id_are_read_in_valid_time_order_when_a_valid_from_field_is_set(
    tmp_path: Path,
) -> None:
    items = _items(_export(tmp_path, "hr.csv", HISTORY), valid_from_field="Since")
    assert _failures(items) == []
    assert _versions(items) == [
        ("E1", "line 4", "2019-01-01"),
        ("E1", "line 5", "2021-06-01"),
        ("E1", "line 2", "2023-01-01"),
        ("E2", "line 3", "2020-05-01"),
    ]


def test_a_row_repeating_id_and_instant_fails_alone_when_the_export_is_a_history(
    tmp_path: Path,
) -> None:
    text = HISTORY + "E1,Noah Dubois,Dee,2021-06-01\n"
    items = _items(_export(tmp_path, "hr.csv", text), valid_from_field="since")
    assert _failures(items) == [
        "line 6 repeats id 'E1' and since 2021-06-01T00:00:00+00:00 (first on line 5): "
        "one item has one version per instant"
    ]
    [failure] = [item for item in items if isinstance(item, RecordFailure)]
    assert failure.external_id == "E1@line 6"
    assert failure.content == b"E1,Noah Dubois,Dee,2021-06-01\n"  # kept: nothing is lost
    assert len(_versions(items)) == 4


def test_a_history_row_without_a_readable_instant_fails_when_its_id_has_several_rows(
    tmp_path: Path,
) -> None:
    text = HISTORY + "E1,Noah Dubois,Dee,soon\nE1,Noah Dubois,Eve,\nE3,Solo,Fay,someday\n"
    items = _items(_export(tmp_path, "hr.csv", text), valid_from_field="since")
    assert _failures(items) == [
        "line 6 has since 'soon', which is not a date, and id 'E1' has 5 rows (a history): "
        "a row without its instant cannot be placed in it",
        "line 7 has no 'since' value, and id 'E1' has 5 rows (a history): "
        "a row without its instant cannot be placed in it",
    ]
    # A lone row keeps the extractor's rule: its record's time, and a note.
    solo = next(item for item in items if item.external_id == "E3")
    assert isinstance(solo, SourceRecord)
    assert solo.version_from is None


def test_json_lines_history_reads_its_versions_when_the_field_is_nested_case(
    tmp_path: Path,
) -> None:
    lines = [
        {"id": "svc", "host": "k8s-2", "Valid_From": "2024-02-01"},
        {"id": "svc", "host": "k8s-1", "Valid_From": "2023-02-01"},
    ]
    text = "\n".join(json.dumps(line) for line in lines)
    items = _items(_export(tmp_path, "cmdb.jsonl", text), valid_from_field="valid_from")
    assert _versions(items) == [("svc", "line 2", "2023-02-01"), ("svc", "line 1", "2024-02-01")]


def test_configured_id_field_names_the_items_when_set(tmp_path: Path) -> None:
    items = _items(_export(tmp_path, "cmdb.csv", "ci,name\nCI001,db1\n"), id_field="ci")
    assert [item.external_id for item in items] == ["CI001"]


def test_csv_without_the_id_column_raises_when_every_row_would_fail(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="no 'id' column"):
        _items(_export(tmp_path, "cmdb.csv", "name,type\ndb1,server\n"))


def test_csv_that_is_not_utf8_raises_when_read(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="invalid UTF-8 at byte 13"):
        _items(_export(tmp_path, "cmdb.csv", "id,name\nsrv,H\xe0 N\xf4i\n".encode("latin-1")))


# --- JSON and JSON Lines -------------------------------------------------------------------


def test_json_list_becomes_records_when_items_are_objects(tmp_path: Path) -> None:
    text = json.dumps([{"id": "srv-1", "name": "db1", "cpus": 8, "tags": ["prod"]}, {"id": 42}])
    items = _items(_export(tmp_path, "cmdb.json", text))
    assert [(item.external_id, item.title) for item in items] == [("srv-1", "db1"), ("42", "42")]
    assert isinstance(items[0], SourceRecord)
    assert items[0].fields == {"id": "srv-1", "name": "db1", "cpus": 8, "tags": ["prod"]}


def test_json_items_are_read_when_wrapped_in_an_object(tmp_path: Path) -> None:
    text = json.dumps({"exported": "2024-03-01", "items": [{"id": "a"}, {"id": "b"}]})
    assert [item.external_id for item in _items(_export(tmp_path, "cmdb.json", text))] == ["a", "b"]


def test_json_item_that_is_not_an_object_fails_with_its_number(tmp_path: Path) -> None:
    text = json.dumps([{"id": "a"}, "srv-2", None, {"id": "d"}])
    items = _items(_export(tmp_path, "cmdb.json", text))
    assert _failures(items) == [
        "item 2 is a JSON str, not an object",
        "item 3 is a JSON null, not an object",
    ]
    assert [item.external_id for item in items if isinstance(item, SourceRecord)] == ["a", "d"]


def test_json_that_does_not_parse_raises_when_read(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="JSON cannot be parsed"):
        _items(_export(tmp_path, "cmdb.json", '[{"id": "a"},'))


def test_json_raises_with_the_depth_when_an_item_is_nested_too_deep(tmp_path: Path) -> None:
    text = '[{"id": "a", "deep": ' + "[" * 2000 + "]" * 2000 + "}]"
    with pytest.raises(ConnectorError, match="nested deeper than 64 levels"):
        _items(_export(tmp_path, "cmdb.json", text))


def test_json_of_the_wrong_shape_raises_when_it_has_no_items(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="neither a list"):
        _items(_export(tmp_path, "cmdb.json", '{"servers": []}'))


def test_jsonl_bad_line_fails_alone_when_others_parse(tmp_path: Path) -> None:
    text = '{"id": "a", "name": "Máy chủ A"}\n\n{"id": "b",\n[1, 2]\n{"id": "c"}\n'
    items = _items(_export(tmp_path, "cmdb.jsonl", text))
    assert [item.external_id for item in items] == ["a", "line 3", "line 4", "c"]
    failures = _failures(items)
    assert failures[0].startswith("line 3: invalid JSON: ")
    assert failures[1] == "line 4 is a JSON list, not an object"
    assert items[1].content == b'{"id": "b",'


def test_jsonl_deep_line_fails_alone_with_the_depth_when_others_parse(tmp_path: Path) -> None:
    deep = '{"id": "b", "deep": ' + "[" * 2000 + "]" * 2000 + "}"
    items = _items(_export(tmp_path, "cmdb.jsonl", f'{{"id": "a"}}\n{deep}\n{{"id": "c"}}\n'))
    assert [item.external_id for item in items] == ["a", "line 2", "c"]
    assert _failures(items) == ["line 2: invalid JSON: JSON nested deeper than 64 levels"]


def test_jsonl_line_with_a_separator_char_in_a_string_stays_one_item(tmp_path: Path) -> None:
    text = '{"id": "a", "note": "x\u2028y"}\n'
    (item,) = _items(_export(tmp_path, "cmdb.jsonl", text))
    assert isinstance(item, SourceRecord)
    assert item.fields["note"] == "x\u2028y"


# --- cursor and files ----------------------------------------------------------------------


def test_last_page_claims_the_file_hash_when_the_run_completes(tmp_path: Path) -> None:
    path = _export(tmp_path, "cmdb.csv", CSV)
    pages = list(CmdbExportConnector(path).pages(cursor=None))
    assert pages[-1].cursor == hashlib.sha256(CSV.encode()).hexdigest()


def test_nothing_is_yielded_when_the_cursor_matches_the_file_hash(tmp_path: Path) -> None:
    path = _export(tmp_path, "cmdb.csv", CSV)
    stored = list(CmdbExportConnector(path).pages(cursor=None))[-1].cursor
    assert list(CmdbExportConnector(path).pages(cursor=stored)) == []


def test_every_item_is_fetched_again_when_the_file_changed(tmp_path: Path) -> None:
    path = _export(tmp_path, "cmdb.csv", CSV)
    stored = list(CmdbExportConnector(path).pages(cursor=None))[-1].cursor
    path.write_text(CSV + "srv-3,app1,server,,\n")
    assert len(_items(path)) == 3
    assert list(CmdbExportConnector(path).pages(cursor=stored))[-1].cursor != stored


def test_earlier_pages_keep_the_old_cursor_when_more_pages_follow(tmp_path: Path) -> None:
    path = _export(tmp_path, "cmdb.csv", CSV + "srv-3,app1,server,,\n")
    pages = list(CmdbExportConnector(path, page_size=2).pages(cursor="old"))
    assert [len(page.items) for page in pages] == [2, 1]
    assert [page.cursor for page in pages] == ["old", hashlib.sha256(path.read_bytes()).hexdigest()]


def test_empty_export_still_moves_the_cursor_when_it_has_only_a_header(tmp_path: Path) -> None:
    path = _export(tmp_path, "cmdb.csv", "id,name\n")
    digest = hashlib.sha256(b"id,name\n").hexdigest()
    assert list(CmdbExportConnector(path).pages(cursor=None)) == [FetchPage([], digest)]


def test_missing_file_raises_when_the_export_is_absent(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="does not exist"):
        _items(tmp_path / "cmdb.csv")


def test_unknown_format_raises_when_the_suffix_is_not_supported(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match=r"expected a \.csv, \.json or \.jsonl"):
        _items(_export(tmp_path, "cmdb.xlsx", b"PK\x03\x04"))
