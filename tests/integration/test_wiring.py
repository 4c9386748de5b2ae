"""The composition root builds every configured backend, and says what is missing."""

from __future__ import annotations

import pytest

from vera import wiring


@pytest.mark.parametrize(
    ("provider", "model", "dimension"),
    [
        ("hashing", "hashing-v1-256", 256),
        ("minilm", "all-MiniLM-L6-v2", 384),
        ("e5", "multilingual-e5-small-q4", 384),
        ("openai", "text-embedding-3-small", 1536),
        ("voyage", "voyage-3.5", 1024),
    ],
)
def test_every_embedder_provider_builds_from_settings(
    settings, monkeypatch: pytest.MonkeyPatch, provider: str, model: str, dimension: int
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    settings.VERA_EMBEDDER__PROVIDER = provider
    embedder = wiring.embedder()
    assert (embedder.model, embedder.dimension) == (model, dimension)


@pytest.mark.parametrize(
    ("provider", "passage", "query"),
    [
        ("e5", "passage", "query"),
        ("voyage", "document", "query"),
        ("minilm", "windows-256-64", "windows-256-64"),
    ],
)
def test_search_embeds_queries_in_the_query_role_of_the_indexing_model(
    settings, monkeypatch: pytest.MonkeyPatch, provider: str, passage: str, query: str
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    settings.VERA_EMBEDDER__PROVIDER = provider
    indexing, searching = wiring.embedder(), wiring.query_embedder()
    assert (searching.model, searching.dimension) == (indexing.model, indexing.dimension)
    assert getattr(indexing, "inner", None) is not None  # both go through the cache
    variants = (getattr(indexing.inner, "cache_variant", None),
                getattr(searching.inner, "cache_variant", None))  # fmt: skip
    assert variants == (passage, query)
    if provider == "minilm":
        assert searching is indexing  # one role: one cache, one loaded model
    # The catalog the live search reads: each workspace's model.
    offered = wiring.RetrievalProviders().embedders()
    assert offered.query(provider) is searching
    assert offered.passage(provider) is indexing


def test_an_unknown_embedder_provider_is_a_configuration_error(settings) -> None:
    from django.core.exceptions import ImproperlyConfigured

    settings.VERA_EMBEDDER__PROVIDER = "word2vec"
    with pytest.raises(ImproperlyConfigured, match="word2vec"):
        wiring.embedder()


def test_a_missing_openai_key_is_a_clear_value_error(
    settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.VERA_JUDGE__LLM_MODEL = "gpt-test"
    with pytest.raises(ValueError, match="OPENAI_API_KEY is not set"):
        wiring.judges()


@pytest.mark.django_db
def test_an_llm_extractor_without_its_key_fails_the_run_with_the_reason(
    settings, monkeypatch: pytest.MonkeyPatch, tenant_a, tmp_path
) -> None:
    from curation.services.sources import source_create
    from curation.usecases import ingest_now
    from tenants import rls

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.VERA_EXTRACTOR__LLM_MODEL = "gpt-test"
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=tenant_a.workspace.group_id, name="docs", kind="markdown",
            config={"root": str(tmp_path)}, trust_tier=1,
        )  # fmt: skip
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.error == "environment variable OPENAI_API_KEY is not set"


def test_a_missing_voyage_key_is_a_clear_value_error(
    settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    settings.VERA_EMBEDDER__PROVIDER = "voyage"
    with pytest.raises(ValueError, match="VOYAGE_API_KEY is not set"):
        wiring.embedder()
