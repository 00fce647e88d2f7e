"""The two shapes of text model the classifiers score: TF-IDF grams summed in C, and word pieces
whose static embeddings were folded into one score each. Both must score exactly what training
fitted, so each is checked here against a plain reading of its definition."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers.pieces import NEWLINE, START, PieceModel, pieces, split
from classifiers.privacy.context import PrivateContext
from classifiers.text_model import TOKEN_PATTERNS, SparseTextModel
from classifiers.tokens import _SYMBOLS, text_counts

VOCAB = {f"<0x{b:02X}>": 100 + b for b in range(256)}  # NEWLINE among them
VOCAB.update({START: 1, "\u2581ab": 3, "\u2581a": 4, "b": 5, "c": 6, "\u2581": 7, "bc": 8})
LONGEST = max(len(p) for p in VOCAB)
JOIN = "".join


def test_a_run_splits_by_longest_match_and_falls_back_to_bytes():
    assert split("ab", VOCAB, LONGEST) == [3]
    assert split("abc", VOCAB, LONGEST) == [3, 6]  # "▁ab" then "c": longest first
    assert split("bc", VOCAB, LONGEST) == [7, 8]
    assert split("é", VOCAB, LONGEST) == [7, 100 + 0xC3, 100 + 0xA9]  # no piece: its UTF-8 bytes


def test_a_text_is_its_start_its_runs_and_its_line_breaks():
    assert pieces("ab c\nab", VOCAB, LONGEST) == [1, 3, 7, 6, VOCAB[NEWLINE], 3]
    assert pieces("", VOCAB, LONGEST) == [1]


def _reference_logit(data: dict, text: str) -> float:
    scores = data["scores"]
    found = pieces(text, scores, max(len(p) for p in scores))
    return data["bias"] + sum(found) / len(found)


ODD_TEXT = ["a", "b", "c", "ab", "é", " ", "\n", "\t", "\u00a0", "\u2028", "🎉", "\ud800"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ODD_TEXT)).map(JOIN))
def test_the_piece_model_is_its_mean_piece_score(text):
    """In C, as `pieces` finds them in Python: spaces of every kind end a run, a line break is a
    piece, what no piece holds is its bytes (a lone surrogate too)."""
    data = {"bias": -0.5, "scores": {p: (i % 7) / 3 - 1 for p, i in VOCAB.items()}}
    assert PieceModel(data).logit(text) == pytest.approx(_reference_logit(data, text), abs=1e-12)


def test_a_vocabulary_without_the_byte_pieces_is_refused():
    with pytest.raises(ValueError, match="byte fallback"):
        PieceModel({"bias": 0.0, "scores": {START: 0.0, "a": 1.0}})


def _reference_sums(data: dict, text: str) -> tuple[float, float]:
    words = re.findall(data["token_pattern"], text)
    grams = set(words) | {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}
    known = [data["grams"][g] for g in grams if g in data["grams"]]
    return sum(w for w, _ in known), sum(q for _, q in known)


GRAMS = {"ab": [1.0, 2.0], "ab cd": [0.5, 1.0], "cd": [-2.0, 4.0], "é1": [3.0, 9.0], "x_y": [0.25, 1.0]}


@pytest.mark.parametrize("pattern", sorted(TOKEN_PATTERNS))
@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["ab", "cd", "é1", "x_y", "a", " ", "  ", "\n", "-", "ab_cd", "東京"])).map(JOIN))
def test_the_grams_are_summed_once_each_as_the_token_pattern_finds_them(pattern, text):
    data = {"token_pattern": pattern, "bias": 0.1, "grams": GRAMS}
    weighted, squares = _reference_sums(data, text)
    expected = 0.1 + (weighted / math.sqrt(squares) if squares else 0.0)
    assert SparseTextModel(data).logit(text) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["ab", "cd", "é1", "x_y", " ", "\n"])).map(JOIN), min_size=2, max_size=6))
def test_one_model_counts_each_gram_once_per_text_not_once_ever(texts):
    """The model marks the grams a call has counted (classifiers/scan/grams.c); a later text
    counts them again, the same text too."""
    data = {"token_pattern": r"\b\w\w+\b", "bias": 0.0, "grams": GRAMS}
    model = SparseTextModel(data)
    for text in [*texts, texts[-1]]:
        weighted, squares = _reference_sums(data, text)
        assert model.logit(text) == pytest.approx(weighted / math.sqrt(squares) if squares else 0.0, abs=1e-12)


def test_a_token_pattern_without_a_compiled_reading_is_refused():
    with pytest.raises(ValueError, match="no compiled scan"):
        SparseTextModel({"token_pattern": r"\w+", "bias": 0.0, "grams": {}})


def test_the_gate_adds_its_two_terms_and_reads_a_letter_as_private():
    gate = PrivateContext()
    letter = (
        "Please improve this email to my landlord: Dear Mr. Havel,\nthe heating in flat 4 at Korunni 12 has"
        " not worked since Monday. I have called twice.\nKind regards,\nJana Novotna"
    )
    words, piece = gate.terms(letter)
    assert gate.score(letter) == pytest.approx(1 / (1 + math.exp(-(words + piece))))
    assert gate.score(letter) > 0.8
    assert gate.score("Who was the first president of the United States?") < 0.2


COUNTED_TEXT = ["a", " ", "\n", "7", "٣", ".", "@", "é", "ÿ", "中", "🎉", "\ud800", "\x7f"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(COUNTED_TEXT)).map(JOIN))
def test_the_token_estimates_counts_are_those_of_a_plain_reading(text):
    """Counted in C in the str's own width (1, 2 or 4 bytes a character); UTF-8 as
    "surrogatepass" writes it."""
    extra = len(text.encode("utf-8", "surrogatepass")) - len(text)
    digits = sum("0" <= c <= "9" for c in text)
    symbols = sum(c in _SYMBOLS for c in text)
    assert text_counts(text) == (text.count(" "), text.count("\n"), digits, symbols, extra, len(text))
