"""Links: web addresses ("https://gitlab.com/acme/payroll", "www.mallotts.com") and bare host
names ("blacksunplc.com", "FOREX.com").

A link names a person's page, a company's site or a shared document as surely as their name
does: 47 of PUPA's 438 private prompts hold one, most marked private by its annotators, and 2 of
AlpacaEval's 403 public instructions ("medium.com", a DOI). Whether it is private is a question of the
text around it, so a link is a finding the private-context gate decides on, as a name the span
model finds is (`SpanModel`): found in a letter, a résumé or a log, not in a question about the
world.

Each pattern is tried only where its literal occurs (`anchors.anchored`): "://", "www." or a
top-level domain in lower case. Top-level domains that are also file extensions (.py, .pl, .js,
.md, .sh) are left out: "train.py" is a file. A host of three labels or more may end in any
country's domain ("academics.klef.in", "bisw87.misc.t-mobile.pl"): no file is named so. An
address's domain alone, after an "@" that follows no address's local part ("from @blacksunplc.com
to @blacksun-global.com"), is a host.
"""

from __future__ import annotations

import re

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding

CONFIDENCE = 0.6  # below the span model's `confident`: the gate decides
DETECTOR = "link"
# In lower case, as hosts are written: "Paris.It is" is a sentence missing its space. Two-letter
# domains that end words too often ("log.in", "do.it", "ref.no") are left out with the extensions.
TLDS = "com org net edu gov info biz io co ai app dev tv ly uk ca au de fr nl ch eu ru cn jp kr br".split()
# After two labels or more, the second of them three characters or more ("e.g.in" is no host).
DEEP_TLDS = (
    "in pl it es pt se no dk fi at be cz sk hu ro bg gr tr ua by kz ir il sa ae qa eg ng ke za "
    "pk bd lk vn th my sg id ph hk tw mx ar cl pe ve nz us"
).split()
_END = r"(?<![.,;:!?'\"’”)\]])"  # a link does not end in the punctuation around it
# A link ends at full-width punctuation as at a space: Chinese and Japanese put no space after one
# ("请访问https://example.com/path。谢谢", "（见https://example.com/a）"). Their letters may be in
# a path ("https://zh.wikipedia.org/wiki/北京").
_NOT_IN = "\\s<>\"'`\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
_PATH = rf"(?:[/?#][^{_NOT_IN}]*)?"
_SCHEMED = re.compile(rf"[A-Za-z][A-Za-z0-9+.-]{{1,20}}://[^{_NOT_IN}/?#]+" + _PATH + _END)
_WWW = re.compile(r"(?i:www)\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+" + _PATH + _END)
# A label may start with an underscore: the service labels of SRV names, "_mongodb._tcp.acme.net".
_LABEL = r"_?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NO_LOCAL_PART = r"(?<![\w.-])(?<![\w.+%-]@)"  # "@acme.com" may be a host; "jane@acme.com" is an email
_TLD_END = r"(?![\w-]|\.[A-Za-z0-9])"
_HOST = re.compile(rf"{_NO_LOCAL_PART}{_LABEL}(?:\.{_LABEL}){{0,8}}\.(?:{'|'.join(TLDS)}){_TLD_END}" + _PATH + _END)
_DEEP_HOST = re.compile(
    rf"{_NO_LOCAL_PART}{_LABEL}(?:\.{_LABEL}){{0,7}}\.[A-Za-z0-9][A-Za-z0-9-]{{1,61}}[A-Za-z0-9]"
    rf"\.(?:{'|'.join(DEEP_TLDS)}){_TLD_END}" + _PATH + _END
)
_SCHEME = 21  # the longest scheme `_SCHEMED` reads before "://"
_DOTS = tuple(f".{tld}" for tld in TLDS)
_DEEP_DOTS = tuple(f".{tld}" for tld in DEEP_TLDS)
CUES = Anchors(("://", *_DOTS, *_DEEP_DOTS), ("www.",))
_DOT_SET, _DEEP_DOT_SET, _SCHEMES = frozenset(_DOTS), frozenset(_DEEP_DOTS), frozenset(("://",))
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def _host_starts(text: str, dots: list[int]) -> list[int]:
    """Where the host names ending in the top-level domains at `dots` can begin: each run of host
    characters is walked once, however many dots it holds ("ab.coxab.cox..." x 10,000). Only a
    run's start can: every other place in it follows a host character, which `_HOST` does not
    start after."""
    starts, run_start, run_end = [], -1, -1
    for dot in sorted(dots):
        if not run_start <= dot < run_end:
            run_start = run_end = dot
            while run_start > 0 and text[run_start - 1] in _HOST_CHARS:
                run_start -= 1
            while run_end < len(text) and text[run_end] in _HOST_CHARS:
                run_end += 1
            starts.append(run_start)
    return starts


def find_links(text: str, hits: Hits) -> list[Finding]:
    """`hits`: `CUES.find(text)`, or more."""
    spans: list[tuple[int, int]] = []
    if "://" in hits:
        starts = starts_of(hits, _SCHEMES, range(2, _SCHEME + 1))
        spans += [m.span() for m in anchored(_SCHEMED, text, starts)]
    if "www." in hits:
        spans += [m.span() for m in anchored(_WWW, text, hits["www."])]
    for pattern, dot_set in ((_HOST, _DOT_SET), (_DEEP_HOST, _DEEP_DOT_SET)):
        dots = [at for dot in dot_set.intersection(hits) for at in hits[dot]]
        if dots:
            spans += [m.span() for m in anchored(pattern, text, _host_starts(text, dots))]
    kept: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        if not kept or start >= kept[-1][1]:  # "www.x.com" is one link, not two
            kept.append((start, end))
    return [Finding("URL", start, end, CONFIDENCE, DETECTOR) for start, end in kept]
