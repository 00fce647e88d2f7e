"""People and organizations that the words around them introduce, whatever their case.

The span model reads capitalized runs and weighs them; real prompts also say "Hi Cory,", "Best
regards,\\nOmar", "my name is aisha", "I'm Tommy Rollins", "my brother harrison", "Ms. yoyo" or
"a company called soskill". There the words before say what the name is, so it is found however
common the name: a greeting or a signature in a quoted email is who the email is about. Each
pattern is tried only where its cue occurs (`anchors.anchored`); a captured word that is a common
word ("my brother and", "Hi there,") ends the name, and a name that is only common words is none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding

# Capitals and small letters of the Latin, Greek and Cyrillic alphabets: "Dear Renée,", "Best
# regards,\nAndrés", "I'm Łukasz Nowak" (Latin Extended-A is both, alternately).
_UP, _LOW = "A-ZÀ-ÖØ-ÞĀ-ſΑ-ΩА-ЯЁ", "a-zß-öø-ÿĀ-ſά-ώа-яё"
_WORD = rf"[{_UP}][{_LOW}'’-]+"
_CAPITALIZED = rf"({_WORD}(?:\s+{_WORD})?)"
_ANY_CASE = r"([^\W\d_][\w'’-]*(?:[ \t]+[^\W\d_][\w'’-]*)?)"  # one or two words
# As written, as `_GREETING` matches them: "hi" in any case is inside "this", "which" and "think"
# in most messages, and each would send the message through every cue's pattern.
_GREETINGS: tuple[str, ...] = ("Dear", "Hi", "Hello", "Hey", "Good morning", "Good afternoon", "Good evening")
_GREETINGS += ("Bonjour", "Hola", "Hallo", "Ciao", "Olá", "Cher", "Chère", "Querido", "Querida", "Estimado")
_GREETINGS += ("Estimada", "Liebe", "Lieber", "Sehr geehrte", "Caro", "Cara", "Gentile")
_GREETINGS += ("Привет", "Здравствуйте", "Дорогой", "Дорогая", "Уважаемый", "Уважаемая")
# A line's markdown or quoting marks ("> Hi Cory,", "**Dear Ahmad,**", "- Hi Jacob") stand
# between a line's start and the greeting or the name that opens it.
_MARKS = ">*_#•"
_MARKED = rf"[\s{_MARKS}]*"
# A greeting opens a line, a sentence, a quote or what follows a colon or a dash ("rewrite this -
# Hi Jacob (PM),"); a role in brackets may follow the name.
_GREETING = re.compile(
    r"(?:^|(?<=[\n.!?\"“:])|(?<=[–—-] ))"
    + _MARKED
    + r"(?:Dear|Hi|Hello|Hey|Good (?:morning|afternoon|evening)|Bonjour|Hola|Hallo|Ciao|Olá|Ch[eè]re?|Querid[oa]|"
    r"Estimad[oa]|Lieber?|Sehr geehrter?|Car[oa]|Gentile|Привет|Здравствуйте|Дорог(?:ой|ая)|Уважаем(?:ый|ая)),?\s+"
    r"(?:(?:Mr|Mrs|Ms|Dr|Prof|[Pp]rofessor|[Dd]octor|Frau|Herr|Madame|Monsieur|Sr|Sra|Sig|Sig\.ra|Dott)\.?\s+)?"
    + _CAPITALIZED
    + r"(?:\s*\([^()\n]{1,24}\))?\s*[,!:\n]"
)
_NAMED_CUES = ("name is", "name was", "name's", "call me")
_NAMED = re.compile(r"\b(?i:(?:my|her|his|their) name (?:is|was|'s)|call me)[ \t]+" + _ANY_CASE)
# "I'm Tommy Rollins, the main character": the writer's own full name. Two capitalized words, as
# "I'm Sorry", "I am Canadian" or a title ("I'm Still Standing") are one word or hold a common one;
# a first name alone is for "my name is". Neither AlpacaEval's public instructions nor the
# MMLU/GSM8K questions hold one.
_SELF_CUES = ("I'm ", "I’m ", "I am ")
_SELF = re.compile(rf"\bI(?:'m|’m| am)[ \t]+({_WORD}[ \t]+{_WORD})\b")
_SIGN_OFFS: tuple[str, ...] = ("regards", "sincerely", "thanks", "thank you", "cheers", "best wishes", "yours truly")
_SIGN_OFFS += ("cordialement", "saludos", "atentamente", "mit freundlichen", "viele gr", "liebe gr", "beste gr")
_SIGN_OFFS += ("cordiali saluti", "distinti saluti", "atenciosamente", "с уважением", "всего доброго")
# Possessive runs: a sign-off followed by a long run of spaces and no line break is given up in
# one pass ("\\s*,?\\s*\\n" took 0.8 s for "regards" and 8,000 spaces, and grew with the square).
_SIGNED = re.compile(
    r"(?i:regards|sincerely|thanks|thank you|cheers|best wishes|yours truly|cordialement|saludos|atentamente|"
    r"(?:mit freundlichen|viele|liebe|beste) gr(?:ü|ue|u)(?:ß|ss)en?|cordiali saluti|distinti saluti|atenciosamente|"
    r"с уважением|всего доброго)"
    r"[*_]*+[ \t\r]*+,?[*_]*+[ \t\r]*+\n" + _MARKED + _CAPITALIZED + r"[*_]*+[ \t\r]*+(?:\n|$)"
)
_RELATIONS = (
    "brother sister wife husband son daughter friend boss manager colleague coworker co-worker cousin uncle "
    "aunt mom mother dad father boyfriend girlfriend partner fiance fiancé fiancee fiancée grandma grandpa "
    "grandmother grandfather niece nephew neighbor neighbour roommate classmate teacher supervisor"
).split()
# "my best friend named sulaiman": a word may tell which friend, and "named" may come before the name
_KINDS = "best close old dear good younger older little big elder late new former".split()
_RELATED = re.compile(
    rf"(?i)\bmy[ \t]+(?:(?:{'|'.join(_KINDS)})[ \t]+)?(?:{'|'.join(_RELATIONS)})[ \t]+(?:(?:named|called)[ \t]+)?"
    + _ANY_CASE
)
_EMPLOYER_CUES = (
    "my company", "my startup", "my business", "my brand", "my firm", "my agency", "my employer",
    "company called", "company named", "company is", "business called", "business named", "startup called",
    "brand called", "brand named", "firm called", "agency called", "shop called", "store called",
    "restaurant called", "work at", "worked at", "working at", "work for", "worked for", "working for",
    "employed at", "am employed by", "was employed by", "been employed by", "currently employed by",
    "intern at", "interned at", "studied at", "study at", "studying at", "graduated from", "enrolled at",
)  # fmt: skip
# "employed by" alone is as often a technique's: "the stylistic techniques employed by Leo Tolstoy"
_EMPLOYER = re.compile(
    rf"(?i)\b(?:{'|'.join(_EMPLOYER_CUES)})[ \t]+(?!(?:called|named|is)\b)(?:the[ \t]+)?"
    r"([\w&'’.-]+(?:[ \t]+[\w&'’.-]+){0,2})"
)
# "Talked to Chandler today", "I just spoke with Vincent van Lith": whom the writer met or spoke
# with, capitalized (in lower case, "met with resistance"). No AlpacaEval instruction and no
# MMLU/GSM8K question holds one.
_MET_CUES: tuple[str, ...] = ("talked to", "talked with", "spoke to", "spoke with", "spoken to", "spoken with")
_MET_CUES += ("discussed with", "met with", "chatted with")
_MET = re.compile(
    r"(?i:(?:talked|spoke|spoken) (?:to|with)|discussed with|met with|chatted with)[ \t]+"
    r"(?:(?:Mr|Mrs|Ms|Dr|Prof)\.?[ \t]+)?" + _CAPITALIZED
)
_RELATED_CUES = tuple(f"my {r}" for r in _RELATIONS) + tuple(f"my {k} " for k in _KINDS)
# "an email to Ms. yoyo": a title names a person. A capitalized name after one is the span model's
# (the title is among its features, and its gate tells a public "Dr. King" from a private "Dr.
# Hossam"); a name in lower case it never sees. The titles are found as written: "dr" and "ms" in
# any case are inside too many words.
_TITLES = ("Mr", "Mrs", "Ms", "Miss", "Dr", "Prof")
_TITLE_CUES = tuple(f"{t}{after}" for t in _TITLES for after in (". ", " "))
_TITLED = re.compile(rf"\b(?:{'|'.join(_TITLES)})\.?[ \t]+([a-z][\w'’-]*(?:[ \t]+[a-z][\w'’-]*)?)")
# A home folder is named for its user: "C:\\Users\\Abu Bakr Siddique\\Desktop", "/home/rickard/Documents".
_WINDOWS_HOME, _UNIX_HOMES = "\\users\\", ("/home/", "/users/")
_HOME_CUES = (_WINDOWS_HOME, *_UNIX_HOMES)
_HOME = re.compile(
    r"(?i)(?:[a-z]:\\+users\\+([^\\/:*?\"<>|%$\r\n]{1,64}?)(?=\\)|(?<![\w.~])/(?:home|users)/([^\s/:*?\"<>|%$]{1,64})/)"
)
_NOT_USERS = frozenset(
    "user username users yourname your_username your-username yourusername you me name admin administrator "
    "public default all root ubuntu pi runner vagrant ec2-user guest test runneradmin appdata shared library "
    "defaultuser0".split()
) | {"all users", "default user"}
CUES = Anchors(
    _TITLE_CUES + _GREETINGS + _SELF_CUES,
    _NAMED_CUES + _SIGN_OFFS + _RELATED_CUES + _EMPLOYER_CUES + _HOME_CUES + _MET_CUES,
)
_GREETING_SET, _NAMED_SET, _SIGN_OFF_SET = frozenset(_GREETINGS), frozenset(_NAMED_CUES), frozenset(_SIGN_OFFS)
_RELATED_SET, _EMPLOYER_SET = frozenset(_RELATED_CUES), frozenset(_EMPLOYER_CUES)
_MET_SET = frozenset(_MET_CUES)
_TITLE_SET, _SELF_SET = frozenset(_TITLE_CUES), frozenset(_SELF_CUES)
_WINDOWS_HOME_SET, _UNIX_HOME_SET = frozenset((_WINDOWS_HOME,)), frozenset(_UNIX_HOMES)
_ALL_CUES = frozenset(CUES.folded + CUES.exact)
# Words that follow these cues without being names: "Hi there", "Dear Hiring Manager", "worked at a"
_NOT_NAMES = frozenset(
    "there all everyone everybody team sir madam customer friend friends world guys folks colleagues hiring "
    "manager the my you your our his her their again so much for yes no ok okay in on at of a an this that "
    "and or but to from with home night work school least most first last please thanks thank "
    "madame monsieur frau herr damen señor señora signore signora grüße grüsse gruesse".split()
)


def introduced(text: str, hits: Hits, common: frozenset[str]) -> list[Finding]:
    """PERSON and ORGANIZATION findings after their cues. `hits`: `CUES.find(text)`, or more;
    `common`: words too common to be a name when written in lower case."""
    if _ALL_CUES.isdisjoint(hits):
        return []
    found = [Finding("PERSON", s, e, 0.7, "addressed") for s, e in _addressed(text, hits, common)]
    for m in anchored(_RELATED, text, starts_of(hits, _RELATED_SET)):
        found += [Finding("PERSON", s, e, 0.7, "introduced") for s, e in _name(text, m, common)]
    for m in anchored(_MET, text, starts_of(hits, _MET_SET)):
        found += [Finding("PERSON", s, e, 0.7, "introduced") for s, e in _name(text, m, common)]
    for m in anchored(_EMPLOYER, text, starts_of(hits, _EMPLOYER_SET)):
        found += [Finding("ORGANIZATION", s, e, 0.7, "introduced") for s, e in _name(text, m, common)]
    return found + [Finding("PERSON", s, e, 0.9, "home-folder") for s, e in _home_users(text, hits)]


def _home_users(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    """The user a home folder is named for ("C:\\Users\\" begins two or three characters before
    its cue: a drive letter, a colon, and one backslash or two, as code escapes them)."""
    windows = starts_of(hits, _WINDOWS_HOME_SET, back=(2, 3))
    for m in anchored(_HOME, text, windows + starts_of(hits, _UNIX_HOME_SET)):
        group = 1 if m.start(1) >= 0 else 2
        if m.group(group).strip().lower() not in _NOT_USERS:
            yield m.start(group), m.end(group)


def _addressed(text: str, hits: Hits, common: frozenset[str]) -> Iterator[tuple[int, int]]:
    """Who a message is addressed to, signed by, or names as the writer."""
    for m in anchored(_GREETING, text, _line_starts(text, starts_of(hits, _GREETING_SET))):
        yield from _name(text, m, common)
    for m in anchored(_NAMED, text, _word_starts(text, starts_of(hits, _NAMED_SET))):
        yield from _name(text, m, common)
    for m in anchored(_SIGNED, text, starts_of(hits, _SIGN_OFF_SET)):
        yield from _name(text, m, common)
    for m in anchored(_TITLED, text, starts_of(hits, _TITLE_SET)):
        yield from _name(text, m, common)
    for m in anchored(_SELF, text, starts_of(hits, _SELF_SET)):
        if not any(w.lower() in common or w.lower() in _NOT_NAMES for w in m.group(1).split()):
            yield m.span(1)


def _name(text: str, m: re.Match[str], common: frozenset[str]) -> Iterator[tuple[int, int]]:
    """The captured words up to the first that is not a name: one of `_NOT_NAMES`, or a common
    word written in lower case."""
    start = end = m.start(1)
    for word in re.finditer(r"\S+", m.group(1)):
        w = word.group().strip(".,'’")
        if not w or w.lower() in _NOT_NAMES or (w.islower() and w in common):
            break
        end = m.start(1) + word.start() + len(word.group().rstrip(".,'’"))
    if end > start:
        yield start, end


def _line_starts(text: str, starts: Iterable[int]) -> list[int]:
    """A greeting's match begins where a line or a sentence ends, then any whitespace and marks:
    at the greeting itself, or at any of the whitespace or marks before it ("nicer:\nHello
    professor Klump," begins after the line break, "Thanks.  Hi Cory," after the full stop, "\n> Hi
    Cory," before the quote's mark)."""
    out = []
    for s in starts:
        out.append(s)
        while s > 0 and (text[s - 1].isspace() or text[s - 1] in _MARKS):
            s -= 1
            out.append(s)
    return out


def _word_starts(text: str, starts: Iterable[int]) -> list[int]:
    """ "name is" begins two words earlier ("my name is", "her name was")."""
    out = []
    for s in starts:
        out.append(s)
        for _ in range(2):
            s = text.rfind(" ", 0, max(0, s - 1)) + 1
            out.append(s)
    return out
