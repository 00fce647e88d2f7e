"""Secrets and accounts by what they are, not by a prefix or a "password:" before them: a
maintained rule set (Kingfisher's), seed phrases by BIP-39's word lists, credentials inside a
Basic header, a cookie, a command line or a connection string, bank accounts and routing numbers
by their cues, a wallet's keys and addresses; and the look-alikes that are none (hashes, UUIDs,
git SHAs, documentation's example keys, ordinary sentences, long numbers in arithmetic)."""

from __future__ import annotations

import pytest

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.findings import without_placeholders

SEED = "abandon ability able about above absent absorb abstract absurd abuse access accident"
CHECKED_SEED = "legal winner thank year wave sausage worth useful legal winner thank yellow"  # BIP-39's test vector
WIF = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"


@pytest.fixture(scope="module")
def scanner():
    return PrivacyScanner()


def found(scanner, text: str) -> list[tuple[str, str]]:
    return [(f.type, text[f.start : f.end]) for f in scanner.scan(text)]


def covered(scanner, text: str, value: str, kind: str) -> None:
    """A finding of `kind` covers `value` in `text` whole."""
    start = text.index(value)
    spans = [(f.type, f.start, f.end) for f in scanner.scan(text)]
    assert any(t == kind and s <= start and e >= start + len(value) for t, s, e in spans), (text, spans)


# --- the forms that reached a provider -----------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        # credentials carried by a header, a cookie, a command line or a connection string
        ("Authorization: Basic YWRtaW46aHVudGVyMjJzZWNyZXQ=", "YWRtaW46aHVudGVyMjJzZWNyZXQ=", "SECRET"),
        ("curl -H 'Authorization: Bearer 8f3kQ2xZ9LmN4pR7sT1vW6yB' api/x", "8f3kQ2xZ9LmN4pR7sT1vW6yB", "SECRET"),
        ("Cookie: sessionid=9f8a7c6d5e4b3a2910fe; lang=en", "9f8a7c6d5e4b3a2910fe", "SECRET"),
        ("Set-Cookie: SESSION=abc123def456ghi; Path=/; HttpOnly", "abc123def456ghi", "SECRET"),
        ("why does mysql -u root -pW1nter!sC0ming fail?", "W1nter!sC0ming", "SECRET"),
        ("curl -u admin:Tr0ub4dor3 https://intranet/api", "Tr0ub4dor3", "SECRET"),
        ("sshpass -p 'S3cr3tPass' ssh root@10.0.0.7", "S3cr3tPass", "SECRET"),
        ("redis-cli -h cache -a hunter22xyz ping", "hunter22xyz", "SECRET"),
        ("PGPASSWORD=Sup3rS3cret psql -h db -U app", "Sup3rS3cret", "SECRET"),
        ("./deploy --password Zx9!kLm2Qw", "Zx9!kLm2Qw", "SECRET"),
        ("Server=db1;Database=shop;User Id=sa;Password=Pa55w0rd!;", "Pa55w0rd!", "SECRET"),
        ("DATABASE_URL=postgres://app:S3cretPw9@db.internal:5432/shop", "S3cretPw9", "SECRET"),
        # a PIN or a code that opens something, after the words that name it
        ("mun puhelimen PIN on 0410 ja PUK 73920184", "0410", "SECRET"),
        ("the alarm code is 6-0-3-9", "6-0-3-9", "SECRET"),
        ("koden till porten är 3390", "3390", "SECRET"),
        ("ゆうちょの暗証番号は3907", "3907", "SECRET"),
        ("记一下：工行卡密码：620913", "620913", "SECRET"),
        ("someone called asking for the OTP: 447120", "447120", "SECRET"),
        # the rule set's providers that no prefix of ours names
        ("shopify token 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", "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", "SECRET"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9RbLkT3m",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9RbLkT3m",
            "SECRET",
        ),  # fmt: skip
        # seed phrases: a checksum that holds, a run of list words, numbered, in Spanish and Japanese
        (f"my wallet's recovery words: {CHECKED_SEED}", CHECKED_SEED, "SECRET"),
        (f"seed {SEED}", SEED, "SECRET"),
        (
            "1. abandon 2. ability 3. able 4. about 5. above 6. absent 7. absorb 8. abstract 9. absurd 10. abuse "
            "11. access 12. accident",
            "abandon 2. ability",
            "SECRET",
        ),  # fmt: skip
        (
            "mi semilla: ábaco abdomen abeja abierto abogado abono aborto abrazo abrir abuelo abuso acabar",
            "ábaco abdomen abeja abierto abogado abono aborto abrazo abrir abuelo abuso acabar",
            "SECRET",
        ),  # fmt: skip
        (
            "\u3000".join(
                [
                    "あいこくしん",
                    "あいさつ",
                    "あいだ",
                    "あおぞら",
                    "あかちゃん",
                    "あきる",
                    "あけがた",
                    "あける",
                    "あこがれる",
                    "あさい",
                    "あさひ",
                    "あしあと",
                ]
            ),
            "あいこくしん",
            "SECRET",
        ),  # fmt: skip
        # a wallet's keys and addresses
        (f"import this key into Electrum: {WIF}", WIF, "SECRET"),
        (
            "private key: 0xe8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35",
            "0xe8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35",
            "SECRET",
        ),  # fmt: skip
        (
            "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi",
            "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi",
            "SECRET",
        ),  # fmt: skip
        ("send it to 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "ID_NUMBER"),
        (
            "my address bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
            "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
            "ID_NUMBER",
        ),  # fmt: skip
        ("pay 0x52908400098527886E0F7030069857D2E4169EE7", "0x52908400098527886E0F7030069857D2E4169EE7", "ID_NUMBER"),
        # bank accounts and routing numbers by their cues
        ("routing 026009593, account 4830019275166", "026009593", "ID_NUMBER"),
        ("routing 026009593, account 4830019275166", "4830019275166", "ID_NUMBER"),
        ("sort code 20-00-00, account 12345678", "20-00-00", "ID_NUMBER"),
        ("sort code 20-00-00, account 12345678", "12345678", "ID_NUMBER"),
        ("Überweisung bitte auf Konto 1234567890", "1234567890", "ID_NUMBER"),
        ("número de cuenta 0049 1500 05 1234567890", "0049 1500 05 1234567890", "ID_NUMBER"),
        ("Мой счёт 40817810099910004312", "40817810099910004312", "ID_NUMBER"),
        ("口座番号 1234567 にお願いします", "1234567", "ID_NUMBER"),
        ("계좌번호 110-123-456789 로 보내주세요", "110-123-456789", "ID_NUMBER"),
        ("我的账号6222020200001234567", "6222020200001234567", "ID_NUMBER"),
        # an IBAN or a card after its name, though its check digits fail (miscopied, made up for a form)
        (
            "Intestatario: Chiara Bellini\nIBAN: IT28 W030 6909 4861 0000 0117 483",
            "IT28 W030 6909 4861 0000 0117 483",
            "IBAN",
        ),  # fmt: skip
        ("Nr rachunku: PL27 1140 2004 0000 3902 7518 6643", "PL27 1140 2004 0000 3902 7518 6643", "IBAN"),
        ("jeg har tastet mit Dankort 4571 9203 1184 6627 forkert", "4571 9203 1184 6627", "CREDIT_CARD"),
        ('{"email": "a.fournier@orange.fr", "carte": "4974 0215 8833 1047"}', "4974 0215 8833 1047", "CREDIT_CARD"),
        ("Mi CLABE es 012180015472839461", "012180015472839461", "ID_NUMBER"),
    ],
)
def test_a_secret_or_an_account_is_found_by_what_it_is(scanner, text, value, kind):
    covered(scanner, text, value, kind)


def test_a_seed_phrase_whose_checksum_holds_is_found_without_the_word_before_it(scanner):
    """ "seed" is a word of the English list: the phrase is the twelve words whose checksum holds."""
    text = f"seed {'abandon ' * 11}about"
    (finding,) = [f for f in scanner.scan(text) if f.type == "SECRET"]
    assert (text[finding.start : finding.end], finding.confidence) == (f"{'abandon ' * 11}about", 0.99)


# --- look-alikes that are none -------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "uuid 123e4567-e89b-12d3-a456-426614174000 in the log",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 broke the build",
        "sha256 e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35 of the tarball",
        "md5 d41d8cd98f00b204e9800998ecf8427e is the empty file's",
        "Set AWS_ACCESS_KEY_ID to your key, e.g. AKIAIOSFODNN7EXAMPLE, as the docs show.",
        "OPENAI_API_KEY=sk-proj-EXAMPLEEXAMPLEEXAMPLEEXAMPLE",
        'config = {"api_key": "YOUR_API_KEY", "endpoint": "https://api.example.com"}',
        'const config = { apiKey: "CHEIA_TA_API" }; TOKEN = os.getenv("API_TOKEN")',
        "const token = process.env.GITHUB_TOKEN; set API_KEY=your_key_here in .env; token=<REDACTED>",
        "Please review the quarterly budget report and send me your comments before Friday afternoon.",
        "We can make it happy again and again, above all about time and about people who matter.",
        "2^127 - 1 = 170141183460469231731687303715884105727, a Mersenne prime",
        "The population grew from 1,250,000 to 4,111,111,111 over the period.",
        "Basic math is basic; a bearer bond is a bond.",
        "mysql -u root -p shop < dump.sql",
        "curl -u $USER:$TOKEN https://api.example.com",
        "an e-pass holders' lounge",
        "connect GPIO pin 17 to ground, then pin 18 to 3.3V",
        "error code 500 again, and the status code is 404",
        "my account 2023 results and the routing 123456789 table",
        "a card game for 2 to 1234 players, and card 7 of 52",
        "我的一是在不了有和人这中大为上个国我以要他时来用们生到",
    ],
)
def test_a_look_alike_is_no_secret_and_no_account(scanner, text):
    assert [(t, v) for t, v in found(scanner, text) if t in ("SECRET", "ID_NUMBER", "CREDIT_CARD")] == []


# --- placeholders ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Write to [PERSON_1] at [EMAIL_1] about [PHONE_2].",
        "Which [PERSON_1] number is it?",
        "[PERSON_1] lives at [STREET_ADDRESS_1], [LOCATION_2]",
        '{"name": "[PERSON_1]", "card": "[CREDIT_CARD_1]"}',
        "Thanks [PERSON_1]! Your order for [ORGANIZATION_1] ships to [POSTAL_CODE_1].",
    ],
)
def test_a_placeholder_a_masking_rule_wrote_is_never_a_finding(scanner, text):
    """A client resends a masked answer, and the audit re-reads what left masked: "[EMAIL_1]" was
    read as an organisation and "[PERSON_1] number" as a street address."""
    assert found(scanner, text) == []


def test_a_placeholder_reads_as_spaces_and_what_is_beside_it_is_still_found(scanner):
    text = "[PERSON_1]'s card is 4111 1111 1111 1111"
    assert without_placeholders(text) == " " * 10 + "'s card is 4111 1111 1111 1111"
    assert ("CREDIT_CARD", "4111 1111 1111 1111") in found(scanner, text)
