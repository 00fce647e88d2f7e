"""What one local model needs to run: the `edge.models` entries of the gateway config."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
