"""Token counts for context-pack budgets, from the local MiniLM's WordPiece tokenizer.

The network is closed (no tiktoken downloads), so a pack's budget is counted with the
tokenizer that ships with the local embedder: the `tokenizer.json` of all-MiniLM-L6-v2
vendored beside `retrieval.adapters.embedders.minilm` (BERT's uncased WordPiece, 30,522
entries), checked by the same sha256, loaded with the `tokenizers` library, without
truncation and without [CLS]/[SEP]. It approximates GPT-style BPE tokenizers (cl100k,
o200k): on English prose the two counts are close, on code, URLs and non-Latin scripts
WordPiece tends to count more (it splits unknown words into more pieces), so a budget
counted with it rarely overflows a GPT-style one by much. It is the count a pack
promises, not the caller model's.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from retrieval.adapters.embedders.minilm import TOKENIZER_FILE, TOKENIZER_SHA256, _verified

NAME = "minilm-wordpiece"


class WordPieceTokenizer:
    """retrieval.ports.Tokenizer: the MiniLM embedder's WordPiece, loaded once per process."""

    name = NAME

    def __init__(self, path: Path = TOKENIZER_FILE) -> None:
        self._path = path
        self._loaded: Any = None  # tokenizers.Tokenizer (loaded on first count)
        self._lock = threading.Lock()

    def _tokenizer(self) -> Any:
        with self._lock:
            if self._loaded is None:
                from tokenizers import Tokenizer

                loaded = Tokenizer.from_file(str(_verified(self._path, TOKENIZER_SHA256)))
                loaded.no_padding()
                loaded.no_truncation()
                self._loaded = loaded
            return self._loaded

    def count(self, text: str) -> int:
        return len(self._tokenizer().encode(text, add_special_tokens=False).ids)
