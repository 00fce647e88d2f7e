"""The gateway config file (DESIGN.md, "Configuration"): its schema and how it is read.

`edgeway serve` with no file gets `default_config()`: the bundled edge model, and a cloud model
for each provider whose key is in the environment.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from edge_runtime.config import EdgeModelConfig, ModelRole
from gateway.listening import MiB, ServerConfig
from gateway.mcp.config import McpConfig
from policies.policy import Models
from policies.schema import known_needs
from policies.yaml_source import FileError, parse_with_nodes, problem_at
from router.cloud.config import CloudModelConfig
from router.cloud.openai_compat import is_direct
from router.edge_group import EdgeNodeConfig
from router.sealing import Seal, key_problem, store_seal


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EdgeConfig(Strict):
    models: list[EdgeModelConfig] = Field(default_factory=lambda: [EdgeModelConfig()])
    nodes: list[EdgeNodeConfig] = Field(default_factory=list)
    # where `edgeway router probe` keeps the probes it fits, by GGUF hash (the bundled model's ships)
    probes: str = "~/.local/share/edgeway/probes"

    @field_validator("models")
    @classmethod
    def _known_capabilities(cls, models: list[EdgeModelConfig]) -> list[EdgeModelConfig]:
        for model in models:
            known_needs(model.capabilities)
        return models

    @property
    def answering(self) -> list[EdgeModelConfig]:
        """The edge models that answer requests (not the `role: reader` ones)."""
        return [m for m in self.models if m.role is ModelRole.ANSWER]

    @property
    def readers(self) -> list[EdgeModelConfig]:
        """The `role: reader` edge models: they read prompts for the apps' routers, never answer."""
        return [m for m in self.models if m.role is ModelRole.READER]


class CloudConfig(Strict):
    models: list[CloudModelConfig] = Field(default_factory=list)


class BatchConfig(Strict):
    """The Batch API (`/v1/files`, `/v1/batches`): how much it takes and how fast it runs."""

    max_file_bytes: int = Field(64 * MiB, ge=1024)  # an uploaded batch input file
    max_lines: int = Field(50_000, ge=1)  # requests in one batch (OpenAI's limit)
    concurrency: int = Field(4, ge=1, le=256)  # lines of one batch in flight at once
    # a batch no replica has renewed for this long is taken over by another (or after a restart)
    lease_s: float = Field(30.0, ge=1)
    # Lines routed to a cloud model whose provider has a batch API (`cloud.models[].batch_api`) wait
    # there, at its batch price, when the batch has at least `provider_min_window_s` left
    provider_batches: bool = True
    provider_min_window_s: float = Field(3600.0, ge=0)
    provider_poll_s: float = Field(30.0, ge=0.05)  # how often a provider's batch is asked how it stands
    # while a batch's lines are still being sent, its parked lines go to their provider once this
    # many wait, or once the oldest has waited this long (all of them once every line is sent)
    provider_lines: int = Field(1000, ge=1)
    provider_collect_s: float = Field(300.0, ge=0)


class AppConfig(Strict):
    name: str = Field(min_length=1)
    key: SecretStr
    policy: str | None = None  # a policy file, relative to this config file; else default_policy
    log_prompts: bool = False  # keep each request's last user message (private data masked) in the ledger

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
    default_policy: str | None = None  # for apps without a policy file; else the plain rules
    store: str = "memory://"
    # seals what the store keeps of requests and answers (router/sealing.py); else EDGEWAY_STORE_KEY
    store_key: SecretStr | None = None
    batches: BatchConfig = Field(default_factory=BatchConfig)
    admin_key: SecretStr | None = None
    mcp: McpConfig = Field(default_factory=McpConfig)  # the MCP servers `/mcp` serves (gateway/mcp/)
    _base_dir: Path = PrivateAttr(default_factory=lambda: Path("."))

    def resolve(self, path: str) -> Path:
        """A path from this config, relative to the file it was read from."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self._base_dir / candidate

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str) -> str:
        if not value.startswith(("memory://", "sqlite:///", "redis://", "rediss://", "unix://")):
            raise ValueError("expected memory://, sqlite:///path.db or redis://host:port/db")
        if value.startswith("sqlite:///"):
            _sqlite_folder(value.removeprefix("sqlite:///"))
        return value

    @field_validator("admin_key", "store_key")
    @classmethod
    def _empty_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        return value if value is not None and value.get_secret_value() else None

    def model_names(self) -> Models:
        """The names of this gateway's models, by tier: what its policies may name."""
        answering = tuple(m.name for m in self.edge.answering)
        readers = tuple(m.name for m in self.edge.readers)
        return Models(answering, tuple(m.name for m in self.cloud.models), readers)

    def policy_path(self, app: str) -> Path | None:
        """The policy file an app decides by: its own, else the default policy; None: the plain rules."""
        own = next((a.policy for a in self.apps if a.name == app and a.policy), None)
        chosen = own or self.default_policy
        return self.resolve(chosen) if chosen else None

    def seal(self) -> Seal:
        """The store's seal (`router.sealing.store_seal`): from `store_key`, the environment, or
        a key file beside a SQLite store."""
        return store_seal(self.store, self.store_key.get_secret_value() if self.store_key else None)

    @model_validator(mode="after")
    def _consistent(self) -> GatewayConfig:
        names = [m.name for m in self.edge.models] + [m.name for m in self.cloud.models]
        duplicates = sorted({n for n in names if names.count(n) > 1} | ({"auto"} & set(names)))
        if duplicates:
            raise ValueError(f"model names must be unique and not 'auto': {duplicates}")
        apps = [a.name for a in self.apps]
        if len(apps) != len(set(apps)):
            raise ValueError("app names must be unique")
        for model in self.cloud.models:
            if model.batch_api and not is_direct(model) and model.provider != "anthropic":
                raise ValueError(
                    f"cloud model {model.name!r}: batch_api is OpenAI's batch API (/files, /batches) beside an "
                    f"OpenAI-compatible endpoint, or Anthropic's Message Batches; edgeway does not use "
                    f"{model.provider!r}'s"
                )
        return self

    def require_auth_or_loopback(self) -> None:
        """Serving without app keys is only safe on this machine."""
        if not self.apps and not is_loopback(self.server.host):
            raise ValueError(
                f"no apps are configured, so requests are not authenticated; refusing to listen "
                f"on {self.server.host}. Add apps with keys, or listen on 127.0.0.1."
            )


def _sqlite_folder(path: str) -> None:
    """A SQLite store's file must be in a folder that exists (the file is made on first use). Its
    URL names a path relative to the working directory with three slashes (`sqlite:///ledger.db`)
    and an absolute one with four (`sqlite:////var/lib/edgeway/ledger.db`), as SQLAlchemy's do."""
    folder = Path(path).expanduser().parent
    if folder.is_dir():
        return
    hint = ""
    if not Path(path).is_absolute() and Path("/", path).parent.is_dir():
        hint = f"; for the absolute path /{path}, write four slashes: sqlite:////{path}"
    raise ValueError(f"the SQLite file's folder {str(folder)!r} does not exist (relative to {os.getcwd()}){hint}")


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


DEFAULT_POLICY_FILE = Path(__file__).parent / "defaults" / "policy.yaml"


def default_config(env: dict[str, str] | None = None) -> GatewayConfig:
    """What `edgeway serve` runs with no config: the bundled edge model, a cloud model for each
    provider key in the environment, and where there is one, the default policy (private data on
    the edge, the rest routed by the edge's reading: `gateway/defaults/policy.yaml`)."""
    env = dict(os.environ) if env is None else env
    cloud = [
        CloudModelConfig(name=name, provider_model=model, api_key=SecretStr(env[var]))
        for var, name, model in ENV_PROVIDERS
        if env.get(var)
    ]
    policy = str(DEFAULT_POLICY_FILE) if cloud else None
    return GatewayConfig(cloud=CloudConfig(models=cloud), default_policy=policy)


class _AnyEnvironment(dict[str, str]):
    """Every variable 'set': for reading a config's structure (model names) without its secrets."""

    def __contains__(self, name: object) -> bool:
        return True

    def __missing__(self, name: str) -> str:
        return os.environ.get(name) or f"<unset {name}>"


def load_config(path: str | Path | None, *, secrets: bool = True) -> GatewayConfig:
    """`secrets=False` reads the config without requiring its ${VARIABLES} or a store key (for
    policy checks). Raises FileError, each problem at its file, line and column."""
    if path is None:
        return default_config()
    text = Path(path).read_text(encoding="utf-8")
    config, root = parse_with_nodes(text, GatewayConfig, filename=str(path), env=None if secrets else _AnyEnvironment())
    if secrets:
        _check_store_key(config, str(path), root)
    config._base_dir = Path(path).resolve().parent
    return config


def _check_store_key(config: GatewayConfig, filename: str, root: yaml.Node) -> None:
    """A store that cannot be sealed (`router.sealing.key_problem`) is the config's error, said
    where the key is (or where the store is, for a key that is missing)."""
    configured = config.store_key.get_secret_value() if config.store_key else None
    problem = key_problem(config.store, configured)
    if problem is not None:
        at = problem_at(filename, root, ("store_key",) if configured else ("store",), problem)
        raise FileError([dataclasses.replace(at, key="store_key")])
