"""The gateway config file (DESIGN.md, "Configuration"): its schema and how it is read.

`edgeway serve` with no file gets `default_config()`: the bundled edge model, and a cloud model
for each provider whose key is in the environment.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from edge_runtime.config import EdgeModelConfig
from policies.yaml_source import load_model
from router.cloud.config import CloudModelConfig

MiB = 1024 * 1024


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerConfig(Strict):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    max_body_bytes: int = Field(4 * MiB, ge=1024)


class EdgeConfig(Strict):
    models: list[EdgeModelConfig] = Field(default_factory=lambda: [EdgeModelConfig()])
    nodes: list[str] = Field(default_factory=list)


class CloudConfig(Strict):
    models: list[CloudModelConfig] = Field(default_factory=list)


class AppDefaults(Strict):
    """Which tier and models an app uses when it asks for `model: auto`."""

    route: Literal["edge", "cloud"] = "edge"
    edge: str | None = None
    cloud: str | None = None


class AppConfig(Strict):
    name: str = Field(min_length=1)
    key: SecretStr
    defaults: AppDefaults = Field(default_factory=AppDefaults)

    @field_validator("key")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 8:
            raise ValueError("an app key must be at least 8 characters")
        return value


class GatewayConfig(Strict):
    server: ServerConfig = Field(default_factory=ServerConfig)
    edge: EdgeConfig = Field(default_factory=EdgeConfig)
    cloud: CloudConfig = Field(default_factory=CloudConfig)
    apps: list[AppConfig] = Field(default_factory=list)
    store: str = "memory://"
    admin_key: SecretStr | None = None

    @field_validator("admin_key")
    @classmethod
    def _empty_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        return value if value is not None and value.get_secret_value() else None

    @model_validator(mode="after")
    def _consistent(self) -> "GatewayConfig":
        names = [m.name for m in self.edge.models] + [m.name for m in self.cloud.models]
        duplicates = sorted({n for n in names if names.count(n) > 1} | ({"auto"} & set(names)))
        if duplicates:
            raise ValueError(f"model names must be unique and not 'auto': {duplicates}")
        apps = [a.name for a in self.apps]
        if len(apps) != len(set(apps)):
            raise ValueError("app names must be unique")
        for app in self.apps:
            for tier, name in (("edge", app.defaults.edge), ("cloud", app.defaults.cloud)):
                tier_models = self.edge.models if tier == "edge" else self.cloud.models
                if name is not None and name not in {m.name for m in tier_models}:
                    raise ValueError(f"app {app.name!r}: defaults.{tier} names an unknown {tier} model {name!r}")
        return self

    def require_auth_or_loopback(self) -> None:
        """Serving without app keys is only safe on this machine."""
        if not self.apps and not is_loopback(self.server.host):
            raise ValueError(f"no apps are configured, so requests are not authenticated; refusing to listen "
                             f"on {self.server.host}. Add apps with keys, or listen on 127.0.0.1.")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Providers whose key in the environment enables a cloud model when no config file is given.
ENV_PROVIDERS = (
    ("OPENAI_API_KEY", "gpt-4o-mini", "openai/gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "claude-3-5-haiku", "anthropic/claude-3-5-haiku-latest"),
)


def default_config(env: dict[str, str] | None = None) -> GatewayConfig:
    env = dict(os.environ) if env is None else env
    cloud = [CloudModelConfig(name=name, provider_model=model, api_key=SecretStr(env[var]))
             for var, name, model in ENV_PROVIDERS if env.get(var)]
    return GatewayConfig(cloud=CloudConfig(models=cloud))


def load_config(path: str | Path | None) -> GatewayConfig:
    return default_config() if path is None else load_model(path, GatewayConfig)
