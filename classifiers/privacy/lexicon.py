"""The words the cue-led detectors read, in each language the scan supports: English, French,
German, Spanish, Italian, Portuguese and Dutch (the canonical reading's languages).

Each table is the one place its words are listed: a birth date's month names and cues, the
health conditions and the first person's words. `contextual` builds its patterns and its
anchors' literals from them, so a new language or a new word is an entry here. Words are in lower
case (the patterns match any case); a trailing `*` marks a stem that may run on ("épilep*":
"épilepsie"), a leading one a word that may begin with others (German compounds: "*krebs",
"Brustkrebs").
"""

from __future__ import annotations

import re

# Month names beyond English (whose abbreviations `contextual._MONTH` spells), with the
# abbreviations each language writes with or without a full stop.
MONTHS: dict[str, tuple[str, ...]] = {
    "fr": ("janvier", "février", "fevrier", "mars", "avril", "mai", "juin", "juillet", "août", "aout", "septembre",
           "octobre", "novembre", "décembre", "decembre", "janv", "févr", "fevr", "avr", "juil", "déc"),
    "de": ("januar", "jänner", "februar", "feber", "märz", "maerz", "april", "mai", "juni", "juli", "august",
           "september", "oktober", "november", "dezember", "mär", "okt", "dez"),
    "es": ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "setiembre",
           "octubre", "noviembre", "diciembre", "ene", "abr", "ago", "dic"),
    "it": ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre",
           "novembre", "dicembre", "genn", "febbr", "magg", "giu", "lug", "sett", "ott"),
    "pt": ("janeiro", "fevereiro", "março", "marco", "abril", "maio", "junho", "julho", "agosto", "setembro",
           "outubro", "novembro", "dezembro", "fev", "mai", "set", "out", "dez"),
    "nl": ("januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober",
           "november", "december", "mrt", "okt"),
}  # fmt: skip

# Words that say a date is someone's birth, before it ("née le 14 mars 1987", "Geburtsdatum:
# 14.03.1987", "nací el 14 de marzo de 1987").
BIRTH_BEFORE: dict[str, tuple[str, ...]] = {
    "en": ("born", "birth", "birthday", "birthdate", "date of birth"),
    "fr": ("né", "née", "né(e)", "naissance", "date de naissance"),
    "de": ("geboren", "geb", "geburtsdatum", "geburtstag", "geburt"),
    "es": ("nací", "naci", "nacido", "nacida", "nacimiento", "fecha de nacimiento"),
    "it": ("nato", "nata", "nascita", "data di nascita"),
    "pt": ("nasci", "nascido", "nascida", "nascimento", "data de nascimento"),
    "nl": ("geboren", "geboortedatum", "geb"),
}
# ... and after it, where the verb ends the sentence ("am 14. März 1987 geboren").
BIRTH_AFTER: dict[str, tuple[str, ...]] = {
    "de": ("geboren",),
    "nl": ("geboren",),
}

# Health conditions a person may tell of: any one named in a text in the first person is HEALTH.
CONDITIONS: dict[str, tuple[str, ...]] = {
    "en": ("diabetes", "cancer", "hiv", "aids", "depression", "bipolar", "schizophrenia", "asthma", "epilepsy",
           "adhd", "autism", "dementia", "alzheimer's", "alzheimers", "parkinson's", "parkinsons", "hepatitis",
           "pregnant", "pregnancy", "miscarriage", "abortion", "chlamydia", "herpes", "hypertension",
           "anxiety disorder", "eating disorder", "anorexia", "bulimia", "ptsd", "ocd", "leukemia", "leukaemia",
           "tumor", "tumour", "multiple sclerosis"),
    "fr": ("cancer", "diabète", "diabétique", "dépression", "sida", "vih", "asthme", "asthmatique", "épilep*",
           "grossesse", "enceinte", "avortement", "ivg", "fausse couche", "schizophrénie", "bipolaire", "autis*",
           "démence", "alzheimer", "parkinson", "hépatite", "hypertension", "anorexie", "boulimie",
           "trouble anxieux", "troubles anxieux", "leucémie", "tumeur", "sclérose en plaques"),
    "de": ("*krebs", "diabetes", "diabetiker", "diabetikerin", "depression", "depressionen", "asthma", "epilep*",
           "schwanger", "schwangerschaft", "abtreibung", "schwangerschaftsabbruch", "fehlgeburt", "schizophrenie",
           "autis*", "demenz", "hepatitis", "bluthochdruck", "magersucht", "bulimie", "*störung", "*stoerung",
           "leukämie", "*tumor", "multiple sklerose"),
    "es": ("cáncer", "cancer", "diabetes", "diabético", "diabética", "depresión", "depresion", "asma", "epilép*",
           "epilep*", "embarazo", "embarazada", "aborto", "esquizofrenia", "bipolar", "autis*", "demencia",
           "hepatitis", "hipertensión", "anorexia", "bulimia", "vih", "sida", "trastorno de ansiedad", "leucemia",
           "tumor", "esclerosis múltiple"),
    "it": ("cancro", "tumore", "diabete", "diabetico", "diabetica", "depressione", "asma", "epiless*", "epilett*",
           "gravidanza", "incinta", "aborto", "schizofrenia", "autis*", "demenza", "epatite", "ipertensione",
           "anoressia", "bulimia", "leucemia"),
    "pt": ("câncer", "cancro", "diabetes", "diabético", "diabética", "depressão", "asma", "epilép*", "epilep*",
           "gravidez", "grávida", "aborto", "esquizofrenia", "autis*", "demência", "hepatite", "hipertensão",
           "anorexia", "bulimia", "leucemia"),
    "nl": ("kanker", "diabetes", "suikerziekte", "depressie", "astma", "epilep*", "zwanger", "zwangerschap",
           "abortus", "miskraam", "schizofrenie", "autis*", "dementie", "hepatitis", "leukemie"),
}  # fmt: skip

# The languages whose birth-date and condition words are here: text in any other hides what the
# cue-led detectors look for, and fails closed (`classifiers.privacy.languages`).
LANGUAGES = frozenset(BIRTH_BEFORE) & frozenset(CONDITIONS)

# The first person's words: a condition told of oneself, or of one's patient or client.
FIRST_PERSON: dict[str, tuple[str, ...]] = {
    "en": ("i", "i'm", "i am", "my", "me", "we", "our", "patient", "client"),
    "fr": ("je", "j'ai", "j’ai", "m'a", "m’a", "m'ont", "m’ont", "moi", "mon", "ma", "mes", "patient", "patiente"),
    "de": ("ich", "mein", "meine", "meinem", "meinen", "meiner", "mir", "mich", "patient", "patientin"),
    "es": ("yo", "mi", "mis", "tengo", "estoy", "soy", "sufro", "padezco", "paciente"),
    "it": ("io", "mio", "mia", "ho", "sono", "paziente"),
    "pt": ("eu", "meu", "minha", "tenho", "estou", "sou", "paciente"),
    "nl": ("ik", "mijn", "heb", "patiënt"),
}


def words(table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Every language's words, each once."""
    return tuple(dict.fromkeys(word for entries in table.values() for word in entries))


def alternation(entries: tuple[str, ...]) -> str:
    """The words as one regex alternation, the longest first, their stems' `*` as letters."""
    letters = r"[^\W\d_]*"
    escaped = (
        (letters if w.startswith("*") else "") + re.escape(w.strip("*")) + (letters if w.endswith("*") else "")
        for w in sorted(entries, key=len, reverse=True)
    )
    return "|".join(escaped)


def literal(word: str) -> str:
    """What an anchor finds of a word: its text without the stem marks, from its first ASCII
    letter (an anchor's literal begins with one: "épilepsie" is found as "pilepsie", and the
    detector reads from where the word begins)."""
    text = word.strip("*")
    first = next(i for i, c in enumerate(text) if c.isascii())
    return text[first:]
