"""A loaded policy: validated against the gateway's models, and evaluated on a request's facts.

The first rule whose condition holds decides; `Verdict.trace` records every rule looked at, whether
it matched and on which values, which is what `edgeway explain` and `POST /v1/route` show.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policies.conditions import Facts, matches
from policies.schema import AUTO, Cascade, PolicyFile, Rule
from policies.yaml_source import FileError, Problem, parse_with_nodes, problem_at

TIERS = ("edge", "cloud")
NO_RULE = Rule(name="no-rule-matched", route="edge", fallback="cloud")  # when no rule of a file holds


@dataclass(frozen=True)
class Models:
    """The model names of this gateway, by tier: what a policy may name."""

    edge: tuple[str, ...]  # the edge models that answer
    cloud: tuple[str, ...]
    readers: tuple[str, ...] = ()  # the edge models that only read prompts (`role: reader`)

    def tier_of(self, name: str) -> str | None:
        return "edge" if name in self.edge else "cloud" if name in self.cloud else None


@dataclass(frozen=True)
class RuleTrace:
    rule: str
    matched: bool
    observed: dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    rule: str
    targets: tuple[str, ...]  # concrete model names, first to last resort
    cloud_allowed: bool  # may any part of handling this request reach a cloud model
    redact: bool = False
    cascade: Cascade | None = None
    deny: str | None = None
    trace: tuple[RuleTrace, ...] = ()
    reasons: tuple[str, ...] = field(default_factory=tuple)
    auto: bool = False  # the rule's route is `auto`: the app's router orders targets[0] (edge) and [1] (cloud)
    ladder: tuple[str, ...] = ()  # an `auto` rule's ladder, its models cheapest first: the router climbs it
    # the score the step up from each of the ladder's models must reach to climb, by the model's name
    thresholds: tuple[tuple[str, float], ...] = ()


class AppPolicy:
    def __init__(self, spec: PolicyFile, models: Models, source: str = "<policy>") -> None:
        self.spec = spec
        self.models = models
        self.source = source

    def evaluate(self, facts: Facts) -> Verdict:
        trace: list[RuleTrace] = []
        chosen = NO_RULE
        for rule in self.spec.rules:
            observed: dict[str, Any] = {}
            hit = matches(rule.when, facts, observed)
            trace.append(RuleTrace(rule.name, hit, observed))
            if hit:
                chosen = rule
                break
        if chosen.action == "deny":
            return Verdict(
                chosen.name,
                (),
                False,
                deny=chosen.message or f"Denied by policy rule {chosen.name!r}.",
                trace=tuple(trace),
            )
        return self._route(chosen, facts.model, tuple(trace))

    def _route(self, rule: Rule, requested: str, trace: tuple[RuleTrace, ...]) -> Verdict:
        auto = rule.route == AUTO
        ladder = list(self.ladder_of(rule, requested))  # cheapest first: the app's router climbs it
        primary = ladder[0] if ladder else self.resolve("edge" if auto else rule.route, requested)
        targets: list[str] = ladder[:] if ladder else [primary] if primary else []
        if auto and not ladder:  # the edge and the cloud, in the order the app's router will give them
            cloud = self.resolve("cloud", requested)
            targets += [cloud] if cloud else []
        for step in rule.fallbacks:
            name = self.resolve(step, requested)
            if name and name not in targets:
                targets.append(name)
        primary_tier = self.models.tier_of(primary) if primary else "edge"
        cloud_allowed = self.spec.allow_cloud and not (rule.fails_closed and primary_tier == "edge")
        if not cloud_allowed:
            targets = [t for t in targets if self.models.tier_of(t) == "edge"]
        if ladder:
            ladder = [t for t in ladder if t in targets]
            auto = len(ladder) >= 2
        else:
            auto = auto and len(targets) >= 2 and self.models.tier_of(targets[1]) == "cloud"
        reasons = (
            f"rule {rule.name!r}: route {rule.route}" + (f", fallback {rule.fallback}" if rule.fallback else ""),
        )
        return Verdict(
            rule.name,
            tuple(targets),
            cloud_allowed,
            redact=rule.redact,
            cascade=rule.cascade if cloud_allowed else None,
            trace=trace,
            reasons=reasons,
            auto=auto,
            ladder=tuple(ladder) if auto else (),
            thresholds=self.step_thresholds(rule, requested) if auto else (),
        )

    def ladder_of(self, rule: Rule, requested: str) -> tuple[str, ...]:
        """A rule's ladder as the models it names, cheapest first (`edge` and `cloud` resolved as a
        route is), a model named twice kept where it first stands."""
        return tuple(dict.fromkeys(n for step in rule.ladder or () if (n := self.resolve(step, requested))))

    def step_thresholds(self, rule: Rule, requested: str) -> tuple[tuple[str, float], ...]:
        """The thresholds a rule gives its ladder's steps, each by the name of the model the step
        climbs from: narrowing may take models off the ladder, and a step keeps its threshold."""
        found: dict[str, float] = {}
        for step, threshold in zip(rule.ladder or (), rule.thresholds or (), strict=False):
            name = self.resolve(step, requested)
            if name is not None:
                found.setdefault(name, threshold)
        return tuple(found.items())

    def resolve(self, route: str | None, requested: str) -> str | None:
        """`edge`/`cloud` -> the requested model if it is of that tier, else the app's default."""
        if route not in TIERS:
            return route
        names = self.models.edge if route == "edge" else self.models.cloud
        if requested in names:
            return requested
        default = self.spec.defaults.edge if route == "edge" else self.spec.defaults.cloud
        return default or (names[0] if names else None)

    def cascade_target(self, cascade: Cascade, requested: str) -> str | None:
        return self.resolve(cascade.escalate_to, requested)


def load_policy(path: str | Path, models: Models, app: str | None = None) -> AppPolicy:
    text = Path(path).read_text(encoding="utf-8")
    return parse_policy(text, models, filename=str(path), app=app)


def parse_policy(text: str, models: Models, filename: str = "<policy>", app: str | None = None) -> AppPolicy:
    """`app`: the app the gateway's config gives this file to, which its `app:` (where it says
    one) must name; None for a file any app may decide by (the default policy)."""
    spec, root = parse_with_nodes(text, PolicyFile, filename=filename)
    problems = list(_model_problems(spec, models, filename, root))
    problems += _reachability_problems(spec, filename, root)
    if app is not None and spec.app is not None and spec.app != app:
        said = f"this file is for app {spec.app!r}, but the config gives it to app {app!r}"
        problems.append(problem_at(filename, root, ("app",), f"{said}: name {app!r} here, or give it to {spec.app!r}"))
    if problems:
        raise FileError(problems)
    return AppPolicy(spec, models, filename)


def _unknown(tier: str, name: str, names: tuple[str, ...]) -> str:
    if not names:
        return f"unknown {tier} model {name!r}: this gateway has no {tier} model"
    return f"unknown {tier} model {name!r}; expected one of {sorted(names)}"


def _model_problems(spec: PolicyFile, models: Models, filename: str, root: yaml.Node) -> Iterator[Problem]:
    known = set(models.edge) | set(models.cloud)
    expected = f"expected edge, cloud or one of {sorted(known)}"
    for tier in TIERS:
        name = getattr(spec.defaults, tier)
        if name is not None and name not in (models.edge if tier == "edge" else models.cloud):
            yield problem_at(
                filename,
                root,
                ("defaults", tier),
                _unknown(tier, name, models.edge if tier == "edge" else models.cloud),
            )
    reader = spec.router.reader
    if reader is not None and reader not in models.edge + models.readers:
        yield problem_at(
            filename,
            root,
            ("router", "reader"),
            _unknown("edge", reader, models.edge + models.readers) + " (a reader reads with an edge model)",
        )
    if spec.shadow is not None:
        if spec.shadow.judge not in models.cloud:
            yield problem_at(
                filename,
                root,
                ("shadow", "judge"),
                f"the judge must be a cloud model; expected one of {sorted(models.cloud)}",
            )
        if not spec.allow_cloud:
            yield problem_at(
                filename, root, ("shadow",), "this app has allow_cloud: false: nothing of it may reach a judge"
            )
    for i, rule in enumerate(spec.rules):
        steps: list[tuple[str | tuple[str | int, ...], str | None]] = [("route", rule.route)] + [
            (("fallback",) if isinstance(rule.fallback, str) else ("fallback", j), s)
            for j, s in enumerate(rule.fallbacks)
        ]
        if rule.cascade:
            steps.append((("cascade", "escalate_to"), rule.cascade.escalate_to))
        if rule.ladder is not None:  # the ladder's steps, each a model (edge and cloud: a default)
            steps = [(("ladder", j), name) for j, name in enumerate(rule.ladder)] + steps[1:]
            for j, name in enumerate(rule.ladder):
                if name in TIERS and not (models.edge if name == "edge" else models.cloud):
                    yield problem_at(filename, root, ("rules", i, "ladder", j), f"this gateway has no {name} model")
        elif rule.route == AUTO:
            steps = steps[1:]  # `auto` is edge or cloud: both must exist
            for tier, names in (("edge", models.edge), ("cloud", models.cloud)):
                if not names:
                    yield problem_at(
                        filename,
                        root,
                        ("rules", i, "route"),
                        f"route: auto needs a {tier} model; this gateway has none",
                    )
        if rule.route == AUTO and not spec.allow_cloud:
            yield problem_at(
                filename, root, ("rules", i, "route"), "this app has allow_cloud: false, so it cannot route auto"
            )
        for key, name in steps:
            if name is None or name in TIERS or name in known:
                continue
            loc = ("rules", i) + (key if isinstance(key, tuple) else (key,))
            if name in models.readers:
                yield problem_at(filename, root, loc, f"{name!r} is a reader: it reads prompts and never answers")
                continue
            yield problem_at(filename, root, loc, f"unknown model {name!r}; {expected}")
        if not spec.allow_cloud:
            for key, name in steps:
                if name == "cloud" or name in models.cloud:
                    loc = ("rules", i) + (key if isinstance(key, tuple) else (key,))
                    yield problem_at(filename, root, loc, f"this app has allow_cloud: false, so it cannot use {name!r}")
        if rule.cascade and (rule.cascade.escalate_to == "edge" or rule.cascade.escalate_to in models.edge):
            yield problem_at(
                filename,
                root,
                ("rules", i, "cascade", "escalate_to"),
                "a cascade escalates from the edge to a cloud model; expected cloud or a cloud model",
            )


def _reachability_problems(spec: PolicyFile, filename: str, root: Any) -> list[Problem]:
    problems = []
    names = [r.name for r in spec.rules]
    for i, rule in enumerate(spec.rules):
        if names.index(rule.name) != i:
            problems.append(problem_at(filename, root, ("rules", i, "name"), f"duplicate rule name {rule.name!r}"))
    catch_all = next((i for i, r in enumerate(spec.rules) if r.when is None), None)
    if catch_all is not None:
        for i in range(catch_all + 1, len(spec.rules)):
            problems.append(
                problem_at(
                    filename,
                    root,
                    ("rules", i),
                    f"unreachable: rule {spec.rules[catch_all].name!r} above has no 'when' and matches every request",
                )
            )
    return problems
