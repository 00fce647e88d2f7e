"""Private data the way real prompts carry it: names introduced in lower case, names in a private
document, famous names in a public question left alone; and how its thresholds are chosen."""

from __future__ import annotations

import json
import unicodedata
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.capitals import capitals
from classifiers.privacy.contextual import MODEL_PATH as SPANS_PATH
from classifiers.privacy.contextual import SpanModel
from classifiers.privacy.links import CUES as LINK_CUES
from classifiers.privacy.links import find_links
from research.crossval_privacy import (
    _FLOORS_AND_CEILINGS,
    CHOSEN_FOR,
    SURE_CONTEXTS,
    Scored,
    Thresholds,
    choose,
    held_out_curve,
)
from research.data.real_privacy import EXAM_SAMPLE, exam_questions, private_prompts, public_prompts


@pytest.fixture(scope="module")
def scanner() -> PrivacyScanner:
    return PrivacyScanner()


def found(scanner: PrivacyScanner, text: str) -> list[tuple[str, str]]:
    return [(f.type, text[f.start : f.end]) for f in scanner.scan(text)]


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("write me a best mans speech for my brother harrison and his wife eden", ("PERSON", "harrison")),
        ("Generate brand names for my company called soskill but don't use kill", ("ORGANIZATION", "soskill")),
        ("the company is wolfram research can you add anything about it", ("ORGANIZATION", "wolfram")),
        ("hello, my name is aisha and I need a cover letter", ("PERSON", "aisha")),
        ("Good evening Ahmad,\nplease find the offer attached.", ("PERSON", "Ahmad")),
        ("I worked at Deloitte for three years as an analyst.", ("ORGANIZATION", "Deloitte")),
        ("i have been employed by globex corporation as a nurse", ("ORGANIZATION", "globex")),
        ("check the grammar: Talked to Chandler today and shared the changes", ("PERSON", "Chandler")),
        ("create a campaign for my startup msitu africa and its farmers", ("ORGANIZATION", "msitu africa")),
        ("make this nicer:\nHello professor Klump,\nI hope you are well.", ("PERSON", "Klump")),
        ("write me an essay about my best friend named sulaiman for a class", ("PERSON", "sulaiman")),
        ("make it polite - Hello Cory (HR), I was following up on the offer", ("PERSON", "Cory")),
        ("Write an unformal email to Ms. yoyo, tell her the amount was paid", ("PERSON", "yoyo")),
        ("hi Mr. chan please reply to the invoice", ("PERSON", "chan")),
        ("Let's play a game. I’m Tommy Rollins, the main character, and you are", ("PERSON", "Tommy Rollins")),
        ("I am Priya Raman and I need a cover letter for a nursing job", ("PERSON", "Priya Raman")),
        ("Please reply to this:\n> Hi Cory,\n> I was following up on your resume.", ("PERSON", "Cory")),
        ("Reply to: **Dear Ahmad,** thanks for the offer", ("PERSON", "Ahmad")),
        ("> Thanks for the update.\n> Best regards,\n> Omar", ("PERSON", "Omar")),
        ("Best regards,\r\nOmar\r\n", ("PERSON", "Omar")),
    ],
)
def test_a_name_its_cue_introduces_is_found_in_any_case(scanner, text, finding):
    assert finding in found(scanner, text)


@pytest.mark.parametrize(
    "text",
    [
        "my friend and I want to learn chess",
        "I worked at a bakery, what should I put on my CV?",
        "Hi there, how do magnets work?",
        "Dear Hiring Manager, here is what I want to say",
        "What does Dr. mean on an envelope, and Mr and mrs?",
        "Send the DMs to the Items team",
        "I'm Sorry, what did you say?",
        "I am Canadian and I want to work in the US",
        "Write a song like I'm Still Standing by Elton John",
        # "employed by" names an employer only when someone is: a technique is employed by its author
        "Discuss the stylistic techniques employed by Leo Tolstoy in 'War and Peace'.",
        "The proposal met with resistance from the board",
    ],
)
def test_a_common_word_after_a_cue_is_no_name(scanner, text):
    assert not [f for f in scanner.scan(text) if f.detector in ("introduced", "addressed")], text


@pytest.mark.parametrize(
    ("text", "place"),
    [
        (
            "Hi Omar,\nI moved to pampanga last month, so please send the contract there.\nBest regards,\nAisha",
            "pampanga",
        ),
        ("improve my cover letter: I grew up in Fujian and studied soil science in Devizes for four years", "Fujian"),
        ("中译英：我从青岛搬到北京工作了三年，负责公司的融资项目", "青岛"),
        # the span model calls it a person, sure; a place's name of two words is that place
        ("Our office in San Francisco sent this:\nHi Tom, the invoice from Acme is attached.", "San Francisco"),
    ],
)
def test_a_place_in_someones_own_document_is_a_location(scanner, text, place):
    assert ("LOCATION", place) in found(scanner, text)


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of France, and how far is it from London?",
        "Why is Texas so big?",
        "Hi Omar,\nhave a nice day, see you in march.\nBest regards,\nAisha",
    ],
)
def test_a_place_in_a_question_about_the_world_or_an_english_word_is_none(scanner, text):
    assert not [f for f in scanner.scan(text) if f.type == "LOCATION"], text


def test_a_town_named_like_a_word_that_questions_write_in_lower_case_is_no_place(scanner):
    """There are towns called Yoga, Reservoir and Holiday; in a private text they were places."""
    text = "improve my cover letter: I grew up in Fujian and did yoga near the reservoir every holiday for four years"
    assert [name for kind, name in found(scanner, text) if kind == "LOCATION"] == ["Fujian"]


@pytest.mark.parametrize(
    ("text", "user"),
    [
        (r"input_file_path = r'C:\Users\Abu Bakr Siddique\Desktop\Test.txt'", "Abu Bakr Siddique"),
        ('open("C:\\\\Users\\\\jdoe\\\\notes.txt")', "jdoe"),
        ('File "/home/rickard/Documents/rs232/new copy.py", line 3', "rickard"),
        ("ls /Users/mwong/Library/Logs", "mwong"),
    ],
)
def test_a_home_folder_names_its_user_in_any_public_text(scanner, text, user):
    assert ("PERSON", user) in found(scanner, text)


@pytest.mark.parametrize(
    "text",
    [
        "cd /home/user/project/ and run make",
        r"copy it to C:\Users\Public\Documents today",
        "GET https://api.github.com/users/octocat/repos",
        "mount it under /Users/Shared/data",
    ],
)
def test_a_placeholder_or_shared_home_folder_names_no_one(scanner, text):
    assert not [f for f in scanner.scan(text) if f.detector == "home-folder"], text


@pytest.mark.parametrize(
    "text", ["Hi, my cat just chewed on a weed.", "the business I've bought stock from", "I’m sure I'd go, I’ll call"]
)
def test_a_greeting_or_i_with_its_contractions_is_no_name(scanner, text):
    # each a PERSON in a text the gate read as private, before they were common words
    assert scanner.spans.candidates(text) == []


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Write a plot in the style of Neil Stephenson.", ["Neil Stephenson"]),
        ("This is a test of Fenwick. Read the story and answer.", ["Fenwick"]),
        ("Prof. Wang met Acme Inc. staff in the U.S. office", ["Prof. Wang", "Acme Inc.", "U.S."]),
        ("A letter to J. R. R. Tolkien from Elm St. at noon", ["J. R. R. Tolkien", "Elm St."]),
    ],
)
def test_a_full_stop_that_ends_a_sentence_ends_a_name_and_is_no_part_of_it(scanner, text, names):
    assert [text[s:e] for _, s, e in scanner.spans.candidates(text)] == names


def test_a_name_made_of_two_places_names_stays_a_name(scanner):
    text = "Our office: Jackson Smith and David Easton sent this:\nHi Tom, the invoice is attached."
    assert {("PERSON", "Jackson Smith"), ("PERSON", "David Easton")} <= set(found(scanner, text))


def test_a_famous_name_in_a_public_question_is_not_private(scanner):
    for question in ("Who is Larry Page?", "Prove Fermat's little theorem.", "Explain TypeScript and Duck Typing"):
        assert found(scanner, question) == [], question


@pytest.mark.parametrize(
    ("public", "private"),
    [
        ("Write study notes on the history of the USA.", "I have a history of depression since 2010."),
        (
            "Zee and her team found that light at night can lead to type 2 diabetes.",
            "My dad and I both have type 2 diabetes.",
        ),
    ],
)
def test_health_is_what_a_person_tells_of_their_own(scanner, public, private):
    assert [kind for kind, _ in found(scanner, public) if kind == "HEALTH"] == []
    assert "HEALTH" in {kind for kind, _ in found(scanner, private)}


def test_names_in_a_private_document_are_found(scanner):
    text = (
        "is this grammatically correct? Juraj Holaza from Brno Flight Systems team was awarded by TOP FLYER "
        "AWARD for his outstanding contribution on E1 Cargo program. Congratulation!"
    )
    names = {value for kind, value in found(scanner, text) if kind in ("PERSON", "ORGANIZATION")}
    assert any("Holaza" in n for n in names) and any("Brno" in n for n in names), names


@pytest.mark.parametrize("ends", [("", "\n"), ("", "\n\n"), ("\n", ""), ("  ", " \n \n")])
def test_white_space_around_a_text_changes_nothing_it_finds(scanner, ends):
    """Pasted text and command-line clients end a message with line breaks; the gate's training
    prompts have none around them. Read as sent, one trailing line break made this recap read as
    public, and its names went unfound."""
    before, after = ends
    for text in (
        "On Friday I met Emeka and Jonas from Vireo Pharma to plan the launch. Write a short recap.",
        "Call Diego on +49 30 1349006 about the contract.",
        "Patient Santiago, born 1985-07-11, reports chest pain. Summarize the triage steps.",
    ):
        shifted = found(scanner, before + text + after)
        assert shifted == found(scanner, text) and any(kind == "PERSON" for kind, _ in shifted), text
    assert scanner.context.score("\n" + text + "\n\n") == scanner.context.score(text)


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("Mi compañera Amara\u00a0Mensah trabaja en Bluefin Analytics.", ("PERSON", "Amara\u00a0Mensah")),
        ("I live at 12\u00a0Baker\u00a0Street, London", ("STREET_ADDRESS", "12\u00a0Baker\u00a0Street, London")),
        (
            "IBAN DE89\u20023704\u20020044\u20020532\u20020130\u200200",
            ("IBAN", "DE89\u20023704\u20020044\u20020532\u20020130\u200200"),
        ),
        ("SSN 123\u300045\u30006789", ("US_SSN", "123\u300045\u30006789")),
        ("\ufeffPatient Leonie, born 1989-06-24, reports chest pain.", ("PERSON", "Leonie")),
    ],
)
def test_a_value_written_with_other_spaces_is_found_whole(scanner, text, finding):
    """No-break, thin, ideographic and zero-width spaces and a byte-order mark read as plain spaces,
    where they are: a name's words and a number's groups stay together."""
    assert finding in found(scanner, text)


@pytest.mark.parametrize("mark", ["- ", "> ", "**", "• ", "# "])
def test_a_line_s_markdown_marks_leave_its_first_word_where_a_sentence_starts(scanner, mark):
    """ "Patient" is capitalized because the sentence starts with it, after a bullet or a quote's
    mark as at the start of a line: the name is "Leonie", as without the mark."""
    text = f"Triage notes:\n{mark}Patient Leonie, born 1989-06-24, reports chest pain."
    assert ("PERSON", "Leonie") in found(scanner, text)


@pytest.fixture(scope="module")
def real_prompts() -> list[str]:
    return [p.text for p in private_prompts()] + public_prompts()


def test_no_measured_prompt_reads_differently_with_other_spaces_or_line_breaks_around_it(scanner, real_prompts):
    """Over PUPA's and AlpacaEval's prompts: with every space a no-break space, 232 of PUPA's 438
    prompts lost a finding before spaces were read as plain ones; with a line break after it, every
    prompt's gate score moved (23 PUPA prompts to the public side) before the gate read the text
    trimmed."""

    def values(text: str) -> set[str]:
        return {text[f.start : f.end].replace("\u00a0", " ") for f in scanner.scan(text)}

    lost = [t for t in real_prompts if values(t) - values(t.replace(" ", "\u00a0"))]
    assert lost == []
    moved = [t for t in real_prompts if scanner.context.score(t + "\n") != scanner.context.score(t)]
    assert moved == []


def test_no_measured_prompt_reads_differently_with_its_accents_decomposed(scanner, real_prompts):
    """Decomposed (NFD, as macOS file names and some clients send text), a combining accent ended
    a word for every pattern and the span model: 13 measured prompts lost part of a finding
    ("Bogota\u0301" found as "Bogota"), and "José García" was "Jose" and "Garci"."""

    def found(text: str) -> list[tuple[str, str]]:
        return [(f.type, unicodedata.normalize("NFC", text[f.start : f.end])) for f in scanner.scan(text)]

    changed = [t for t in real_prompts if found(unicodedata.normalize("NFD", t)) != found(t)]
    assert changed == []
    text = unicodedata.normalize("NFD", "Dear Renée,\nI met José García and Zoë Müller. Write to josé@example.com")
    assert found(text) == [
        ("PERSON", "Renée"),
        ("PERSON", "José García"),
        ("PERSON", "Zoë Müller"),
        ("EMAIL", "josé@example.com"),
    ]


def test_no_measured_prompt_with_line_breaks_quotes_or_accents_loses_a_finding_written_as_json(scanner, real_prompts):
    """Inside a JSON string (a tool call's arguments, a pasted payload) line breaks, quotes and
    non-ASCII letters are escapes: "\\nJane Roe" read as the word "nJane" and "Jos\\u00e9" as
    "Jos". 71 measured prompts lost 159 findings so before the escapes were read unescaped."""

    def values(text: str, encoded: bool) -> set[tuple[str, str]]:
        spans = ((f.type, text[f.start : f.end]) for f in scanner.scan(text))
        return {(kind, json.loads(f'"{value}"') if encoded else value) for kind, value in spans}

    escaped = [t for t in real_prompts if any(c in t for c in '\n"\\') or not t.isascii()]
    assert len(escaped) > 300
    lost = [t for t in escaped if values(t, False) - values(json.dumps(t), True)]
    assert lost == []


def test_a_measured_prompt_sent_whole_in_quotes_reads_as_itself(scanner, real_prompts):
    """Six lost a finding so: the gate read the quoted text as less private."""

    def values(text: str) -> set[tuple[str, str]]:
        return {(f.type, text[f.start : f.end]) for f in scanner.scan(text)}

    assert [t for t in real_prompts if values(t) != values(f'"{t}"')] == []


def test_a_windows_path_s_folder_is_its_user_though_it_reads_like_an_escape(scanner):
    """ "\\nadia" is a folder here, not a line break: what the text as written finds where the
    unescaped reading finds nothing is kept."""
    text = r"open C:\Users\nadia\Desktop\notes.txt and the \"report\""
    assert ("PERSON", "nadia") in {(f.type, text[f.start : f.end]) for f in scanner.scan(text)}


def test_a_name_the_model_finds_likelier_an_address_is_still_a_name_when_it_is_no_address():
    """A street address needs a number or a street word; a run of capitalized words that has
    neither used to vanish when the model labeled it an address, however sure it was that it is
    personal data. It is a name now, as sure as the model is once an address is ruled out."""
    weights = json.loads(SPANS_PATH.read_text(encoding="utf-8"))
    every = SpanModel(weights["weights"], weights["bias"], weights["common"], threshold=0.0)
    for text, name in [
        ("Write me an overview of who we are (Mishdad Beauty Website), for the site", "Mishdad Beauty Website"),
        ("RECOMMENDATIONS TO INCREASE REVENUE OF Nouf Water Factory today", "Nouf Water Factory"),
    ]:
        labeled = {(f.type, text[f.start : f.end]): f.confidence for f in every.find(text)}
        assert [kind for kind, value in labeled if name in value] in (["PERSON"], ["ORGANIZATION"]), labeled
    address = "Send it to 42 N. Main Street please"
    labeled_address = [(f.type, address[f.start : f.end]) for f in every.find(address)]
    assert labeled_address == [("STREET_ADDRESS", "42 N. Main Street")]
    # and a number's run of words is no one's name
    assert every.find("She bought two shirts at $8 each. How much did she spend?") == []


def test_two_sentences_with_numbers_are_no_street_address(scanner):
    for text in ("She bought two shirts at $8 each. How much did she spend?", "I have 12 eggs. I drop 2."):
        assert "STREET_ADDRESS" not in {kind for kind, _ in found(scanner, text)}, text
    assert ("STREET_ADDRESS", "42 N. Main Street") in found(scanner, "Send it to 42 N. Main Street please")


@pytest.mark.parametrize(
    ("text", "link"),
    [
        (
            'how to run this on docker "https://gitlab.com/adblockinc/ext/adblock"',
            "https://gitlab.com/adblockinc/ext/adblock",
        ),
        (
            "rewrite from https://www.tomshardware.com/reviews/best-cpus,3986.html.",
            "https://www.tomshardware.com/reviews/best-cpus,3986.html",
        ),
        ("our site (www.mallotts.co.uk/contact) is down", "www.mallotts.co.uk/contact"),
        ("Help me summarize this brokerage: FOREX.com", "FOREX.com"),
        ("SSO issues when being added by blacksunplc.com, can you", "blacksunplc.com"),
        ("we changed our SMTP address to @blacksun-global.com . Old", "blacksun-global.com"),
        ("book registration slots in academics.klef.in I need", "academics.klef.in"),
        ("Lost task 5016.3 (TID 67443) (bisw87.misc.t-mobile.pl executor 16)", "bisw87.misc.t-mobile.pl"),
        (
            "querySrv ENOTFOUND _mongodb._tcp.admass-tests.vyc4g.mongodb.net",
            "_mongodb._tcp.admass-tests.vyc4g.mongodb.net",
        ),
        ("请访问 https://example.com/path。谢谢", "https://example.com/path"),  # full-width punctuation ends it
        ("（见https://gitlab.com/acme/payroll，谢谢）", "https://gitlab.com/acme/payroll"),
        ("https://zh.wikipedia.org/wiki/北京 is a page", "https://zh.wikipedia.org/wiki/北京"),
    ],
)
def test_a_link_is_found_whole_and_without_the_punctuation_around_it(text, link):
    assert [text[f.start : f.end] for f in find_links(text, LINK_CUES.find(text))] == [link]


@pytest.mark.parametrize(
    "text",
    [
        "write to jane@acme.com today",  # an email address, found as one
        "python train.py --epochs 3",  # a file
        "as the proof shows, e.g.in the second case",  # a country's domain ends only a host of a real name
        "book it at yourfriend.in",  # two labels: "log.in", "do.it" are words run together
        "I love Paris.It is lovely",  # a sentence missing its space
        "upgrade to version 1.2.3",
        "call my_site.com_handler() twice",  # an identifier, not a host
    ],
)
def test_an_address_a_file_or_a_run_on_sentence_is_no_link(text):
    assert find_links(text, LINK_CUES.find(text)) == []


def test_a_run_of_host_characters_is_read_once_however_many_domains_it_holds():
    from classifiers.privacy.links import _host_starts

    text = "see " + "ab.cox" * 10_000  # one run of 60,000 host characters with 10,000 ".co" in it
    dots = [i for i in range(len(text)) if text.startswith(".co", i)]
    assert _host_starts(text, dots) == [4]  # one start to try, not one walk back per dot
    assert find_links(text, LINK_CUES.find(text)) == []  # and no host name that long


def test_a_link_is_private_in_a_private_text_and_not_in_a_question(scanner):
    email = (
        "re write : Hi, Hope you're doing well. We are having some SSO issues with Workiva when being "
        "added by blacksunplc.com, can you check?"
    )
    assert ("URL", "blacksunplc.com") in found(scanner, email)
    question = "Summarize the main points of https://en.wikipedia.org/wiki/Photosynthesis for a school report."
    assert found(scanner, question) == []


def test_a_word_in_capitals_is_a_name_in_a_private_text_only(scanner):
    assert ("ORGANIZATION", "SPARC") in found(scanner, "list all job offering from SPARC companies with a URL link")
    assert found(scanner, "What does NASA do? Explain like I am five.") == []

    # next to Chinese, hyphenated, and not when it is a common word
    def named(text: str) -> list[str]:
        return [text[f.start : f.end] for f in capitals(text, scanner.spans.common, scanner.spans.acronyms)]

    assert named("除了UNI-EASTERN，他 ANYTHING") == ["UNI-EASTERN"]
    # nor an acronym public questions use, nor the name of a kind of data
    assert named("send my SSN and the IBAN to the CEO of SPARC in the USA") == ["SPARC"]
    assert named("my query SELECT * FROM users WHERE id = 1 returns NULL as JSON over HTTP") == []


def test_a_name_written_next_to_chinese_is_a_candidate(scanner):
    text = "发封英语邮件告诉Tim，附件是备份(我选择的是Nvidia)"
    assert {text[s:e] for _, s, e in scanner.spans.candidates(text)} >= {"Tim", "Nvidia"}


def _scored(candidate: float, context: float, units: tuple[tuple[int, int], ...] = ((0, 5),)) -> Scored:
    return Scored(others=(), candidates=(("PERSON", 0, 5, candidate),), context=context, units=units)


def test_a_candidate_is_a_finding_when_sure_or_when_its_text_reads_private():
    t = Thresholds(threshold=0.1, confident=0.9, context=0.6, place_context=0.4)
    assert _scored(0.95, 0.0).found(t)  # sure anywhere
    assert _scored(0.2, 0.7).found(t)  # possible, in a private-looking text
    assert not _scored(0.2, 0.5).found(t)  # possible, in a public-looking one
    assert not _scored(0.05, 0.9).found(t)  # below the floor everywhere


def test_a_sure_name_needs_a_text_that_does_not_read_plainly_public():
    """ "Mrs. Cruz bought 3 pies" is a name for sure in a word problem: from `sure_context` on only,
    unless the text carries personal data another detector found, or the name is an address the
    span model is sure of."""
    t = Thresholds(threshold=0.1, confident=0.5, context=0.6, place_context=0.4, sure_context=0.3)
    assert _scored(0.95, 0.35).found(t) and _scored(0.55, 0.35).found(t)
    assert not _scored(0.95, 0.2).found(t)  # a word problem
    born = replace(_scored(0.95, 0.2), others=(("DATE_OF_BIRTH", 20, 30),))  # "Patient Leonie, born 1989-06-24"
    assert born.found(t)
    address = Scored(others=(), candidates=(("STREET_ADDRESS", 0, 5, 0.95),), context=0.0, units=((0, 5),))
    assert address.found(t) and not replace(address, candidates=(("STREET_ADDRESS", 0, 5, 0.85),)).found(t)


def test_a_place_is_a_finding_from_its_own_context_threshold():
    t = Thresholds(threshold=0.1, confident=0.9, context=0.6, place_context=0.4)
    place = Scored(others=(), candidates=(), context=0.5, units=((0, 5),), places=((0, 5),))
    assert place.found(t) and not replace(place, context=0.3).found(t)
    name = _scored(0.3, 0.5)
    assert not name.found(t)  # a name in the same text is not: its threshold is the other
    # and no place is a finding where the floor is above a place's own confidence
    assert not place.found(replace(t, threshold=0.5))


def test_the_scanner_reads_places_and_names_against_their_own_context_thresholds(tmp_path):
    model = json.loads(SPANS_PATH.read_text(encoding="utf-8"))
    text = "we moved to pampanga last year, Mishdad and I"  # a place, and a name the model is unsure of
    for context, place_context, expected in [
        (1.01, 0.0, {"LOCATION"}),  # places in any text, names only when sure
        (0.0, 1.01, {"PERSON"}),  # the other way round
        (0.0, 0.0, {"LOCATION", "PERSON"}),
    ]:
        thresholds = {
            "threshold": 0.05,
            "confident": 0.99,
            "context": context,
            "place_context": place_context,
            "sure_context": 0.0,
        }
        (tmp_path / "spans.json").write_text(json.dumps({**model, **thresholds}))
        kinds = {f.type for f in PrivacyScanner(tmp_path / "spans.json").scan(text)}
        assert kinds == expected, (context, place_context, kinds)


def test_the_scanner_finds_a_sure_name_only_where_the_text_does_not_read_plainly_public(tmp_path):
    model = json.loads(SPANS_PATH.read_text(encoding="utf-8"))
    word_problem = "Jack has 3 apples and gives Mary 2. How many are left?"
    note = "Patient Leonie Brandt, born 1989-06-24, reports chest pain."
    letter = "Send it to 42 N. Main Street, Springfield."
    names: dict[float, list[set[tuple[str, str]]]] = {}
    for sure_context in (0.0, 1.01):  # sure anywhere, as before word problems were measured; never
        thresholds = {"threshold": 0.5, "confident": 0.5, "context": 1.01, "place_context": 1.01}
        (tmp_path / "spans.json").write_text(json.dumps({**model, **thresholds, "sure_context": sure_context}))
        strict = PrivacyScanner(tmp_path / "spans.json")
        names[sure_context] = [set(found(strict, t)) for t in (word_problem, note, letter)]
    assert ("PERSON", "Jack") in names[0.0][0] and names[1.01][0] == set()
    # a name beside a birth date is someone's, and a street address is one in any text
    assert ("PERSON", "Leonie Brandt") in names[1.01][1]
    assert any(kind == "STREET_ADDRESS" for kind, _ in names[1.01][2])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_thresholds_chosen_are_the_best_a_search_of_every_one_finds(data):
    """The choice counts prompts per threshold instead of reading each prompt at each: it must
    agree with reading them."""
    reads = st.sampled_from((0.1, 0.3, 0.5, 0.7, 0.9, 0.95))

    def prompt(units: tuple[tuple[int, int], ...]) -> Scored:
        kinds = st.sampled_from(("PERSON", "STREET_ADDRESS"))
        names = data.draw(st.lists(st.tuples(kinds, st.sampled_from((0, 10)), reads), max_size=2))
        return Scored(
            others=(("EMAIL", 20, 25),) if data.draw(st.integers(0, 3)) == 0 else (),
            candidates=tuple((kind, at, at + 5, c) for kind, at, c in names),
            context=data.draw(reads),
            units=units,
            places=((0, 5),) if data.draw(st.booleans()) else (),
        )

    private = [prompt(((0, 5),)) for _ in range(data.draw(st.integers(1, 8)))]
    public = [prompt(()) for _ in range(data.draw(st.integers(1, 8)))]
    rate = data.draw(st.sampled_from((0.0, 0.2, 0.5)))
    chosen = choose(private, public, flag_rate=rate)

    def recall(t: Thresholds) -> float:
        return sum(p.found(t) for p in private) / len(private)

    def flagged(t: Thresholds) -> float:
        return sum(bool(p.findings(t)) for p in public) / len(public)

    assert flagged(chosen) <= rate or chosen.context > 1  # within the target, or never
    contexts = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.01)
    every = [
        Thresholds(threshold, confident, context, place, sure)
        for threshold, confident in _FLOORS_AND_CEILINGS
        for context in contexts
        for place in contexts
        for sure in SURE_CONTEXTS
    ]
    best = max((recall(t) for t in every if flagged(t) <= rate), default=0.0)
    assert recall(chosen) == best


def test_thresholds_are_the_most_recall_within_the_public_flag_target():
    allowed = int(CHOSEN_FOR * 100)  # of 100 public prompts (3 at 3%)
    private = [_scored(0.3, 0.8) for _ in range(10)] + [_scored(0.95, 0.1) for _ in range(10)]
    public = [_scored(0.3, 0.3, ()) for _ in range(100 - allowed)] + [_scored(0.3, 0.9, ()) for _ in range(allowed)]
    t = choose(private, public)
    assert all(p.found(t) for p in private)  # every private prompt, while ...
    assert sum(bool(p.findings(t)) for p in public) <= allowed  # ... at most that share of public ones is flagged
    one_more = public[: -allowed - 1] + [_scored(0.3, 0.9, ())] * (allowed + 1)
    assert not all(p.found(choose(private, one_more)) for p in private)  # one more would be too many


def test_the_held_out_curve_gives_the_recall_each_flag_rate_allows():
    # half the private prompts read as private as 4 public ones in 100: found only once 4% may be flagged
    private = [_scored(0.3, 0.8) for _ in range(10)] + [_scored(0.3, 0.6) for _ in range(10)]
    public = [_scored(0.3, 0.2, ()) for _ in range(96)] + [_scored(0.3, 0.7, ()) for _ in range(4)]
    assert held_out_curve(private, public).endswith(
        "50.0% at 3.0% flagged, 50.0% at 3.5% flagged, 100.0% at 4.0% flagged, 100.0% at 5.0% flagged"
    )


def test_the_exam_questions_the_gate_never_trains_on_are_the_ones_measured():
    """Every fifth MMLU / GSM8K question trains the gate; the rest are the public questions the
    flag rate is measured on, and none is both."""
    trained, measured = exam_questions(trained=True), exam_questions(trained=False)
    for source in ("gsm8k", "mmlu"):
        assert not set(trained[source]) & set(measured[source]), source
        total = len(trained[source]) + len(measured[source])
        assert len(trained[source]) >= total / EXAM_SAMPLE - 1, source


def test_a_line_break_reads_as_a_space(scanner):
    """PUPA's private prompts come without line breaks (its CSV flattened them) and a fourth of the
    public instructions hold some: a gate that read them learned that a line break means a public
    text, and read a short email, whose greeting and signature stand on lines of their own, as
    public. The pieces term reads a line break as the space it stands for."""
    email = "Hi Omar,\nI moved to pampanga last month, so please send the contract there.\nBest regards,\nAisha"
    assert scanner.context.terms(email) == scanner.context.terms(email.replace("\n", " "))
    assert scanner.context.terms(email.replace("\n", "\r\n")) == scanner.context.terms(email)
    assert scanner.context.score(email) >= scanner.spans.context
