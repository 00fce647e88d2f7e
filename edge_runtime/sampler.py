"""How one sequence draws its next token: llama.cpp's sampler chain (logit biases, penalties, then
top_k, top_p, temperature and the seeded draw, or greedy) and, for a constrained answer (a tool
call, a JSON schema), its grammar checked against the token drawn.

A grammar applied to every candidate first costs about 10 ms a token over the bundled model's
49,152 tokens on 2 cores, as much as the model's own step. llama.cpp's common sampler
(`common/sampling.cpp`) draws first and asks the grammar about the one token drawn; only when the
grammar refuses it does it apply the grammar to every candidate and draw again. A model that writes
what the grammar allows, as a constrained model mostly does, pays for the check alone. The answer
is the same: a greedy token the grammar allows is the one greedy decoding under the grammar would
pick, and a refused one is drawn again from the grammar's candidates.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

import numpy as np

from edge_runtime.sampling import Sampling

TOP_K = 40  # llama.cpp's default: the tail past it carries no mass worth a full sort
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])  # llama_token_data


@cache
def _token_ids(n_vocab: int) -> np.ndarray[Any, np.dtype[np.int32]]:
    """Every token id, once per vocabulary: what a candidates array is filled from."""
    return np.arange(n_vocab, dtype=np.int32)


class Sampler:
    """One sequence's draw: `chain` (None: greedy, an argmax) and `grammar` (None: unconstrained),
    both llama.cpp samplers that live as long as the sequence (`free`)."""

    def __init__(self, lib: Any, chain: Any, grammar: Any, n_vocab: int, grammar_first: bool = False) -> None:
        self.lib, self.chain, self.grammar, self.n_vocab = lib, chain, grammar, n_vocab
        # `grammar_first`: the grammar applied to every candidate before each draw, as a chain that
        # holds it does; kept to measure the check against it (`edgeway bench constrained`)
        self.grammar_first = grammar_first

    @classmethod
    def of(
        cls,
        lib: Any,
        vocab: Any,
        n_vocab: int,
        sampling: Sampling,
        *,
        temperature: float,
        top_p: float,
        seed: int,
        max_tokens: int,
        grammar_first: bool = False,
    ) -> Sampler | None:
        """The sampler `sampling` asks for; None where greedy decoding with nothing else is (the
        scheduler's argmax, and the only draw speculative decoding keeps)."""
        penalized = bool(sampling.frequency_penalty or sampling.presence_penalty)
        chain = None
        if temperature > 0 or penalized or sampling.logit_bias:
            chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
            if sampling.logit_bias:  # as llama.cpp's own sampler orders them: biases, penalties, then the rest
                biases = (lib.llama_logit_bias * len(sampling.logit_bias))(
                    *(lib.llama_logit_bias(t, b) for t, b in sampling.logit_bias)
                )
                lib.llama_sampler_chain_add(
                    chain, lib.llama_sampler_init_logit_bias(n_vocab, len(sampling.logit_bias), biases)
                )
            if penalized:  # over the tokens written so far (the sampler sees what it drew)
                lib.llama_sampler_chain_add(
                    chain,
                    lib.llama_sampler_init_penalties(
                        n_vocab, max_tokens, 1.0, sampling.frequency_penalty, sampling.presence_penalty
                    ),
                )
            if temperature > 0:
                # top_k first, as llama.cpp's own server does: top_p, temperature and the draw then
                # work on TOP_K candidates, not the whole vocabulary (55 us a token instead of 360 here)
                lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_k(TOP_K))
                lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_p(top_p, 1))
                lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(temperature))
                lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(seed & 0xFFFFFFFF))
            else:
                lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        grammar = None
        if sampling.grammar is not None:
            grammar = lib.llama_sampler_init_grammar(vocab, sampling.grammar.encode(), b"root")
        if chain is None and grammar is None:
            return None
        return cls(lib, chain, grammar, n_vocab, grammar_first)

    def draw(self, ctx: Any, index: int, logits: np.ndarray[Any, np.dtype[np.float32]] | None) -> int:
        """The next token from the logits at `index` of the context's last decode (`logits`: those
        logits, read by the caller where the grammar needs them; unused otherwise)."""
        if self.grammar is None:
            return int(self.lib.llama_sampler_sample(self.chain, ctx, index))
        assert logits is not None
        token = self._pick(logits, self.grammar_first)
        if not self.grammar_first and not self._allowed(token):
            token = self._pick(logits, True)
        if self.chain is not None:
            self.lib.llama_sampler_accept(self.chain, token)
        self.lib.llama_sampler_accept(self.grammar, token)
        return token

    def _pick(self, logits: np.ndarray[Any, np.dtype[np.float32]], constrained: bool) -> int:
        if self.chain is None and not constrained:
            return int(logits.argmax())
        lib = self.lib
        data = np.empty(self.n_vocab, TOKEN_DATA)
        data["id"], data["logit"], data["p"] = _token_ids(self.n_vocab), logits, 0.0
        candidates = lib.llama_token_data_array(
            data.ctypes.data_as(ctypes.POINTER(lib.llama_token_data)), self.n_vocab, -1, False
        )
        if constrained:
            lib.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        if self.chain is None:  # greedy over what the grammar left (it leaves the order as it was)
            return int(data["id"][int(data["logit"].argmax())])
        lib.llama_sampler_apply(self.chain, ctypes.byref(candidates))
        return int(candidates.data[candidates.selected].id)

    def _allowed(self, token: int) -> bool:
        lib = self.lib
        single = lib.llama_token_data(token, 1.0, 0.0)
        candidates = lib.llama_token_data_array(ctypes.pointer(single), 1, -1, False)
        lib.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        return bool(np.isfinite(candidates.data[0].logit))

    def free(self) -> None:
        for sampler in (self.chain, self.grammar):
            if sampler is not None:
                self.lib.llama_sampler_free(sampler)
