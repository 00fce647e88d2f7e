"""Personal data beyond English: birth dates, health conditions, identifiers, street addresses
and names, in the languages the scan supports (`classifiers.privacy.lexicon`'s tables, each entry
read here without a test of its own) and the scripts of Japan, China and Russia."""

from __future__ import annotations

import pytest

from classifiers import Scorer
from classifiers.privacy import PrivacyScanner
from classifiers.privacy.lexicon import BIRTH_AFTER, BIRTH_BEFORE, CONDITIONS, FIRST_PERSON, MONTHS


@pytest.fixture(scope="module")
def scanner():
    return PrivacyScanner()


def covered(scanner, text: str, value: str, kind: str) -> None:
    """A finding of `kind` covers `value` in `text` whole."""
    start = text.index(value)
    found = [(f.type, f.start, f.end) for f in scanner.scan(text)]
    assert any(t == kind and s <= start and e >= start + len(value) for t, s, e in found), (text, found)


# --- every table entry ------------------------------------------------------------------------
BIRTH_WORD = {language: words[0] for language, words in BIRTH_BEFORE.items()}


@pytest.mark.parametrize(("language", "month"), [(lang, m) for lang, months in MONTHS.items() for m in months])
def test_a_birth_date_with_any_languages_month_name(scanner, language, month):
    date = f"14 {month} 1987"
    covered(scanner, f"{BIRTH_WORD[language]} {date}", date, "DATE_OF_BIRTH")


@pytest.mark.parametrize("word", sorted({w for words in BIRTH_BEFORE.values() for w in words}))
def test_a_birth_date_after_any_cue(scanner, word):
    covered(scanner, f"{word}: 14.03.1987", "14.03.1987", "DATE_OF_BIRTH")


@pytest.mark.parametrize("word", sorted({w for words in BIRTH_AFTER.values() for w in words}))
def test_a_birth_date_before_a_cue_that_ends_the_sentence(scanner, word):
    covered(scanner, f"Ich bin am 14. März 1987 {word}.", "14. März 1987", "DATE_OF_BIRTH")


SAID = {"en": "I have {}.", "fr": "Moi, j'ai {}.", "de": "Ich habe {}.", "es": "Tengo {}.", "it": "Ho {}.",
        "pt": "Tenho {}.", "nl": "Ik heb {}."}  # fmt: skip


@pytest.mark.parametrize(
    ("language", "condition"), [(lang, c) for lang, conditions in CONDITIONS.items() for c in conditions]
)
def test_a_health_condition_told_in_the_first_person(scanner, language, condition):
    written = condition.replace("*", "Brust" if condition.startswith("*") else "")
    covered(scanner, SAID[language].format(written), written, "HEALTH")


@pytest.mark.parametrize(("language", "word"), [(lang, w) for lang, words in FIRST_PERSON.items() for w in words])
def test_any_first_person_word_makes_a_named_condition_someones(scanner, language, word):
    condition = CONDITIONS[language][1]
    covered(scanner, f"{word.capitalize()} — {condition}, seit Jahren.", condition, "HEALTH")


# --- the forms that once reached a provider ---------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("Je suis née le 14 mars 1987 à Lyon.", "14 mars 1987", "DATE_OF_BIRTH"),
        ("Ich bin am 14. März 1987 geboren.", "14. März 1987", "DATE_OF_BIRTH"),
        ("Geburtsdatum: 14.03.1987", "14.03.1987", "DATE_OF_BIRTH"),
        ("Nací el 14 de marzo de 1987.", "14 de marzo de 1987", "DATE_OF_BIRTH"),
        ("J'ai un cancer du sein depuis deux ans, que faire ?", "cancer du sein", "HEALTH"),
        ("Ich habe Typ-1-Diabetes und brauche einen Ernährungsplan.", "Typ-1-Diabetes", "HEALTH"),
        ("Sufro de depresión desde hace años.", "depresión", "HEALTH"),
        ("I had an abortion last year and feel anxious.", "abortion", "HEALTH"),
        ("Mein Reisepass hat die Nummer C01X00T47.", "C01X00T47", "ID_NUMBER"),
        ("〒150-0002 東京都渋谷区渋谷2丁目21-1 渋谷ヒカリエ", "〒150-0002 東京都渋谷区渋谷2丁目21-1", "STREET_ADDRESS"),
        ("住所は東京都新宿区西新宿2丁目8-1です。", "東京都新宿区西新宿2丁目8-1", "STREET_ADDRESS"),
        ("我住在北京市朝阳区建国路88号。", "北京市朝阳区建国路88号", "STREET_ADDRESS"),
        ("Мой адрес: г. Москва, ул. Тверская, д. 7, кв. 15", "г. Москва, ул. Тверская, д. 7, кв. 15", "STREET_ADDRESS"),
        ("Отправьте на Невский проспект, д. 28.", "Невский проспект, д. 28", "STREET_ADDRESS"),
        ("Schicken Sie es an Lindenweg 5a, 80331 München.", "Lindenweg 5a, 80331 München", "STREET_ADDRESS"),
        ("Wir treffen uns in der Berliner Straße 5.", "Berliner Straße 5", "STREET_ADDRESS"),
        ("J'habite au 12 rue de la Paix, 75002 Paris.", "12 rue de la Paix, 75002 Paris", "STREET_ADDRESS"),
        ("J'habite au 3 rue Victor Hugo à Lyon.", "3 rue Victor Hugo", "STREET_ADDRESS"),
        ("Envoyez-le au 8 bis boulevard Haussmann, 75009 Paris", "8 bis boulevard Haussmann, 75009 Paris",
         "STREET_ADDRESS"),
        ("Abito in via Roma 12, 10121 Torino.", "via Roma 12, 10121 Torino", "STREET_ADDRESS"),
        ("Vivo en la calle de Alcalá 45, 28014 Madrid.", "calle de Alcalá 45, 28014 Madrid", "STREET_ADDRESS"),
        ("Moro na Rua Augusta 100, 1100-053 Lisboa.", "Rua Augusta 100, 1100-053 Lisboa", "STREET_ADDRESS"),
        ("On m'a diagnostiqué un diabète de type 2.", "diabète", "HEALTH"),
        ("Mon fils est autiste et épileptique.", "épileptique", "HEALTH"),
        ("Mi figlio è autistico.", "autistico", "HEALTH"),
        ("Sou diabética desde criança.", "diabética", "HEALTH"),
        ("Please write to Jo\u200bhn Smi\u200bth at the office.", "Jo\u200bhn Smi\u200bth", "PERSON"),
        ("My name is Mar\u200dia González.", "Mar\u200dia González", "PERSON"),
    ],
)  # fmt: skip
def test_the_forms_that_once_reached_a_provider(scanner, text, value, kind):
    covered(scanner, text, value, kind)


@pytest.mark.parametrize(
    "text",
    [
        "这个区有3-4个公园。",
        "城市人口在2020年达到100万。",
        "The string during the weg class ran in 2 ms.",
        "Die Straße ist lang.",
        "Er hat 5 Bücher gelesen.",
        "The patient's history: none. Diabetes is common in adults.",
        "My passport is in the drawer; I need 2 copies.",
        "Send it via email 12 times.",  # "via" is a street only with its postcode and town
        "The hotel at 5 avenue Montaigne is famous.",
        "La piazza del Duomo è bellissima.",
    ],
)
def test_words_that_only_look_so_are_left_alone(scanner, text):
    found = [(f.type, text[f.start : f.end]) for f in scanner.scan(text)]
    assert not [f for f in found if f[0] in ("STREET_ADDRESS", "ID_NUMBER", "DATE_OF_BIRTH")], found


# --- names in fields, by their keys -----------------------------------------------------------
TOOLS = [{"type": "function", "function": {"name": "send", "parameters": {"type": "object", "properties": {
    "to": {"type": "string", "enum": ["Margaret Okonkwo", "Dmitri Volkov"]},
    "unit": {"type": "string", "enum": ["Celsius", "Fahrenheit", "Kelvin"]}}}}}]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({"metadata": {"name": "Margaret Okonkwo"}}, ("metadata", "name")),
        ({"metadata": {"name": "Jo\u200bhn Okonkwo"}}, ("metadata", "name")),
        ({"metadata": {"customer": "Ana Beltrán"}}, ("metadata", "customer")),
        ({"metadata": {"customer_name": "amara okafor"}}, ("metadata", "customer_name")),
        ({"user": "Priya Raghunathan"}, ("user",)),
        ({"tools": TOOLS}, ("tools", 0, "function", "parameters", "properties", "to", "enum", 0)),
    ],
)
def test_a_name_in_a_field_its_key_names_is_a_person_whole(extra, path):
    body = {"messages": [{"role": "user", "content": "Send the letter."}], **extra}
    value = body
    for step in path:
        value = value[step]
    found = Scorer().signals(body["messages"], body=body).privacy
    assert ("PERSON", 0, len(value)) in [(f.type, f.start, f.end) for f in found if f.path == path]


@pytest.mark.parametrize(
    "extra",
    [{"metadata": {"name": "Pizzeria"}}, {"metadata": {"to": "Sales Team"}}, {"metadata": {"name": "Weekly Report"}},
     {"tools": [{"type": "function", "function": {"name": "convert", "parameters": {"type": "object", "properties": {
         "unit": {"type": "string", "enum": ["Celsius", "Fahrenheit", "Kelvin"]}}}}}]}],
)  # fmt: skip
def test_products_teams_and_units_in_fields_are_no_one(extra):
    body = {"messages": [{"role": "user", "content": "Convert it."}], **extra}
    assert Scorer().signals(body["messages"], body=body).privacy == ()
