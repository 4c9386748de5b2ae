"""A document's text cut into marked and plain pieces, and the order of a card's claims."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from curation.domain.highlight import Piece, card_order, highlight

spans = st.lists(st.tuples(st.integers(-5, 60), st.integers(-5, 60)), max_size=6)


@given(text=st.text(max_size=50), spans=spans)
def test_the_pieces_are_the_text_again_whatever_the_spans(
    text: str, spans: list[tuple[int, int]]
) -> None:
    assert "".join(piece.text for piece in highlight(text, spans)) == text


@given(text=st.text(min_size=1, max_size=50), spans=spans)
def test_exactly_the_covered_characters_are_marked(text: str, spans: list[tuple[int, int]]) -> None:
    covered = {i for start, end in spans for i in range(max(0, start), min(len(text), end))}
    marked, cursor = set(), 0
    for piece in highlight(text, spans):
        if piece.marked:
            marked |= set(range(cursor, cursor + len(piece.text)))
        cursor += len(piece.text)
    assert marked == covered


def test_spans_become_one_mark_when_they_overlap() -> None:
    assert highlight("abcdefgh", [(1, 4), (3, 6)]) == [
        Piece("a", marked=False),
        Piece("bcdef", marked=True),
        Piece("gh", marked=False),
    ]


def test_relations_come_before_passages_then_in_the_documents_order() -> None:
    claims = [("STATES", 0, 1), ("USES", 40, 2), ("RUNS_ON", 10, 3), ("DEPENDS_ON", None, 4)]
    ordered = sorted(claims, key=lambda c: card_order(*c))
    assert [pk for _, _, pk in ordered] == [3, 2, 4, 1]
