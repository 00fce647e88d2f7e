"""What a request may ask beyond plain text chat: `Need`. A policy tests it (`when: {needs:
[...]}`), a model declares what it honors of it (`capabilities`), and a model that cannot honor
a request's needs is never sent the request (it would drop the field and answer as if it were not
there). Each need is asked in one body field, which an error names."""

from __future__ import annotations

from enum import StrEnum


class Need(StrEnum):
    TOOLS = "tools"
    JSON_OUTPUT = "json_output"
    LOGPROBS = "logprobs"
    LOGIT_BIAS = "logit_bias"
    OWN_TOKEN_BIAS = "own_token_bias"  # logit_bias in the token ids of the model the request names
    PENALTIES = "penalties"
    CHOICES = "choices"  # more than one answer
    MEDIA = "media"  # image, audio or file parts to read
    AUDIO_OUTPUT = "audio_output"
    WEB_SEARCH = "web_search"  # search the web before answering
    EMBEDDINGS = "embeddings"  # an embeddings request needs a model that embeds
    LEGACY_LOGPROBS = "legacy_logprobs"  # a legacy completion's logprobs object (the edge reports the chat one)
    # what only a provider of the request's own API can do: a hosted tool, an item or a block that
    # its translation to Chat Completions cannot carry (router.native)
    OWN_API = "own_api"

    @property
    def field(self) -> str:
        """The body field a request asks this need in."""
        return _FIELDS[self]


_FIELDS = {
    Need.TOOLS: "tools",
    Need.JSON_OUTPUT: "response_format",
    Need.LOGPROBS: "logprobs",
    Need.LOGIT_BIAS: "logit_bias",
    Need.OWN_TOKEN_BIAS: "logit_bias",
    Need.PENALTIES: "frequency_penalty",
    Need.CHOICES: "n",
    Need.MEDIA: "messages",
    Need.AUDIO_OUTPUT: "modalities",
    Need.WEB_SEARCH: "web_search_options",
    Need.EMBEDDINGS: "model",
    Need.LEGACY_LOGPROBS: "logprobs",
    Need.OWN_API: "tools",
}
