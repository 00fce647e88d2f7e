"""`edgeway router fit`: an app's router, fitted to its own traffic.

For an app whose policy routes `auto`: reads its shadow comparisons and feedback, fits a router on
the earlier ones (`router.fitting`), compares it with the router in use on the later ones (APGR,
paired, with an interval), and with `--write` installs it (versioned, in the configured store; a
running gateway takes it within seconds) only if it is ahead, with the threshold the target puts
it at: the target quality at the least cost, or with `--cost-per-1k` the most quality at that
cost per 1,000 requests (each model priced at its mean cost of a request in the app's ledger).
Each step's cost-quality curve is printed. `--rollback` makes the previous version current again.

For an app whose policy sends hard requests to the cloud on a complexity threshold: finds the
largest threshold whose predicted quality meets the target (router/quality.py), prints it with the
edge share and the savings it predicts, and their 95% intervals; with `--write`, sets it in the
policy file in place (policies/edit.py), which a running gateway reloads. With too few comparisons
either says how many more it needs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import find_probe, gguf_digest
from gateway.config import GatewayConfig
from gateway.probes import DIGESTS
from policies.edit import NoThreshold, find_threshold, write_threshold
from policies.policy import AppPolicy, load_policy
from policies.schema import AUTO
from policies.yaml_source import FileError
from router import fitting, quality
from router.app_router import AppRouter, Combination
from router.comparisons import Comparison, Comparisons
from router.documents import Documents, open_documents
from router.installed import InstalledRouters
from router.ladder import step_key
from router.ledger import APPS_OWN, RowKind, open_store
from router.routings import Example, examples, step_examples

CURVE = (0.8, 0.9, 0.95, 0.99, 1.0)  # the qualities `edgeway router fit` prints the threshold and share of


@dataclass(frozen=True)
class Target:
    """Where the fit puts each step's threshold: at `quality` (the share of the upper model's
    quality kept) for the least cost, or with `usd_per_1k`, at the most quality whose requests at
    the step cost at most that per 1,000."""

    quality: float = 0.95
    usd_per_1k: float | None = None

    def __str__(self) -> str:
        return f"${self.usd_per_1k:g} per 1,000" if self.usd_per_1k is not None else f"{self.quality:.0%}"


def costs_per_request(config: GatewayConfig, app: str) -> dict[str, float]:
    """Each model's mean cost of one answered request of the app, from its ledger: the app's own
    requests and the shadow answers (a cache hit, which costs nothing, and the judge left out)."""
    store = open_store(config.store)
    try:
        rows = store.rows(app)
    finally:
        store.close()
    spent: dict[str, list[float]] = {}
    for r in rows:
        if r.status == 200 and r.cache != "hit" and r.kind != RowKind.JUDGE and r.model:
            spent.setdefault(r.model, []).append(r.cost_usd)
    return {model: sum(found) / len(found) for model, found in spent.items()}


def comparisons_of(config: GatewayConfig, app: str, from_file: Path | None) -> list[Comparison]:
    if from_file is not None:
        rows = [json.loads(line) for line in from_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [Comparison(**row["comparison"]) for row in rows if row.get("comparison") and row["app"] == app]
    store = Comparisons(open_documents(config.store, config.seal()))
    try:
        return store.comparisons(app)
    finally:
        store.close()


def routes_auto(policy: AppPolicy) -> bool:
    return any(rule.route == AUTO for rule in policy.spec.rules)


def routes_edge_to_cloud(policy: AppPolicy) -> bool:
    """Whether an `auto` rule of the app steps from an edge model to a cloud one (the app's router)."""
    for rule in policy.spec.rules:
        if rule.route != AUTO:
            continue
        if rule.ladder is None:
            return True
        tiers = [policy.models.tier_of(n) for n in policy.ladder_of(rule, AUTO)]
        if any(pair == ("edge", "cloud") for pair in zip(tiers, tiers[1:], strict=False)):
            return True
    return False


def probe_combination(config: GatewayConfig, reader: str | None = None) -> tuple[Combination | None, str | None]:
    """The cold-start reading combination of the edge model named `reader` (else the first answering
    one), and its GGUF's digest: None without a probe."""
    model = next((m for m in config.edge.models if m.name == reader), None)
    model = model or next(iter(config.edge.answering), None)
    if model is None:
        return None, None
    probes = config.resolve(config.edge.probes)
    try:
        digest = gguf_digest(resolve_gguf(model.gguf), probes / DIGESTS)
    except Exception:
        return None, None
    probe = find_probe(digest, [probes])
    return (None, digest) if probe is None else (Combination(*probe.combine), digest)


def rollback(config: GatewayConfig, app: str, out: TextIO | None = None, step: tuple[str, str] | None = None) -> int:
    """Make the previous router of `app` (or of its ladder's `step`, lower and upper) current."""
    out = out or sys.stdout
    key, name = (app, app) if step is None else (step_key(app, *step), f"{app}: step {step[0]} -> {step[1]}")
    installed = InstalledRouters(open_documents(config.store, config.seal()))
    try:
        previous = installed.rollback(key)
    except LookupError as exc:
        print(f"{name}: {exc}", file=out)
        return 1
    finally:
        installed.documents.close()
    said = f"version {previous.version}" if previous is not None else "the cold-start router"
    print(f"{name}: rolled back; {said} is current (a running gateway takes it within seconds)", file=out)
    return 0


def fit_router(
    config: GatewayConfig,
    app: str,
    policy: AppPolicy,
    target: Target,
    write: bool,
    from_file: Path | None = None,
    out: TextIO | None = None,
) -> int:
    """Fit, validate against the router in use, and (with `write`) install it if ahead; else the
    router in use, with the threshold the target puts it at. Then each step of the app's ladders
    between two cloud models, the same way on its own comparisons (`fit_steps`)."""
    out = out or sys.stdout
    documents: Documents = open_documents(config.store, config.seal())
    costs = costs_per_request(config, app)
    try:
        installed = InstalledRouters(documents)
        if routes_edge_to_cloud(policy):
            found = examples(comparisons_of(config, app, from_file), documents, app)
            print(
                f"{app}: {len(found)} labelled requests ({len(fitting.ranked(found))} comparisons of both tiers)",
                file=out,
            )
            read, gguf = probe_combination(config, policy.spec.router.reader or policy.resolve("edge", AUTO))
            current = installed.current(app, read, gguf)
            pair = policy.resolve("edge", AUTO) or "the edge", policy.resolve("cloud", AUTO) or "cloud"  # its defaults
            done = _fit_one(app, found, current, target, write, installed, {"gguf": gguf}, out, costs, None, pair)
        else:
            done = None
        steps = [
            _fit_one(
                f"{app}: step {lower} -> {upper}",
                found,
                installed.current(step_key(app, lower, upper), None),
                target,
                write,
                installed,
                {},
                out,
                costs,
                step_key(app, lower, upper),
                (lower, upper),
            )
            for lower, upper, found in fit_steps(policy, app, documents, from_file)
        ]
        if done is None and not steps:
            print(f"{app}: its ladders have no step to fit", file=out)
        return 0 if done == 0 or 0 in steps else 1
    finally:
        documents.close()


def _fit_one(
    name: str,
    found: list[Example],
    current: AppRouter,
    target: Target,
    write: bool,
    installed: InstalledRouters,
    fitted: dict[str, object],
    out: TextIO,
    costs: dict[str, float],
    key: str | None = None,
    pair: tuple[str, str] = ("the edge", "cloud"),
) -> int:
    """One router fitted on `found` (oldest first), validated against `current` on the later
    ones, and installed under `key` (the app's own name where None) if ahead. `pair` names the
    lower and the upper model of the step; `costs`, each model's cost of a request."""
    lower, upper = pair
    ranked = fitting.ranked(found)
    if len(found) < fitting.MIN_EXAMPLES or len(ranked) < fitting.MIN_EXAMPLES // 2:
        more = max(fitting.MIN_EXAMPLES - len(found), fitting.MIN_EXAMPLES // 2 - len(ranked))
        print(f"{name}: not enough yet: {more} more are needed to fit and validate a router", file=out)
        return 1
    early, later = fitting.split(found)
    candidate = fitting.fit(early, current, asks=fitting.weighs_asks(len(found), current))
    check = fitting.compare(candidate, current, later)
    in_use = f"version {current.version}" if current.version else "the cold-start router"
    print(
        f"{name}: fitted on the earlier {len(early)}, judged on the later {len(later)} ({check.examples} ranked): "
        f"APGR {check.fitted:.3f} against {check.current:.3f} for {in_use}, "
        f"difference {check.difference:+.3f} [90%: {check.low:+.3f}, {check.high:+.3f}]",
        file=out,
    )
    if not check.ahead:
        short = (
            f"it falls short of {in_use} by {abs(check.difference):.3f}"
            if check.difference <= 0
            else f"its gain over {in_use} is inside the noise"
        )
        print(f"the fit is not taken: {short}; {in_use} stays, with a threshold fitted to the target", file=out)
        candidate = current
    prices = (costs[lower], costs[upper]) if lower in costs and upper in costs else None
    points = fitting.curve(candidate, found)
    chosen = _threshold(points, target, prices, out)
    print(
        f"threshold {chosen.value:g} keeps {chosen.quality:.1%} of {upper}-quality answers (target {target}) "
        f"with {chosen.edge_share:.1%} of these requests on {lower}{_priced(chosen, prices)}",
        file=out,
    )
    curve = [fitting.keeping(points, q) for q in CURVE]
    print(
        f"the curve (quality kept: threshold, share on {lower}{', cost per 1,000 requests' if prices else ''}): "
        + ", ".join(
            f"{q:.0%}: {t.value:g}, {t.edge_share:.1%}{_priced(t, prices, short=True)}"
            for q, t in zip(CURVE, curve, strict=True)
        ),
        file=out,
    )
    if prices is None:
        unpriced = " and ".join(m for m in (lower, upper) if m not in costs)
        print(f"no cost per 1,000 requests: the ledger has no answered request of {unpriced} yet", file=out)
    if not write:
        print("not installed (--write installs it)", file=out)
        return 0
    fitted = {
        "examples": len(found),
        "target_quality": target.quality,
        "target_usd_per_1k": target.usd_per_1k,
        "apgr": check.fitted,
        "against": check.current,
        "interval": [check.low, check.high],
        **fitted,
    }
    made = AppRouter(candidate.text, candidate.read, 0, chosen.value, {**fitted, "refitted": check.ahead})
    version = installed.install(key or name, made).version
    print(f"installed as version {version} (a running gateway takes it within seconds)", file=out)
    return 0


def _threshold(
    points: list[fitting.Threshold], target: Target, prices: tuple[float, float] | None, out: TextIO
) -> fitting.Threshold:
    if target.usd_per_1k is None:
        return fitting.keeping(points, target.quality)
    if prices is None:
        print(f"the cost target needs both models priced: the threshold keeps {target.quality:.0%} instead", file=out)
        return fitting.keeping(points, target.quality)
    chosen = fitting.costing(points, target.usd_per_1k, *prices)
    if chosen.usd_per_1k(*prices) > target.usd_per_1k:
        print(f"nothing on this step costs as little as {target}: every request stays on the lower model", file=out)
    return chosen


def _priced(threshold: fitting.Threshold, prices: tuple[float, float] | None, short: bool = False) -> str:
    if prices is None:
        return ""
    usd = threshold.usd_per_1k(*prices)
    return f", ${usd:.4g}" if short else f", ${usd:.4g} per 1,000 requests"


def _app_policy(config: GatewayConfig, app: str) -> AppPolicy | None:
    spec = next((a for a in config.apps if a.name == app), None)
    if spec is None or spec.policy is None:
        return None
    models = config.model_names()
    try:
        return load_policy(config.resolve(spec.policy), models)
    except (FileError, OSError):
        return None


def ladder_steps(policy: AppPolicy) -> list[tuple[str, str]]:
    """The steps of the policy's ladders between two models of one tier, each once, in order."""
    found: list[tuple[str, str]] = []
    for rule in policy.spec.rules:
        names = policy.ladder_of(rule, AUTO)
        for lower, upper in zip(names, names[1:], strict=False):
            if policy.models.tier_of(lower) == policy.models.tier_of(upper) and (lower, upper) not in found:
                found.append((lower, upper))
    return found


def fit_steps(
    policy: AppPolicy, app: str, documents: Documents, from_file: Path | None
) -> list[tuple[str, str, list[Example]]]:
    """Each step of the app's ladders between two cloud models, with its judged comparisons from
    `documents` (a `shadow replay` file holds comparisons of the edge and the cloud only)."""
    steps = ladder_steps(policy)
    if not steps:
        return []
    compared = [] if from_file is not None else Comparisons(documents).steps(app)
    return [(lower, upper, step_examples(compared, app, lower, upper)) for lower, upper in steps]


def _daily_cloud_usd(config: GatewayConfig, app: str) -> tuple[float, float]:
    """The app's all-cloud cost a day and a request, from its ledger (0, 0 without history)."""
    store = open_store(config.store)
    try:
        rows = [r for r in store.rows(app) if r.kind in APPS_OWN and r.status == 200]
    finally:
        store.close()
    if not rows:
        return 0.0, 0.0
    days = max(1.0, (rows[-1].ts - rows[0].ts) / 86400)
    total = sum(r.counterfactual_usd or 0.0 for r in rows)
    return total / days, total / len(rows)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def run(
    config: GatewayConfig,
    app: str,
    target: Target,
    write: bool,
    from_file: Path | None = None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    policy = _app_policy(config, app)
    if policy is not None and routes_auto(policy):
        return fit_router(config, app, policy, target, write, from_file, out)
    if target.usd_per_1k is not None:
        print(f"edgeway: --cost-per-1k fits `route: auto` rules; {app}'s policy has none", file=sys.stderr)
        return 2
    comparisons = comparisons_of(config, app, from_file)
    found = quality.fit(comparisons, target.quality)
    print(f"{app}: {len(comparisons)} comparisons, {found.judged} judged; target quality {target}", file=out)
    if found.more_needed:
        print(
            f"not enough yet: {found.more_needed} more judged comparisons are needed ({found.needed} in all, for "
            f"a quality interval of +-{quality.MARGIN:.0%} at the target)",
            file=out,
        )
        return 1
    assert found.threshold is not None  # a threshold of 0 (all cloud) always meets a target <= 1
    share, kept = found.edge_share, found.quality
    daily, per_request = _daily_cloud_usd(config, app)
    print(
        f"route to the edge below complexity {found.threshold:g}: edge share {_pct(share.value)} "
        f"[{_pct(share.low)}, {_pct(share.high)}], "
        f"quality kept {_pct(kept.value)} [{_pct(kept.low)}, {_pct(kept.high)}]",
        file=out,
    )
    if daily:
        low, high = (share.low or 0.0) * daily, (share.high or 0.0) * daily
        print(
            f"predicted savings: ${(share.value or 0.0) * daily:.2f} a day [${low:.2f}, ${high:.2f}] "
            f"(all-cloud ${daily:.2f} a day, ${per_request:.5f} a request)",
            file=out,
        )
    else:
        print("predicted savings: no answered requests in the ledger yet to price them against", file=out)
    return _write(config, app, found.threshold, write, out)


def _write(config: GatewayConfig, app: str, threshold: float, write: bool, out: TextIO) -> int:
    spec = next((a for a in config.apps if a.name == app), None)
    if spec is None or spec.policy is None:
        print(f"{app} has no policy file to write the threshold to", file=out)
        return 0 if not write else 2
    path = Path(config.resolve(spec.policy))
    models = config.model_names()
    try:
        current = find_threshold(path.read_text(encoding="utf-8"), models)
        print(f"{path}: rule {current.rule!r} has complexity {current.test} {current.value:g}", file=out)
        if write:
            write_threshold(path, models, threshold)
            print(f"{path}: now {current.test} {threshold:g} (a running gateway reloads it)", file=out)
    except (NoThreshold, FileError) as exc:
        print(f"{path}: {exc}", file=out)
        return 2 if write else 0
    return 0
