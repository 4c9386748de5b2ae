"""The object key: what makes two claim values "the same value" (pure)."""

from __future__ import annotations

from curation.domain.supersession import OBJECT_KEY_MAX, value_key

FILLER = "The quarterly report lists the office furniture inventory of each floor. " * 30


def test_entities_and_short_literals_keep_their_readable_keys() -> None:
    assert value_key(entity_id=7, literal=None) == "e:7"
    assert value_key(entity_id=None, literal="  Frankfurt. ") == "l:frankfurt"
    assert value_key(entity_id=None, literal="") == "l:"
    short = "x" * (OBJECT_KEY_MAX - 3)
    assert value_key(entity_id=None, literal=short) == f"l:{short}"


def test_long_literals_that_share_their_head_get_different_keys() -> None:
    frankfurt = value_key(entity_id=None, literal=FILLER + "The ledger is hosted in Frankfurt.")
    dublin = value_key(entity_id=None, literal=FILLER + "The ledger is hosted in Dublin.")
    assert frankfurt != dublin
    assert len(frankfurt) == len(dublin) == OBJECT_KEY_MAX
    assert frankfurt.startswith("l:the quarterly report lists")


def test_long_literals_equal_once_normalised_share_their_key() -> None:
    text = FILLER + "The ledger is hosted in Frankfurt."
    assert value_key(entity_id=None, literal=text) == value_key(
        entity_id=None, literal=f"  {text.upper()}  "
    )


def test_a_plain_key_is_never_as_long_as_a_digest_key() -> None:
    at_limit = "y" * (OBJECT_KEY_MAX - 2)  # "l:" + it would just fit: it gets a digest
    key = value_key(entity_id=None, literal=at_limit)
    assert len(key) == OBJECT_KEY_MAX
    assert "#sha256:" in key
