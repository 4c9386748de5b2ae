"""The valid-from instant a document declares in its front matter."""

from __future__ import annotations

import datetime as dt

import pytest

from curation.domain.validtime import Declared, declared_validity, parse_instant, stated_validity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\nvalid_from: 2019-01-01\n---\n# T\n", dt.datetime(2019, 1, 1, tzinfo=dt.UTC)),
        ("\ufeff---\ntitle: x\nValid_From: '2021-06-01T08:30:00'\n---\nbody",
         dt.datetime(2021, 6, 1, 8, 30, tzinfo=dt.UTC)),
        ("---\nvalid_from: 2022-02-01T00:00:00+07:00\n---\n",
         dt.datetime(2022, 1, 31, 17, 0, tzinfo=dt.UTC)),
    ],
)  # fmt: skip
def test_a_declared_date_is_the_claims_valid_from(text: str, expected: dt.datetime) -> None:
    declared = declared_validity(text)
    assert declared.valid_from == expected
    assert declared.note == ""


@pytest.mark.parametrize(
    "text",
    [
        "# No front matter\n\nvalid_from: 2019-01-01\n",  # in the body: not a declaration
        "---\ntitle: only a title\n---\n",
        "---\nvalid_from: 2019-01-01\n",  # never closed: not front matter
        "",
    ],
)
def test_without_a_declaration_the_record_time_holds(text: str) -> None:
    assert declared_validity(text) == Declared()


def test_a_value_that_is_not_a_date_is_not_guessed_and_says_why() -> None:
    declared = declared_validity("---\nvalid_from: since spring 2019\n---\n")
    assert declared.valid_from is None
    assert declared.note == "valid_from 'since spring 2019' is not a date: record time used"
    assert parse_instant("2019-13-01") is None


@pytest.mark.parametrize(
    ("sentence", "start", "end"),
    [
        ("The billing-api runs on k8s-1 since 2019.", dt.datetime(2019, 1, 1, tzinfo=dt.UTC), None),
        ("As of 2022, the api runs on X.", dt.datetime(2022, 1, 1, tzinfo=dt.UTC), None),
        ("It ran on A from March 2021 to June 2023.", dt.datetime(2021, 3, 1, tzinfo=dt.UTC),
         dt.datetime(2023, 6, 1, tzinfo=dt.UTC)),
        ("It ran on A until 2020.", None, dt.datetime(2020, 1, 1, tzinfo=dt.UTC)),
        ("It runs on B since March 3, 2021.", dt.datetime(2021, 3, 3, tzinfo=dt.UTC), None),
        ("It runs on C since 2021-02-15.", dt.datetime(2021, 2, 15, tzinfo=dt.UTC), None),
        ("It runs on D.", None, None),
    ],
)  # fmt: skip
def test_a_sentence_states_when_its_fact_held(
    sentence: str, start: dt.datetime | None, end: dt.datetime | None
) -> None:
    stated = stated_validity(sentence)
    assert (stated.valid_from, stated.valid_to, stated.note) == (start, end, "")


@pytest.mark.parametrize(
    ("sentence", "note"),
    [
        ("It runs on A since last spring.", "'since last spring' is not a date"),
        ("It ran on A from 2023 to 2021.", "'from 2023 to 2021' is not a period"),
        ("It ran on A from Smarch 2021 to 2022.", ""),  # not a date: no period at all
    ],
)
def test_a_date_it_cannot_read_is_not_guessed(sentence: str, note: str) -> None:
    stated = stated_validity(sentence)
    assert (stated.valid_from, stated.valid_to) == (None, None) or not note
    assert note in stated.note
