"""A mailbox written with its at sign and dots as words of any language is read by its shape
(`classifiers.privacy.mailboxes`): no table of the words. The tests draw the words from whole
alphabets, the names and hosts from the shapes people choose, the top-level domain from every
country's; prose that comes near the shape is not an address."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.mailboxes import shaped, top_level_domains
from classifiers.privacy.ordinary import short_common_words

SCANNER = PrivacyScanner()
LOWER = "abcdefghijklmnopqrstuvwxyz"
# the letters a word for "at" or "dot" may be written in: Latin with its accents, Cyrillic, Greek
ALPHABETS = (LOWER + "àéèçñöüßłąęóśżź", "абвгдеёжзийклмнопрстуфхцчшщыэюя", "αβγδεζηθικλμνξοπρστυφχψω")
ascii_word = st.text(LOWER, min_size=2, max_size=10)
# a host or a label: any name but the short commonest words of a language ("the", "la", "in")
host_word = ascii_word.filter(lambda w: w not in short_common_words())


@st.composite
def words_apart(draw: st.DrawFn) -> tuple[str, str]:
    """Two different words of one alphabet: the at sign's and the dot's."""
    alphabet = draw(st.sampled_from(ALPHABETS))
    at = draw(st.text(alphabet, min_size=1, max_size=12))
    dot = draw(st.text(alphabet, min_size=1, max_size=12).filter(lambda w: w != at))
    return at, dot


@st.composite
def mailbox_names(draw: st.DrawFn) -> str:
    first, last = draw(ascii_word), draw(ascii_word)
    digits = str(draw(st.integers(10, 9999)))
    return draw(
        st.sampled_from(
            [f"{first}.{last}", f"{first}_{last}{digits}", f"{first}{digits}", f"{first[0]}.{last}{digits}"]
        )
    )


@settings(max_examples=300, deadline=None)
@given(
    words=words_apart(),
    name=mailbox_names(),
    labels=st.lists(host_word, min_size=1, max_size=2),
    top=st.sampled_from(sorted(top_level_domains())),
)
def test_an_address_with_its_at_and_dots_as_any_words_is_an_address(words, name, labels, top):
    at, dot = words
    written = f"{name} {at} " + f" {dot} ".join([*labels, top])
    text = f"please write to {written} soon"
    start, end = 16, 16 + len(written)
    emails = [f for f in SCANNER.scan(text) if f.type == "EMAIL"]
    assert any(f.start <= start and f.end >= end for f in emails), (text, emails)
    reading = shaped(text)
    assert reading is not None and f"{name}@{'.'.join([*labels, top])}" in reading.text


@pytest.mark.parametrize(
    "text",
    [
        "Moja poczta: ania_kowalska77 małpa wp kropka pl",
        "Écrivez-moi : zq.hollander77 chez proton point me, merci",
        "Пишите: anna.k88 собака gmail точка com",
        "mail: luca.rossi presso libero punto it grazie",
    ],
)
def test_the_words_people_use_for_at_and_dot_need_no_table(text):
    assert any(f.type == "EMAIL" for f in SCANNER.scan(text))


@pytest.mark.parametrize(
    "text",
    [
        "It continues to shift towards a wider consumer market.The brand continues be the benchmark.",
        "The conclusion of the treaty had been tough.8 Be that as it may, the world moved on.",
        "Suppose P_2 is not known to be solvable in polynomial time.",
        "The price was 50.00 dollars at my local shop.",
        "A 9-year-old boy was walking to school.",
        "Compare np.array with the list in Python.",
        "version 3.12 is out now in",
        "she read it on page 12 and again at 14 in",
    ],
)
def test_prose_near_the_shape_is_not_an_address(text):
    assert shaped(text) is None
    assert not [f for f in SCANNER.scan(text) if f.type == "EMAIL"]


def test_a_text_of_dots_is_read_in_linear_time():
    """Every dot between letters is where a name may be; a run with no space is no name after
    `MOST_NAME` characters, so it is not walked back over from each of them."""
    assert shaped("a." * 50_000) is None
    assert shaped(("x.y " * 20_000) + "z") is None
