"""MiniLMEmbedder: the real all-MiniLM-L6-v2 (int8 ONNX), offline, on this machine's CPU."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from retrieval.adapters.embedders import MiniLMEmbedder
from retrieval.adapters.embedders.metering import Meter
from retrieval.adapters.embedders.minilm import TOKENIZER_FILE, ModelFileError

# The sentence-transformers semantic-search example for this model.
CORPUS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "A cheetah is running behind its prey.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder(batch_size=4)
    embedder.warm_up()
    return embedder


def test_minilm_scores_a_paraphrase_far_above_an_unrelated_sentence(
    minilm: MiniLMEmbedder,
) -> None:
    food, bread, baby = minilm.embed(CORPUS[:3])

    assert cosine(food, bread) > 0.6
    assert cosine(food, bread) - cosine(food, baby) > 0.5


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("A man is eating pasta.", "A man is eating food."),
        ("Someone in a gorilla costume is playing a set of drums.", "A monkey is playing drums."),
        ("A cheetah chases prey on across a field.", "A cheetah is running behind its prey."),
    ],
)
def test_minilm_finds_the_closest_sentence_of_the_corpus(
    minilm: MiniLMEmbedder, query: str, best: str
) -> None:
    documents = minilm.embed(CORPUS)
    (asked,) = minilm.embed([query])

    scores = [cosine(asked, document) for document in documents]

    assert CORPUS[scores.index(max(scores))] == best


def test_minilm_vectors_are_unit_length_and_384_wide(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(["payments-db runs PostgreSQL 16", "", "   "])

    assert (minilm.model, minilm.dimension) == ("all-MiniLM-L6-v2", 384)
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    for vector in vectors:
        assert math.sqrt(sum(value * value for value in vector)) == pytest.approx(1.0, abs=1e-5)


def test_minilm_is_deterministic_across_calls_and_instances(minilm: MiniLMEmbedder) -> None:
    first = minilm.embed(CORPUS)

    assert minilm.embed(CORPUS) == first
    assert MiniLMEmbedder(batch_size=32).embed(CORPUS) == first


def test_minilm_batched_and_single_vectors_agree(minilm: MiniLMEmbedder) -> None:
    texts = [*CORPUS, "checkout-web " * 40, "k8s"]

    batched = minilm.embed(texts)
    single = [minilm.embed([text])[0] for text in texts]

    for together, alone in zip(batched, single, strict=True):
        assert cosine(together, alone) > 0.9999
        assert max(abs(x - y) for x, y in zip(together, alone, strict=True)) < 1e-4


def test_minilm_strips_surrounding_whitespace_like_sentence_transformers(
    minilm: MiniLMEmbedder,
) -> None:
    assert minilm.embed(["  A man is eating food.\n"]) == minilm.embed(["A man is eating food."])


def test_minilm_reads_a_long_text_in_overlapping_windows_to_its_end(
    minilm: MiniLMEmbedder,
) -> None:
    long_text = "service " * 1000  # 1,000 content tokens
    step = 254 - 64  # content tokens per window, less the overlap with the next

    result = minilm.embed_with_usage([long_text, "k8s"])

    windows = 1 + -(-(1000 - 254) // step)  # the first window, then one per step to the end
    assert result.tokens == 1000 + (windows - 1) * 64 + 2 * windows + 5  # + [CLS]k##8##s[SEP]
    assert result.calls == -(-(windows + 1) // minilm.batch_size)


def test_a_phrase_near_the_end_of_a_long_text_moves_its_vector(minilm: MiniLMEmbedder) -> None:
    filler = "The quarterly report lists the office furniture inventory. " * 40  # > 256 tokens
    ending = "The ledger database is hosted in the Frankfurt region."

    with_end, without_end = minilm.embed([filler + ending, filler])
    (asked,) = minilm.embed(["Where is the ledger database hosted?"])

    assert cosine(asked, with_end) > cosine(asked, without_end) + 0.01


def test_a_text_within_one_window_gets_the_plain_mean_pooled_vector(
    minilm: MiniLMEmbedder,
) -> None:
    """Short texts: exactly sentence-transformers' pooling (mean over the mask, unit length)."""
    import numpy as np

    from retrieval.adapters.embedders.minilm import mean_pool_normalised

    runtime = minilm._runtime()
    encoding = runtime.tokenizer.encode("A man is eating food.")
    ids = np.array([encoding.ids], dtype=np.int64)
    mask = np.array([encoding.attention_mask], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    (hidden,) = runtime.session.run(["last_hidden_state"], feed)

    expected = mean_pool_normalised(hidden, mask)[0]
    (got,) = minilm.embed(["A man is eating food."])

    assert max(abs(x - y) for x, y in zip(got, expected.tolist(), strict=True)) < 1e-6


def test_minilm_is_metered_at_zero_cost_with_its_real_token_count(minilm: MiniLMEmbedder) -> None:
    result = minilm.embed_with_usage(["A man is eating food."])
    meter = Meter()

    meter.record(
        provider="MiniLMEmbedder", model=minilm.model, texts=["A man is eating food."],
        tokens=result.tokens, calls=1,
    )  # fmt: skip

    usage = meter.usage("all-MiniLM-L6-v2")
    assert (usage.tokens, usage.estimated_tokens, usage.cost_usd) == (8, 0, 0.0)


def test_minilm_loads_its_model_once_per_process(minilm: MiniLMEmbedder) -> None:
    other = MiniLMEmbedder(batch_size=7)

    assert other._runtime() is minilm._runtime()


def test_minilm_session_runs_without_the_cpu_arena_when_loaded(minilm: MiniLMEmbedder) -> None:
    options = minilm._runtime().session.get_session_options()

    assert options.enable_cpu_mem_arena is False


def test_minilm_loads_nothing_until_the_first_embedding(tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(model_file=tmp_path / "missing.onnx")

    with pytest.raises(ModelFileError, match=r"missing\.onnx"):
        embedder.embed(["anything"])


def test_minilm_refuses_a_model_file_that_is_not_the_pinned_one(tmp_path: Path) -> None:
    impostor = tmp_path / "model.onnx"
    impostor.write_bytes(b"not the model")

    with pytest.raises(ModelFileError, match="expected 8199be6f"):
        MiniLMEmbedder(model_file=impostor).embed(["anything"])


def test_vendored_tokenizer_is_the_models_own_file() -> None:
    assert TOKENIZER_FILE.stat().st_size == 466_247
    assert (TOKENIZER_FILE.parent / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_minilm_throughput_on_a_thousand_sentences(
    minilm: MiniLMEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    sentences = [
        f"Service {index % 97} in region eu-{index % 5} depends on database cluster "
        f"{index % 11} and publishes {index} events an hour to the billing queue."
        for index in range(1000)
    ]
    embedder = MiniLMEmbedder(batch_size=32)

    started = time.perf_counter()
    vectors = embedder.embed(sentences)
    elapsed = time.perf_counter() - started

    assert len(vectors) == 1000
    with capsys.disabled():
        print(f"\nMiniLM int8 ONNX: 1,000 sentences in {elapsed:.2f}s = {1000 / elapsed:.0f}/s")
