"""Realistic prompts with private data in context, made from templates with exact spans.

`python -m research.data.make_privacy` rewrites `privacy_prompts.jsonl` (deterministic). What
Presidio's synthetic set lacks: private facts inside requests ("my colleague Rachel Zheng at H&R
Technology"), other languages, secrets (API keys, private keys, JWTs, passwords), identifiers that
validate (Luhn, mod-97), and prompts with capitalized words that are not private at all. The
first names, surnames, companies and streets are split in two halves: the `train` rows use one
half and the `test` rows the other, so the evaluation measures names the model has never seen.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

from research.data import write_rows

OUT = Path(__file__).with_name("privacy_prompts.jsonl")

FIRST = [
    "Rachel",
    "Omar",
    "Mei",
    "Lukas",
    "Priya",
    "Tomasz",
    "Aisha",
    "Diego",
    "Hannah",
    "Kenji",
    "Fatima",
    "Jonas",
    "Chloe",
    "Mateo",
    "Ingrid",
    "Kwame",
    "Sofia",
    "Arjun",
    "Elena",
    "Noah",
    "Yara",
    "Pierre",
    "Zanele",
    "Ravi",
    "Leonie",
    "Tariq",
    "Camila",
    "Bjorn",
    "Amara",
    "Hiroshi",
    "Nadia",
    "Emeka",
    "Greta",
    "Santiago",
    "Linh",
    "Oskar",
    "Layla",
    "Dmitri",
    "Beatriz",
    "Tobias",
]
LAST = [
    "Zheng",
    "Haddad",
    "Kowalski",
    "Okafor",
    "Lindqvist",
    "Fernandes",
    "Nakamura",
    "Schreiber",
    "Mensah",
    "Varga",
    "Castillo",
    "Iyer",
    "Rossi",
    "Novak",
    "Abernathy",
    "Sato",
    "Dubois",
    "Moreau",
    "Petrov",
    "Adeyemi",
    "Keller",
    "Horvath",
    "Brennan",
    "Quispe",
    "Takahashi",
    "Olsen",
    "Demir",
    "Mbeki",
    "Laurent",
    "Gallagher",
]
COMPANIES = [
    "H&R Technology",
    "Northwind Logistics",
    "Bluefin Analytics",
    "Kestrel Health",
    "Orbital Foods",
    "Maple Ridge Bank",
    "Quantix Labs",
    "Silverline Insurance",
    "Harbor & Finch",
    "Tundra Software",
    "Lumen Dynamics",
    "Cobalt Retail Group",
    "Redwood Capital",
    "Vireo Pharma",
    "Atlas Freight",
]
STREETS = [
    "Maple Street",
    "Oak Avenue",
    "Harbor Road",
    "Elm Lane",
    "Birchwood Drive",
    "Kingsley Court",
    "Riverside Boulevard",
    "Hauptstrasse",
    "Rue des Lilas",
    "Calle Mayor",
    "Via Roma",
    "Vesterbrogade",
]
CITIES = [
    "Springfield, IL 62704",
    "Austin, TX 78701",
    "Portland, OR 97205",
    "10115 Berlin",
    "75011 Paris",
    "28013 Madrid",
    "00184 Roma",
    "1620 Copenhagen",
]
RELATIONS = [
    "colleague",
    "sister",
    "brother",
    "manager",
    "neighbor",
    "friend",
    "wife",
    "husband",
    "son",
    "daughter",
    "landlord",
    "doctor",
    "client",
]
CONDITIONS = [
    "type 2 diabetes",
    "depression",
    "an anxiety disorder",
    "asthma",
    "HIV",
    "breast cancer",
    "hypertension",
    "epilepsy",
    "ADHD",
    "rheumatoid arthritis",
    "Crohn's disease",
    "bipolar disorder",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
# Capitalized words that are not personal data: the model must leave these alone.
NOT_PII = [
    "Python",
    "Kubernetes",
    "Monday",
    "Christmas",
    "the Eiffel Tower",
    "Excel",
    "the Pacific Ocean",
    "Shakespeare's Hamlet",
    "PostgreSQL",
    "the French Revolution",
    "GitHub Actions",
    "January",
    "Mars",
    "the Supreme Court",
    "Tokyo",
    "Linux",
    "World War II",
    "Amazon Web Services",
]


class Builder:
    """Appends text pieces, remembering the exact span of each private one."""

    def __init__(self) -> None:
        self.text = ""
        self.spans: list[dict] = []

    def add(self, piece: str, kind: str | None = None) -> Builder:
        if kind:
            self.spans.append(
                {"type": kind, "start": len(self.text), "end": len(self.text) + len(piece), "value": piece}
            )
        self.text += piece
        return self

    def row(self, split: str, template: str) -> dict:
        return {"text": self.text, "spans": self.spans, "split": split, "template": template}


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        digits = body + check
        total = sum(
            (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d for i, d in enumerate(int(c) for c in reversed(digits))
        )
        if total % 10 == 0:
            return digits
    raise AssertionError


def _iban(country: str, length: int, rng: random.Random) -> str:
    bban = "".join(rng.choice(string.digits) for _ in range(length - 4))
    number = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - number % 97:02d}{bban}"


def _card(rng: random.Random) -> str:
    digits = _luhn_complete(rng.choice(["4", "51", "37", "6011"]), 15 if rng.random() < 0.2 else 16, rng)
    return " ".join(digits[i : i + 4] for i in range(0, len(digits), 4)) if rng.random() < 0.5 else digits


def _secret(rng: random.Random, one_line: bool = False) -> str:
    alnum = string.ascii_letters + string.digits
    pick = lambda n: "".join(rng.choice(alnum) for _ in range(n))  # noqa: E731
    kind = rng.randrange(5 if one_line else 6)
    if kind == 0:
        return "sk-proj-" + pick(48)
    if kind == 1:
        return "AKIA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    if kind == 2:
        return "ghp_" + pick(36)
    if kind == 3:
        return "xoxb-" + "-".join(pick(12) for _ in range(3))
    if kind == 4:
        header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        claims = base64.urlsafe_b64encode(json.dumps({"sub": pick(8)}).encode()).decode().rstrip("=")
        return f"{header}.{claims}.{pick(43)}"
    return (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(pick(64) for _ in range(4)) + "\n-----END RSA PRIVATE KEY-----"
    )


def _date(rng: random.Random) -> str:
    y, m, d = rng.randint(1940, 2005), rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice([f"{m}/{d}/{y}", f"{d} {MONTHS[m - 1]} {y}", f"{MONTHS[m - 1]} {d}, {y}", f"{y}-{m:02d}-{d:02d}"])


def make_one(rng: random.Random, names: dict, split: str) -> dict:
    b = Builder()
    first, last = rng.choice(names["first"]), rng.choice(names["last"])
    person = first if rng.random() < 0.3 else f"{first} {last}"
    company, street = rng.choice(names["companies"]), rng.choice(names["streets"])
    template = rng.randrange(16)
    if template == 0:
        b.add(f"My {rng.choice(RELATIONS)} ").add(person, "PERSON").add(" at ").add(company, "ORGANIZATION")
        b.add(" keeps missing deadlines. How do I raise this without hurting our relationship?")
    elif template == 1:
        b.add("Draft a polite reminder to ").add(person, "PERSON").add(" that the invoice is overdue. Her email is ")
        b.add(f"{first.lower()}.{last.lower()}@{company.split()[0].lower().strip('&')}.com", "EMAIL").add(".")
    elif template == 2:
        b.add("Please update my delivery address to ").add(f"{rng.randint(3, 980)} {street}", "STREET_ADDRESS")
        b.add(", ").add(rng.choice(CITIES), "STREET_ADDRESS").add(" and confirm by text.")
    elif template == 3:
        b.add("I was diagnosed with ").add(rng.choice(CONDITIONS), "HEALTH")
        b.add(" last year. What foods should I avoid?")
    elif template == 4:
        b.add("Patient ").add(person, "PERSON").add(", born ").add(_date(rng), "DATE_OF_BIRTH")
        b.add(", reports chest pain. Summarize the triage steps.")
    elif template == 5:
        b.add('Why does this fail? client = Client(api_key="').add(_secret(rng, one_line=True), "SECRET").add('")')
    elif template == 6:
        b.add("Here is my key, can you check the format?\n").add(_secret(rng), "SECRET")
    elif template == 7:
        b.add("Connect with postgres://admin:").add(
            "".join(rng.choice(string.ascii_letters + "!#$%") for _ in range(12)), "SECRET"
        ).add("@db.internal:5432/prod fails.")
    elif template == 8:
        b.add("Charge card ").add(_card(rng), "CREDIT_CARD").add(" for the order of ").add(person, "PERSON").add(".")
    elif template == 9:
        country, length = rng.choice([("DE", 22), ("GB", 22), ("FR", 27), ("NL", 18), ("ES", 24)])
        b.add("Wire the deposit to IBAN ").add(_iban(country, length, rng), "IBAN").add(" by Friday.")
    elif template == 10:
        phone = rng.choice(
            [
                f"+44 20 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
                f"+1 ({rng.randint(201, 989)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                f"+49 30 {rng.randint(1000000, 9999999)}",
                f"06 {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}",
            ]
        )
        b.add("Call ").add(person, "PERSON").add(" on ").add(phone, "PHONE").add(" about the contract.")
    elif template == 11:
        b.add("My SSN is ").add(
            f"{rng.randint(100, 665):03d}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}", "US_SSN"
        )
        b.add("; which tax form do I need?")
    elif template == 12:
        b.add("The server at ").add(
            f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}", "IP_ADDRESS"
        ).add(" rejects SSH logins since the update.")
    elif template == 13:
        lang = rng.randrange(3)
        b.add(["Mi compañera ", "Meine Kollegin ", "Ma collègue "][lang]).add(person, "PERSON")
        b.add([" trabaja en ", " arbeitet bei ", " travaille chez "][lang]).add(company, "ORGANIZATION")
        b.add(
            [
                ". ¿Cómo le escribo un correo formal?",
                ". Wie schreibe ich ihr eine formelle E-Mail?",
                ". Comment lui écrire un e-mail formel ?",
            ][lang]
        )
    elif template == 14:
        b.add(f"Compare {rng.choice(NOT_PII)} and {rng.choice(NOT_PII)} for a beginner, in three bullet points.")
    else:
        b.add(f"On {rng.choice(['Monday', 'Tuesday', 'Friday'])} I met ").add(person, "PERSON")
        b.add(f" and {rng.choice(names['first'])}", None)
        b.spans.append(
            {
                "type": "PERSON",
                "start": len(b.text) - len(b.text.split(" and ")[-1]),
                "end": len(b.text),
                "value": b.text.split(" and ")[-1],
            }
        )
        b.add(" from ").add(company, "ORGANIZATION").add(" to plan the launch. Write a short recap.")
    return b.row(split, f"t{template}")


def build(seed: int = 7, per_split: int = 700) -> list[dict]:
    rng = random.Random(seed)
    halves = {
        key: (values[::2], values[1::2])
        for key, values in {"first": FIRST, "last": LAST, "companies": COMPANIES, "streets": STREETS}.items()
    }
    rows = []
    for split, half in (("train", 0), ("test", 1)):
        names = {key: pair[half] for key, pair in halves.items()}
        rows += [make_one(rng, names, split) for _ in range(per_split)]
    return rows


def main() -> None:
    write_rows(OUT, build())


if __name__ == "__main__":
    main()
