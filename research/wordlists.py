"""The word lists training reads: the edge model's piece vocabulary with its input embeddings (the
complexity model's edge-pieces term), Llama 2's piece vocabulary with WordLlama's embeddings (the
private-context gate), the words ordinary prompts write in lower case, and the words in capitals
that are no names."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np

from classifiers.pieces import LONGEST, START
from research.data import read_jsonl

# Read from the wheel of `wordllama` (the train extra), never imported: its loader downloads.
WORDLLAMA_VOCAB = "tokenizers/l2_supercat_tokenizer_config.json"
WORDLLAMA_WEIGHTS = "weights/l2_supercat_256.safetensors"


def wordllama() -> tuple[dict[str, int], np.ndarray]:
    """Llama 2's piece vocabulary and WordLlama's embedding of each piece."""
    import importlib.util

    from safetensors.numpy import load_file

    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ImportError("wordllama (pip install -e '.[train]') holds the static embeddings")
    root = Path(spec.origin).parent
    vocab = json.loads((root / WORDLLAMA_VOCAB).read_text(encoding="utf-8"))["model"]["vocab"]
    return vocab, load_file(str(root / WORDLLAMA_WEIGHTS))["embedding.weight"].astype(np.float64)


def gguf_pieces(path: Path) -> tuple[dict[str, int], np.ndarray]:
    """A GGUF model's byte-level BPE pieces, named as `classifiers.pieces` names them, and the
    model's input embedding of each (the bundled edge model: SmolLM2's 49,152 pieces, 576 numbers
    each). A leading space is "\u2581", a piece of one byte is "<0xNN>" too; the bytes no piece holds
    alone and the start "<s>" (SmolLM2 has none) are a row of zeros at the end; the control
    tokens ("<|im_start|>") and pieces over `LONGEST` characters (runs of "-") are left out."""
    import gguf

    reader = gguf.GGUFReader(path)
    table = next(t for t in reader.tensors if t.name == "token_embd.weight")
    embedding = gguf.quants.dequantize(table.data, table.tensor_type).astype(np.float64)
    tokens, kinds = reader.fields["tokenizer.ggml.tokens"], reader.fields["tokenizer.ggml.token_type"]
    decode, vocab = _byte_decoder(), {}
    for i, (at, kind_at) in enumerate(zip(tokens.data, kinds.data, strict=True)):
        if int(kinds.parts[kind_at][0]) != _NORMAL_TOKEN:
            continue
        raw = bytes(decode[c] for c in bytes(tokens.parts[at]).decode("utf-8"))
        if len(raw) == 1:
            vocab[f"<0x{raw[0]:02X}>"] = i
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # part of a character: reached through its bytes
            continue
        name = "\u2581" + text[1:] if text.startswith(" ") else text
        # `pieces` splits the text at white space first; a longer run of dashes is read in shorter ones
        if not any(c.isspace() for c in name) and len(name) <= LONGEST:
            vocab.setdefault(name, i)
    zero = len(embedding)
    vocab[START] = zero
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", zero)
    return vocab, np.vstack([embedding, np.zeros((1, embedding.shape[1]))])


_NORMAL_TOKEN = 1  # llama.cpp's LLAMA_TOKEN_TYPE_NORMAL; the control tokens are 3


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level BPE writes each byte as a printable character: that map, reversed."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1)]
    printable += range(ord("\u00ae"), ord("\u00ff") + 1)
    moved = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(moved)}


def vocabulary_words() -> frozenset[str]:
    """The words Llama 2's vocabulary holds whole, in lower case."""
    vocab, _ = wordllama()
    return frozenset(p[1:] for p in vocab if p.startswith("\u2581"))


def english_words() -> frozenset[str]:
    """Words a name or a place of one word is left out for being: whole in Llama 2's vocabulary, or
    written in lower case by ordinary prompts."""
    return vocabulary_words() | lowercase_words(2) | frozenset(common_words())


# Capitalized alone, never a name: "Hi, my cat just ..." was a PERSON, as was "the business I've
# bought stock from"; so were "Mi", "Ma" and "Cómo" where a prompt in Spanish, French or Italian
# begins a sentence with "my" or "how".
_NEVER_NAMES: tuple[str, ...] = ("hi", "i'm", "i've", "i'd", "i'll", "i’m", "i’ve", "i’d", "i’ll")
_NEVER_NAMES += ("mi", "mis", "mon", "ma", "mes", "mein", "meine", "meu", "meus", "minha", "minhas", "mijn", "miei")
_NEVER_NAMES += ("cómo", "qué", "dónde", "cuándo", "cuál", "cuánto", "comment", "pourquoi", "warum", "perché")
# The days of the week and the months that are no one's given name: "The meeting has been moved to
# Thursday" named a PERSON in a text that read private (April, May, June and August are names too)
_NEVER_NAMES += ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NEVER_NAMES += ("january", "february", "march", "july", "september", "october", "november", "december")
# The verbs that open an instruction and that exam questions seldom write in lower case:
# "Translate this note ..." named a PERSON in a text that read private ("Edit" is a given name)
_NEVER_NAMES += ("translate", "extract", "classify", "paraphrase", "summarize", "summarise", "rewrite", "draft")
_NEVER_NAMES += ("imagine", "analyze", "analyse", "compose", "outline", "proofread", "implement", "optimize")
_NEVER_NAMES += ("optimise", "format", "critique", "brainstorm", "pretend", "roleplay", "solve", "elaborate")
_NEVER_NAMES += ("expand", "shorten", "simplify", "please")
# Languages, as "Translate this into German" names them
_NEVER_NAMES += ("english", "german", "french", "spanish", "portuguese", "italian", "dutch", "russian", "chinese")
_NEVER_NAMES += ("japanese", "korean", "arabic", "hindi", "turkish", "polish", "swedish", "greek", "vietnamese")


@cache
def _lowercase_counts() -> Counter[str]:
    """How often the MMLU/GSM8K prompts write each word in lower case: counted once."""
    counts: Counter[str] = Counter()
    for r in read_jsonl("routellm_train.jsonl"):
        counts.update(w for w in re.findall(r"\b[a-z][a-z']+\b", r["prompt"]))
    return counts


def lowercase_words(at_least: int) -> frozenset[str]:
    """The words the MMLU/GSM8K prompts write in lower case `at_least` times."""
    return frozenset(w for w, n in _lowercase_counts().items() if n >= at_least)


def common_words() -> list[str]:
    """Words seen often in lower case in ordinary prompts: capitalized, they are rarely names."""
    return sorted(lowercase_words(15) | set(_NEVER_NAMES))


@cache  # every fold's span model reads it: the MMLU prompts and Llama 2's vocabulary, once
def acronyms() -> list[str]:
    """Words in capitals that are no names in a private text (`classifiers.privacy.capitals`):
    those public questions use ("USA", "CEO", "TV": twice or more in the MMLU/GSM8K prompts) and
    those Llama 2's vocabulary holds as one piece, which the web writes often ("JSON", "HTTP",
    "SELECT", "NULL": out of fold, leaving them out cost no PUPA recall)."""
    from classifiers.privacy.capitals import CAPITALS

    counts = Counter(w for r in read_jsonl("routellm_train.jsonl") for w in CAPITALS.findall(r["prompt"]))
    vocab, _ = wordllama()
    pieces = {p[1:] for p in vocab if p.startswith("\u2581") and CAPITALS.fullmatch(p[1:])}
    return sorted(pieces | {w for w, n in counts.items() if n >= 2})
