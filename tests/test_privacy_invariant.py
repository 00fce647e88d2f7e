"""The invariant that matters most: a request that its policy keeps local never reaches the cloud.

Hypothesis generates policies (rules on private data, tags and complexity; routes, fallback chains,
fail-closed rules, cascades, redaction, edge-only apps, budgets) and requests (with and without
private data, streamed or not, naming a model or `auto`), against a real router with a real edge
model, an edge model that is down, an edge model too small for long prompts, and the fake cloud
upstream over loopback, which fails on demand. Whatever happens on the way (fallbacks, failed edge,
exhausted budget, failing cloud), the upstream must receive no byte of a request kept local.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from classifiers import Scorer
from classifiers.privacy.canonical import AT_WORDS, DOT_WORDS, SEPARATORS
from classifiers.privacy.languages import UNREAD_WORDS
from classifiers.privacy.tables import DIGIT_WORDS
from edge_runtime import EdgeEngine, EdgeModelConfig
from policies.policy import AppPolicy, Models, parse_policy
from policies.schema import PolicyFile
from router.budget import AppBudget, Caps
from router.caller import Caller
from router.cloud.config import CloudModelConfig
from router.cloud.openai_compat import HttpPool, OpenAICompatible
from router.cloud.validate import delta_text
from router.comparisons import Comparisons
from router.edge import EdgeModel
from router.errors import EdgewayError
from router.ledger import MemoryStore
from router.policy_rules import PolicyRules
from router.pricing import Price
from router.request import ChatRequest, parse_chat_request
from router.routing import Router
from router.served import ServedRequest
from router.shadow import Shadower
from tests.fake_upstream import Fault, is_judging

EDGES = ("edge-ok", "edge-down", "edge-small")
CLOUDS = ("cloud-a",)
PII_TEXT = {
    "US_SSN": "my SSN is 123-45-6789",
    "EMAIL": "write to jane.doe@example.com",
    "PHONE": "call +44 20 7946 0958",
    "PERSON": "my colleague Rachel Zheng at H&R Technology said so",
    "SECRET": "the key is sk-proj-" + "Zx9" * 16,
}
TAGS = ("vip", "share", "draft")

# A private value as an attacker (or a careless client) writes it, so that a plain pattern misses it.
SPELLINGS = {
    "email": "jane.roe@example.com",
    "email with a zero-width space": "jane.roe@exa\u200bmple.com",
    "email with a full-width at sign": "jane.roe\uff20example.com",
    "email spelled out": "jane dot roe at example dot com",
    "email percent-encoded": "jane.roe%40example.com",
    "card": "4111 1111 1111 1111",
    "card with zero-width spaces": "4111\u200b1111\u200b1111\u200b1111",
    "card with dots": "4111.1111.1111.1111",
    "card with no-break spaces": "4111\u00a01111\u00a01111\u00a01111",  # as web pages and PDFs paste it
    "phone with narrow no-break spaces": "+44\u202f20\u202f7946\u202f0958",  # as French typography sets it
    "Chinese mobile number": "13800138000",
    "phone in one run after its cue": "Tel: 02079460123",
    "card with two spaces between groups": "4111  1111  1111  1111",  # copied out of a table
    "email right against Chinese words": "请联系jane.roe@example.com谢谢",
    "email with decomposed accents": "jose\u0301.roe@example.com",
    "a record's name and address": '{"lastName": "okafor", "address": "14 kingsley road, leeds"}',
    "a passport number its cue names": "passport no. X1234567",
    "a Chinese resident ID, no cue": "11010519491231002X",
    "base64 of an SSN and a card": base64.b64encode(b"Jane Roe, SSN 123-45-6789, card 4111 1111 1111 1111").decode(),
    "card in Arabic-Indic digits": "\u0664\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 "
    "\u0661\u0661\u0661\u0661",
    "card in full-width digits": "\uff14\uff11\uff11\uff11 \uff11\uff11\uff11\uff11 \uff11\uff11\uff11\uff11 "
    "\uff11\uff11\uff11\uff11",
    "card as HTML character references": "&#52;&#49;&#49;&#49; &#49;&#49;&#49;&#49; &#x31;&#x31;&#x31;&#x31; 1111",
    "card broken over lines": "4111\n1111\n1111\n1111",
    "SSN in hex": b"SSN 123-45-6789".hex(),
    "SSN in digit words": "my social is one two three dash four five dash six seven eight nine",
    "birth date in French": "je suis née le 14 mars 1987",
    "birth date in German, the verb last": "ich bin am 14. März 1987 geboren",
    "birth date in Spanish": "nací el 14 de marzo de 1987",
    "health condition in French": "j'ai un cancer du sein",
    "health condition in German": "ich habe Typ-1-Diabetes",
    "health condition in Spanish": "sufro de depresión",
    "abortion": "I had an abortion last year",
    "German passport number": "Mein Reisepass hat die Nummer C01X00T47",
    "Japanese street address": "東京都渋谷区渋谷2丁目21-1",
    "Russian street address": "г. Москва, ул. Тверская, д. 7, кв. 15",
    "German street address": "Lindenweg 5a, 80331 München",
}
# Fragments of the spellings above that must not reach the cloud even where the rest is masked.
TELLS = {
    "jane.roe", "4111", "13800138000", "example.com", "02079460123", "okafor", "kingsley", "X1234567",
    "11010519491231002X", "\u0664\u0661\u0661\u0661", "\uff14\uff11\uff11\uff11", "&#52;&#49;",
    "3132332d34352d", "six seven eight nine", "mars 1987", "März 1987", "marzo de 1987", "cancer du sein",
    "Diabetes", "depresión", "abortion", "C01X00T47", "21-1", "Тверская", "кв. 15", "Lindenweg",
}  # fmt: skip


def place(value: str, where: str, question: str = "What is 2+2?") -> dict:
    """A chat body with `value` in the field `where` names, and an innocent question to answer."""
    body: dict = {"messages": [{"role": "user", "content": question}]}
    user = body["messages"][0]
    if where == "content":
        user["content"] = f"{question} {value}"
    elif where == "content part":
        user["content"] = [{"type": "text", "text": question}, {"type": "text", "text": value}]
    elif where == "refusal key of a text part":
        user["content"] = [{"type": "text", "text": question, "refusal": value}]
    elif where == "message name":
        user["name"] = value
    elif where == "earlier tool call arguments":
        arguments = json.dumps({"q": value})
        body["messages"] = [
            {"role": "user", "content": "Look up my account."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "found"},
            user,
        ]  # fmt: skip
    elif where == "tool result":
        body["messages"] = [{"role": "tool", "tool_call_id": "call_1", "content": f"record: {value}"}, user]
    elif where == "tool description":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "notify",
                    "description": f"Notify {value}",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ]
    elif where == "user":
        body["user"] = value
    elif where == "metadata value":
        body["metadata"] = {"customer": value}
    elif where == "metadata key":
        body["metadata"] = {value: "vip"}
    elif where == "prediction":
        body["prediction"] = {"type": "content", "content": value}
    elif where == "text file as a data URL":
        data = base64.b64encode(f"notes\n{value}\n".encode()).decode()
        user["content"] = [
            {"type": "text", "text": question},
            {"type": "file", "file": {"filename": "notes.txt", "file_data": f"data:text/plain;base64,{data}"}},
        ]
    elif where in ENCODED_FILES:
        encoding, media_type = ENCODED_FILES[where]
        data = base64.b64encode(f"notes\n{value}\n".encode(encoding)).decode()
        user["content"] = [
            {"type": "text", "text": question},
            {"type": "file", "file": {"filename": "notes.txt", "file_data": f"data:{media_type};base64,{data}"}},
        ]
    elif where == "top-level key":
        body[f"x_{value}"] = True
    elif where == "key of a tool's parameters":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "notify",
                    "parameters": {"type": "object", "properties": {value: {"type": "string"}}},
                },
            }
        ]
    elif where == "image URL query":
        user["content"] = [
            {"type": "text", "text": question},
            {"type": "image_url", "image_url": {"url": f"https://img.example/a.png?for={value}"}},
        ]
    else:
        raise ValueError(where)
    return body


ENCODED_FILES = {  # a text file in another encoding: (how its bytes are written, its data URL's media type)
    "text file in UTF-16": ("utf-16", "text/plain;charset=utf-16"),
    "text file in UTF-32, told by its byte-order mark": ("utf-32", "text/plain"),
}
PLACES = (
    "content", "content part", "refusal key of a text part", "message name", "earlier tool call arguments",
    "tool result", "tool description", "user", "metadata value", "metadata key", "prediction",
    "text file as a data URL", *ENCODED_FILES, "top-level key", "key of a tool's parameters", "image URL query",
)  # fmt: skip


@pytest.fixture(scope="module")
def engines(routing_edge_gguf):
    ok = EdgeEngine(EdgeModelConfig(name="edge-ok", gguf=str(routing_edge_gguf), n_ctx=1024))
    small = EdgeEngine(EdgeModelConfig(name="edge-small", gguf=str(routing_edge_gguf), n_ctx=256))
    down = EdgeEngine(EdgeModelConfig(name="edge-down"))  # never loaded: every request to it fails
    ok.load()
    small.load()
    yield {"edge-ok": ok, "edge-small": small, "edge-down": down}
    ok.close()
    small.close()


@pytest.fixture(scope="module")
def scorer():
    return Scorer()


# --- what hypothesis generates -----------------------------------------------------------
targets = st.sampled_from(("edge", "cloud") + EDGES + CLOUDS)
conditions = st.one_of(
    st.builds(
        lambda types: {"pii": types}, st.lists(st.sampled_from(sorted(PII_TEXT)), min_size=1, max_size=3, unique=True)
    ),
    st.just({"pii": "any"}),
    st.builds(lambda tags: {"tags": tags}, st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True)),
    st.builds(lambda x: {"complexity": {"gte": x}}, st.floats(0, 1)),
    st.builds(lambda x: {"prompt_tokens": {"gt": x}}, st.integers(0, 400)),
)
whens = st.one_of(
    conditions,
    st.builds(lambda a, b: {"any": [a, b]}, conditions, conditions),
    st.builds(lambda a: {"not": a}, conditions),
)


@st.composite
def rules(draw, index: int, allow_cloud: bool):
    rule: dict = {"name": f"r{index}"}
    if draw(st.booleans()):
        rule["when"] = draw(whens)
    if draw(st.integers(0, 9)) == 0:
        rule["action"] = "deny"
        return rule
    pool = ("edge",) + EDGES if not allow_cloud else None
    rule["route"] = draw(st.sampled_from(pool) if pool else targets)
    fallback = draw(
        st.one_of(
            st.just("none"), st.none(), st.lists(st.sampled_from(pool) if pool else targets, min_size=1, max_size=3)
        )
    )
    if fallback is not None:
        rule["fallback"] = fallback
    if allow_cloud and draw(st.booleans()):
        rule["cascade"] = {
            "escalate_to": draw(st.sampled_from(("cloud",) + CLOUDS)),
            "when_confidence_below": draw(st.sampled_from((0.0, 0.5, 0.999))),
        }
    rule["redact"] = allow_cloud and draw(st.booleans())
    return rule


@st.composite
def policies(draw):
    allow_cloud = draw(st.integers(0, 4)) > 0
    count = draw(st.integers(1, 4))
    body = [draw(rules(i, allow_cloud)) for i in range(count)]
    # only the last rule may be a catch-all (the loader refuses unreachable rules)
    for rule in body[:-1]:
        rule.setdefault("when", {"tags": ["draft"]})
    spec = {
        "app": "generated",
        "allow_cloud": allow_cloud,
        "rules": body,
        "defaults": {"edge": draw(st.sampled_from(EDGES)), "cloud": "cloud-a"},
    }
    if draw(st.booleans()):
        spec["budget"] = {"daily_usd": 1.0, "on_exhausted": draw(st.sampled_from(("edge", "deny")))}
    if allow_cloud:  # every answered request is compared, if it may be
        spec["shadow"] = {"sample": 1.0, "judge": "cloud-a", "daily_usd": 5.0}
    return PolicyFile.model_validate(spec)


@st.composite
def requests(draw):
    private = draw(st.lists(st.sampled_from(sorted(PII_TEXT)), max_size=2, unique=True))
    parts = [PII_TEXT[p] for p in private] + [
        draw(st.sampled_from(["What is 2+2?", "Prove that there are infinitely many primes, step by step.", "Say hi."]))
    ]
    if draw(st.booleans()):
        parts.append("Here is a long log to consider. " * 60)  # too long for edge-small
    text = ", ".join(parts)
    # Half the time, one more private value, written in one of the hard spellings, in any field.
    # Else, the request in any of the three APIs (a provider of its own API receives it as sent).
    api = "chat"
    if draw(st.booleans()):
        body = place(SPELLINGS[draw(st.sampled_from(sorted(SPELLINGS)))], draw(st.sampled_from(PLACES)), text)
    else:
        api = draw(st.sampled_from(("chat", "messages", "responses")))
        body = in_api(api, text)
    return {
        "api": api,
        "body": body,
        "stream": draw(st.booleans()),
        "model": draw(st.sampled_from(("auto",) + EDGES + CLOUDS)),
        "tags": draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True)),
        "latency_budget_ms": draw(st.sampled_from((None, "0", "100000"))),
        "spent": draw(st.sampled_from((0.0, 0.0, 5.0))),
        "cloud_fails": draw(st.booleans()),
    }


# --- the oracle: which requests must stay local, computed from the generated data ----------
def first_rule(policy: PolicyFile, pii: set[str], tags: set[str], complexity: float, tokens: int):
    def holds(when) -> bool:
        if when is None:
            return True
        if "pii" in when:
            return bool(pii) if when["pii"] == "any" else bool(pii & set(when["pii"]))
        if "tags" in when:
            return bool(tags & set(when["tags"]))
        if "complexity" in when:
            return complexity >= when["complexity"]["gte"]
        if "prompt_tokens" in when:
            return tokens > when["prompt_tokens"]["gt"]
        if "any" in when:
            return any(holds(w) for w in when["any"])
        return not holds(when["not"])

    for rule in policy.rules:
        if holds(rule.when.model_dump(by_alias=True, exclude_unset=True) if rule.when else None):
            return rule
    return None


def must_stay_local(policy: PolicyFile, rule, request: dict) -> bool:
    if not policy.allow_cloud:
        return True
    if rule is not None and rule.action == "deny":
        return True
    if policy.budget and request["spent"] >= policy.budget.daily_usd:
        return True  # on_exhausted edge keeps it local; deny refuses it
    if rule is None:
        return False
    route_is_edge = rule.route == "edge" or rule.route in EDGES
    return route_is_edge and rule.fallback == "none"


def in_api(api: str, text: str) -> dict:
    """A user's `text` as a body of `api` (its own fields around it: a cache breakpoint, an item)."""
    if api == "messages":
        said = {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
        return {"messages": [{"role": "user", "content": [said]}]}
    if api == "responses":
        return {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]}
    return {"messages": [{"role": "user", "content": text}]}


def generated_chat(request: dict) -> ChatRequest:
    """The generated request as the gateway reads it: its API's body (with the model, the answer's
    limit and the stream asked), read as Chat Completions, the body kept as sent."""
    from gateway.anthropic import MessagesCodec
    from gateway.responses_request import ResponsesCodec
    from router.native import Native

    metadata = {
        "tags": ",".join(request["tags"]),
        **({"latency-budget-ms": request["latency_budget_ms"]} if request["latency_budget_ms"] else {}),
    }
    asked = {"model": request["model"], "stream": request["stream"]}
    codec = {"messages": MessagesCodec(), "responses": ResponsesCodec()}.get(request["api"])
    if codec is None:
        return parse_chat_request({**request["body"], **asked, "max_tokens": 2}, metadata)
    sent = codec.capped({**request["body"], **asked}, 2)
    chat = parse_chat_request(codec.chat_body(sent), metadata)
    chat.native = Native(codec, sent)
    return chat


async def run_one(policy_spec, request, engines, scorer, upstream) -> None:
    from router.cloud.anthropic import AnthropicModel

    http = HttpPool()
    try:
        # The fake never stalls here: a short timeout only turned answers into refusals when the
        # machine was busy, and the counts below then fell short (seen once beside
        # `research.evaluate` on two cores).
        models = {name: EdgeModel(engine) for name, engine in engines.items()}
        if request["api"] == "messages":  # a provider of its API: it receives the body as sent
            claude = CloudModelConfig(
                name="cloud-a", provider_model="anthropic/claude-x", api_base=upstream.url, timeout_s=30
            )
            models["cloud-a"] = AnthropicModel(claude, http.client)
        else:
            cloud = CloudModelConfig(
                name="cloud-a",
                provider_model="openai/gpt-4o-mini",
                api_key="sk-fake",
                api_base=upstream.url + "/v1",
                timeout_s=30,
            )
            models["cloud-a"] = OpenAICompatible(cloud, http)
        budgets = MemoryStore()
        router = Router(models, scorer, {"cloud-a": Price(1e-6, 1e-6)}, budgets)
        app_policy = AppPolicy(policy_spec, Models(EDGES, CLOUDS))
        rules_ = PolicyRules(lambda: app_policy)
        budgets.charge("generated", request["spent"])
        budget = None
        if policy_spec.budget:
            budget = AppBudget(Caps(policy_spec.budget.daily_usd), policy_spec.budget.on_exhausted)
        chat = generated_chat(request)
        if request["cloud_fails"]:
            upstream.fail_next(Fault(status=503), times=5)
        shadows = Shadower(router, Comparisons(), budgets)
        try:
            delivered = []
            if chat.stream:
                routed = await router.stream(chat, Caller("generated", rules_, budget))
                async for chunk in routed.result:
                    delivered.append(delta_text(chunk))
            else:
                routed = await router.complete(chat, Caller("generated", rules_, budget))
            # what the gateway does once the client has its answer
            shadows.consider(ServedRequest.of("r", "generated", chat, routed, "".join(delivered)), rules_.shadow())
            await shadows.drain()
        except EdgewayError:
            pass  # refusing is allowed; leaking is not
    finally:
        await http.close()


def test_a_request_kept_local_never_reaches_the_cloud(engines, scorer, upstream):
    outcomes = {"kept local": 0, "reached the cloud": 0, "shadowed": 0}

    # The same 80 examples every run (50 kept local, 20 reached the cloud, 7 shadowed): how many
    # are shadowed varies with the draw, and a count under the floor below would say nothing of
    # the property.
    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(policy=policies(), request=requests())
    def check(policy, request):
        upstream.reset()
        chat = generated_chat(request)
        signals = scorer.signals(chat.messages, max_tokens=2, body=chat.as_sent)
        rule = first_rule(
            policy, set(signals.pii_types), set(request["tags"]), signals.complexity, signals.prompt_tokens
        )
        asyncio.run(run_one(policy, request, engines, scorer, upstream))
        if must_stay_local(policy, rule, request):
            assert upstream.requests == [], (rule, policy.allow_cloud, request)
            assert upstream.bytes_received == 0
            outcomes["kept local"] += 1
        if rule is not None and rule.redact and signals.privacy:
            assert not any(is_judging(r.body) for r in upstream.requests), "a redacted request was shadowed"
        if any(is_judging(r.body) for r in upstream.requests):
            outcomes["shadowed"] += 1
        elif upstream.requests:
            outcomes["reached the cloud"] += 1

    check()
    # The property must not pass vacuously: both outcomes were generated, many times.
    assert outcomes["kept local"] >= 20 and outcomes["reached the cloud"] >= 10, outcomes
    assert outcomes["shadowed"] >= 5, outcomes


# --- every place a provider reads, every spelling: kept local, or masked where it is ------------
KEEP_LOCAL = """
app: generated
defaults: {edge: edge-ok, cloud: cloud-a}
rules:
  - name: private
    when: {pii: any}
    route: edge
    fallback: none
  - name: rest
    route: cloud
"""
MASK = """
app: generated
defaults: {edge: edge-ok, cloud: cloud-a}
rules:
  - name: private
    when: {pii: any}
    route: cloud
    redact: true
    fallback: none
  - name: rest
    route: cloud
"""


def unread_words(scorer: Scorer, body: dict) -> bool:
    """Whether `body` holds words no detector reads (a script or a language none was made for:
    "čtyři jedna jedna" is Czech), which a masking rule refuses to send."""
    signals = scorer.signals(body.get("messages", []), body=body)
    return any(f.type == "UNSCANNED" and f.detector.startswith(UNREAD_WORDS) for f in signals.privacy)


async def route_once(body: dict, policy: str, engines, scorer, upstream, stream: bool = False) -> str:
    """Route `body` by `policy` against the real edge and the fake cloud: "edge", "cloud" or the
    refusal's code."""
    http = HttpPool()
    try:
        cloud = CloudModelConfig(
            name="cloud-a", provider_model="openai/gpt-4o-mini", api_key="sk-fake", api_base=upstream.url + "/v1"
        )
        models = {name: EdgeModel(engine) for name, engine in engines.items()}
        models["cloud-a"] = OpenAICompatible(cloud, http)
        chat = parse_chat_request({**body, "model": "auto", "max_tokens": 2, "stream": stream})
        return await outcome(Router(models, scorer, {}, MemoryStore()), chat, policy)
    finally:
        await http.close()


async def outcome(router: Router, chat: ChatRequest, policy: str) -> str:
    """What became of `chat` under `policy`: "edge", "cloud" or the refusal's code (a stream is
    read to its end)."""
    caller = Caller("generated", PolicyRules(lambda: parse_policy(policy, Models(EDGES, CLOUDS))))
    try:
        if chat.stream:
            routed = await router.stream(chat, caller)
            async for _ in routed.result:
                pass
            return routed.route
        return (await router.complete(chat, caller)).route
    except EdgewayError as exc:
        return exc.code or "error"


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("where", PLACES)
def test_a_private_value_in_any_field_and_any_spelling_stays_local(engines, scorer, upstream, where, spelling):
    outcome = asyncio.run(route_once(place(SPELLINGS[spelling], where), KEEP_LOCAL, engines, scorer, upstream))
    assert upstream.bytes_received == 0, (where, spelling, outcome)
    # served locally, or refused: the edge reads no images and calls no tools (yet), and a tool
    # whose parameters are named by a private record is no valid schema
    assert outcome in ("edge", "unsupported_content", "unsupported_parameter", "invalid_json_schema")


@pytest.mark.parametrize(
    "encoding, charset",
    [("cp500", "ebcdic-cp-be"), ("cp037", "IBM037"), ("latin-1", "iso-8859-1"), ("cp1252", "windows-1252"),
     ("shift_jis", "shift_jis"), ("utf-16-be", "utf-16be")],
)  # fmt: skip
def test_a_text_file_in_a_legacy_encoding_is_decoded_and_read(engines, scorer, upstream, encoding, charset):
    data = base64.b64encode("notes\nSSN 123-45-6789, card 4111 1111 1111 1111\n".encode(encoding)).decode()
    body = place("x", "content")
    body["messages"][0]["content"] = [
        {"type": "text", "text": "Summarize the file."},
        {
            "type": "file",
            "file": {"filename": "n.txt", "file_data": f"data:text/plain;charset={charset};base64,{data}"},
        },
    ]
    outcome = asyncio.run(route_once(body, KEEP_LOCAL, engines, scorer, upstream))
    assert upstream.bytes_received == 0 and outcome != "cloud", outcome


@pytest.mark.parametrize(
    "file_data",
    [
        "data:text/plain;charset=x-no-such-charset;base64,SGVsbG8=",  # a charset no one reads
        "data:text/plain;charset=utf-16;base64,SGVsbG8=",  # an odd number of bytes: no UTF-16
        "data:text/plain;charset=ascii;base64,/w==",  # a byte ASCII does not have
        "data:text/plain;charset=utf-8;base64,/w==",  # nor UTF-8
    ],
)
def test_a_text_file_that_does_not_decode_is_never_taken_for_clean(engines, scorer, upstream, file_data):
    body = place("x", "content")
    body["messages"][0]["content"] = [
        {"type": "text", "text": "Summarize the file."},
        {"type": "file", "file": {"filename": "n.txt", "file_data": file_data}},
    ]
    outcome = asyncio.run(route_once(body, KEEP_LOCAL, engines, scorer, upstream))
    assert upstream.bytes_received == 0 and outcome != "cloud", outcome


@pytest.mark.parametrize("where", PLACES)
def test_the_same_fields_without_private_data_reach_the_cloud(engines, scorer, upstream, where):
    """The control: each place above is forwarded (so keeping it local was the scan's doing); media
    is the exception, which edgeway cannot read and so never treats as clean."""
    outcome = asyncio.run(route_once(place("the weather in Paris", where), KEEP_LOCAL, engines, scorer, upstream))
    if where == "image URL query":
        assert outcome != "cloud" and upstream.bytes_received == 0
    elif where == "text file as a data URL" or where in ENCODED_FILES:  # read, found clean, forwarded as it came
        file_data = place("the weather in Paris", where)["messages"][0]["content"][1]["file"]["file_data"]
        assert outcome == "cloud" and upstream.saw_text(file_data)
    else:
        assert outcome == "cloud" and upstream.saw_text("the weather in Paris"), where


# Streamed in the content only: a stream changes how the answer comes back, not what is masked in
# the request (every field streamed doubled this test's minute)
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize(
    ("where", "stream"), [(p, False) for p in PLACES if p != "image URL query"] + [("content", True)]
)
def test_redaction_masks_a_private_value_wherever_it_is(engines, scorer, upstream, where, spelling, stream):
    value = SPELLINGS[spelling]
    body = place(value, where)
    outcome = asyncio.run(route_once(body, MASK, engines, scorer, upstream, stream))
    if unread_words(scorer, body):  # words no detector reads: not sent unread, so not sent
        assert outcome == "no_capacity" and upstream.bytes_received == 0, (where, spelling)
        return
    assert outcome == "cloud"
    sent = json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    for form in {value, json.dumps(value)[1:-1]} | TELLS:
        assert form not in sent, (where, spelling, form)
    assert "_1]" in sent  # a placeholder stands where the value was


def _table_spellings() -> dict[str, str]:
    """A card, an SSN and an address written by each entry of the canonical reading's tables
    (`classifiers.privacy.canonical`): a new entry is sent here without a new test. And two
    addresses written with words no table holds."""
    spelled: dict[str, str] = {}
    for language, table in DIGIT_WORDS.items():
        words: dict[str, str] = {}
        for word, digit in table.items():
            words.setdefault(digit, word)
        spelled[f"card in {language} digit words"] = " ".join(words[d] for d in "4111111111111111")
    for separator in sorted(set(SEPARATORS) - set(" ,")):
        spelled[f"card joined by U+{ord(separator):04X}"] = separator.join(["4111", "1111", "1111", "1111"])
    spelled["card joined by commas"] = "4111,1111,1111,1111"
    for i, at in enumerate(w for w in AT_WORDS if w != "@"):
        dot = [w for w in DOT_WORDS if w != "."][i % (len(DOT_WORDS) - 1)]
        opening, closing = ("(", ")") if i % 2 else ("{", "}")
        spelled[f"email with {at} and {dot}"] = f"jane {opening}{at}{closing} example {opening}{dot}{closing} com"
    # and addresses whose at and dot are words no table holds, read by their shape (`mailboxes`)
    spelled["email with małpa and kropka"] = "ania_kowalska77 małpa wp kropka pl"
    spelled["email with chez and point"] = "zq.hollander77 chez proton point me"
    for zero in (0x0E50, 0x0966, 0x1E950, 0x1D7CE, 0x104A0):  # Thai, Devanagari, Adlam, bold math, Osmanya
        spelled[f"SSN in the digits from U+{zero:04X}"] = "-".join(
            "".join(chr(zero + int(d)) for d in part) for part in ("123", "45", "6789")
        )
    return spelled


TABLE_SPELLINGS = _table_spellings()
TABLE_PLACES = ("content", "text file in UTF-16")  # every place is the SPELLINGS tests' to cover


@pytest.mark.parametrize("spelling", sorted(TABLE_SPELLINGS))
@pytest.mark.parametrize("where", TABLE_PLACES)
def test_every_table_spelling_stays_local_and_is_masked(engines, scorer, upstream, where, spelling):
    value = TABLE_SPELLINGS[spelling]
    outcome = asyncio.run(route_once(place(value, where), KEEP_LOCAL, engines, scorer, upstream))
    assert upstream.bytes_received == 0 and outcome != "cloud", (where, spelling, outcome)
    outcome = asyncio.run(route_once(place(value, where), MASK, engines, scorer, upstream))
    if unread_words(scorer, place(value, where)):  # words no detector reads: not sent unread, so not sent
        assert outcome == "no_capacity" and upstream.bytes_received == 0, (where, spelling)
        return
    sent = json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    assert outcome == "cloud" and value not in sent and json.dumps(value)[1:-1] not in sent, (where, spelling)


def test_redaction_does_not_send_what_it_cannot_scan(engines, scorer, upstream):
    body = place(SPELLINGS["email"], "image URL query")
    assert asyncio.run(route_once(body, MASK, engines, scorer, upstream)) == "no_capacity"
    assert upstream.bytes_received == 0


# --- numbers a provider reads, and a value split over turns --------------------------------
ELSEWHERE = {
    "a card as a JSON number in metadata": {"metadata": {"ref": 4111111111111111}},
    "a card as the seed": {"seed": 4111111111111111},
    "a card as a float": {"metadata": {"ref": 4111111111111111.0}},
    "an SSN as a number in tool call arguments' neighbour": {"metadata": {"ssn": 123456789}},
    "a phone number under a phone key": {"metadata": {"mobile": 447946095800}},
    "a card split over two turns": {
        "messages": [
            {"role": "user", "content": "My card number is 4111 1111"},
            {"role": "user", "content": "1111 1111, please check it."},
        ]
    },
    "an email split over two turns": {
        "messages": [
            {"role": "user", "content": "Write to jane.roe@"},
            {"role": "user", "content": "example.com when done."},
        ]
    },
    "a card split over user, assistant and user turns": {
        "messages": [
            {"role": "user", "content": "My card: 4111"},
            {"role": "assistant", "content": "1111 1111"},
            {"role": "user", "content": "1111"},
        ]
    },
    "a card split around the assistant's reply": {
        "messages": [
            {"role": "user", "content": "My card number is 4111 1111"},
            {"role": "assistant", "content": "Go on."},
            {"role": "user", "content": "1111 1111"},
        ]
    },
    "a card split between a tool call and its result": {
        "messages": [
            {"role": "user", "content": "Look up my card."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "card 4111 1111"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "1111 1111 is on file"},
        ]
    },
    "a card as a negative number": {"seed": -4214833366294245},
    "a card as a negative float": {"metadata": {"ref": -4111111111111111.0}},
    "a card as an array of digits": {"metadata": {"ref": [4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}},
    "a card as an array of digit strings": {"metadata": {"ref": list("4111111111111111")}},
    "a card as an array of its groups": {"metadata": {"ref": ["4111", "1111", "1111", "1111"]}},
    "an SSN as an array of its groups": {"metadata": {"ssn": ["123", "45", "6789"]}},
    "an email as an array of characters": {"metadata": {"to": list("jane.roe@example.com")}},
    "a card between a key and its value": {"metadata": {"4111 1111": "1111 1111"}},
    "an email between a key and its value": {"metadata": {"jane.roe@": "example.com"}},
    "a card over a tool call's sibling arguments": {
        "messages": [
            {"role": "user", "content": "Charge it."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {
                    "name": "pay", "arguments": '{"card_first8": "41111111", "card_last8": "11111111"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "declined"},
        ]
    },
    "a card over an object's sibling values": {"metadata": {"card_first8": "41111111", "card_last8": "11111111"}},
    "a card over a table's columns": {
        "messages": [{"role": "user", "content": "id\tfirst8\tlast8\n7\t41111111\t11111111\nsum these"}]
    },
}  # fmt: skip


def elsewhere(name: str) -> dict:
    return {"messages": [{"role": "user", "content": "What is 2+2?"}], **json.loads(json.dumps(ELSEWHERE[name]))}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_a_private_number_or_a_value_split_over_turns_stays_local(engines, scorer, upstream, name, stream):
    outcome = asyncio.run(route_once(elsewhere(name), KEEP_LOCAL, engines, scorer, upstream, stream))
    assert upstream.bytes_received == 0, (name, outcome)
    assert outcome in ("edge", "unsupported_parameter")


@pytest.mark.parametrize(
    "number",
    [42, 1733788800, 3.14159, 2026, -273.15, [1, 2, 3, 4, 5, 6, 7, 8, 9], ["red", "green", "blue"],
     [4111, 1111, 1111, 1111, 1212, 318, 2002]],
)  # fmt: skip
def test_ordinary_numbers_are_forwarded(engines, scorer, upstream, number):
    """The control: a seed, a timestamp, a ratio, a year, a temperature, a list of counts or of
    words, and token ids (an array of larger numbers is data) are no private values."""
    body = {"messages": [{"role": "user", "content": "What is 2+2?"}], "metadata": {"ref": number}}
    assert asyncio.run(route_once(body, KEEP_LOCAL, engines, scorer, upstream)) == "cloud"


@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_redaction_masks_numbers_and_split_values(engines, scorer, upstream, name):
    assert asyncio.run(route_once(elsewhere(name), MASK, engines, scorer, upstream)) == "cloud"
    sent = json.dumps([r.body for r in upstream.requests])
    for form in ("4111", "123456789", "7946", "jane.roe", "example.com"):
        assert form not in sent, (name, form)


# --- names in fields, and a name with invisible characters inside -------------------------------
NAMED = {
    "a name with zero-width spaces inside": (
        {"messages": [{"role": "user", "content": "Please write to Jo\u200bhn Smi\u200bth at the office."}]},
        ("Jo\u200bhn", "Smi\u200bth"),
    ),
    "metadata.name": (
        {"messages": [{"role": "user", "content": "What is 2+2?"}], "metadata": {"name": "Margaret Okonkwo"}},
        ("Okonkwo",),
    ),
    "a tool's enum of names": (
        {
            "messages": [{"role": "user", "content": "Send the letter."}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "send",
                        "parameters": {
                            "type": "object",
                            "properties": {"to": {"type": "string", "enum": ["Margaret Okonkwo", "Dmitri Volkov"]}},
                        },
                    },
                }
            ],
        },
        ("Okonkwo", "Volkov"),
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_a_name_in_a_field_or_with_invisible_characters_is_kept_local_and_masked_whole(engines, scorer, upstream, name):
    body, tells = NAMED[name]
    outcome = asyncio.run(route_once(json.loads(json.dumps(body)), KEEP_LOCAL, engines, scorer, upstream))
    assert upstream.bytes_received == 0 and outcome != "cloud", outcome
    assert asyncio.run(route_once(json.loads(json.dumps(body)), MASK, engines, scorer, upstream)) == "cloud"
    sent = json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    assert not [tell for tell in tells if tell in sent], sent


def test_a_value_found_once_is_masked_in_every_field_that_repeats_it(engines, scorer, upstream):
    """Found where its cue names it, masked in the metadata, a tool's description and its enum too,
    where the same characters alone would say nothing to the scan; the tool's name is left."""
    alone = {"messages": [{"role": "user", "content": "What is 2+2?"}], "metadata": {"ref": "X1234567"}}
    assert asyncio.run(route_once(json.loads(json.dumps(alone)), KEEP_LOCAL, engines, scorer, upstream)) == "cloud"
    upstream.reset()
    body = {
        "messages": [{"role": "user", "content": "My passport no. X1234567 expires soon: what do I do?"}],
        "metadata": {"ref": "X1234567", "note": "file X1234567 (renewal)"},
        "tools": [{"type": "function", "function": {
            "name": "renew", "description": "Renews the document X1234567.",
            "parameters": {"type": "object", "properties": {"doc": {"type": "string", "enum": ["X1234567"]}}},
        }}],
    }  # fmt: skip
    assert asyncio.run(route_once(body, MASK, engines, scorer, upstream)) == "cloud"
    sent = upstream.requests[0].body
    assert "X1234567" not in json.dumps(sent), sent
    mask = re.search(r"\[[A-Z_]+_\d\]", sent["messages"][0]["content"]).group()  # type: ignore[union-attr]
    assert sent["metadata"]["ref"] == mask  # which the scan alone did not find (above)
    assert sent["tools"][0]["function"]["parameters"]["properties"]["doc"]["enum"] == [mask]
    assert sent["tools"][0]["function"]["name"] == "renew"


# --- the body as sent, in each API: a provider of that API receives it as it came ---------------
def native_place(value: str, where: str) -> tuple[str, dict]:
    """A Messages or Responses body with `value` in the field `where` names (the fields only those
    APIs have), and the API it is written in."""
    question = "What is 2+2?"
    ask = {"role": "user", "content": [{"type": "text", "text": question}]}
    messages: dict = {"max_tokens": 2, "messages": [ask]}
    if where == "Messages system block with cache_control":
        messages["system"] = [{"type": "text", "text": f"Customer: {value}", "cache_control": {"type": "ephemeral"}}]
    elif where == "Messages tool_result block":
        messages["messages"] = [
            {"role": "user", "content": "Look me up."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": f"record: {value}"}]}, {"type": "text", "text": question}]},
        ]  # fmt: skip
    elif where == "Messages earlier tool_use input":
        call = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": value}}
        result = {"type": "tool_result", "tool_use_id": "t1", "content": "found"}
        messages["messages"] = [
            {"role": "user", "content": "Look me up."},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result, ask["content"][0]]},
        ]
    elif where == "Messages document text source":
        source = {"type": "text", "media_type": "text/plain", "data": f"notes: {value}"}
        ask["content"] = [{"type": "document", "source": source}, {"type": "text", "text": question}]
    elif where == "Messages earlier thinking":
        messages["messages"] = [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": f"They are {value}.", "signature": "s"},
                                              {"type": "text", "text": "Hello."}]},
            ask,
        ]  # fmt: skip
    elif where == "Messages metadata.user_id":
        messages["metadata"] = {"user_id": value}
    elif where == "Responses instructions":
        return "responses", {"instructions": f"Customer: {value}", "input": question}
    elif where == "Responses function_call_output":
        return "responses", {"input": [
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": f"record: {value}"},
            {"role": "user", "content": question}]}  # fmt: skip
    elif where == "Responses additional_tools description":
        tool = {"type": "function", "name": "notify", "description": f"Notify {value}", "parameters": {}}
        return "responses", {
            "input": [{"type": "additional_tools", "tools": [tool]}, {"role": "user", "content": question}]
        }
    elif where == "Responses reasoning summary":
        summary = [{"type": "summary_text", "text": f"They are {value}."}]
        return "responses", {"input": [{"type": "reasoning", "id": "rs_1", "summary": summary},
                                       {"role": "user", "content": question}]}  # fmt: skip
    elif where == "Responses prompt_cache_key":
        return "responses", {"input": question, "prompt_cache_key": value}
    else:
        raise ValueError(where)
    return "messages", messages


NATIVE_PLACES = (
    "Messages system block with cache_control", "Messages tool_result block", "Messages earlier tool_use input",
    "Messages document text source", "Messages earlier thinking", "Messages metadata.user_id",
    "Responses instructions", "Responses function_call_output", "Responses additional_tools description",
    "Responses reasoning summary", "Responses prompt_cache_key",
)  # fmt: skip
NATIVE_SPELLINGS = ("email", "email spelled out", "email with a zero-width space")


async def route_native(api: str, body: dict, policy: str, engines, scorer, upstream, stream: bool = False) -> str:
    """Route a body of `api` by `policy` to a cloud model of that API (which receives it as sent),
    against the real edge: "edge", "cloud" or the refusal's code."""
    from gateway.anthropic import MessagesCodec
    from gateway.responses_request import ResponsesCodec
    from router.cloud.anthropic import AnthropicModel
    from router.native import Native

    http = HttpPool()
    try:
        if api == "messages":
            codec: MessagesCodec | ResponsesCodec = MessagesCodec()
            config = CloudModelConfig(name="cloud-a", provider_model="anthropic/claude-x", api_base=upstream.url)
            cloud: AnthropicModel | OpenAICompatible = AnthropicModel(config, http.client)
        else:
            codec = ResponsesCodec()
            config = CloudModelConfig(
                name="cloud-a", provider_model="openai/gpt-4o-mini", api_base=upstream.url + "/v1"
            )
            cloud = OpenAICompatible(config, http)
        models = {name: EdgeModel(engine) for name, engine in engines.items()}
        models["cloud-a"] = cloud
        sent = {**body, "model": "auto", "stream": stream}
        if api == "responses":
            sent["max_output_tokens"] = 2
        chat = parse_chat_request(codec.chat_body(sent))
        chat.native = Native(codec, sent)
        return await outcome(Router(models, scorer, {}, MemoryStore()), chat, policy)
    finally:
        await http.close()


@pytest.mark.parametrize("spelling", NATIVE_SPELLINGS)
@pytest.mark.parametrize("where", NATIVE_PLACES)
def test_a_private_value_in_a_native_field_stays_local(engines, scorer, upstream, where, spelling):
    api, body = native_place(SPELLINGS[spelling], where)
    outcome = asyncio.run(route_native(api, body, KEEP_LOCAL, engines, scorer, upstream))
    assert upstream.bytes_received == 0, (where, spelling, outcome)
    assert outcome in ("edge", "unsupported_content", "unsupported_parameter"), outcome


@pytest.mark.parametrize("where", NATIVE_PLACES)
def test_the_same_native_fields_without_private_data_reach_their_provider_as_sent(engines, scorer, upstream, where):
    api, body = native_place("the weather in Paris", where)
    outcome = asyncio.run(route_native(api, body, KEEP_LOCAL, engines, scorer, upstream))
    assert outcome == "cloud" and upstream.saw_text("the weather in Paris"), where
    assert upstream.requests[-1].path == ("/v1/messages" if api == "messages" else "/v1/responses")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("spelling", NATIVE_SPELLINGS)
@pytest.mark.parametrize("where", NATIVE_PLACES)
def test_redaction_masks_a_native_field_where_it_is(engines, scorer, upstream, where, spelling, stream):
    value = SPELLINGS[spelling]
    api, body = native_place(value, where)
    outcome = asyncio.run(route_native(api, body, MASK, engines, scorer, upstream, stream))
    assert outcome == "cloud"
    sent = json.dumps([r.body for r in upstream.requests], ensure_ascii=False)
    for form in {value, json.dumps(value)[1:-1]} | TELLS:
        assert form not in sent, (where, spelling, form)
    assert "_1]" in sent
