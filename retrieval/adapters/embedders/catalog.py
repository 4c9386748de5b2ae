"""The embedding models an operator offers, built on first use (retrieval.ports.EmbedderCatalog)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from curation.ports import Embedder

Build = Callable[[], Embedder]


class Catalog:
    """Providers by name, each with a passage and a query builder; `default` comes first.

    A builder runs when its role is first asked for: offering a model costs nothing
    until a workspace uses it (loading e5 takes a second and 100 MB).
    """

    def __init__(self, *, default: str, models: Mapping[str, tuple[Build, Build]]) -> None:
        if default not in models:
            raise ValueError(f"the default embedder {default!r} is not among {sorted(models)}")
        self._default = default
        self._models = dict(models)

    @property
    def default(self) -> str:
        return self._default

    def choices(self) -> tuple[str, ...]:
        return (self._default, *sorted(set(self._models) - {self._default}))

    def passage(self, provider: str) -> Embedder:
        return self._models[provider][0]()

    def query(self, provider: str) -> Embedder:
        return self._models[provider][1]()

    @classmethod
    def of(cls, embedder: Embedder, query: Embedder | None = None) -> Catalog:
        """One model offered under its own name (tests, benchmarks, one-model callers)."""
        return cls(
            default=embedder.model,
            models={embedder.model: (lambda: embedder, lambda: query or embedder)},
        )
