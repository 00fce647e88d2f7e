"""Words that are only words in languages written in Latin letters: a German noun or a sentence's
first word is no one's name (in English, the first word only), while the names in the same texts
stay names.
The table is generated (`python -m research.ordinary_words`, from wordfreq's lists less Faker's
names) and the committed file is what the generator writes."""

from __future__ import annotations

import pytest

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.languages import LANGUAGE
from classifiers.privacy.ordinary import MODEL_DIR, OrdinaryWords, begins_sentence
from research import ordinary_words


@pytest.fixture(scope="module")
def scanner():
    return PrivacyScanner()


def test_the_committed_table_is_what_the_generator_writes():
    assert ordinary_words.MODEL_DIR == MODEL_DIR
    made = ordinary_words.files()
    assert sorted(p.name for p in MODEL_DIR.iterdir()) == sorted(made), "run `python -m research.ordinary_words`"
    for name, text in made.items():
        assert (MODEL_DIR / name).read_text(encoding="utf-8") == text, (
            f"{name}: run `python -m research.ordinary_words`"
        )


@pytest.mark.parametrize(
    "text",
    [
        "Der Preis ist zu hoch, aber die Qualität stimmt.",
        "Die Regierung plant neue Steuern für Unternehmen.",
        "Können Sie mir helfen, einen Brief an meinen Vermieter zu schreiben?",
        "Il prezzo della benzina è aumentato di nuovo.",
        "Bugün hava çok güzel, parka gidelim mi?",
        "Yüzlerce kişi meydanda toplandı.",
        "Mais nous avons regardé un film hier soir.",
        "¿Por qué el cielo es azul y el atardecer rojo?",
    ],
)
def test_ordinary_requests_in_other_languages_are_not_flagged(scanner, text):
    # (Turkish is read for names, not for birth dates and conditions: it fails closed as a whole,
    # `classifiers.privacy.languages`)
    assert [f for f in scanner.scan(text) if not f.detector.startswith(LANGUAGE)] == []


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Ich heiße Anna Schmidt und wohne seit zwei Jahren hier.", "Anna Schmidt"),
        ("Mein Name ist Jürgen Weber.", "Jürgen Weber"),
        ("Schreib bitte eine E-Mail an John Smith wegen der Rechnung.", "John Smith"),
        ("Caro Marco, grazie per la fattura.", "Marco"),
        ("Meu nome é Paulo e preciso de ajuda com o imposto.", "Paulo"),
    ],
)
def test_names_in_those_texts_stay_names(scanner, text, name):
    start = text.index(name)
    assert any(f.type == "PERSON" and f.start <= start < f.end for f in scanner.scan(text)), scanner.scan(text)


def test_inside_a_french_sentence_a_capital_is_a_name_even_of_a_word():
    """Only German writes nouns with capitals: "Safran" (saffron, and a company) inside a French
    sentence is read as English reads it."""
    ordinary = OrdinaryWords()
    assert ordinary.language("Le salaire moyen chez Safran est de combien?") == "fr"
    assert "safran" in ordinary.words("fr")
    said = "Le salaire moyen chez Safran. « Mais non"
    assert not begins_sentence(said, said.index("Safran")) and begins_sentence(said, said.index("Mais"))


def test_english_and_other_scripts_are_left_to_the_span_model():
    ordinary = OrdinaryWords()
    assert ordinary.language("Please write a letter to my landlord about the rent.") is None
    assert ordinary.language("Привет, напиши команду для snmpwalk des MD5") is None
    assert ordinary.language('{"Json":{},"Data":[{"SearchText":null,"io":1}]}') is None


@pytest.mark.parametrize(
    "text, person",
    [
        ("Reply to jane.doe@example.com by Friday.", None),
        ("Reply all to jane.doe@example.com, please.", None),
        ("Thanks for the draft. Reply to Maria, not to jane.doe@example.com.", "Maria"),
        ("Reply to Maria at jane.doe@example.com", "Maria"),
        ("Please ask. Reply soon, Nadia.", "Nadia"),
    ],
)
def test_an_english_sentences_first_word_that_is_only_a_word_is_no_name(scanner, text, person):
    """In English a capital inside a sentence still means a name; at a sentence's start, a word
    every English text uses (an imperative: "Reply", "Forward") is read as the word it is, and
    the names beside it stay names."""
    found = [text[f.start : f.end] for f in scanner.scan(text) if f.type in ("PERSON", "ORGANIZATION")]
    assert found == ([person] if person else []), found
