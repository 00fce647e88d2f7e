"""The canonical reading (`classifiers.privacy.canonical`): every way of writing a private value that
its tables name reads as the value, and the scan finds it where it was written, whole.

The tests draw from the tables themselves: a new digit script, digit word, separator or spelled
at sign is covered the moment it is added. The named examples are the spellings that reached a
provider before the reading existed."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words

from classifiers.privacy import PrivacyScanner, worded
from classifiers.privacy.canonical import (
    ASTRAL_DIGITS,
    AT_WORDS,
    DOT_WORDS,
    OTHER_DIGITS,
    SEPARATORS,
    TAGS,
    Cues,
    canonical,
    foldable,
    separated,
)
from classifiers.privacy.tables import DIGIT_WORDS, MAGNITUDE_WORDS, NUMBER_WORDS, NUMERALS
from research.reading_tables import in_words

CARD = "4111111111111111"
SSN = "123456789"
ASTRAL_ZEROS = tuple(zero for zero, _ in ASTRAL_DIGITS)
ZEROS = tuple(zero for zero, _ in OTHER_DIGITS) + ASTRAL_ZEROS
BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"), ("<", ">"))


@pytest.fixture(scope="module")
def scanner() -> PrivacyScanner:
    return PrivacyScanner()


def found(scanner: PrivacyScanner, text: str, value_at: tuple[int, int], kind: str) -> None:
    """The scan finds `kind` over the whole written value at `value_at` (start, end) in `text`."""
    start, end = value_at
    hits = [f for f in scanner.scan(text) if f.type == kind and f.start <= start and f.end >= end]
    assert hits, (text, [(f.type, text[f.start : f.end]) for f in scanner.scan(text)])


def grouped(digits: str, sizes: tuple[int, ...] = (4, 4, 4, 4)) -> list[str]:
    groups, at = [], 0
    for size in sizes:
        groups.append(digits[at : at + size])
        at += size
    return groups


_SCANNER = PrivacyScanner()


@settings(max_examples=150, deadline=None)
@given(zero=st.sampled_from(ZEROS), separator=st.sampled_from([" ", "", "-"]))
def test_a_card_in_any_scripts_digits_is_a_card(zero, separator):
    written = separator.join("".join(chr(zero + int(d)) for d in group) for group in grouped(CARD))
    text = f"my card is {written} thanks"
    found(_SCANNER, text, (11, 11 + len(written)), "CREDIT_CARD")


@settings(max_examples=150, deadline=None)
@given(separator=st.sampled_from([c for c in SEPARATORS if c not in " ,"]), spaced=st.booleans())
def test_a_card_with_any_separator_between_its_groups_is_a_card(separator, spaced):
    gap = f" {separator} " if spaced and separator.strip() else separator
    written = gap.join(grouped(CARD))
    text = f"card {written}. thanks"  # a sentence's period after it is not part of it
    found(_SCANNER, text, (5, 5 + len(written)), "CREDIT_CARD")


# A card whose digits are all from 0 to 9 but 8, so that each numeral table's values are drawn.
EVERY_DIGIT_CARD = "4539237301631479"
NUMERALS_BY_DIGIT = {d: sorted(ch for ch, value in NUMERALS.items() if value == d) for d in "0123456789"}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_card_written_in_any_numerals_is_a_card(data):
    """四五三九, ④⑤③⑨, ⁴⁵³⁹, Ⅳ: whatever Unicode says is worth a digit reads as that digit, mixed too."""
    written = " ".join(
        "".join(data.draw(st.sampled_from(NUMERALS_BY_DIGIT[d] + [d])) for d in group)
        for group in grouped(EVERY_DIGIT_CARD)
    )
    text = f"my card is {written} thanks"
    found(_SCANNER, text, (11, 11 + len(written)), "CREDIT_CARD")


# Another script's punctuation or symbol, as a separator may be written: no letter, digit or
# numeral, and nothing NFKC reads as one (⒈ is "1.").
OTHER_MARKS = st.characters(
    categories=("Pd", "Po", "Ps", "Pe", "Pi", "Pf", "Sm", "Sc", "Sk", "So"), min_codepoint=0x80
).filter(lambda ch: ch not in NUMERALS and not any(c.isalnum() for c in unicodedata.normalize("NFKC", ch)))


@settings(max_examples=300, deadline=None)
@given(separator=OTHER_MARKS)
def test_a_card_with_any_scripts_punctuation_or_symbol_between_its_groups_is_a_card(separator):
    written = separator.join(grouped(CARD))
    text = f"card {written} thanks"
    found(_SCANNER, text, (5, 5 + len(written)), "CREDIT_CARD")


def test_a_card_spelled_in_tag_characters_is_a_card(scanner):
    hidden = "".join(chr(TAGS[0] - 0x20 + ord(c)) for c in "4111 1111 1111 1111")  # invisible, read by models
    found(scanner, f"card {hidden} thanks", (5, 5 + len(hidden)), "CREDIT_CARD")


@settings(max_examples=100, deadline=None)
@given(language=st.sampled_from(sorted(DIGIT_WORDS)), joiner=st.sampled_from([" ", ", "]))
def test_a_card_said_in_any_languages_digit_words_is_a_card(language, joiner):
    words = {}
    for word, digit in DIGIT_WORDS[language].items():
        words.setdefault(digit, word)  # the first word each digit has in the table
    written = joiner.join(words[d] for d in CARD)
    text = f"number: {written}"
    found(_SCANNER, text, (8, 8 + len(written)), "CREDIT_CARD")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_card_said_in_pairs_in_any_languages_number_words_is_a_card(data):
    """ "forty-five thirty-nine ...", "fünfundvierzig ...", "сорок пять ..." (the tens, then the
    unit): each pair of digits said as one number where the language says it in one word or two,
    else digit by digit, as people read a card out."""
    language = data.draw(st.sampled_from(sorted(NUMBER_WORDS)))
    digits = {d: min(w for w, v in DIGIT_WORDS[language].items() if v == d) for d in "0123456789"}
    numbers = {v: w for w, v in sorted(NUMBER_WORDS[language].items(), reverse=True)}
    said = []
    for pair in (EVERY_DIGIT_CARD[k : k + 2] for k in range(0, 16, 2)):
        if pair[0] != "0" and pair in numbers and data.draw(st.booleans()):
            said.append(numbers[pair])
        elif pair[0] >= "2" and pair[1] != "0" and f"{pair[0]}0" in numbers and data.draw(st.booleans()):
            said.append(f"{numbers[pair[0] + '0']} {digits[pair[1]]}")
        else:
            said += [digits[pair[0]], digits[pair[1]]]
    written = " ".join(said)
    found(_SCANNER, f"number: {written}", (8, 8 + len(written)), "CREDIT_CARD")


def test_a_number_said_in_decomposed_kannada_or_telugu_is_read_composed(scanner):
    """Kannada's and Telugu's AI vowel sign decomposes into a vowel sign and a length mark with no
    combining class (num2words writes it so); the composed reading joined only marks with one,
    so "ನಲವತ್ತೈದು" (45) decomposed was no number's word."""
    card = [45, 39, 23, 73, 0, 1, 63, 14, 79]
    for language in ("kn", "te"):
        written = unicodedata.normalize("NFD", " ".join(num2words(v, lang=language) for v in card))
        found(scanner, f"number: {written}", (8, 8 + len(written)), "CREDIT_CARD")


@settings(max_examples=200, deadline=None)
@given(language=st.sampled_from(sorted(MAGNITUDE_WORDS)), groups=st.sampled_from(["4444", "44422", "2224222"]))
def test_a_card_said_group_by_group_as_numbers_is_a_card(language, groups):
    """ "four thousand, five hundred and thirty-nine, ...", "cuatro mil quinientos treinta y nueve
    ...": each group of the card said as the number it is, as num2words or CLDR writes it (a leading
    zero said first), in each language whose words past tens the tables hold."""
    said, at = [], 0
    for size in map(int, groups):
        group = EVERY_DIGIT_CARD[at : at + size]
        at += size
        zeros = len(group) - len(group.lstrip("0"))
        said += [in_words(0, language)] * zeros
        said += [in_words(int(group), language)] if group.lstrip("0") else []
    written = ", ".join(said).lower()
    found(_SCANNER, f"number: {written}", (8, 8 + len(written)), "CREDIT_CARD")


@pytest.mark.parametrize(
    "said",
    [
        "patru mii cinci sute treizeci și nouă, două mii trei sute șaptezeci și trei, "
        "zero o sută șaizeci și trei, o mie patru sute șaptezeci și nouă",
        "četiri hiljade petsto trideset devet, dve hiljade trista sedamdeset tri, "
        "nula sto šezdeset tri, jedna hiljada četristo sedamdeset devet",
        "fjögur þúsund fimm hundruð þrjátíu og níu, tvö þúsund þrjú hundruð sjötíu og þrír, "
        "núll eitt hundrað sextíu og þrír, eitt þúsund fjögur hundruð sjötíu og níu",
    ],
)  # fmt: skip
def test_a_card_said_with_a_units_other_form_before_hundreds_and_thousands_is_a_card(scanner, said):
    """Romanian "o sută", "două mii", Serbian "jedna hiljada", "dve hiljade", Icelandic "eitt
    hundrað", "tvö þúsund": a unit said before a hundred or a thousand in the form that agrees
    with it, which is not the digit's word ("unu", "doi"). The tables learn both words of "o
    sută" from the one number said with them (`research.reading_tables`)."""
    found(scanner, f"card: {said}.", (6, 6 + len(said)), "CREDIT_CARD")


@pytest.mark.parametrize(
    "said",
    [
        "fortyfive thirtynine twentythree seventythree zero one sixtythree fourteen seventynine",
        "fourfivethreenine twothreeseventhree zeroonesixthree onefourseventynine",
        "cuatrocincotresnueve dostressietetres cerounoseistres unocuatrosietenueve",
        "FourFiveThreeNine TwoThreeSevenThree ZeroOneSixThree OneFourSevenNine",
    ],
)  # fmt: skip
def test_a_card_whose_number_words_are_run_together_is_a_card(scanner, said):
    """Number words written without spaces or hyphens between them, in any language: a number
    said in one word ("fortyfive") or digits run together ("fourfivethreenine"), each word cut
    into the words it is made of (`said.Parts.read`)."""
    found(scanner, f"card: {said}.", (6, 6 + len(said)), "CREDIT_CARD")


@pytest.mark.parametrize(
    "text, read",
    [
        ("Ligue para o Emil: um dois três quatro cinco seis sete oito nove. Emil diz um dois três",
         "Ligue para o Emil: 123456789. Emil diz um dois três"),
        ("Numri: një dy tre katër pesë, edy gjashtë shtatë tetë", "Numri: 12345, edy gjashtë shtatë tetë"),
    ],
)  # fmt: skip
def test_a_word_that_cuts_into_a_joining_word_first_is_no_number(scanner, text, read):
    """ "Emil" cuts into Portuguese "e" (and) and "mil" (thousand), "edy" into Albanian "e dy":
    a number begins with a count or a multiplier, so neither is a number's word, and the digits
    around them are read as they are (a run that met one once raised an error)."""
    reading = worded.read(text)
    assert reading is not None and reading.text == read
    scanner.scan(text)


@pytest.mark.parametrize(
    "said",
    [
        "τέσσερα πέντε τρία εννέα δύο τρία επτά τρία μηδέν ένα έξι τρία ένα τέσσερα επτά εννέα",
        "चार हज़ार पाँच सौ उनतालीस, दो हज़ार तीन सौ तिहत्तर, शून्य एक सौ तिरेसठ, एक हज़ार चार सौ उनासी",
        "четири хиляди петстотин трийсет и девет, две хиляди триста седемдесет и три, "
        "нула сто шейсет и три, хиляда четиристотин седемдесет и девет",
        "četiri tisuće petsto trideset i devet, dvije tisuće tristo sedamdeset i tri, "
        "nula sto šezdeset i tri, tisuću četiristo sedamdeset i devet",
    ],
)  # fmt: skip
def test_a_card_said_in_a_language_num2words_lacks_is_a_card(scanner, said):
    """Greek, Hindi, Bulgarian, Croatian: num2words writes no numbers in them; Unicode CLDR's
    spell-out rules do (`unicode-rbnf`), and the tables are generated from those the same way."""
    found(scanner, f"card: {said}.", (6, 6 + len(said)), "CREDIT_CARD")


@pytest.mark.parametrize(
    "said",
    [
        "empat ribu lima ratus dua belas, seribu tiga ratus empat belas, "
        "seribu lima ratus enam belas, seribu tujuh ratus enam belas",
        "أربعة آلاف و خمسمائة و اثنا عشر, ألف و ثلاثمائة و أربعة عشر, ألف و خمسمائة و ستة عشر, ألف و سبعمائة و ستة عشر",
        "ארבעת אלפים חמש מאות ושתים עשרה, אלף שלוש מאות וארבע עשרה, אלף חמש מאות ושש עשרה, אלף שבע מאות ושש עשרה",
    ],
)  # fmt: skip
def test_a_card_whose_groups_end_in_teens_said_as_a_unit_and_ten_is_a_card(scanner, said):
    """Indonesian "dua belas", Arabic "اثنا عشر", Hebrew "שתים עשרה" (12): a teen said as its unit
    and a word for ten after it (`said.TEEN`), in 4512 1314 1516 1716."""
    found(scanner, f"card: {said}.", (6, 6 + len(said)), "CREDIT_CARD")


@pytest.mark.parametrize(
    "said",
    [
        "viertausendfünfhundertneununddreißig zweitausenddreihundertdreiundsiebzig "
        "null einhundertdreiundsechzig eintausendvierhundertneunundsiebzig",
        "Viertausend fünfhundertneununddreißig, zweitausend dreihundertdreiundsiebzig, "
        "null hundertdreiundsechzig, tausendvierhundertneunundsiebzig",
        "négyezer-ötszázharminckilenc, kétezer-háromszázhetvenhárom, nulla százhatvanhárom, ezer-négyszázhetvenkilenc",
        "사천오백삼십구 이천삼백칠십삼 영 백육십삼 천사백칠십구",
    ],
)  # fmt: skip
def test_a_card_said_in_words_made_of_number_words_is_a_card(scanner, said):
    """German, Dutch, Italian, Turkish, Korean and five more write a number as one word of parts;
    the word is cut into them (`said.Parts`) and each part does what it does apart: "vier",
    "tausend", "fünf", "hundert", "neununddreißig" is 4539. Capitals, words apart and hyphens
    within (Hungarian's after a thousand) read the same."""
    found(scanner, f"card: {said}.", (6, 6 + len(said)), "CREDIT_CARD")


@settings(max_examples=200, deadline=None)
@given(
    at=st.sampled_from([w for w in AT_WORDS if w != "@"]),
    dot=st.sampled_from([w for w in DOT_WORDS if w != "."]),
    bracket=st.sampled_from(BRACKETS),
)
def test_an_address_with_its_at_and_dot_spelled_in_any_language_and_brackets_is_an_address(at, dot, bracket):
    opening, closing = bracket
    written = f"jane {opening}{dot}{closing} roe {opening}{at}{closing} example {opening}{dot}{closing} com"
    text = f"please write to {written} soon"
    found(_SCANNER, text, (16, 16 + len(written)), "EMAIL")


@pytest.mark.parametrize("at", [w for w in AT_WORDS if w not in ("@", "at")])
def test_an_at_word_other_than_at_may_go_with_any_dot_word_between_spaces(scanner, at):
    for dot in [w for w in DOT_WORDS if w != "."]:
        written = f"jane {at} example {dot} de"
        found(scanner, f"mail {written}", (5, 5 + len(written)), "EMAIL")


@pytest.mark.parametrize(
    "text, kind, value",
    [
        ("My card is 4771.3397.2301.6870.", "CREDIT_CARD", "4771.3397.2301.6870"),
        # an at sign between groups, full-width (folded to "@") or not, as a separator
        ("card 4111＠1111＠1111＠1111 thanks", "CREDIT_CARD", "4111＠1111＠1111＠1111"),
        ("card 4111@1111@1111@1111 thanks", "CREDIT_CARD", "4111@1111@1111@1111"),
        ("My SSN: 601.69.2640.", "US_SSN", "601.69.2640"),
        ("card 4111/1111/1111/1111", "CREDIT_CARD", "4111/1111/1111/1111"),
        ("card 4111_1111_1111_1111", "CREDIT_CARD", "4111_1111_1111_1111"),
        ("card 4111–1111–1111–1111", "CREDIT_CARD", "4111–1111–1111–1111"),
        ("card 4111|1111|1111|1111", "CREDIT_CARD", "4111|1111|1111|1111"),
        ("card 4111,1111,1111,1111", "CREDIT_CARD", "4111,1111,1111,1111"),
        ("card 4111\u20111111\u20111111\u20111111", "CREDIT_CARD", "4111\u20111111\u20111111\u20111111"),
        ("บัตร ๔๑๑๑ ๑๑๑๑ ๑๑๑๑ ๑๑๑๑", "CREDIT_CARD", "๔๑๑๑ ๑๑๑๑ ๑๑๑๑ ๑๑๑๑"),
        ("𞥔𞥑𞥑𞥑 𞥑𞥑𞥑𞥑 𞥑𞥑𞥑𞥑 𞥑𞥑𞥑𞥑", "CREDIT_CARD", "𞥔𞥑𞥑𞥑 𞥑𞥑𞥑𞥑 𞥑𞥑𞥑𞥑 𞥑𞥑𞥑𞥑"),
        ("ma carte: quatre un un un un un un un un un un un un un un un", "CREDIT_CARD",
         "quatre un un un un un un un un un un un un un un un"),
        ("mi teléfono es seis uno dos tres cuatro cinco seis siete ocho", "PHONE",
         "seis uno dos tres cuatro cinco seis siete ocho"),
        ("write to jane {at} example {dot} com", "EMAIL", "jane {at} example {dot} com"),
        ("write to j a n e @ example . com", "EMAIL", "j a n e @ example . com"),
        ("écrivez à jane arobase exemple point fr", "EMAIL", "jane arobase exemple point fr"),
        ("schreib an jane (ät) beispiel (punkt) de", "EMAIL", "jane (ät) beispiel (punkt) de"),
        ("escribe a jane arroba ejemplo punto es", "EMAIL", "jane arroba ejemplo punto es"),
        ("mail jane.roe=40example.com today", "EMAIL", "jane.roe=40example.com"),
        ("mail jane @example.com today", "EMAIL", "jane @example.com"),
        ("mail jane@ example.de today", "EMAIL", "jane@ example.de"),
        ("mail jane\t@\texample.com today", "EMAIL", "jane\t@\texample.com"),
        ("mail jane\n@\nexample.com today", "EMAIL", "jane\n@\nexample.com"),
        ("call 415 – 555 – 0123 today", "PHONE", "415 – 555 – 0123"),
        ("card 4111,1111/1111\\1111 today", "CREDIT_CARD", "4111,1111/1111\\1111"),
        ("SSN 123_45|6789 today", "US_SSN", "123_45|6789"),
        ("card 4539:2373:0163:1479 today", "CREDIT_CARD", "4539:2373:0163:1479"),
        ("card 4539*2373*0163*1479 today", "CREDIT_CARD", "4539*2373*0163*1479"),
        ("卡号 四五三九 二三七三 〇一六三 一四七九", "CREDIT_CARD", "四五三九 二三七三 〇一六三 一四七九"),
        ("卡号 4539、2373、0163、1479", "CREDIT_CARD", "4539、2373、0163、1479"),
        ("card 4539→2373→0163→1479", "CREDIT_CARD", "4539→2373→0163→1479"),
        ("SSN ①②③-④⑤-⑥⑦⑧⑨", "US_SSN", "①②③-④⑤-⑥⑦⑧⑨"),
        ("SSN 1\u20e32\u20e33\u20e3-45-6789", "US_SSN", "1\u20e32\u20e33\u20e3-45-6789"),
        ("SSN 1\ue0002\ue0013-45-6789", "US_SSN", "1\ue0002\ue0013-45-6789"),  # private use characters
        ("What is 2+2? 4111\n1111\n1111\n1111", "CREDIT_CARD", "4111\n1111\n1111\n1111"),
        ("Room 2 4111 1111 1111 1111", "CREDIT_CARD", "4111 1111 1111 1111"),
        # after a long run of digit groups: each card-sized stretch of the run is read once
        ("rows " + "12 " * 40 + "4111 1111 1111 1111", "CREDIT_CARD", "4111 1111 1111 1111"),
        ("rows " + "7 " * 40 + "4111 1111 1111 1111 3", "CREDIT_CARD", "4111 1111 1111 1111"),
        ("2+2 4111\n1111\n1111\n1111", "CREDIT_CARD", "4111\n1111\n1111\n1111"),
        ("SSN ๑๒๓/๔๕-๖๗๘๙ today", "US_SSN", "๑๒๓/๔๕-๖๗๘๙"),
        # JSON's escapes, as an SDK writes a tool call's arguments: a surrogate pair for a digit
        # above U+FFFF
        ('{"note": "card \\ud83a\\udd54\\ud83a\\udd51\\ud83a\\udd51\\ud83a\\udd51 1111 1111 1111"}',
         "CREDIT_CARD", "\\ud83a\\udd54\\ud83a\\udd51\\ud83a\\udd51\\ud83a\\udd51 1111 1111 1111"),
    ],
)  # fmt: skip
def test_the_spellings_that_once_reached_a_provider(scanner, text, kind, value):
    start = text.index(value)
    found(scanner, text, (start, start + len(value)), kind)


@pytest.mark.parametrize(
    "text",
    [
        "The river at one point in its course turns north.",
        "Scores were 89, 71, 92, 100 and 65.",
        "The odd numbers 11,13,15,17,19 follow.",
        "Revenue grew from 200,000,000 to 2,000,000,000 dollars.",
        "Budgets of 10,000–15,000 and 19,000–20,000 were set.",
        "Sizes 100-200/300-400 mm, at 40.7128/-74.0060, order 1234_5678|9012.",  # mixed, but no card or SSN
        "We meet at noon. Point taken.",
        "On en a vu un deux fois, puis trois.",
        "Version 1.2.3.4 shipped.",
        "x = 123456 * 7890",
        "ratio 1:2:3:4:5:6:7",
        "第三章 一二三四五六七八",
        "2026年12月6日 下午3:45",
        "meet 10:30-11:45, room 12/14",
        "Scores 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",
        "Each costs 800 $ 80 $ 1350 in turn.",  # an SSN's 3-2-4, joined as sums are
        "So 125*12=1500 and 150 + 400 + 200 = 750.",
        "The ratio 1:9:35:82:120:120:82:35:9:1 is symmetric.",  # 18 digits that pass the Luhn check
        "Bullets 11 • 11 • 11 • 11 • 11",
        "Thanks @jane.doe for the review.",
        "I have two hundred and fifty sheep and three thousand goats.",
        "one hundred, two hundred, three hundred, four hundred",
        "Chapter one, two and three, four pages.",
        # words that begin or end as number words do, and a year said run together
        "Someone often tends to entertain anyone; twofold, fourfold, the tenth tenant, a fiveish start.",
        "Born in nineteeneightyfour, she moved twice.",
        # words made of number words' parts, in prose: an ordinal, plurals, round numbers
        "Die vierte Auflage erschien in tausend Exemplaren; hunderte Leser, dreitausend Bestellungen.",
        "Abbiamo venduto duemila copie, poi tremila, poi quattromila e infine cinquemila.",
        "Der Preis: einhundertzwanzig, zweihundertdreißig, dreihundertvierzig und vierhundertfünfzig Euro.",
        "import flask\n\n@app.route('/')\ndef index():\n    return 'hi'",
    ],
)
def test_prose_numbers_and_words_that_only_look_so_are_left_alone(scanner, text):
    assert [f for f in scanner.scan(text) if "canonical" in f.detector] == []


def test_a_text_with_none_of_the_cues_has_no_canonical_reading():
    text = "A plain question about 4111 1111 1111 1111 and jane@example.com."
    assert not foldable(text)
    assert canonical(text, Cues(False, [], [], [])) is None


@pytest.mark.parametrize("text", ["born 1/21/1998 in Lyon", "born 21.01.1998 in Lyon", "host 10.118.77.22 is down"])
def test_dates_and_ip_addresses_are_read_as_written_not_as_separated_numbers(text):
    assert separated(text) is None


def test_a_dash_in_prose_does_not_fold_a_text_but_one_in_a_number_does():
    assert not foldable("In 1998 the river — wide and slow — flooded.")
    assert foldable("call 415–555–0123")
    assert foldable("call 415 – 555 0123")
