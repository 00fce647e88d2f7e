"""The word lists training reads: Llama 2's piece vocabulary with WordLlama's embeddings (the
private-context gate), the words ordinary prompts write in lower case, and the words in capitals
that are no names."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np

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
