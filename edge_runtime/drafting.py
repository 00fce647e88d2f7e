"""A draft model for speculative decoding (`speculative: {mode: draft, draft_gguf: ...}`).

A small GGUF with the served model's vocabulary guesses each drafting sequence's next tokens,
greedily, in batched steps of its own, just before the served model's step; the served model
verifies the guesses in that step as it does prompt-lookup guesses (`edge_runtime.speculation`
decides who drafts and how far; `edge_runtime.batch` keeps only what the served model agrees with).

The draft has its own KV cache with one sequence per slot of the served model's. What it holds of a
slot is a run of a sequence's tokens (prompt, then answer) and the guesses it last made after them.
Each time the sequence drafts, that run is cut back to where it still agrees with the sequence (the
accepted guesses stay, a rejected one goes) and the rest is read. A prompt the draft has not read
is read at most `CATCH_UP` tokens a step, all sequences together, and the sequence drafts once the
draft has caught up: a document does not hold every sequence's step behind the draft's prefill.
Its cost, reading included, is measured and charged to the guesses, so a draft that does not pay
for itself stops being run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edge_runtime.config import EdgeModelConfig
from edge_runtime.decoding import common_start, logits_at, put
from edge_runtime.errors import EdgeError
from edge_runtime.gguf import resolve_gguf

CATCH_UP = 128  # prompt tokens the draft reads in one step, all sequences together


class DraftModel:
    """A second llama.cpp model and context that proposes tokens for the served model's slots."""

    def __init__(
        self,
        lib: Any,
        path: Path,
        served_vocab: Any,
        n_ctx: int,
        parallel: int,
        n_batch: int,
        n_threads: int,
        n_gpu_layers: int,
    ) -> None:
        self.lib = lib
        model_params = lib.llama_model_default_params()
        model_params.n_gpu_layers = n_gpu_layers
        self.model = lib.llama_model_load_from_file(str(path).encode(), model_params)
        if not self.model:
            raise EdgeError(f"llama.cpp could not load the draft model {path}")
        vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = int(lib.llama_vocab_n_tokens(vocab))
        mismatch = _vocab_mismatch(lib, served_vocab, vocab)
        if mismatch:
            lib.llama_model_free(self.model)
            raise EdgeError(f"the draft model {path.name} cannot draft for this model: {mismatch}")
        params = lib.llama_context_default_params()
        # Room for what the served cache holds, plus a step's guesses past it.
        params.n_ctx = n_ctx + n_batch
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = parallel
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = n_threads
        self.ctx = lib.llama_init_from_model(self.model, params)
        if not self.ctx:
            lib.llama_model_free(self.model)
            raise EdgeError("llama.cpp could not create the draft model's context")
        self.memory = lib.llama_get_memory(self.ctx)
        self.n_batch = n_batch
        self.batch = lib.llama_batch_init(n_batch, 0, 1)
        self.held: dict[int, list[int]] = {}  # slot -> the tokens in the draft's cache, in order
        # slot -> the token list it last read from (a sequence's, grown in place) and how many of
        # `held` are that sequence's own: the next step compares only what came after them
        self.source: dict[int, tuple[list[int], int]] = {}
        self.failures = 0  # steps the draft could not decode (its cache was cleared)

    def close(self) -> None:
        self.lib.llama_batch_free(self.batch)
        self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)

    def propose(self, wants: list[tuple[int, list[int], int]]) -> list[list[int]]:
        """For each (slot, tokens, most): up to `most` guesses to follow `tokens` (a sequence's
        prompt and answer so far, the last one the token the served model decodes next); none for
        a sequence whose prompt the draft is still reading."""
        lib, n, budget = self.lib, 0, CATCH_UP
        guesses: list[list[int]] = [[] for _ in wants]
        drafting: list[tuple[int, int, int, int]] = []  # (which, slot, logits index, next position)
        for which, (slot, tokens, most) in enumerate(wants):
            held = self.held.setdefault(slot, [])
            source, known = self.source.get(slot, (None, 0))
            if source is tokens:  # the usual case: the same sequence, grown since it last drafted
                common = known + common_start(held[known:], tokens[known:])
            else:  # the slot serves another request now
                common = common_start(held, tokens)
            common = min(common, len(tokens) - 1)  # the last token is read again: its logits guess
            if common < len(held):
                lib.llama_memory_seq_rm(self.memory, slot, common, -1)
                del held[common:]
            take = min(len(tokens) - common, budget, self.n_batch - n)
            for k in range(take):
                put(self.batch, n, tokens[common + k], common + k, slot, False)
                n += 1
            held += tokens[common : common + take]
            self.source[slot] = (tokens, len(held))
            budget -= take
            if len(held) == len(tokens) and most > 0:
                self.batch.logits[n - 1] = 1
                drafting.append((which, slot, n - 1, len(tokens)))
        while n:
            self.batch.n_tokens = n
            if lib.llama_decode(self.ctx, self.batch) != 0:
                self._forget_all()
                return [[] for _ in wants]
            n, going = 0, []
            for which, slot, index, position in drafting:
                token = int(logits_at(self.lib, self.ctx, index, self.n_vocab).argmax())
                guesses[which].append(token)
                if len(guesses[which]) < wants[which][2]:  # read it: the next guess follows it
                    put(self.batch, n, token, position, slot, True)
                    self.held[slot].append(token)
                    going.append((which, slot, n, position + 1))
                    n += 1
            drafting = going
        return guesses

    def kept(self, slot: int, prompt_tokens: int) -> None:
        """The served model keeps only the prompt of a slot it frees: so does the draft."""
        held = self.held.get(slot)
        if held is not None and len(held) > prompt_tokens:
            self.lib.llama_memory_seq_rm(self.memory, slot, prompt_tokens, -1)
            del held[prompt_tokens:]
        self.source.pop(slot, None)  # its sequence has ended: the next one is compared whole

    def forget(self, slot: int) -> None:
        self.lib.llama_memory_seq_rm(self.memory, slot, -1, -1)
        self.held.pop(slot, None)
        self.source.pop(slot, None)

    def _forget_all(self) -> None:
        self.failures += 1
        self.lib.llama_memory_clear(self.memory, True)
        self.held.clear()
        self.source.clear()


def check_drafts(configs: list[EdgeModelConfig]) -> None:
    """Raise EdgeError naming the first draft model whose vocabulary is not its model's, read from
    the two files' vocabularies alone (no weights): what `edgeway serve` checks before it starts."""
    import llama_cpp

    for config in configs:
        spec = config.speculative
        if spec is None or spec.draft_gguf is None:
            continue
        served = llama_cpp.Llama(model_path=str(resolve_gguf(config.gguf)), vocab_only=True, verbose=False)
        draft = llama_cpp.Llama(model_path=str(resolve_gguf(spec.draft_gguf)), vocab_only=True, verbose=False)
        try:
            mismatch = _vocab_mismatch(llama_cpp, served._model.vocab, draft._model.vocab)
        finally:
            served.close()
            draft.close()
        if mismatch:
            raise EdgeError(f"the draft model {spec.draft_gguf} cannot draft for {config.name}: {mismatch}")


def _vocab_mismatch(lib: Any, served: Any, draft: Any) -> str:
    """Why the draft's token ids do not mean the served model's tokens, or '' when they do."""
    size, draft_size = int(lib.llama_vocab_n_tokens(served)), int(lib.llama_vocab_n_tokens(draft))
    if size != draft_size:
        return f"its vocabulary has {draft_size} tokens, the served model's {size}"
    for token in range(size):  # every one: 0.1 s for 49,152 tokens, once at start-up
        ours, theirs = lib.llama_vocab_get_text(served, token), lib.llama_vocab_get_text(draft, token)
        if ours != theirs:
            return f"token {token} is {theirs!r} there, not {ours!r}"
    return ""
