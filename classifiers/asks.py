"""What a request asks for, as a few numbers that mean the same in every domain.

A bag of words learns which subjects the weak model fails, and a subject it never saw is a coin
toss to it. What carries from one source of prompts to another is the kind of work asked for:
arithmetic and math, code, multi-step reasoning, a long or constrained piece of writing, a choice
among given options, extraction from a text the prompt supplies, small talk. Each feature here is
a count of cues in the text, on a log scale, so that one cue counts most and ten do not count ten
times as much; the complexity prior (`classifiers.complexity`) weighs them.

Read on every request that a policy routes by complexity: one pass of a few compiled patterns over
the ask and the clipped conversation (`classifiers.text_model.clipped`), well under the 1 ms a
conversation of 1,000 tokens may take.
"""

from __future__ import annotations

import math
import re
from enum import IntEnum


class Ask(IntEnum):
    """The features, in the order of the vector `features` returns."""

    WORDS = 0  # log words of the whole conversation: longer asks tend to be harder
    ASK_WORDS = 1  # log words of the ask's first line: the instruction without the text it supplies
    SUPPLIED = 2  # log words the ask supplies below its first line (an article, a list of choices)
    MATH = 3  # arithmetic, equations, quantities to compute
    NUMBERS = 4  # numbers written in the ask
    CODE = 5  # code, or asking for it
    REASONING = 6  # explain why, prove, step by step, compare, what follows if
    LONG_OUTPUT = 7  # an essay, a story, a plan: a long or composed piece of writing
    CONSTRAINTS = 8  # explicit constraints on the answer (exactly, at least N words, must, format)
    EXTRACTION = 9  # summarize, rewrite, translate, classify or extract from given text
    CHOICES = 10  # a choice among given options (A. / B. / C. lines)
    SMALL_TALK = 11  # greetings, thanks, a short personal exchange
    FACTUAL = 12  # a short factual question: what is, who was, when did, define
    TECHNICAL = 13  # the vocabulary of science, law, medicine, finance and engineering
    QUESTIONS = 14  # question marks


FEATURES = tuple(a.name.lower() for a in Ask)

_I = re.IGNORECASE
_CUES: dict[Ask, re.Pattern[str]] = {
    Ask.MATH: re.compile(
        r"\d\s*[-+*/×÷^=<>]\s*\d|[=√∑∫π]|\b(?:calculate|compute|solve|equation|how (?:many|much|long|far|old)|"
        r"percent(?:age)?|probability|average|total|sum|product|ratio|fraction|integer|divisible|remainder|"
        r"derivative|integral|matrix|vector|polynomial|function f|prime|square root|area|volume|perimeter|"
        r"speed|rate|cost|price|profit|interest|each|per|twice|half|times as)\b",
        _I,
    ),
    Ask.NUMBERS: re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w.])"),
    Ask.CODE: re.compile(
        r"```|\b(?:def|class|return|import|function|var|const|let|public|void|int|printf|console\.log|"
        r"SELECT|FROM|WHERE)\b|[{};]\s*$|\b(?:code|program|script|python|javascript|typescript|java|c\+\+|"
        r"rust|golang|sql|regex|api|algorithm|implement|debug|bug|compile|refactor|unit test|recursion|"
        r"array|string|loop|library|framework|html|css|json|bash|shell)\b",
        _I | re.MULTILINE,
    ),
    Ask.REASONING: re.compile(
        r"\b(?:why|explain|reason(?:ing)?|prove|proof|justify|step[- ]by[- ]step|analy[sz]e|analysis|compare|"
        r"contrast|evaluate|assess|implications?|consequences?|trade-?offs?|pros and cons|what would happen|"
        r"infer|deduce|conclude|therefore|hypothes[ie]s|argue|argument|critique|logic(?:al)?|if .{1,40} then)\b",
        _I,
    ),
    Ask.LONG_OUTPUT: re.compile(
        r"\b(?:essay|story|poem|poetry|song|lyrics|novel|chapter|article|blog|post|speech|script|letter|"
        r"report|proposal|plan|itinerary|guide|tutorial|curriculum|outline|business plan|cover letter|"
        r"screenplay|dialogue|haiku|sonnet|limerick|rhym\w*|verses?|paragraphs?|detailed|comprehensive|"
        r"in[- ]depth|thorough|elaborate|creative|imagine|write)\b",
        _I,
    ),
    Ask.CONSTRAINTS: re.compile(
        r"\b(?:exactly|at (?:least|most)|no (?:more|less) than|must|should not|do not|don't|without|only|"
        r"(?:\d+|one|two|three|four|five|ten) (?:words|sentences|paragraphs|bullet|items|lines|points)|"
        r"format(?:ted)? as|in the style of|tone|bullet points?|table|json|markdown|numbered)\b",
        _I,
    ),
    Ask.EXTRACTION: re.compile(
        r"\b(?:summari[sz]e|summary|tl;?dr|extract|rewrite|rephrase|paraphrase|translate|translation|"
        r"classify|categori[sz]e|label|correct the grammar|proofread|fix the grammar|simplify|shorten|"
        r"(?:in|from) the (?:text|passage|article|paragraph|email|document|following)|the following|below|above|"
        r"given (?:text|passage))\b",
        _I,
    ),
    Ask.CHOICES: re.compile(r"^\s*(?:\(?[A-Da-d][.)]|[A-D]:)\s+\S", re.MULTILINE),
    Ask.SMALL_TALK: re.compile(
        r"^\s*(?:hi|hello|hey|thanks|thank you|good (?:morning|evening|night)|how are you|what's up|lol|ok|okay)\b|"
        r"\b(?:joke|fun fact|favorite|favourite|feel|feeling|advice|recommend|suggest|tips?)\b",
        _I | re.MULTILINE,
    ),
    Ask.FACTUAL: re.compile(
        r"^\s*(?:what (?:is|are|was|were)|who (?:is|was|were)|when (?:did|was|is)|where (?:is|was|are)|"
        r"define|definition of|name (?:a|the|some)|list|give me)\b",
        _I | re.MULTILINE,
    ),
    Ask.TECHNICAL: re.compile(
        r"\b(?:theorem|lemma|quantum|molecul\w*|enzyme|protein|cell|gene\w*|atom\w*|electron\w*|chemical|"
        r"reaction|thermodynamic\w*|entropy|velocity|acceleration|momentum|voltage|circuit|frequency|"
        r"statistic\w*|regression|variance|hypothesis|economic\w*|inflation|fiscal|monetary|market|"
        r"liabilit\w*|plaintiff|defendant|statute|constitution\w*|contract|tort|jurisdiction|diagnos\w*|"
        r"patient|clinical|symptom\w*|syndrome|dosage|anatom\w*|physiolog\w*|philosoph\w*|epistem\w*|"
        r"algorithm\w*|complexity|neural|network|database|protocol|encryption|compiler|kernel)\b",
        _I,
    ),
}
_WORD = re.compile(r"\S+")
_LEADING_SPACE = re.compile(r"\s*")
ASK_CHARS = 1000  # an ask's first line is read this far: beyond, its log length barely moves
HEAD_CHARS, TAIL_CHARS = 100, 500  # the cues are read in a long text's start and end


def words_term(words: int) -> float:
    """log(1 + words) of the whole conversation, words as the token estimate counts them (spaces
    and line breaks, plus one: `classifiers.tokens`), so no text is read again for it."""
    return math.log1p(words)


def ask_term(ask: str) -> float:
    """log(1 + words) of the ask's first line that holds any: the instruction, without the text
    it supplies below it (an article, a contract, a list of choices)."""
    leading = _LEADING_SPACE.match(ask)  # without copying a long message, as lstrip() would
    start = leading.end() if leading else 0
    end = ask.find("\n", start, start + ASK_CHARS)
    return math.log1p(len(ask[start : end if end >= 0 else start + ASK_CHARS].split()))


def _log_count(pattern: re.Pattern[str], text: str) -> float:
    return math.log1p(sum(1 for _ in pattern.finditer(text)))


def _clipped(text: str) -> str:
    return text if len(text) <= HEAD_CHARS + TAIL_CHARS else text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]


def features(text: str, ask: str, words: int) -> list[float]:
    """The feature vector (`Ask` order) of a conversation whose whole text is `text`, whose ask (the
    latest user message) is `ask`, with `words` words in all."""
    first_line = ask_term(ask)
    ask, text = _clipped(ask), _clipped(text)
    _, _, supplied = ask.lstrip().partition("\n")
    out = [0.0] * len(Ask)
    out[Ask.WORDS] = words_term(words)
    out[Ask.ASK_WORDS] = first_line
    out[Ask.SUPPLIED] = math.log1p(len(_WORD.findall(supplied)))
    for feature, pattern in _CUES.items():
        out[feature] = _log_count(pattern, ask if feature is not Ask.TECHNICAL else text)
    out[Ask.QUESTIONS] = math.log1p(ask.count("?"))
    return out
