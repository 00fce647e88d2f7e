"""Names that other languages introduce: "Je m'appelle jean dupont", "Me llamo María García",
"Ich heiße Jürgen Müller", "Меня зовут Иван", "我叫王小明", "请帮我给张伟先生写信",
"山田太郎と申します", "제 이름은 김민수입니다".

`introduced` reads the English cues ("my name is", "I'm ..."); the span model reads capitals and
English words, and Chinese, Japanese and Korean have no capitals. After these cues the name is one
or two words (Latin, Greek or Cyrillic letters), or a run of ideographs, kana or Hangul cut where
the sentence goes on (a particle, a copula, punctuation). Chinese honorifics ("先生", "女士",
"老师") name a person only after a common surname ("数学老师" is a subject's teacher).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding

DETECTOR = "named"
CONFIDENCE = 0.7  # as `introduced`'s: the cue says what the words are
_LATIN_CUES = (
    "je m'appelle", "je m’appelle", "mon nom est", "me llamo", "mi nombre es", "mi chiamo", "il mio nome è",
    "ich heiße", "ich heisse", "mein name ist", "meu nome é", "eu me chamo", "mijn naam is", "ik heet",
    "меня зовут", "моё имя", "мое имя",
)  # fmt: skip
_WORD = r"[^\W\d_][^\W\d_'’-]*"
_LATIN = re.compile(
    r"(?i)(?<![^\W\d_])(?:je m['’]appelle|mon nom est|me llamo|mi nombre es|mi chiamo|il mio nome è|ich hei(?:ß|ss)e|"
    r"mein name ist|meu nome é|eu me chamo|mijn naam is|ik heet|меня зовут|мо[её] имя)[ \t]+"
    rf"({_WORD}(?:[ \t]+{_WORD})?)"
)
# Words that follow those cues without being a name ("me llamo la atención" is not one)
_NOT_NAMES = frozenset("la el le les los las un una une der die das ein eine de do da o a".split())
_HAN = "\u4e00-\u9fff"
_KANA = "\u3040-\u30ff"
_HANGUL = "\uac00-\ud7a3"
_CJK_CUES = ("我叫", "我的名字是", "我的名字叫", "我姓", "私の名前は", "제 이름은", "저의 이름은")
_HUMBLE = "と申します"  # after the name
_CHINESE_NAMED = re.compile(rf"(?:我叫|我的名字[是叫]|我姓)[ \t]*([{_HAN}]{{1,4}})")
_JAPANESE_NAMED = re.compile(rf"私の名前は[ \t]*([{_HAN}{_KANA}]{{2,8}}?)(?:です|と申します|[、。，,.\s]|$)")
# "と申します" follows the name: the match begins up to eight characters before it
_JAPANESE_HUMBLE = re.compile(rf"([{_HAN}\u30a0-\u30ff]{{2,8}})と申します")
_KOREAN_NAMED = re.compile(rf"(?:제|저의) 이름은[ \t]*([{_HANGUL}]{{2,4}}?)(?:입니다|이에요|예요|이고|이며|[,.\s]|$)")
# The surnames of most Chinese people, in simplified and traditional characters
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范"
    "金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤欧"
    "張劉陳楊黃趙吳孫馬羅鄭謝許韓馮鄧蕭葉蘇呂盧鍾譚陸錢嚴龔賈韋鄒閆賀顧龍湯歐"
)
_HONORIFICS = ("先生", "女士", "小姐", "老师", "老師", "教授", "医生", "醫生", "经理", "經理", "同学", "同學")
CUES = Anchors((), (*_LATIN_CUES, *_CJK_CUES, _HUMBLE, *_HONORIFICS))
_LATIN_SET, _CJK_SET = frozenset(_LATIN_CUES), frozenset(_CJK_CUES)
_HONORIFIC_SET = frozenset(_HONORIFICS)
_ALL = _LATIN_SET | _CJK_SET | {_HUMBLE} | _HONORIFIC_SET


def named(text: str, hits: Hits) -> list[Finding]:
    """PERSON findings after (or, for honorifics and "と申します", before) their cues. `hits`:
    `CUES.find(text)`, or more."""
    if _ALL.isdisjoint(hits):
        return []
    return [Finding("PERSON", s, e, CONFIDENCE, DETECTOR) for s, e in _spans(text, hits)]


def _spans(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    for m in anchored(_LATIN, text, starts_of(hits, _LATIN_SET)):
        words = m.group(1).split()
        if words[0].lower() not in _NOT_NAMES:
            end = m.start(1) + len(words[0]) if len(words) > 1 and words[1].lower() in _NOT_NAMES else m.end(1)
            yield m.start(1), end
    cjk = starts_of(hits, _CJK_SET)
    for pattern in (_CHINESE_NAMED, _JAPANESE_NAMED, _KOREAN_NAMED):
        for m in anchored(pattern, text, cjk):
            yield m.span(1)
    humble = starts_of(hits, frozenset((_HUMBLE,)), back=range(2, 9))
    for m in anchored(_JAPANESE_HUMBLE, text, humble):
        yield m.span(1)
    for at in starts_of(hits, _HONORIFIC_SET):
        yield from _honored(text, at)


def _honored(text: str, at: int) -> Iterator[tuple[int, int]]:
    """The name before an honorific: a surname and up to two characters, the longest such (a given
    name may hold a surname's character too: "张林先生" is Zhang Lin, not Mr. Lin)."""
    for n in (3, 2, 1):
        name = text[max(0, at - n) : at]
        if len(name) == n and name[0] in _SURNAMES and all("\u4e00" <= c <= "\u9fff" for c in name):
            yield at - n, at
            return
