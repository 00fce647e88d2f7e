"""An OpenAI Chat Completions request, validated once at the door.

The original body is kept as received so that fields edgeway does not interpret (tools,
response_format, logit_bias, ...) reach a cloud provider untouched.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from policies.needs import Need
from router.errors import InvalidRequest
from router.fields import kind_of, number_in, optional, require_object
from router.native import Api, Native

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
PART_TYPES = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
MAX_STOP_SEQUENCES = 4
MAX_CHOICES = 128  # `n`, as OpenAI allows


class Priority(StrEnum):
    """`x-edgeway-priority`: how the edge schedules the request."""

    INTERACTIVE = "interactive"
    BACKGROUND = "background"


@dataclass(frozen=True)
class Hints:
    """What a client's `x-edgeway-*` headers tell the router and its policies."""

    tags: frozenset[str] = frozenset()  # x-edgeway-tags: a,b
    latency_budget_ms: float | None = None  # x-edgeway-latency-budget-ms: 2000
    priority: Priority = Priority.INTERACTIVE  # x-edgeway-priority: background


def parse_hints(metadata: dict[str, str]) -> Hints:
    tags = frozenset(t.strip() for t in metadata.get("tags", "").split(",") if t.strip())
    budget = metadata.get("latency-budget-ms")
    latency: float | None = None
    if budget is not None:
        try:
            latency = float(budget)
        except ValueError:
            latency = -1.0
        if not (0 <= latency < float("inf")):
            raise InvalidRequest(
                f"x-edgeway-latency-budget-ms must be a number of milliseconds; got {budget[:40]!r}.",
                code="invalid_latency_budget",
            )
    priority = metadata.get("priority", Priority.INTERACTIVE)
    if priority not in set(Priority):
        raise InvalidRequest(
            f"x-edgeway-priority must be one of {', '.join(Priority)}; got {priority[:40]!r}.",
            code="invalid_priority",
        )
    return Hints(tags, latency, Priority(priority))


@dataclass
class ChatRequest:
    body: dict[str, Any]
    model: str
    messages: list[dict[str, Any]]
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    text_only: bool = True
    metadata: dict[str, str] = field(default_factory=dict)
    needs: frozenset[Need] = frozenset()  # what the answer must honor
    prompt: str | None = None  # a legacy text completion: continue this text (no chat template)
    inputs: tuple[str, ...] | None = None  # an embeddings request: the texts to embed
    logprobs: int | None = None  # `logprobs: true`: report tokens' log-probabilities, and this many alternatives
    n: int = 1  # answers to the one prompt (choices)
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: tuple[tuple[int, float], ...] = ()  # token ids of the tokenizer of the model named
    app: str = ""  # who asks: set by the gateway once the key is known
    body_bytes: int = 0  # the size of the body as received: large ones are read off the event loop
    # the body as the client sent it in another API than Chat Completions (`body` is its translation)
    native: Native | None = None

    @property
    def as_sent(self) -> dict[str, Any]:
        """The body as the client sent it, in its own API: what the privacy scan reads and masks,
        and what a provider of that API receives."""
        return self.body if self.native is None else self.native.body

    @property
    def native_only(self) -> str | None:
        """What of the body as sent its translation cannot carry (a hosted tool, an item), if any:
        only a provider of its own API may answer it (`Need.OWN_API`)."""
        return None if self.native is None else self.native.codec.native_only(self.native.body)

    @property
    def api(self) -> Api:
        return Api.CHAT_COMPLETIONS if self.native is None else self.native.api

    def speaks(self, apis: frozenset[Api]) -> bool:
        """Whether a provider of `apis` takes this request in its own API (a legacy completion and
        an embeddings request are their own endpoints' bodies, never translated)."""
        return self.api in apis and self.prompt is None and self.inputs is None

    @functools.cached_property
    def hints(self) -> Hints:
        """The `x-edgeway-*` hints, parsed once (`parse_hints`: a bad one is the client's 400)."""
        return parse_hints(self.metadata)

    @property
    def background(self) -> bool:
        """Work that yields to interactive requests on the edge (`x-edgeway-priority: background`:
        batch lines, or a client's own offline work)."""
        return self.hints.priority == Priority.BACKGROUND

    def text_of(self, message: dict[str, Any]) -> str:
        """The text a model reads from one message (text parts joined, other parts dropped)."""
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(p.get("text") or p.get("refusal") or "" for p in content)
        return ""

    def plain_messages(self) -> list[dict[str, str]]:
        """Messages as role + string content, the shape a local chat template expects."""
        return [{"role": _template_role(m["role"]), "content": self.text_of(m)} for m in self.messages]


def _template_role(role: str) -> str:
    return "system" if role == "developer" else role


def parse_chat_request(body: Any, metadata: dict[str, str] | None = None) -> ChatRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidRequest(
            "You must provide a model parameter (a model name, or 'auto').",
            param="model",
            code="missing_required_parameter" if model is None else "invalid_type",
        )
    messages = body.get("messages")
    if messages is None:
        raise InvalidRequest(
            "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter"
        )
    if not isinstance(messages, list):
        raise InvalidRequest(
            f"Invalid type for 'messages': expected an array, got {kind_of(messages)}.",
            param="messages",
            code="invalid_type",
        )
    if not messages:
        raise InvalidRequest("'messages' must contain at least one message.", param="messages", code="empty_array")
    text_only = all(_check_message(i, m) for i, m in enumerate(messages))

    stream = optional(body, "stream", bool, "a boolean") or False
    include_usage = False
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise InvalidRequest(
                "Invalid type for 'stream_options': expected an object.", param="stream_options", code="invalid_type"
            )
        if not stream:
            raise InvalidRequest("'stream_options' is only allowed when 'stream' is true.", param="stream_options")
        include_usage = bool(optional(options, "include_usage", bool, "a boolean", prefix="stream_options."))

    n = optional(body, "n", int, "an integer")
    if n is not None and not 1 <= n <= MAX_CHOICES:
        raise InvalidRequest(f"'n' must be between 1 and {MAX_CHOICES}; got {n}.", param="n", code="invalid_value")

    max_tokens = optional(body, "max_completion_tokens", int, "an integer")
    if max_tokens is None:
        max_tokens = optional(body, "max_tokens", int, "an integer")
    if max_tokens is not None and max_tokens < 1:
        raise InvalidRequest(
            f"'max_tokens' must be at least 1, got {max_tokens}.", param="max_tokens", code="invalid_value"
        )
    logprobs = _logprobs(body)
    temperature = number_in(body, "temperature", 0.0, 2.0)
    top_p = number_in(body, "top_p", 0.0, 1.0)
    seed = optional(body, "seed", int, "an integer")
    frequency_penalty = number_in(body, "frequency_penalty", -2.0, 2.0) or 0.0
    presence_penalty = number_in(body, "presence_penalty", -2.0, 2.0) or 0.0
    logit_bias = _logit_bias(body.get("logit_bias"))
    _check_response_format(body.get("response_format"))

    return ChatRequest(
        body=body,
        model=model,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        stop=_stop_list(body.get("stop")),
        text_only=text_only,
        metadata=metadata or {},
        needs=_needs(body) | (frozenset() if text_only else frozenset({Need.MEDIA})),
        logprobs=logprobs,
        n=n or 1,
        frequency_penalty=frequency_penalty,
        presence_penalty=presence_penalty,
        logit_bias=logit_bias,
    )


RESPONSE_FORMATS = ("text", "json_object", "json_schema")


def _check_response_format(given: Any) -> None:
    """A response format no model would honor is the client's mistake, not prose to answer with."""
    if given is None:
        return
    kind = given.get("type") if isinstance(given, dict) else None
    if kind not in RESPONSE_FORMATS:
        raise InvalidRequest(
            f"Invalid value for 'response_format.type': expected one of {list(RESPONSE_FORMATS)}, got {kind!r}.",
            param="response_format.type",
            code="invalid_value",
        )
    if kind == "json_schema" and not isinstance(given.get("json_schema"), dict):
        raise InvalidRequest(
            "'response_format.json_schema' must be an object with the schema.", param="response_format.json_schema"
        )


MAX_LOGIT_BIAS = 1024  # tokens one request may bias


def _logit_bias(given: Any) -> tuple[tuple[int, float], ...]:
    """`logit_bias` as (token id, bias) pairs: ids as decimal strings, biases in [-100, 100]."""
    if given is None:
        return ()
    if not isinstance(given, dict) or len(given) > MAX_LOGIT_BIAS:
        raise InvalidRequest(
            f"'logit_bias' must be an object of at most {MAX_LOGIT_BIAS} token ids to biases.", param="logit_bias"
        )
    pairs = []
    for token, bias in given.items():
        if not (isinstance(token, str) and token.isdigit()) or isinstance(bias, bool):
            raise InvalidRequest(f"'logit_bias' key {token!r} is not a token id.", param="logit_bias")
        if not isinstance(bias, (int, float)) or not -100 <= bias <= 100:
            raise InvalidRequest(f"'logit_bias' of token {token} must be a number in [-100, 100].", param="logit_bias")
        pairs.append((int(token), float(bias)))
    return tuple(pairs)


def _logprobs(body: dict[str, Any]) -> int | None:
    wanted = optional(body, "logprobs", bool, "a boolean")
    top = optional(body, "top_logprobs", int, "an integer")
    if top is not None and not 0 <= top <= 20:
        raise InvalidRequest("'top_logprobs' must be between 0 and 20.", param="top_logprobs", code="invalid_value")
    if top is not None and not wanted:
        raise InvalidRequest("'top_logprobs' requires 'logprobs' to be true.", param="top_logprobs")
    return (top or 0) if wanted else None


LEGACY_DEFAULT_MAX_TOKENS = 16  # what OpenAI's legacy completions default to
_LEGACY_REFUSED = {
    "echo": "echo is not supported: send the prompt and prepend it yourself",
    "suffix": "suffix (insertion) is not supported",
    "best_of": "best_of is not supported: send several requests instead",
}


def parse_completion_request(body: Any, metadata: dict[str, str] | None = None) -> ChatRequest:
    """A legacy `POST /v1/completions` body: the prompt is read by the signals and policies as a
    user message, and continued as text by the model that serves it."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise InvalidRequest(
            "'prompt' must be a string (one prompt; token arrays and batches are not supported).",
            param="prompt",
            code="invalid_type" if prompt is not None else "missing_required_parameter",
        )
    for key, why in _LEGACY_REFUSED.items():
        if body.get(key) and not (key == "best_of" and body[key] == 1):
            raise InvalidRequest(f"{why}.", param=key, code="unsupported_parameter")
    chat_like = {k: v for k, v in body.items() if k not in ("prompt", "echo", "suffix", "best_of", "logprobs")}
    chat_like["messages"] = [{"role": "user", "content": prompt}]
    chat_like.setdefault("max_tokens", LEGACY_DEFAULT_MAX_TOKENS)
    parsed = parse_chat_request(chat_like, metadata)
    legacy = {**body, "prompt": prompt, "max_tokens": parsed.max_tokens}
    needs = parsed.needs | ({Need.LEGACY_LOGPROBS} if body.get("logprobs") else frozenset())
    return dataclasses.replace(parsed, body=legacy, prompt=prompt, needs=needs)


MAX_EMBEDDING_INPUTS = 2048  # texts in one embeddings request, as OpenAI allows


def parse_embeddings_request(body: Any, metadata: dict[str, str] | None = None) -> ChatRequest:
    """A `POST /v1/embeddings` body. Its texts are read by the signals and policies as one user
    message, so that a private text under a local-only rule is embedded locally or not at all."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidRequest("You must provide a model parameter.", param="model", code="missing_required_parameter")
    given = body.get("input")
    inputs = [given] if isinstance(given, str) else given
    if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) and t for t in inputs):
        raise InvalidRequest(
            "'input' must be a non-empty string or an array of non-empty strings (token arrays are not supported).",
            param="input",
            code="invalid_type",
        )
    if len(inputs) > MAX_EMBEDDING_INPUTS:
        raise InvalidRequest(f"'input' may hold at most {MAX_EMBEDDING_INPUTS} texts.", param="input")
    if body.get("encoding_format") not in (None, "float", "base64"):
        raise InvalidRequest("'encoding_format' must be float or base64.", param="encoding_format")
    return ChatRequest(
        body=body,
        model=model,
        messages=[{"role": "user", "content": "\n".join(inputs)}],
        metadata=metadata or {},
        needs=frozenset({Need.EMBEDDINGS}),
        inputs=tuple(inputs),
    )


def _needs(body: dict[str, Any]) -> frozenset[Need]:
    needs: set[Need] = set()
    if (body.get("tools") or body.get("functions")) and body.get("tool_choice") != "none":
        needs.add(Need.TOOLS)
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") in ("json_object", "json_schema"):
        needs.add(Need.JSON_OUTPUT)
    if body.get("logprobs") or body.get("top_logprobs"):
        needs.add(Need.LOGPROBS)
    if body.get("logit_bias"):
        # Token ids are a tokenizer's: for `auto` the provider's (OpenAI's); for a named model, its own.
        needs.add(Need.LOGIT_BIAS if body.get("model") == "auto" else Need.OWN_TOKEN_BIAS)
    if body.get("frequency_penalty") or body.get("presence_penalty"):
        needs.add(Need.PENALTIES)
    if isinstance(body.get("n"), int) and body["n"] > 1:
        needs.add(Need.CHOICES)
    if body.get("web_search_options") is not None:
        needs.add(Need.WEB_SEARCH)
    modalities = body.get("modalities")
    if isinstance(modalities, list) and "audio" in modalities:
        needs.add(Need.AUDIO_OUTPUT)
    return frozenset(needs)


def _check_message(i: int, message: Any) -> bool:
    """Validate one message; return whether it is text only (so a local model can read it)."""
    where = f"messages[{i}]"
    require_object(where, message)
    role = message.get("role")
    if role not in ROLES:
        raise InvalidRequest(
            f"Invalid value for '{where}.role': expected one of {sorted(ROLES)}, got {role!r}.",
            param=f"{where}.role",
            code="invalid_value",
        )
    content = message.get("content")
    if content is None:
        if role in ("assistant", "function") or "tool_calls" in message:
            return True
        raise InvalidRequest(
            f"Missing required parameter: '{where}.content'.",
            param=f"{where}.content",
            code="missing_required_parameter",
        )
    if isinstance(content, str):
        return True
    if not isinstance(content, list):
        raise InvalidRequest(
            f"Invalid type for '{where}.content': expected a string or an array of content parts, "
            f"got {kind_of(content)}.",
            param=f"{where}.content",
            code="invalid_type",
        )
    return all(_check_part(f"{where}.content[{j}]", part) for j, part in enumerate(content))


def _check_part(where: str, part: Any) -> bool:
    require_object(where, part)
    kind = part.get("type")
    if kind not in PART_TYPES:
        raise InvalidRequest(
            f"Unsupported content part type {kind!r} in '{where}': supported types are {sorted(PART_TYPES)}.",
            param=f"{where}.type",
            code="invalid_value",
        )
    if kind in ("text", "refusal"):
        if not isinstance(part.get(kind), str):
            raise InvalidRequest(
                f"Invalid type for '{where}.{kind}': expected a string.", param=f"{where}.{kind}", code="invalid_type"
            )
        return True
    return False


def _stop_list(stop: Any) -> list[str]:
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise InvalidRequest(
            "Invalid type for 'stop': expected a string or an array of strings.", param="stop", code="invalid_type"
        )
    if len(stop) > MAX_STOP_SEQUENCES:
        raise InvalidRequest(
            f"'stop' takes at most {MAX_STOP_SEQUENCES} sequences, got {len(stop)}.", param="stop", code="invalid_value"
        )
    return [s for s in stop if s]
