"""The policy file: what an app's YAML may say, checked key by key.

```yaml
app: support-bot
defaults: {edge: smollm2, cloud: gpt-4o-mini}
budget: {daily_usd: 25, monthly_usd: 400, on_exhausted: edge}
rules:
  - name: pii-stays-local
    when: {pii: [EMAIL, PHONE, PERSON]}
    route: edge
    fallback: none            # fail closed
  - name: default
    route: edge
    fallback: cloud
```
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from classifiers.privacy import ENTITY_TYPES
from policies.needs import Need

Number = float  # ints are accepted and compared as numbers


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def known_needs(value: list[str] | None) -> list[str] | None:
    """`value`, if every name in it is one of NEEDS (a pydantic validator's check)."""
    unknown = [n for n in value or () if n not in set(NEEDS)]
    if unknown:
        raise ValueError(f"unknown need(s) {unknown}; expected any of {[str(n) for n in NEEDS]}")
    return value


NEEDS = tuple(Need)  # what `when: {needs: [...]}` and a model's `capabilities` may name


class NumberTest(Strict):
    gt: Number | None = None
    gte: Number | None = None
    lt: Number | None = None
    lte: Number | None = None
    eq: Number | None = None
    in_: list[Number] | None = Field(None, alias="in")

    @model_validator(mode="after")
    def _some(self) -> NumberTest:
        if all(v is None for v in (self.gt, self.gte, self.lt, self.lte, self.eq, self.in_)):
            raise ValueError("expected at least one of gt, gte, lt, lte, eq, in")
        return self


class TextTest(Strict):
    eq: str | None = None
    in_: list[str] | None = Field(None, alias="in")

    @model_validator(mode="after")
    def _some(self) -> TextTest:
        if self.eq is None and self.in_ is None:
            raise ValueError("expected eq or in")
        return self


class When(Strict):
    """Every key given must hold (they are and-ed); `any`, `all` and `not` combine conditions."""

    complexity: NumberTest | None = None
    prompt_tokens: NumberTest | None = None
    max_tokens: NumberTest | None = None
    latency_budget_ms: NumberTest | None = None  # the x-edgeway-latency-budget-ms header
    edge_queue_wait_ms: NumberTest | None = None  # live: estimated wait before the edge starts
    budget_left_usd: NumberTest | None = None  # live: what is left of today's budget
    pii: list[str] | Literal["any"] | None = None  # any of these entity types was found
    model: TextTest | None = None  # the model the request named ("auto" included)
    language: TextTest | None = None
    tags: list[str] | None = None  # any of these in x-edgeway-tags
    needs: list[str] | None = Field(None, min_length=1)  # the request asks for any of these (tools, media, ...)
    all: list[When] | None = None
    any: list[When] | None = None
    not_: When | None = Field(None, alias="not")

    @field_validator("pii")
    @classmethod
    def _known_types(cls, value: list[str] | str | None) -> list[str] | str | None:
        if isinstance(value, list):
            unknown = [t for t in value if t not in ENTITY_TYPES]
            if unknown:
                raise ValueError(f"unknown entity type(s) {unknown}; expected any of {list(ENTITY_TYPES)}")
            if not value:
                raise ValueError("expected at least one entity type (or 'any')")
        return value

    @field_validator("needs")
    @classmethod
    def _known_needs(cls, value: list[str] | None) -> list[str] | None:
        return known_needs(value)

    @model_validator(mode="after")
    def _not_empty(self) -> When:
        if not self.model_fields_set:
            raise ValueError("an empty condition: leave 'when' out to match every request")
        return self


class Cascade(Strict):
    escalate_to: str = "cloud"  # cloud, or a cloud model's name
    when_confidence_below: float = Field(ge=0, le=1)


AUTO = "auto"  # a rule's route that the app's router decides: edge or cloud, by its score


class Rule(Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    when: When | None = None  # no condition: matches every request (a catch-all)
    route: str | None = None  # edge, cloud, auto (the app's router decides), or a model name
    fallback: str | list[str] | None = None  # tried in order if the route fails; 'none' fails closed
    action: Literal["deny"] | None = None
    message: str | None = None
    redact: bool = False
    cascade: Cascade | None = None
    # With `route: auto`: the models to climb, cheapest first (names, or edge and cloud for the
    # app's defaults), and the score each step must reach to climb past its lower model: one per
    # step, each the policy router's threshold where left out.
    ladder: list[str] | None = Field(None, min_length=2)
    thresholds: list[float] | None = None

    @model_validator(mode="after")
    def _a_ladder_to_climb(self) -> Rule:
        if self.ladder is not None:
            if self.route != AUTO:
                raise ValueError("a ladder is climbed by the app's router: it needs 'route: auto'")
            if len(set(self.ladder)) != len(self.ladder):
                raise ValueError(f"a model is on the ladder twice: {self.ladder}")
        if self.thresholds is not None:
            if self.ladder is None:
                raise ValueError("'thresholds' are the ladder's steps: add 'ladder'")
            if len(self.thresholds) != len(self.ladder) - 1:
                raise ValueError(
                    f"expected one threshold per step: {len(self.ladder) - 1} for a ladder of {len(self.ladder)}"
                )
            if not all(0 <= t <= 1 for t in self.thresholds):
                raise ValueError(f"thresholds are probabilities, from 0 to 1: {self.thresholds}")
        return self

    @model_validator(mode="after")
    def _one_outcome(self) -> Rule:
        if self.action == "deny":
            extra = [k for k in ("route", "fallback", "cascade") if getattr(self, k) is not None] + (
                ["redact"] if self.redact else []
            )
            if extra:
                raise ValueError(f"a deny rule takes only 'message'; remove {extra}")
        elif self.route is None:
            raise ValueError("expected 'route' (edge, cloud, auto or a model name) or 'action: deny'")
        elif self.route == AUTO and self.cascade is not None:
            raise ValueError("a rule with 'route: auto' is decided by the app's router; remove 'cascade'")
        elif self.route == AUTO and self.fallback == "none":
            raise ValueError("'route: auto' may send a request to the cloud; to keep it local, use 'route: edge'")
        elif self.message is not None:
            raise ValueError("'message' belongs to 'action: deny' rules")
        return self

    @property
    def fallbacks(self) -> list[str]:
        if self.fallback is None or self.fallback == "none":
            return []
        return [self.fallback] if isinstance(self.fallback, str) else list(self.fallback)

    @property
    def fails_closed(self) -> bool:
        return self.fallback == "none"


class Defaults(Strict):
    edge: str | None = None
    cloud: str | None = None


class Budget(Strict):
    daily_usd: float | None = Field(None, gt=0)
    monthly_usd: float | None = Field(None, gt=0)
    on_exhausted: Literal["edge", "deny"] = "edge"
    # While the shared store (Redis) cannot be reached: refuse what would spend, send it to the
    # edge, or spend from this replica's share of what was left (default: as on_exhausted says)
    store_outage: Literal["deny", "edge", "local"] | None = None

    @model_validator(mode="after")
    def _some(self) -> Budget:
        if self.daily_usd is None and self.monthly_usd is None:
            raise ValueError("expected daily_usd or monthly_usd")
        return self


class RateLimits(Strict):
    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)  # prompt tokens + max_tokens, at admission
    max_messages: int | None = Field(None, ge=1)  # more messages in one request: 400
    max_tokens: int | None = Field(None, ge=1)  # a larger max_tokens: 400; none asked: this one


DEFAULT_MIN_SIMILARITY = 0.9  # chosen by `edgeway bench semantic-cache`; see docs/policies.md


class Cache(Strict):
    ttl_s: float = Field(3600, gt=0)
    sampled: bool = False  # also cache answers sampled at temperature > 0 (or at the default)
    semantic: bool = False  # also serve a request that asks the same in other words (router/semantic.py)
    min_similarity: float = Field(DEFAULT_MIN_SIMILARITY, ge=0, le=1)  # cosine of the edge embeddings


class Session(Strict):
    """How a conversation's later turns are routed: on the model that served it (router/sessions.py)."""

    affinity: bool = True  # `off`: each turn is routed alone
    ttl_s: float = Field(3600, gt=0)  # a session idle longer starts afresh


class Shadow(Strict):
    """Compare the tiers on a sample of this app's cloud-eligible traffic (router/shadow.py)."""

    sample: float = Field(ge=0, le=1)  # the share of eligible requests compared
    judge: str  # the cloud model that judges the two answers
    daily_usd: float = Field(gt=0)  # what the shadow answers and the judge may cost a day, apart from budget


class EdgeReading(StrEnum):
    """Which requests the edge model reads (prefills and scores) before an `auto` rule decides."""

    ALWAYS = "always"  # every one
    BAND = "band"  # those whose text score falls inside `band`: the ones the text alone cannot tell
    NEVER = "never"  # none: the text score decides alone


DEFAULT_THRESHOLD = 0.5  # the router's score is P(the cloud's answer is better): above it, the cloud
DEFAULT_BAND = (0.35, 0.65)
# The edge reads at most a prompt's last this many tokens before an `auto` rule decides: what a
# request the cloud answers pays on the edge first (docs/routing.md has the measurement).
DEFAULT_READING_TOKENS = 128


class RouterSpec(Strict):
    """How the app's router decides a rule with `route: auto`: a score from the request's text (and,
    where it reads, the edge model's reading), compared with `threshold` (edgeway router fit)."""

    edge_reading: EdgeReading = EdgeReading.ALWAYS
    band: tuple[float, float] = DEFAULT_BAND
    threshold: float = Field(DEFAULT_THRESHOLD, ge=0, le=1)
    # the last tokens of the prompt the edge reads (a longer prompt's answer on the edge reads it
    # whole again); null: the whole prompt, answered from the same prefill
    reading_tokens: int | None = Field(DEFAULT_READING_TOKENS, ge=16)
    # the edge model whose reading scores the rules' edge-to-cloud steps: a `role: reader` model, or
    # an answering one; null: the edge model the step would answer on (read and answered in one prefill)
    reader: str | None = None

    @field_validator("band")
    @classmethod
    def _ordered(cls, value: tuple[float, float]) -> tuple[float, float]:
        low, high = value
        if not 0 <= low <= high <= 1:
            raise ValueError(f"expected [low, high] with 0 <= low <= high <= 1, found {list(value)}")
        return value


class Tools(Strict):
    """Which MCP tools the app may call through `/mcp` (gateway/mcp/), each named `<server>.<tool>`:
    those an `allow` glob matches and no `deny` glob does. Without this key, none (deny by default)."""

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    calls_per_minute: dict[str, int] = Field(default_factory=dict)  # by server: this app's calls to it

    @field_validator("allow", "deny")
    @classmethod
    def _named_with_server(cls, globs: list[str]) -> list[str]:
        for glob in globs:
            if "." not in glob and glob != "*":
                raise ValueError(
                    f"a tool is named <server>.<tool>: {glob!r} matches none; expected e.g. {glob + '.*'!r}"
                )
        return globs

    @field_validator("calls_per_minute")
    @classmethod
    def _positive(cls, limits: dict[str, int]) -> dict[str, int]:
        low = sorted(server for server, n in limits.items() if n < 1)
        if low:
            raise ValueError(f"calls_per_minute must be at least 1; found {low}")
        return limits


class PolicyFile(Strict):
    app: str | None = None
    defaults: Defaults = Field(default_factory=Defaults)
    allow_cloud: bool = True  # false: nothing of this app ever leaves the machine
    budget: Budget | None = None
    limits: RateLimits | None = None
    cache: Cache | None = None  # serve an answer already given again, for free
    shadow: Shadow | None = None  # measure the edge against the cloud on this app's own traffic
    router: RouterSpec = Field(default_factory=RouterSpec)  # what decides the rules with `route: auto`
    session: Session = Field(default_factory=Session)  # a conversation's turns stay on their model
    tools: Tools | None = None  # the MCP tools it may call (none without this key)
    rules: list[Rule] = Field(min_length=1)
