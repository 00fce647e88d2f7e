"""What one local model needs to run: the `edge.models` entries of the gateway config."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edge_runtime.speculation import SpeculativeMode


class ModelRole(StrEnum):
    """What an edge model is loaded for."""

    ANSWER = "answer"  # it answers the requests routed to it (and reads those it may answer)
    # it reads prompts for the router's probes and never answers: an app's `router: {reader: NAME}`
    READER = "reader"


class SpeculativeConfig(BaseModel):
    """Speculative decoding on this model (`edge_runtime.speculation`): guesses from the prompt
    (`prompt_lookup`) or from a small model with the same vocabulary (`draft`, `draft_gguf`),
    verified in the same decode step, only where the batch gains by it."""

    model_config = ConfigDict(extra="forbid")

    mode: SpeculativeMode = SpeculativeMode.PROMPT_LOOKUP
    most: int = Field(8, ge=1, le=32)  # guesses a sequence drafts at most in one step
    draft_gguf: str | None = None  # the draft model of `mode: draft`: `bundled:NAME` or a path

    @model_validator(mode="after")
    def _draft_named_with_its_mode(self) -> SpeculativeConfig:
        if self.mode is SpeculativeMode.DRAFT and self.draft_gguf is None:
            raise ValueError("speculative mode 'draft' needs draft_gguf: the draft model's GGUF")
        if self.mode is not SpeculativeMode.DRAFT and self.draft_gguf is not None:
            raise ValueError("draft_gguf is read only with mode: draft")
        return self


class EdgeModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "smollm2"
    gguf: str = "bundled:smollm2-135m"  # or a path to any GGUF file
    n_ctx: int = Field(4096, ge=256)
    n_gpu_layers: int = Field(0, ge=-1)  # -1 offloads every layer (Metal/CUDA builds)
    parallel: int = Field(4, ge=1, le=64)
    n_threads: int | None = Field(None, ge=1)
    usd_per_1m_tokens: float = Field(0.0, ge=0)  # for the ledger: what a token costs here
    usd_per_hour: float = Field(0.0, ge=0)  # or: the hardware's price per hour of busy time
    # Of what the runtime can do (tools, json_output, ...), only these: e.g. leave tools out to send
    # tool calls to the cloud. Checked against the policy language's names by the gateway config.
    capabilities: list[str] | None = None
    # What its answers are measured as against a GPT-4-class model's: the text prior and the probe of
    # that class (classifiers.complexity.EdgeClass); "auto" reads it from the model's size
    edge_class: Literal["auto", "small", "mid"] = "auto"
    speculative: SpeculativeConfig | None = None
    role: ModelRole = ModelRole.ANSWER

    @model_validator(mode="after")
    def _reader_answers_nothing(self) -> EdgeModelConfig:
        if self.role is ModelRole.READER and self.speculative is not None:
            raise ValueError("a reader never answers, so it has no speculative decoding: leave `speculative` out")
        return self
