"""Signals: what the classifiers find, how well (on held-out data), and that nothing breaks them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import unquote

import phonenumbers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers import Scorer
from classifiers.privacy import STRUCTURED_TYPES, PrivacyScanner
from classifiers.privacy.findings import Finding, Taken, drop_overlaps
from classifiers.privacy.readings import unquoted
from classifiers.privacy.structured import find_structured, iban_ok, luhn_ok
from classifiers.signals import TOKENS_PER_MESSAGE

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer()


def found(text: str, scanner: PrivacyScanner) -> list[tuple[str, str]]:
    return [(f.type, text[f.start : f.end]) for f in scanner.scan(text)]


def test_structured_identifiers_are_kept_only_when_they_validate():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB82WEST12345698765433")
    text = (
        "card 4111 1111 1111 1111, not 4111 1111 1111 1112; IBAN GB82 WEST 1234 5698 7654 32, not "
        "GB82WEST12345698765433; SSN 123-45-6789 but not 666-45-6789; mail ann@example.org; "
        "server 192.168.1.20 but not 999.1.1.1; call +44 20 7946 0958 or 0033 6 12 34 56 78, not ticket "
        "#0000123; Maestro 6762 2216 5679, not order 123456789031"
    )
    kinds = {(f.type, text[f.start : f.end]) for f in find_structured(text)}
    assert ("CREDIT_CARD", "4111 1111 1111 1111") in kinds and ("CREDIT_CARD", "6762 2216 5679") in kinds
    assert ("IBAN", "GB82 WEST 1234 5698 7654 32") in kinds
    assert ("US_SSN", "123-45-6789") in kinds
    assert ("EMAIL", "ann@example.org") in kinds
    assert ("IP_ADDRESS", "192.168.1.20") in kinds
    assert ("PHONE", "+44 20 7946 0958") in kinds and ("PHONE", "0033 6 12 34 56 78") in kinds
    values = {value for _, value in kinds}
    luhn_but_no_card = "123456789031"  # twelve digits: a card only with a Maestro prefix
    for invalid in ("4111 1111 1111 1112", "GB82WEST12345698765433", "666-45-6789", "999.1.1.1", "0000123"):
        assert invalid not in values
    assert ("CREDIT_CARD", luhn_but_no_card) not in kinds


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-" + "a1B2c3D4" * 6,
        "AKIAZ7QXKQ3MHVT2PLNE",  # (AWS's documentation example, AKIAIOSFODNN7EXAMPLE, is no one's)
        "ghp_" + "x" * 36,
        "xoxb-123456789012-abcdefABCDEF",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    ],
)
def test_secrets_of_the_common_providers_are_found_whole(secret):
    text = f"why does this not work?\n{secret}\nthanks"
    spans = [(f.type, text[f.start : f.end]) for f in find_structured(text)]
    assert ("SECRET", secret) in spans


def test_passwords_in_assignments_and_urls_are_found_as_the_value_only():
    text = "DB_PASSWORD=Tr0ub4dor&3 and redis://default:s3cr3tP4ss@cache:6379/0"
    spans = [(f.type, text[f.start : f.end]) for f in find_structured(text)]
    assert ("SECRET", "Tr0ub4dor&3") in spans and ("SECRET", "s3cr3tP4ss") in spans
    assert not any(t == "EMAIL" for t, _ in spans)


def test_contextual_personal_data_is_found_with_exact_spans():
    scanner = PrivacyScanner()
    text = "My colleague Rachel Zheng at H&R Technology says I was diagnosed with type 2 diabetes."
    assert found(text, scanner) == [
        ("PERSON", "Rachel Zheng"),
        ("ORGANIZATION", "H&R Technology"),
        ("HEALTH", "type 2 diabetes"),
    ]
    text = "Send it to 221B Baker Street, London NW1 6XE. I was born on 12 March 1985."
    kinds = dict(found(text, scanner))
    assert kinds["STREET_ADDRESS"].startswith("221B Baker Street")
    assert kinds["DATE_OF_BIRTH"] == "12 March 1985"


def test_a_written_address_is_one_span_down_to_its_postcode_and_no_further():
    scanner = PrivacyScanner()
    text = "Ship to:\n3247 Rua Igreja 25\n Apt. 236\n Ribeirão\n Portugal 30971\n21 253 109 8211-Office\n\nThanks"
    assert dict(found(text, scanner))["STREET_ADDRESS"] == "3247 Rua Igreja 25\n Apt. 236\n Ribeirão\n Portugal 30971"
    # its extent, whether or not the gate reads this one-liner as private
    text = "Megan lives on Via Tasso 129 with her dog."
    assert "Via Tasso 129" in {text[start:end] for _, start, end, _ in scanner.spans.native.find(text)}
    text = "The letter arrived at 760 Passauer Strasse 33, Cite Guedouala, Tunisia last night."
    assert dict(found(text, scanner))["STREET_ADDRESS"] == "760 Passauer Strasse 33, Cite Guedouala, Tunisia"


def test_capitalized_words_that_are_not_personal_are_left_alone():
    scanner = PrivacyScanner()
    for text in [
        "What is the capital of France? The Eiffel Tower is in Paris.",
        "Compare Python and Kubernetes for a beginner.",
        "On Monday the Supreme Court ruled.",
        "What is the capital of France? Answer briefly.",
    ]:  # a country is not a street address
        assert [t for t, _ in found(text, scanner) if t in ("PERSON", "STREET_ADDRESS")] == []


@pytest.mark.parametrize(
    "text",
    [
        "The job ran at 1971-09-07 22:49 and failed.",
        "log: 2024-03-15 10:22:31 ERROR timeout on worker 3",
        "[2026-12-01 14:59:58] worker 7 restarted",
    ],
)
def test_a_log_line_s_timestamp_is_no_phone_and_its_time_no_house_number(text):
    assert not PrivacyScanner().scan(text), text


def test_a_version_number_is_no_ip_address_and_an_address_still_is():
    for text in ("upgrade to version 1.2.3.4 first", "fixed in v2.0.0.1", "Build 10.0.1.7 is out"):
        assert not PrivacyScanner().scan(text), text
    text = "the server at 10.0.1.7 runs version 3"
    assert [(f.type, text[f.start : f.end]) for f in PrivacyScanner().scan(text)] == [("IP_ADDRESS", "10.0.1.7")]


def test_a_percent_encoded_value_is_found_where_its_escapes_are():
    scanner = PrivacyScanner()
    text = "GET https://shop.example/track?to=jane.roe%40example.com&lang=caf%C3%A9 HTTP/1.1"
    assert ("EMAIL", "jane.roe%40example.com") in found(text, scanner)
    text = "Inject SELECT * FROM Users WHERE client_ip = ?%//!%20\\|19.253.176.22|%20/"
    # what the decoding finds; the span model's guesses in a log that reads as private are its own tests'
    assert [f for f in found(text, scanner) if f[0] in STRUCTURED_TYPES] == [("IP_ADDRESS", "19.253.176.22")]
    text = "card%3A%204111%201111%201111%201111%20thanks"
    assert found(text, scanner) == [("CREDIT_CARD", "4111%201111%201111%201111")]


@pytest.mark.parametrize("before", ["", "İstanbul, İzmir: ", "ẞ Straße "])
def test_a_spelled_out_address_is_found_whole_in_any_case_after_any_text(before):
    """A capital "İ" lower-cases to two characters: an address after one was once found three
    characters off, and redacting it left the mailbox in the text."""
    scanner = PrivacyScanner()
    for address in ("jane dot roe at example dot com", "JANE DOT ROE AT EXAMPLE DOT COM", "jane [ at ] example.org"):
        text = f"{before}write to {address} today"
        assert ("EMAIL", address) in found(text, scanner)


@given(st.lists(st.sampled_from(["%", "4", "0", "A", "e", "%41", "%C3", "%A9", "%e2%82%ac", "%F0%9F", "%ZZ", " "])))
def test_unquoting_maps_every_character_back_to_what_it_was_decoded_from(parts):
    run = "".join(parts)
    decoded, starts, ends = unquoted(run)
    assert decoded == unquote(run, errors="replace")
    assert len(starts) == len(ends) == len(decoded)
    assert all(0 <= s < e <= len(run) for s, e in zip(starts, ends, strict=True))
    assert starts == sorted(starts) and ends == sorted(ends)


def test_a_phone_number_that_starts_like_a_year_is_still_one():
    text = "My number is +86 138 0013 8000, or call 2024-555-0199"
    assert [f.type for f in PrivacyScanner().scan(text)] == ["PHONE", "PHONE"]


def test_a_run_of_lone_digits_is_not_asked_of_the_numbering_plans(monkeypatch):
    """A matrix or a row of scores ("3 1 4 1 5 9 2 6 ...") is no phone number written nationally;
    asked of twelve numbering plans at every ten digits, it cost a hundred times what prose costs to
    scan. A number grouped as mobile numbers are is still asked."""
    asked: list[str] = []
    parse = phonenumbers.parse
    monkeypatch.setattr(phonenumbers, "parse", lambda raw, region: asked.append(raw) or parse(raw, region))
    scanner = PrivacyScanner()
    digits = " ".join("31415926535897932384626433832795" * 20)
    assert [f for f in scanner.scan(digits) if f.type == "PHONE"] == []
    assert asked == []
    assert [(f.type, f.detector) for f in scanner.scan("Li Wei 13800138000") if f.type == "PHONE"] == [
        ("PHONE", "phonenumbers")
    ]
    assert asked


@pytest.mark.parametrize(
    "text, phone",
    [
        ("call me at 4155552671 after six", "4155552671"),
        ("Tel: 02079460123", "02079460123"),
        ("My number: 0412345678", "0412345678"),
        ("Patient Call IMC Network Unified Number 920027778", "920027778"),
        ("whatsapp 971501234567", "971501234567"),
    ],
)
def test_a_phone_number_written_without_separators_is_found_after_its_cue(text, phone):
    """Nine digits or more in one run, as forms and phones' contact lists write them: the pattern
    once read at most eight before it wanted a separator, so none of these was found."""
    assert [text[f.start : f.end] for f in PrivacyScanner().scan(text) if f.type == "PHONE"] == [phone]


@pytest.mark.parametrize(
    "text, kind, value",
    [
        ("card 4111  1111  1111  1111 (copied from the PDF)", "CREDIT_CARD", "4111  1111  1111  1111"),
        ("card\t4111\t1111\t1111\t1111", "CREDIT_CARD", "4111\t1111\t1111\t1111"),
        ("IBAN DE89  3704  0044  0532  0130  00 please", "IBAN", "DE89  3704  0044  0532  0130  00"),
        ("IBAN\tDE89\t3704\t0044\t0532\t0130\t00", "IBAN", "DE89\t3704\t0044\t0532\t0130\t00"),
        ("office 415  555  2671", "PHONE", "415  555  2671"),
        ("415\t555\t2671\tJane", "PHONE", "415\t555\t2671"),
        ("write to josé@example.com", "EMAIL", "josé@example.com"),
        ("user@bücher.de or user@пример.рф", "EMAIL", "user@bücher.de"),
        ("请发邮件到jane.roe@example.com谢谢", "EMAIL", "jane.roe@example.com"),
        ("メールはtaro@example.jpまで", "EMAIL", "taro@example.jp"),
        ("전화번호는010-1234-5678입니다", "PHONE", "010-1234-5678"),
        ("رقمي0501234567", "PHONE", "0501234567"),
        ("Mon numéro fixe: 0140203040", "PHONE", "0140203040"),
        ("рабочий телефон 4951234567", "PHONE", "4951234567"),
        ("the host at fe80::1ff:fe23:4567:890a", "IP_ADDRESS", "fe80::1ff:fe23:4567:890a"),
        ("我的key是sk-abcdefghijklmnopqrstuvwx谢谢", "SECRET", "sk-abcdefghijklmnopqrstuvwx"),
        ("tokenはghp_abcdefghijklmnopqrstuvwxyz0123456789です", "SECRET", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("账户DE89370400440532013000谢谢", "IBAN", "DE89370400440532013000"),
        ("邮箱：jane@example。com，谢谢", "EMAIL", "jane@example。com"),
        ("电话：１３８００１３８０００。", "PHONE", "１３８００１３８０００"),
        ("Mot de passe : Soleil2024!", "SECRET", "Soleil2024!"),
        ("пароль: hunter22", "SECRET", "hunter22"),
        ("密码：hunterabc。", "SECRET", "hunterabc"),
        ("パスワードはhunter22です", "SECRET", "hunter22"),
        ("password是hunter2222", "SECRET", "hunter2222"),
        ("My IBAN is DE89-3704-0044-0532-0130-00 thanks", "IBAN", "DE89-3704-0044-0532-0130-00"),
        ("Позвоните мне 8 (912) 345-67-89 завтра", "PHONE", "8 (912) 345-67-89"),  # the trunk prefix too
        ("Call 1 (800) 555-1234 now", "PHONE", "1 (800) 555-1234"),
    ],
)
def test_an_identifier_is_found_as_real_text_writes_it(text, kind, value):
    """Wider gaps (a table, a PDF, a justified line), accented and non-Latin addresses, a number
    or an address right against a word of a script written without spaces, a cue in the user's
    own language: each of these was missed."""
    assert (kind, value) in found(text, PrivacyScanner())


_SPAN = st.tuples(st.integers(0, 40), st.integers(1, 8), st.sampled_from([0.5, 0.8, 0.9]))


@given(st.lists(_SPAN, max_size=30))
def test_overlaps_resolve_to_the_most_confident_then_the_longest(spans):
    findings = [Finding("PERSON", start, start + length, c, "test") for start, length, c in spans]
    kept: list[Finding] = []  # the rule, one finding at a time against all that is kept
    for f in sorted(findings, key=lambda f: (-f.confidence, f.start - f.end)):
        if all(f.end <= k.start or f.start >= k.end for k in kept):
            kept.append(f)
    assert drop_overlaps(findings) == sorted(kept, key=lambda f: f.start)


@given(st.lists(_SPAN, max_size=30), st.integers(0, 50), st.integers(1, 10))
def test_a_span_overlaps_what_is_taken_when_any_taken_span_reaches_into_it(spans, start, length):
    taken = [Finding("PHONE", s, s + n, c, "test") for s, n, c in spans]
    expected = any(f.start < start + length and start < f.end for f in taken)
    assert Taken(taken).overlaps(start, start + length) == expected


def test_a_records_keys_say_which_values_are_names_and_addresses_in_any_case_or_script():
    scanner = PrivacyScanner()
    form = "Please fix the formatting:\nFirst name: amara\nLast name: okafor\n- Address: flat 2, 14 kingsley road\n"
    assert [f for f in found(form, scanner) if f[0] in ("PERSON", "STREET_ADDRESS")] == [
        ("PERSON", "amara"),
        ("PERSON", "okafor"),
        ("STREET_ADDRESS", "flat 2, 14 kingsley road"),
    ]
    record = '{"Sid": "cc6a", "KhmerName": "រិទ្ធ មករា", "LatinName": null, "Address": "ភូមិឈូងត្រដក់ ឃុំរកា"}'
    assert ("PERSON", "រិទ្ធ មករា") in found(record, scanner)
    assert ("STREET_ADDRESS", "ភូមិឈូងត្រដក់ ឃុំរកា") in found(record, scanner)
    code = "user = User(first_name='amara', surname=\"nguyen\")"
    assert [f for f in found(code, scanner) if f[0] == "PERSON"] == [("PERSON", "amara"), ("PERSON", "nguyen")]


@pytest.mark.parametrize(
    "text, kind, value",
    [
        ("姓名：王小明\n地址：北京市朝阳区建国路88号", "PERSON", "王小明"),
        ("姓名：王小明\n地址：北京市朝阳区建国路88号", "STREET_ADDRESS", "北京市朝阳区建国路88号"),
        ("氏名：山田太郎\n住所：東京都新宿区1-2-3", "PERSON", "山田太郎"),
        ("Vorname: jürgen\nNachname: müller\nAnschrift: hauptstraße 5, berlin", "PERSON", "müller"),
        ("Фамилия: иванов\nАдрес: ул. Ленина 5", "PERSON", "иванов"),
        ('{"apellido": "garcía", "dirección": "calle mayor 5"}', "PERSON", "garcía"),
        ('{"apellido": "garcía", "dirección": "calle mayor 5"}', "STREET_ADDRESS", "calle mayor 5"),
    ],
)
def test_a_records_keys_are_read_in_the_languages_forms_are_filled_in(text, kind, value):
    assert (kind, value) in found(text, PrivacyScanner())


@pytest.mark.parametrize(
    "text",
    [
        "First Name: [Your Name]\nAddress: <address>\n",
        '{"lastName": "{{last}}", "street": "string", "firstName": null}',
        '{"name": "my-app", "version": "1.0.0"}',  # a plain name is an app's as often as a person's
        "Name: Pizzeria\nCuisine: Italian",
        "What is the name of the street where Sherlock lived? Write the address: in full.",
    ],
)
def test_a_placeholder_or_a_plain_name_is_no_records_value(text):
    assert [f for f in PrivacyScanner().scan(text) if f.detector == "field"] == []


def test_a_password_word_with_no_value_after_it_is_no_secret():
    for text in ("忘记密码怎么办？", "password: required", "passwordless login is great", "Passwort vergessen?"):
        assert [f for f in PrivacyScanner().scan(text) if f.type == "SECRET"] == [], text


@pytest.mark.parametrize(
    "text, kind, value",
    [
        ("my driver's license number is D1234567", "ID_NUMBER", "D1234567"),
        ("NI number: QQ 12 34 56 C", "ID_NUMBER", "QQ 12 34 56 C"),
        ("passport no. X1234567, expires 2031", "ID_NUMBER", "X1234567"),
        ('{"passport_number": "533380006", "ok": true}', "ID_NUMBER", "533380006"),
        ("My NHS number is 943 476 5919", "ID_NUMBER", "943 476 5919"),  # not a phone: the cue says what it is
        ("my aadhaar is 2345 6789 0123", "ID_NUMBER", "2345 6789 0123"),
        ("account number: 12345678, sort code 12-34-56", "ID_NUMBER", "12345678"),
        ("account number: 12345678, sort code 12-34-56", "ID_NUMBER", "12-34-56"),
        ("member ID ABC123456", "ID_NUMBER", "ABC123456"),
        ("CPF 123.456.789-09", "ID_NUMBER", "123.456.789-09"),
        ("Mein Personalausweis: L01X00T47", "ID_NUMBER", "L01X00T47"),
        ("身份证号码：110101199003071234", "ID_NUMBER", "110101199003071234"),
        ("ИНН 7707083893", "ID_NUMBER", "7707083893"),
        ("Number plate: AB12 CDE", "ID_NUMBER", "AB12 CDE"),
        ('{"licensePlate": "KA01AB1234"}', "ID_NUMBER", "KA01AB1234"),
        ("ZIP: 7412 SL", "POSTAL_CODE", "7412 SL"),
        ("my postcode is sn10 2he", "POSTAL_CODE", "sn10 2he"),
        ("postcode: SW1A 1AA", "POSTAL_CODE", "SW1A 1AA"),
        ("My zip code is 94043 and I need a plumber", "POSTAL_CODE", "94043"),
        ("Código postal: 28013", "POSTAL_CODE", "28013"),
    ],
)
def test_an_identifier_is_found_after_the_words_that_name_it(text, kind, value):
    assert (kind, value) in found(text, PrivacyScanner())


@pytest.mark.parametrize(
    "text, value",
    [
        ("请核对 11010519491231002X 谢谢", "11010519491231002X"),  # a Chinese resident ID: region, birth date, check
        ("Segue o documento do titular: 123.456.789-09", "123.456.789-09"),
        ("titular: 12345678Z, Madrid", "12345678Z"),
        ("residente X1234567L desde 2019", "X1234567L"),
        ("numéro de sécu 1 85 05 78 006 084 91 merci", "1 85 05 78 006 084 91"),  # a French NIR, its key 91
        ("mitt nummer är 811218-9876", "811218-9876"),  # a Swedish personnummer: a date and a Luhn digit
    ],
)
def test_a_national_id_its_check_digits_vouch_for_is_found_with_no_cue(text, value):
    assert ("ID_NUMBER", value) in found(text, PrivacyScanner())


def test_a_number_shaped_like_a_national_id_that_fails_its_check_is_none():
    from classifiers.privacy.national import chinese_ok, cpf_ok, nir_ok, spanish_ok, swedish_ok

    assert chinese_ok("11010519491231002X") and not chinese_ok("110105194912310021")
    assert not chinese_ok("110105194913310021")  # its check holds, but the 13th month is no birth date
    assert cpf_ok("123.456.789-09") and not cpf_ok("123.456.789-08") and not cpf_ok("111.111.111-11")
    assert spanish_ok("12345678", "Z") and not spanish_ok("12345678", "A") and spanish_ok("X1234567", "L")
    assert nir_ok("185057800608491") and not nir_ok("185057800608492") and nir_ok("2 69 05 2A 123 456 88")
    assert swedish_ok("811218-9876") and not swedish_ok("811218-9875") and not swedish_ok("811318-9875")
    for text in ("ref 110105194912310021", "order 12345678A", "ref 123.456.789-08"):
        assert [f for f in PrivacyScanner().scan(text) if f.type == "ID_NUMBER"] == [], text


@pytest.mark.parametrize(
    "text",
    [
        "Summarize the account 2023 results for the board.",  # a generic word needs "number" or "ID"
        "for a, b in zip(xs, ys): print(a, b)",
        "zip 2 files and send them",
        "The passport photo should be 35x45 mm.",
        "What is the zip code of Beverly Hills?",
        "Sin 2 you are nothing",  # Spanish "without"; acronyms count in capitals only
        "a pan 12 inches wide",
        "the student number 5 in the class",
        "Player member ID 12 joined.",  # fewer than four characters: a count
        "Universal Music Group, a record label with license number 545345",  # a business's licence
    ],
)
def test_a_word_that_names_an_identifier_with_none_after_it_finds_nothing(text):
    assert [f for f in PrivacyScanner().scan(text) if f.type in ("ID_NUMBER", "POSTAL_CODE")] == [], text


@pytest.mark.parametrize(
    "text, name",
    [
        ("hi I am priya sharma, a software engineer at my company. please fix my resume", "priya sharma"),
        ("can you respond to this email? cory, i was following up on your resume for the position", "cory"),
        ("please write a reference letter for my student ahmad who is applying to medical school", "ahmad"),
    ],
)
def test_a_name_in_a_text_typed_without_capitals_is_found(text, name):
    """The span model reads capitals; a user who never presses shift gave it none."""
    assert ("PERSON", name) in found(text, PrivacyScanner())


@pytest.mark.parametrize(
    "text, name",
    [
        ("Je m'appelle jean dupont et j'habite à Lyon", "jean dupont"),
        ("Me llamo María García, necesito ayuda con mi currículum", "María García"),
        ("Ich heiße Jürgen Müller und arbeite bei einer Bank", "Jürgen Müller"),
        ("我叫王小明，今年25岁，在北京工作。", "王小明"),
        ("请帮我给张伟先生写一封感谢信", "张伟"),
        ("私の名前は山田太郎です。", "山田太郎"),
        ("はじめまして、山田太郎と申します。", "山田太郎"),
        ("제 이름은 김민수입니다.", "김민수"),
    ],
)
def test_a_name_other_languages_introduce_is_found(text, name):
    """Chinese, Japanese and Korean have no capitals for the span model to read, and its words
    are English ones."""
    assert ("PERSON", name) in found(text, PrivacyScanner())


def test_an_honorific_after_a_word_that_is_no_surname_names_nobody():
    scanner = PrivacyScanner()
    for text in ("我的数学老师很好", "我先生说他明天回来", "me llamo la atención"):
        assert [f for f in scanner.scan(text) if f.type == "PERSON"] == [], text


def test_only_a_caseless_text_is_read_for_uncased_names():
    from classifiers.privacy.uncased import UncasedNames, caseless

    assert caseless("hi i am priya") and caseless("hi I am priya, I think") and not caseless("Hi i am priya")
    names = UncasedNames()
    assert [(f.start, f.end) for f in names.find("hi priya sharma and cory")] == [(3, 15), (20, 24)]
    # a given name that is an English word or a place's is not on the list
    assert names.find("mark will grace jordan india") == []
    scanner = PrivacyScanner()
    # in a cased text a lower-case first name is a word ("herb"), and a public request is nobody's data
    for text in ("Season the lamb with a fresh herb and salt.", "write a poem about sarah and the sea"):
        assert [f for f in scanner.scan(text) if f.type == "PERSON"] == [], text


@pytest.mark.parametrize(
    "text, address",
    [
        ("I live at 14 kingsley road, leeds LS6 2AB", "14 kingsley road, leeds LS6 2AB"),
        (
            "ship to 1600 amphitheatre parkway, mountain view, ca 94043",
            "1600 amphitheatre parkway, mountain view, ca 94043",
        ),
        ("my address is 12 rue de la paix, 75002 paris", "12 rue de la paix, 75002 paris"),
        ("deliver to apt 4b, 350 5th ave, new york, ny 10118", "apt 4b, 350 5th ave, new york, ny 10118"),
        ("send it to 221b baker street. Thanks", "221b baker street"),
        ("Mi dirección es Calle Mayor 5, 28013 Madrid", "Calle Mayor 5, 28013 Madrid"),
        ("meine Adresse: Hauptstraße 12, 10115 Berlin", "Hauptstraße 12, 10115 Berlin"),
    ],
)
def test_an_address_its_cue_tells_is_found_whole_in_any_case(text, address):
    """Lower case, or a street the span model reads as famous ("742 Evergreen Terrace"), was no
    finding, or came in pieces of other types ("Calle Mayor" an organization)."""
    assert ("STREET_ADDRESS", address) in found(text, PrivacyScanner())


def test_a_cue_before_what_is_no_address_finds_nothing():
    for text in (
        "send it to 3 people in the park",
        "I live at home with 2 cats",
        "Ship to 12 countries worldwide. Fast!",
        "We live on 5 acres near the hill",
    ):
        assert PrivacyScanner().scan(text) == (), text


def test_a_day_before_its_month_is_a_date_not_a_house_number():
    """A date like "14 March 1879 in Ulm" read as a street address (a number, a capitalized word,
    another number), and a public sentence about Einstein was masked or kept local."""
    for text in (
        "Albert Einstein was born on 14 March 1879 in Ulm.",
        "Order 12345 shipped on 3 May 2021 from Berlin",
        "The treaty was signed on 28 Jun. 1919 at Versailles",
    ):
        assert "STREET_ADDRESS" not in {f.type for f in PrivacyScanner().scan(text)}, text
    for text, address in (
        ("I live at 12 May Street, Springfield", "12 May Street, Springfield"),
        ("Send it to 14 Marchmont Road, Edinburgh", "14 Marchmont Road, Edinburgh"),
    ):
        assert ("STREET_ADDRESS", address) in found(text, PrivacyScanner()), text


@pytest.mark.parametrize(
    "text, date",
    [
        ("date of birth: 1990/03/12", "1990/03/12"),
        ("Born: 12-Mar-1990", "12-Mar-1990"),
        ("DOB: 12 Mar 90", "12 Mar 90"),
        ("生日：1990年3月12日", "1990年3月12日"),
        ("出生日期：1990-03-12", "1990-03-12"),
        ("дата рождения: 12.03.1990", "12.03.1990"),
        ("fecha de nacimiento: 12/03/1990", "12/03/1990"),
        ("date de naissance : 12/03/1990", "12/03/1990"),
    ],
)
def test_a_birth_date_is_found_in_the_forms_and_languages_people_write_it(text, date):
    assert ("DATE_OF_BIRTH", date) in found(text, PrivacyScanner())


def test_a_year_or_a_month_alone_after_born_is_no_birth_date():
    for text in ("the company was born in 1990", "born in March 2020, the project grew"):
        assert PrivacyScanner().scan(text) == (), text


@pytest.mark.parametrize(
    "text, condition",
    [
        ("Je souffre de diabète depuis 2010.", "diabète"),
        ("J'ai été diagnostiquée avec une sclérose en plaques", "une sclérose en plaques"),
        ("Mon fils est atteint d'autisme", "autisme"),
        ("Sufro de ansiedad desde hace años", "ansiedad"),
        ("Fui diagnosticado com depressão em 2019", "depressão"),
        ("Soffro di emicrania", "emicrania"),
        ("Ich leide an Migräne seit Jahren", "Migräne"),
    ],
)
def test_a_condition_told_in_the_first_person_is_found_in_other_languages(text, condition):
    assert ("HEALTH", condition) in found(text, PrivacyScanner())


def test_a_place_that_suffers_is_no_patient():
    assert [f for f in PrivacyScanner().scan("La ville souffre de la pollution") if f.type == "HEALTH"] == []


@pytest.mark.parametrize(
    "text, names",
    [
        ("Chère Amélie,\nmerci pour votre message.\nCordialement,\nJulien", ["Amélie", "Julien"]),
        (
            "Sehr geehrte Frau Schneider,\nvielen Dank.\nMit freundlichen Grüßen\nKlaus Weber",
            ["Schneider", "Klaus Weber"],
        ),
        ("Hola, Marta:\ngracias.\nSaludos,\nJavier", ["Marta", "Javier"]),
        ("Привет, Дмитрий!\nкак дела?\nС уважением,\nОльга", ["Дмитрий", "Ольга"]),
        ("Caro Giovanni,\ngrazie.\nCordiali saluti\nLuca", ["Giovanni", "Luca"]),
        ("Olá Pedro, tudo bem?\nAtenciosamente,\nAna", ["Pedro", "Ana"]),
    ],
)
def test_a_quoted_email_s_greeting_and_signature_are_read_in_other_languages(text, names, cues_only):
    """Read by the cues alone: where the span model also names "Olá Pedro", the more confident
    finding of the two is the one kept, and it is no longer the greeting's."""
    addressed = [text[f.start : f.end] for f in cues_only.scan(text) if f.detector == "addressed"]
    assert addressed == names


@pytest.fixture(scope="module")
def cues_only(tmp_path_factory: pytest.TempPathFactory) -> PrivacyScanner:
    """The shipped scanner with no span candidate kept (every threshold above any confidence)."""
    from classifiers.privacy.contextual import MODEL_PATH as SPANS
    from research.crossval_privacy import NEVER

    data = json.loads(SPANS.read_text(encoding="utf-8")) | NEVER.as_dict()
    path = tmp_path_factory.mktemp("cues") / "spans.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return PrivacyScanner(path)


def test_a_greeting_s_title_or_formula_is_no_name():
    for text in ("Chère Madame,\nmerci.", "Liebe Grüße\nund bis bald", "Dear Sir,\nok"):
        assert [f for f in PrivacyScanner().scan(text) if f.detector == "addressed"] == [], text


def test_a_long_number_with_no_cue_is_no_phone():
    texts = ("the population is 1400000000", "Invoice 2023123456 total", "call 1234567890123456789")
    # a digit before brackets is a trunk prefix only of a number long enough without it
    for text in (*texts, "see 3 (2019) 45-67 pages"):
        assert [f for f in PrivacyScanner().scan(text) if f.type == "PHONE"] == [], text


def test_a_count_in_steps_is_no_phone_but_a_phone_of_like_groups_is_one():
    for text in ("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "Scores 10 20 30 40 50 60 70"):
        assert [f for f in PrivacyScanner().scan(text) if f.type == "PHONE"] == [], text
    for text in ("call 800 800 800", "call me on 555 123 4567"):
        assert [f.type for f in PrivacyScanner().scan(text)] == ["PHONE"], text


def test_signals_read_the_whole_conversation_and_content_parts(scorer):
    messages = [
        {"role": "system", "content": "You help Acme support agents."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Customer email: jane.doe@example.com"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Prove that there are infinitely many primes, step by step."},
    ]
    signals = scorer.signals(messages, max_tokens=64, metadata={"tags": "vip"})
    email = next(f for f in signals.privacy if f.type == "EMAIL")
    assert (email.message, email.part) == (1, 0)
    assert messages[1]["content"][0]["text"][email.start : email.end] == "jane.doe@example.com"
    assert signals.text_only is False and signals.max_tokens == 64 and signals.metadata == {"tags": "vip"}
    assert signals.language == "en" and 20 < signals.prompt_tokens < 80
    assert 0.0 <= signals.complexity <= 1.0


def test_a_next_turn_reads_only_its_new_message_and_counts_as_if_all_were_read(scorer):
    history = [
        {"role": "system", "content": "Tu aides les clients de la boutique. Réponds en français."},
        {"role": "user", "content": "Bonjour, je suis Marie Dubois et mon numéro est +33 6 12 34 56 78."},
        {"role": "assistant", "content": "Bonjour Marie, comment puis-je vous aider ?"},
    ]
    first = scorer.signals(history)
    turn = {"role": "user", "content": "Where is my order 12345? Answer in English please."}
    scanned = []
    scan = scorer.privacy.scan
    scorer.privacy.scan = lambda text: scanned.append(text) or scan(text)
    try:
        second = scorer.signals(history + [turn])
    finally:
        scorer.privacy.scan = scan
    assert scanned == [turn["content"]]  # the history was read on the turn before
    assert [f.type for f in second.privacy] == [f.type for f in first.privacy] and "PHONE" in second.pii_types
    conversation = "\n".join(m["content"] for m in history + [turn])
    assert second.prompt_tokens == scorer.tokens.estimate(conversation) + TOKENS_PER_MESSAGE * 4
    assert (first.language, second.language) == ("fr", "en")  # the language of the latest user message


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Mam cukrzycę i biorę metforminę, pomóż mi ułożyć dietę.", "pl"),
        ("Nasılsın? Bugün hava çok güzel, parka gidelim mi?", "tr"),
        ("Quelle est la capitale de la France ?", "fr"),  # one stopword of French's: "und" before
        ("Tôi muốn đặt một bàn cho hai người tối nay.", "vi"),
        ("Привет, как дела?", "ru"),
        ("東京はどこですか", "ja"),
        ("What is the capital of France?", "en"),
        ("Hi", "und"),  # too little to tell
        ("def f(x): return x + 1", "und"),
    ],
)
def test_the_language_is_told_in_any_of_176_languages(scorer, text, language):
    """A policy's `language` condition reads fastText's identifier where it is sure of a language
    (`classifiers.language`): Polish was "und", French with one of its stopwords too."""
    assert scorer.signals([{"role": "user", "content": text}]).language == language


def test_complexity_is_scored_only_when_something_reads_it(scorer):
    scored = []
    score = scorer.complexity.score
    scorer.complexity.score = lambda text, counts=None, ask=None: scored.append(text) or score(text, counts, ask)
    try:
        signals = scorer.signals([{"role": "user", "content": "Prove Fermat's little theorem."}])
        assert scored == [] and signals.pii_types == frozenset()  # routing on privacy alone: no model run
        assert 0.0 <= signals.complexity <= 1.0
        signals.as_dict()
        assert len(scored) == 1  # scored once, then kept
    finally:
        scorer.complexity.score = score


def test_the_ask_is_the_first_line_of_the_latest_user_text():
    from classifiers.asks import ASK_CHARS, ask_term

    assert ask_term("Summarize the article.\n\n" + "Words of an article. " * 200) == math.log1p(3)
    assert ask_term("\n\n  Solve for x:  2x + 3 = 7\nA. 1\nB. 2") == math.log1p(8)  # leading blank lines skipped
    assert ask_term("") == ask_term(" \n ") == 0.0
    one_line = "word " * 100_000  # a megabyte without a line break is read ASK_CHARS far
    assert ask_term(one_line) == math.log1p(ASK_CHARS // 5)


def test_complexity_reads_the_latest_user_message_as_the_ask(scorer):
    asks = []
    score = scorer.complexity.score
    scorer.complexity.score = lambda text, counts=None, ask=None: asks.append(ask) or score(text, counts, ask)
    article = "Summarize this.\n\n" + "A sentence of the article. " * 50
    try:
        conversations = [
            [{"role": "system", "content": "You are terse."}, {"role": "user", "content": article}],
            [
                {"role": "user", "content": [{"type": "text", "text": "Explain monads."}]},
                {"role": "assistant", "content": "A monad is..."},
                {"role": "user", "content": "  "},  # an empty turn says nothing of what is asked
            ],
            [{"role": "system", "content": "Only a system prompt."}],
        ]
        for messages in conversations:
            assert 0.0 <= scorer.signals(messages).complexity <= 1.0
    finally:
        scorer.complexity.score = score
    assert asks == [article, "Explain monads.", "Only a system prompt."]


def test_a_long_supplied_text_weighs_less_than_a_long_ask(scorer):
    """The same words, once as an instruction with the text it supplies below, once as one long ask."""
    body = "The committee met on Tuesday and reviewed the budget for the coming year in detail. " * 6
    supplied = scorer.signals([{"role": "user", "content": "Summarize the text below.\n\n" + body}]).complexity
    asked = scorer.signals([{"role": "user", "content": "Summarize the text below. " + body}]).complexity
    assert supplied < asked


def test_complexity_is_the_logistic_of_the_weighted_lengths_for_each_edge_class():
    """The shipped priors read how long the whole text is and how long the ask's first line is,
    each weight positive: within every source, longer asks gain more from the cloud."""
    from classifiers.asks import ask_term, words_term
    from classifiers.complexity import ComplexityModel, EdgeClass, model_path
    from classifiers.tokens import text_counts

    for edge_class in EdgeClass:
        data = json.loads(model_path(edge_class).read_text(encoding="utf-8"))
        assert data["features"] == ["words", "ask_words"] and min(data["weights"]) >= 0 < max(data["weights"])
        model = ComplexityModel(edge_class)
        for text in ("Write a haiku about autumn.", "Prove that there are infinitely many primes.\nBe rigorous."):
            counts = text_counts(text)
            z = data["bias"] + data["weights"][0] * words_term(counts[0] + counts[1] + 1)
            z += data["weights"][1] * ask_term(text)
            assert model.score(text) == pytest.approx(1 / (1 + math.exp(-z)))


def test_an_edge_model_of_up_to_4b_parameters_is_a_small_one():
    from classifiers.complexity import EdgeClass

    assert EdgeClass.of_size(134_515_008) is EdgeClass.SMALL and EdgeClass.of_size(3_800_000_000) is EdgeClass.SMALL
    assert EdgeClass.of_size(8_000_000_000) is EdgeClass.MID


def test_complexity_sends_a_hard_request_to_the_cloud_and_small_talk_to_the_edge(scorer):
    """Under the worked code-assistant policy, whose threshold keeps 60% of held-out chat on the edge."""
    import yaml

    policy = yaml.safe_load((ROOT / "configs" / "policies" / "code-assistant.yaml").read_text())
    threshold = next(r["when"]["complexity"]["gte"] for r in policy["rules"] if r["name"] == "hard")
    easy = scorer.signals([{"role": "user", "content": "Hi! How are you today?"}]).complexity
    hard = scorer.signals(
        [
            {
                "role": "user",
                "content": "Implement a lock-free multi-producer multi-consumer queue in Rust. It must be "
                "linearizable, avoid the ABA problem without garbage collection, and expose bounded and "
                "unbounded variants. Write property-based tests for the edge cases, benchmark it against "
                "crossbeam, and explain the memory orderings you chose and the complexity of each operation.",
            }
        ]
    ).complexity
    assert easy < threshold < hard


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": ""}],
        [{"role": "user", "content": None}],
        [{"role": "user"}],
        ["not a dict"],
        [{"role": "user", "content": "x" * 1_000_000}],
        [{"role": "user", "content": "\x00\xff\ud800 \u202e\ufeff"}],
        [{"role": "user", "content": [{"type": "text"}, {"type": "image_url"}, 5]}],
    ],
)
def test_odd_conversations_give_valid_signals(scorer, messages):
    signals = scorer.signals(messages)
    assert 0.0 <= signals.complexity <= 1.0 and signals.prompt_tokens >= 0


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=0, max_size=400))
def test_any_text_gives_valid_signals_with_spans_inside_it(text):
    signals = _shared_scorer().signals([{"role": "user", "content": text}])
    assert 0.0 <= signals.complexity <= 1.0
    for f in signals.privacy:
        assert 0 <= f.start < f.end <= len(text)


_SCORER: list[Scorer] = []


def _shared_scorer() -> Scorer:
    if not _SCORER:
        _SCORER.append(Scorer())
    return _SCORER[0]


def test_held_out_privacy_quality_meets_the_targets():
    from research.evaluate import privacy_scores

    scores = privacy_scores()
    for by_type in scores.values():
        for kind in ("EMAIL", "PHONE", "CREDIT_CARD", "IBAN", "US_SSN", "IP_ADDRESS", "SECRET"):
            if kind in by_type and by_type[kind].gold >= 5:
                assert by_type[kind].recall >= 0.95 and by_type[kind].precision >= 0.9, (kind, by_type[kind])
        # 0.88 on Presidio's synthetic sentences before real prompts trained the span model and the
        # private-context gate; 0.76 since: a name outside a private-looking text must be sure,
        # which took the flag rate on real public prompts from 15% to 5%; 0.67 since the gate's
        # pieces term, whose context threshold (chosen on real prompts) reads Presidio's news-like
        # one-liners ("Bryan Maclean's killers sentenced to life in prison") as public; 0.63 since
        # the template rows weigh less in the gate (0.02 of a real prompt, from 0.05: PUPA recall
        # 58.4% -> 61.4% with 4.5% -> 4.2% of public prompts flagged, out of fold); 0.54 since a
        # sure name needs a text that does not read plainly public ("Erin Nyberg" in a news line, as
        # "Mrs. Cruz" in a word problem: GSM8K questions flagged 16.0% -> 4.2% at the same PUPA recall)
        assert by_type["PERSON"].recall >= 0.5, by_type["PERSON"]
    assert scores["edgeway realistic prompts, held-out half (unseen names)"]["STREET_ADDRESS"].recall >= 0.85


def test_public_template_traffic_is_not_flagged():
    """ "The meeting has been moved to Thursday", "Translate this note into German": 398 of the
    1,243 template prompts had a finding (a weekday, a month, an instruction's verb or a language
    as a PERSON in a text that read private) before those became common words."""
    from research.evaluate import template_traffic_flagged

    flagged, prompts = template_traffic_flagged(_shared_scorer().privacy)
    assert flagged / prompts <= 0.01, (flagged, prompts)


def same_model(rebuilt: object, committed: object, where: str = "") -> None:
    """Every key, word and count as committed, and every weight to within 1e-8: the same install
    rebuilds the files bit for bit on one machine, but OpenBLAS picks its kernels by CPU, and an
    AMD EPYC's weights differ from an Intel's by up to 2e-10."""
    if isinstance(committed, float) or isinstance(rebuilt, float):
        assert isinstance(rebuilt, (int, float)) and isinstance(committed, (int, float)), where
        assert math.isclose(rebuilt, committed, rel_tol=1e-7, abs_tol=1e-8), (where, rebuilt, committed)
    elif isinstance(committed, dict):
        assert isinstance(rebuilt, dict) and rebuilt.keys() == committed.keys(), where
        for key, value in committed.items():
            same_model(rebuilt[key], value, f"{where}/{key}")
    elif isinstance(committed, list):
        assert isinstance(rebuilt, list) and len(rebuilt) == len(committed), where
        for i, (a, b) in enumerate(zip(rebuilt, committed, strict=True)):
            same_model(a, b, f"{where}[{i}]")
    else:
        assert rebuilt == committed, (where, rebuilt, committed)


def test_training_rebuilds_the_committed_artifacts():
    """Every model, from research/data and the hyperparameters kept in research/chosen.json."""
    from classifiers.complexity import EdgeClass, model_path
    from classifiers.privacy.context import MODEL_PATH as context_path
    from classifiers.privacy.contextual import MODEL_PATH as spans_path
    from classifiers.privacy.places import MODEL_PATH as places_path
    from classifiers.privacy.uncased import MODEL_PATH as names_path
    from research.train import train_complexity, train_names, train_places, train_privacy

    spans, context = train_privacy()
    places = train_places()
    for rebuilt, path in (
        *((train_complexity(edge_class), model_path(edge_class)) for edge_class in EdgeClass),
        (places, places_path),
        (train_names(places), names_path),
        (spans.encode("utf-8"), spans_path),
        (context, context_path),
    ):
        same_model(json.loads(rebuilt), json.loads(path.read_bytes()), path.name)


def test_a_model_that_differs_in_one_weight_or_word_is_not_the_same_model():
    committed = {"bias": -1.4176663540195795, "grams": {"00": [-1.657808172216043, 37.0]}, "threshold": 0.694}
    on_another_cpu = {"bias": -1.4176663540208545, "grams": {"00": [-1.657808172216043, 37.0]}, "threshold": 0.694}
    same_model(on_another_cpu, committed)
    for changed in (
        {"bias": -1.41766, "grams": {"00": [-1.657808172216043, 37.0]}, "threshold": 0.694},
        {"bias": -1.4176663540195795, "grams": {"01": [-1.657808172216043, 37.0]}, "threshold": 0.694},
        {"bias": -1.4176663540195795, "grams": {"00": [-1.657808172216043]}, "threshold": 0.694},
        {"bias": -1.4176663540195795, "grams": {"00": [-1.657808172216043, 37.0]}, "threshold": 0.7},
    ):
        with pytest.raises(AssertionError):
            same_model(changed, committed)


def test_a_person_addressed_by_name_is_found_however_common_the_name():
    scanner = PrivacyScanner()
    for text, name in [
        ("Dear Maya, noted: I will send the fuel sensor figures.", "Maya"),
        ("Her name was Sasha. We went to school together.", "Sasha"),
        ("Thanks for the update.\n\nBest regards,\nOmar Haddad\n", "Omar Haddad"),
    ]:
        assert any(f.type == "PERSON" and text[f.start : f.end].endswith(name) for f in scanner.scan(text)), text
    for public in ("Hi there, how do magnets work?", "Hello World! is the first program.", "Dear Sir, I apply."):
        assert not [f for f in scanner.scan(public) if f.detector == "addressed"], public
