"""Text the detectors cannot read fails closed. Names, birth dates and health conditions are
found by models and cues made on Latin-script text in seven languages, so words in Cyrillic, Han,
Arabic, Devanagari or Hangul are reported `UNSCANNED` (detector `script:<name>`), and so is a
stretch written in any other language, Polish, Turkish or Vietnamese, whose birth dates and
conditions no cue reads (detector `language:<code>`). A local-only app keeps such a request on the
edge and `POST /v1/route` says why; a masking app refuses to send it unread, or answers it on the
edge where its rule falls back there; a copy kept at rest masks it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers import Scorer
from classifiers.privacy import PrivacyScanner
from classifiers.privacy.ordinary import ENGLISH, MODEL_DIR, NAMES_FILE
from classifiers.privacy.scripts import unread
from tests.conftest import BETA_POLICY, PRIVATE_POLICY, GatewayProcess, gateway_config
from tests.test_batches import MASKING_POLICY

KEYS = {
    "private": "private-key-0123456789",
    "masked": "masked-key-0123456789",
    "answered": "answered-key-0123456789",
    "kept": "kept-key-0123456789",
}
BORN = "Я родился 14 марта 1987 года в Казани."  # "I was born on 14 March 1987 in Kazan."
ILL = "我患有抑郁症，正在服用舍曲林。"  # "I have depression and take sertraline."


# Told of oneself in languages whose birth dates and conditions no cue reads: "I have diabetes
# and take metformin", "I was born on 14 March 1987", and the like.
UNREAD_LANGUAGES = {
    "Mam cukrzycę i biorę metforminę od dwóch lat.": "pl",
    "Mam cukrzyce i biore metformine od dwoch lat.": "pl",  # typed without its letters' marks
    "Doğum tarihim 14 Mart 1987, şeker hastasıyım.": "tr",
    "Mám cukrovku a beru metformin, narodil jsem se 14. března 1987.": "cs",
    "Jag har diabetes och tar metformin sedan två år.": "sv",
    "Tôi bị tiểu đường và đang uống metformin.": "vi",
    "Saya menderita diabetes dan minum metformin setiap hari.": "id",
    "Cukorbeteg vagyok, és metformint szedek.": "hu",
    "Am diabet și iau metformină de doi ani, m-am născut pe 14 martie 1987.": "ro",
    "Minulla on diabetes ja otan metformiinia joka päivä.": "fi",
    "Jeg har sukkersyge og tager metformin hver dag.": "da",
    "Ako ay may diabetes at umiinom ng metformin araw-araw.": "tl",
}
READ = (
    "Ich habe Diabetes und nehme seit zwei Jahren Metformin.",
    "J'ai du diabète et je prends de la metformine depuis deux ans.",
    "Tengo diabetes y tomo metformina desde hace dos años.",
    "Ho il diabete e prendo la metformina da due anni.",
    "Tenho diabetes e tomo metformina há dois anos.",
    "Ik heb diabetes en neem al twee jaar metformine.",
    "I have diabetes and have taken metformin for two years.",
)
SCANNER = PrivacyScanner()


def languages(text: str) -> list[tuple[str, str]]:
    return [
        (text[f.start : f.end], f.detector) for f in SCANNER.unread_words(text) if f.detector.startswith("language:")
    ]


def known_errors(texts: Iterable[str], errors: tuple[str, ...], reason: str) -> list[Any]:
    """`texts`, those among `errors` marked as the reader's known errors: strict, so a reader that
    reads one rightly must take it off its list."""
    return [pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=reason)) if t in errors else t for t in texts]


# What the disclosure reader reads as public though it is not: the misses its locked folds count
# (docs/classifiers.md).
READER_MISSES = ("Tôi bị tiểu đường và đang uống metformin.",)


@pytest.mark.parametrize("text", known_errors(sorted(UNREAD_LANGUAGES), READER_MISSES, "the reader reads it public"))
def test_a_private_stretch_in_a_language_no_cue_reads_is_unread_and_named(text):
    # the stretch is its words and numbers, not the full stop after them
    assert languages(text) == [(text.rstrip("."), f"language:{UNREAD_LANGUAGES[text]}")]


# The same languages, asking about the world: the disclosure reader lets them go as written.
PUBLIC_IN_UNREAD_LANGUAGES = (
    "Przepis na pierogi ruskie krok po kroku, proszę.",  # pl: a pierogi recipe
    "Kto napisał Pana Tadeusza i kiedy?",  # pl: who wrote Pan Tadeusz
    "Taj Mahal hangi yıl inşa edildi?",  # tr: when was the Taj Mahal built
    "Kdy se narodil Antonín Dvořák?",  # cs: when was Dvořák born
    "Bagaimana cara membuat rendang yang empuk?",  # id: how to make tender rendang
    "Hur många invånare har Stockholm?",  # sv: how many people live in Stockholm
)
# What the reader reads as private though it asks about the world: it fails closed, as all such text did.
READER_OVERBLOCKS = ("Przepis na pierogi ruskie krok po kroku, proszę.",)


@pytest.mark.parametrize(
    "text", known_errors(PUBLIC_IN_UNREAD_LANGUAGES, READER_OVERBLOCKS, "the reader reads it private")
)
def test_a_public_question_in_a_language_no_cue_reads_is_sent_as_written(text):
    assert SCANNER.scan(text) == ()


@pytest.mark.parametrize("text", READ)
def test_the_languages_the_cues_read_are_read(text):
    assert languages(text) == []
    assert "HEALTH" in {f.type for f in SCANNER.scan(text)}


def test_a_line_in_another_language_amid_english_is_the_stretch_found():
    opening = "Please help me write a short and polite email to my landlord about the heating."
    polish = "Mam cukrzycę i biorę metforminę, więc zimno w mieszkaniu szkodzi mojemu zdrowiu."
    closing = "Thanks a lot for your help, and keep the tone friendly but firm in the letter."
    text = f"{opening}\n{polish}\n{closing}"
    assert languages(text) == [(polish.rstrip("."), "language:pl")]


ENGLISH_WORDS = (MODEL_DIR / f"{ENGLISH}.txt").read_text(encoding="utf-8").split()[:5000]
NAMES = sorted((MODEL_DIR / NAMES_FILE).read_text(encoding="utf-8").split())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(ENGLISH_WORDS),
            st.sampled_from(NAMES).map(str.title),  # anyone's name, from any of Faker's locales
            st.from_regex(r"\d{4}[ :.\-—\[・]\d{4}[ :.\-—\[・]\d{4}", fullmatch=True),  # numbers, any separators
        ),
        min_size=2,
        max_size=40,
    ),
    st.sampled_from([" ", "\n", ", ", ". "]),
)
def test_english_words_with_anyones_names_and_numbers_are_never_unread(words, between):
    text = between.join(words)
    assert languages(text) == [], text


def scripts(text: str) -> list[tuple[str, str]]:
    return [(text[f.start : f.end], f.detector) for f in unread(text)]


def test_words_of_each_unread_script_are_found_and_named():
    assert scripts(BORN) == [
        ("родился", "script:cyrillic"), ("марта", "script:cyrillic"), ("года", "script:cyrillic"),
        ("Казани", "script:cyrillic"),
    ]  # fmt: skip
    assert scripts(ILL) == [("我患有抑郁症", "script:cjk"), ("正在服用舍曲林", "script:cjk")]
    assert scripts("مريم الحسن") == [("مريم", "script:arabic"), ("الحسن", "script:arabic")]
    assert scripts("नमस्ते सुनीता") == [("नमस्ते", "script:devanagari"), ("सुनीता", "script:devanagari")]  # marks inside
    assert scripts("コーヒー, 김민준") == [("コーヒー", "script:katakana"), ("김민준", "script:hangul")]
    assert scripts("王伟") == [("王伟", "script:cjk")]  # two syllables are a name


def test_latin_text_in_any_of_its_forms_and_greek_in_formulas_are_read():
    for text in (
        "Zoë Müller-Łukasiewicz, naïve café in Ærøskøbing",
        "ｆｕｌｌｗｉｄｔｈ and 𝐛𝐨𝐥𝐝 and ﬁ ligatures",
        "τc = 4πηr3/3k; δβ-thalassaemia; sin θ; Δx → 0 “quoted” 😀",
    ):
        assert unread(text) == [], text


def test_a_copy_kept_at_rest_masks_the_unread_words():
    signals = Scorer().signals([{"role": "user", "content": f"{BORN} mail ivan@example.com"}])
    assert {"UNSCANNED", "EMAIL"} <= {f.type for f in signals.privacy}
    kept = {f.type for f in signals.kept_masked}
    assert {"UNREAD", "EMAIL"} <= kept and "UNSCANNED" not in kept


@pytest.fixture(scope="module")
def three_apps(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("scripts")
    (tmp / "private.yaml").write_text(PRIVATE_POLICY)
    (tmp / "masked.yaml").write_text(MASKING_POLICY)
    (tmp / "answered.yaml").write_text(
        MASKING_POLICY.replace("app: masked", "app: answered").replace("fallback: none", "fallback: edge")
    )
    (tmp / "kept.yaml").write_text(BETA_POLICY.replace("app: beta", "app: kept"))
    config = gateway_config(upstream.url, tmp, admin_key="admin-key-scripts-0123")
    config["apps"] = [
        {"name": "private", "key": KEYS["private"], "policy": str(tmp / "private.yaml")},
        {"name": "masked", "key": KEYS["masked"], "policy": str(tmp / "masked.yaml")},
        {"name": "answered", "key": KEYS["answered"], "policy": str(tmp / "answered.yaml")},
        {"name": "kept", "key": KEYS["kept"], "policy": str(tmp / "kept.yaml"), "log_prompts": True},
    ]
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client(gateway: GatewayProcess, app: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEYS[app], max_retries=0)


def test_a_local_only_app_keeps_unread_text_on_the_edge_and_says_why(three_apps, upstream):
    said = client(three_apps, "private").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": ILL}], max_tokens=4
    )
    assert said.headers["x-edgeway-route"] == "edge" and upstream.requests == []
    route = httpx.post(
        three_apps.url + "/v1/route",
        json={"model": "auto", "messages": [{"role": "user", "content": BORN}]},
        headers={"authorization": f"Bearer {KEYS['private']}"},
    ).json()
    assert route["decision"]["rule"] == "pii-stays-local"
    assert ("UNSCANNED", "script:cyrillic") in {(f["type"], f["detector"]) for f in route["signals"]["privacy"]}


def test_a_masking_app_refuses_to_send_what_it_cannot_read(three_apps, upstream):
    with pytest.raises(openai.APIStatusError) as refused:
        client(three_apps, "masked").chat.completions.create(
            model="auto", messages=[{"role": "user", "content": f"Write to my doctor: {ILL}"}], max_tokens=4
        )
    assert refused.value.status_code == 503
    assert (
        "a script edgeway's detectors do not read, which its disclosure reader reads as private "
        "(cjk, at messages[0].content)"
    ) in refused.value.message
    assert upstream.requests == []


def test_a_masking_app_with_an_edge_fallback_answers_unread_text_on_the_premises(three_apps, upstream):
    said = client(three_apps, "answered").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": f"Write to my doctor: {ILL}"}], max_tokens=4
    )
    assert said.headers["x-edgeway-route"] == "edge" and upstream.requests == []


def test_the_ledger_keeps_unread_words_masked(three_apps, upstream):
    client(three_apps, "kept").chat.completions.create(
        model="auto", messages=[{"role": "user", "content": BORN}], max_tokens=4
    )
    sent = json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    assert "Казани" in sent  # the app's rule sends everything, as written
    rows = httpx.get(three_apps.url + "/api/usage", headers={"authorization": "Bearer admin-key-scripts-0123"}).json()[
        "recent"
    ]
    prompt = rows[0]["prompt"]
    assert prompt.startswith("Я [UNREAD] 14 [UNREAD]") and "Казани" not in prompt and "года" not in prompt


def test_a_local_only_app_keeps_text_in_an_unread_language_on_the_edge_and_says_why(three_apps, upstream):
    said = "Doğum tarihim 14 Mart 1987, şeker hastasıyım."
    answer = client(three_apps, "private").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": said}], max_tokens=4
    )
    assert answer.headers["x-edgeway-route"] == "edge" and upstream.requests == []
    route = httpx.post(
        three_apps.url + "/v1/route",
        json={"model": "auto", "messages": [{"role": "user", "content": said}]},
        headers={"authorization": f"Bearer {KEYS['private']}"},
    ).json()
    assert route["decision"]["rule"] == "pii-stays-local"
    assert ("UNSCANNED", "language:tr") in {(f["type"], f["detector"]) for f in route["signals"]["privacy"]}


def test_a_masking_app_refuses_text_in_an_unread_language_or_answers_it_on_the_edge(three_apps, upstream):
    said = "Mam cukrzycę i biorę metforminę. Napisz list do mojego lekarza."
    with pytest.raises(openai.APIStatusError) as refused:
        client(three_apps, "masked").chat.completions.create(
            model="auto", messages=[{"role": "user", "content": said}], max_tokens=4
        )
    assert refused.value.status_code == 503
    assert (
        "a language edgeway's detectors do not read, which its disclosure reader reads as private "
        "(pl, at messages[0].content)"
    ) in refused.value.message
    answered = client(three_apps, "answered").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": said}], max_tokens=4
    )
    assert answered.headers["x-edgeway-route"] == "edge" and upstream.requests == []


# Public questions and private disclosures side by side, in four languages and three scripts.
ASKED = (
    "Kto napisał Pana Tadeusza i kiedy?",
    "Кто написал «Войну и мир»?",
    "富士山の高さは何メートルですか？",
    "ما هي عاصمة المغرب؟",
)
TOLD = (
    "Mam cukrzycę i biorę metforminę. Napisz list do mojego lekarza.",
    "У меня ВИЧ, вирусная нагрузка снова определяется. Что делать?",
    "私はうつ病で、毎日セルトラリンを飲んでいます。",
)


@pytest.mark.parametrize("app", ["private", "masked"])
def test_public_questions_in_any_language_reach_the_cloud_as_written_and_disclosures_do_not(three_apps, upstream, app):
    for asked in ASKED:
        upstream.reset()
        answer = client(three_apps, app).chat.completions.with_raw_response.create(
            model="auto", messages=[{"role": "user", "content": asked}], max_tokens=4
        )
        assert answer.headers["x-edgeway-route"] == "cloud", asked
        assert asked in json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    upstream.reset()
    for told in TOLD:
        if app == "private":
            answer = client(three_apps, app).chat.completions.with_raw_response.create(
                model="auto", messages=[{"role": "user", "content": told}], max_tokens=4
            )
            assert answer.headers["x-edgeway-route"] == "edge", told
        else:
            with pytest.raises(openai.APIStatusError) as refused:
                client(three_apps, app).chat.completions.create(
                    model="auto", messages=[{"role": "user", "content": told}], max_tokens=4
                )
            assert refused.value.status_code == 503, told
    assert upstream.requests == []


def test_a_masking_app_sends_english_with_foreign_names_masked(three_apps, upstream):
    upstream.reset()
    client(three_apps, "masked").chat.completions.create(
        model="auto",
        messages=[{"role": "user", "content": "Please write to Wojciech Kowalczyk about his invoice."}],
        max_tokens=4,
    )
    sent = json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    assert upstream.requests and "Kowalczyk" not in sent


def test_the_ledger_keeps_a_stretch_in_an_unread_language_masked(three_apps, upstream):
    said = "Urodziłem się 14 marca 1987 roku w Gdańsku i mam cukrzycę."
    client(three_apps, "kept").chat.completions.create(
        model="auto", messages=[{"role": "user", "content": f"{said}\nWhat should I eat?"}], max_tokens=4
    )
    rows = httpx.get(three_apps.url + "/api/usage", headers={"authorization": "Bearer admin-key-scripts-0123"}).json()[
        "recent"
    ]
    prompt = rows[0]["prompt"]
    assert "cukrzycę" not in prompt and "Gdańsku" not in prompt and "[UNREAD]" in prompt, prompt
