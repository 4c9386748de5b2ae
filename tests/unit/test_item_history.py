"""An item's history as the pure rules read it: rows placed in valid time, neighbours."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from curation.domain.history import Row, StoredVersion, neighbours, reading_order


def _at(year: int) -> dt.datetime:
    return dt.datetime(year, 1, 1, tzinfo=dt.UTC)


def test_rows_keep_file_order_when_no_id_repeats() -> None:
    rows = [Row("b", "line 2", "2020"), Row("a", "line 3", "2019")]
    placed = reading_order(rows, valid_from_field="since")
    assert [(p.index, p.version_from) for p in placed] == [(0, _at(2020)), (1, _at(2019))]


def test_a_repeated_id_names_the_setting_when_no_valid_from_field_is_set() -> None:
    rows = [Row("a", "line 2"), Row("a", "line 3")]
    placed = reading_order(rows, valid_from_field=None, id_field="ci")
    assert placed[0].refusal == ""
    assert "set valid_from_field to read the rows of one 'ci' as its history" in placed[1].refusal


@given(st.permutations([2018, 2020, 2019, 2023, 2021]))
def test_an_items_versions_are_read_in_valid_time_order_whatever_the_file_order(
    years: list[int],
) -> None:
    rows = [Row("a", f"line {n}", str(year)) for n, year in enumerate(years, 2)]
    placed = reading_order(rows, valid_from_field="since")
    assert [p.version_from for p in placed] == [_at(y) for y in sorted(years)]
    assert not any(p.refusal for p in placed)


def test_the_first_row_of_an_instant_is_read_when_two_rows_share_it() -> None:
    rows = [Row("a", "line 2", "2020-01-01"), Row("a", "line 3", "2020")]
    placed = reading_order(rows, valid_from_field="since")
    assert [(p.index, bool(p.refusal)) for p in placed] == [(0, False), (1, True)]
    assert "(first on line 2)" in placed[1].refusal


def test_neighbours_split_stored_readings_around_a_version_when_it_arrives_late() -> None:
    stored = [
        StoredVersion(1, _at(2019)),
        StoredVersion(2, _at(2023)),
        StoredVersion(3, None),  # a plain revision before the export became a history
        StoredVersion(4, _at(2021)),  # an older reading of the same version
        StoredVersion(5, _at(2023)),  # the current reading of 2023 (5 replaced 2)
        StoredVersion(6, _at(2025)),
    ]
    around = neighbours(_at(2021), stored)
    assert around.before == (1, 3, 4)
    assert around.after == (StoredVersion(5, _at(2023)), StoredVersion(6, _at(2025)))
    assert around.next == StoredVersion(5, _at(2023))


def test_neighbours_have_no_next_when_the_version_is_the_newest() -> None:
    around = neighbours(_at(2030), [StoredVersion(1, _at(2019))])
    assert (around.before, around.next) == ((1,), None)
