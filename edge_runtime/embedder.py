"""Embeddings from an edge model: llama.cpp's embedding mode over the model's hidden states,
mean-pooled and normalized, in a context of its own made on first use (the generating context
keeps its KV cells for chat)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from edge_runtime.config import EdgeModelConfig
from edge_runtime.errors import PromptTooLong
from edge_runtime.gguf import resolve_gguf
from edge_runtime.threads import thread_count

if TYPE_CHECKING:
    from llama_cpp import Llama

EMBED_CTX = 2048  # tokens of one text the embedding context reads (longer ones are refused)


class Embedder:
    def __init__(self, config: EdgeModelConfig) -> None:
        self.config = config
        self._llama: Llama | None = None
        self._lock = threading.Lock()  # one context: one text batch at a time

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        """The embeddings of `texts` and the tokens read (blocking: call it off the event loop)."""
        with self._lock:
            llama = self._llama or self._load()
            window = llama.n_ctx()
            for text in texts:  # a text past the window is refused, not cut short unsaid
                needed = len(llama.tokenize(text.encode("utf-8", "replace")))
                if needed > window:
                    raise PromptTooLong(needed, window, self.config.name)
            vectors, count = llama.embed(list(texts), normalize=True, truncate=False, return_count=True)
        return [list(map(float, v)) for v in vectors], int(count)

    def _load(self) -> Llama:
        import llama_cpp

        window = min(self.config.n_ctx, EMBED_CTX)
        self._llama = llama_cpp.Llama(
            model_path=str(resolve_gguf(self.config.gguf)),
            embedding=True,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            n_ctx=window,
            n_batch=window,
            n_ubatch=window,
            n_gpu_layers=self.config.n_gpu_layers,
            n_threads=thread_count(self.config.n_threads),
            verbose=False,
        )
        return self._llama

    def close(self) -> None:
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None
