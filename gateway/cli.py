"""The `edgeway` command: serve, explain."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a command needs them: `edgeway --help` stays fast
    from collections.abc import Callable

    from gateway.auth import App
    from gateway.config import GatewayConfig
    from gateway.running import Gateway

import argparse
import asyncio
import functools
import json
import logging
import socket
import sys
import time

STARTED = time.perf_counter()


def main(argv: list[str] | None = None) -> int:
    args = command().parse_args(argv)
    verbs_run = {
        "serve": _serve,
        "explain": _explain,
        "bench": _bench,
        "policy": _policy_check,
        "edge": _edge_plan,
        "router": _router_fit,
        "shadow": _shadow_replay,
        "audit": _audit,
        "mcp": _mcp_tools,
    }
    return verbs_run[args.verb](args)


CONFIG = "gateway config YAML (default: the bundled edge model, a cloud model for each provider key in the environment)"


def command() -> argparse.ArgumentParser:
    """The `edgeway` command's verbs and options (docs/cli.md is their reference)."""
    parser = argparse.ArgumentParser(prog="edgeway", description="Hybrid edge/cloud LLM routing gateway.")
    parser.add_argument("--version", action="version", version=f"edgeway {_version()}")
    verbs = parser.add_subparsers(dest="verb", required=True)

    serve = verbs.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help=CONFIG)
    serve.add_argument("--host", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default 8080)")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the least a line must matter to be written (default info; a poll's line is debug)",
    )
    serve.add_argument(
        "--log-format",
        default="plain",
        choices=["plain", "json"],
        help="plain lines, or one JSON object a line for log shippers (uvicorn's lines too)",
    )
    serve.add_argument(
        "--edge-only",
        action="store_true",
        help="serve only this machine's edge models: an edge node for other gateways",
    )

    explain = verbs.add_parser(
        "explain", help="print the signals and decision for a prompt, as POST /v1/route does; calls no cloud model"
    )
    explain.add_argument("--config", help=CONFIG)
    explain.add_argument("--app", help="app name (default: the first app, or the open default app)")
    explain.add_argument("--model", default="auto", help="the model the request names (default auto)")
    explain.add_argument("prompt", help="the user message, sent as a one-turn chat")

    edge = verbs.add_parser("edge", help="the local models")
    edge_verbs = edge.add_subparsers(dest="edge_verb", required=True)
    edge_plan = edge_verbs.add_parser("plan", help="print the memory the config's edge models need")
    edge_plan.add_argument("--config", help=CONFIG)

    policy = verbs.add_parser("policy", help="policy files")
    policy_verbs = policy.add_subparsers(dest="policy_verb", required=True)
    check = policy_verbs.add_parser("check", help="validate policy files against a gateway config's models")
    check.add_argument("--config", help="the gateway config whose models the policies may name")
    check.add_argument(
        "files", nargs="+", metavar="FILE", help="policy YAML files (with --config: an app's `app:` must name it)"
    )

    router = verbs.add_parser("router", help="each app's router, fitted to this deployment")
    router_verbs = router.add_subparsers(dest="router_verb", required=True)
    probe = router_verbs.add_parser("probe", help="fit the probe an edge model reads prompts first with")
    probe.add_argument("--config", help=CONFIG)
    probe.add_argument("--edge", required=True, help="the edge model (its name in the config)")
    probe.add_argument("--limit", type=int, help="read at most this many of the probe set's prompts")
    fit = router_verbs.add_parser("fit", help="fit an app's router (or threshold) on its comparisons and feedback")
    fit.add_argument("--config", help=CONFIG)
    fit.add_argument("--app", required=True, help="the app whose router is fitted (its name in the config)")
    fit.add_argument("--target-quality", type=float, default=0.95, help="the share of cloud-quality answers to keep")
    fit.add_argument(
        "--cost-per-1k",
        type=float,
        metavar="USD",
        help="instead: the most quality whose requests at each step cost at most this per 1,000 (route: auto)",
    )
    fit.add_argument(
        "--write", action="store_true", help="install the fitted router if it is ahead (or set a complexity threshold)"
    )
    fit.add_argument("--rollback", action="store_true", help="make the app's previous router current again")
    fit.add_argument(
        "--step",
        metavar="LOWER:UPPER",
        help="with --rollback: the router of this step of the app's ladder (two cloud models), not the app's",
    )
    fit.add_argument("--comparisons", help="a `shadow replay` output file instead of the configured store")

    shadow = verbs.add_parser("shadow", help="shadow comparisons")
    shadow_verbs = shadow.add_subparsers(dest="shadow_verb", required=True)
    replay = shadow_verbs.add_parser("replay", help="compare the tiers on a file of prompts, before there is traffic")
    replay.add_argument("file", help='the prompts: JSONL, one chat request body (or {"prompt": ...}) a line')
    replay.add_argument("--config", help=CONFIG)
    replay.add_argument("--app", required=True, help="the app whose policy and models answer the prompts")
    replay.add_argument("--out", help="where each line's outcome goes (default FILE.shadow.jsonl); resumed if there")

    audit = verbs.add_parser(
        "audit", help="list what left for a cloud provider, masked as it left; --check: against the policies"
    )
    audit.add_argument("--config", required=True, help="the gateway config whose store keeps the records")
    audit.add_argument("--app", help="one app's records (default: every app's)")
    audit.add_argument("--from", dest="since", metavar="WHEN", help="a date, a date-time or Unix seconds")
    audit.add_argument("--to", dest="until", metavar="WHEN", help="before this time")
    audit.add_argument("--format", choices=["jsonl", "csv"], default="jsonl", help="one record a line (default jsonl)")
    audit.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if a record's policy keeps it local (or masks what left readable), on its facts or a rescan",
    )

    mcp = verbs.add_parser("mcp", help="the MCP servers /mcp serves")
    mcp_verbs = mcp.add_subparsers(dest="mcp_verb", required=True)
    mcp_tools = mcp_verbs.add_parser("tools", help="list the tools an app may call through /mcp")
    mcp_tools.add_argument("--config", required=True, help="the gateway config whose mcp: servers are listed")
    mcp_tools.add_argument("--app", required=True, help="the app whose policy (tools:) decides")

    bench = verbs.add_parser("bench", help="run a benchmark and print its figures")
    bench.add_argument(
        "suite",
        choices=[
            "startup",
            "classify",
            "cascade",
            "overhead",
            "load",
            "edge",
            "semantic-cache",
            "routing",
            "event-loop",
            "batch",
            "tracing",
            "head-of-line",
            "tail",
            "speculative",
            "agent-session",
            "first-event",
            "ladder",
            "constrained",
            "mcp",
        ],
        help="which benchmark (docs/benchmarks.md has each one's latest output)",
    )
    bench.add_argument(
        "--repeat", type=int, default=None, help="repetitions, or minutes for load (each suite has its default)"
    )
    bench.add_argument(
        "--contention",
        type=int,
        metavar="N",
        help="edge only: time to first token beside N busy processes, against the quiet machine",
    )
    bench.add_argument(
        "--reading",
        action="store_true",
        help="ladder only: the bundled model reads every test prompt too, for its probe's scores (about 25 minutes)",
    )
    bench.add_argument(
        "--reader",
        metavar="GGUF",
        help="routing: a `role: reader` model (a path, or bundled:NAME) read beside the bundled model, for its cost",
    )
    bench.add_argument(
        "--against",
        metavar="BUILD",
        help="classify: another checkout, or its classifiers/_scan*.so, timed beside this one in one process; "
        "overhead: another checkout's gateway, beside this one's in alternating rounds",
    )

    return parser


def _router_fit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gateway import fit

    if args.router_verb == "probe":
        from gateway import probe

        if args.limit is not None and args.limit < 20:
            print("edgeway: --limit must be at least 20", file=sys.stderr)
            return 2
        return probe.run(_load(args.config, secrets=False), args.edge, args.limit)

    if not 0 < args.target_quality <= 1:
        print("edgeway: --target-quality must be in (0, 1]", file=sys.stderr)
        return 2
    if args.cost_per_1k is not None and not args.cost_per_1k >= 0:
        print("edgeway: --cost-per-1k must be a cost in USD, 0 or more", file=sys.stderr)
        return 2
    config = _load(args.config, secrets=False)
    if args.app not in {a.name for a in config.apps}:
        print(f"edgeway: no app named {args.app!r}; apps: {sorted(a.name for a in config.apps)}", file=sys.stderr)
        return 2
    if args.step is not None and not args.rollback:
        print("edgeway: --step goes with --rollback (a fit fits every step of the app's ladders)", file=sys.stderr)
        return 2
    if args.rollback:
        if args.step is None:
            return fit.rollback(config, args.app)
        lower, colon, upper = args.step.partition(":")
        if not colon or not lower or not upper:
            print("edgeway: --step is LOWER:UPPER, two model names", file=sys.stderr)
            return 2
        return fit.rollback(config, args.app, step=(lower, upper))
    source = Path(args.comparisons) if args.comparisons else None
    target = fit.Target(args.target_quality, args.cost_per_1k)
    return fit.run(config, args.app, target, args.write, source)


def _shadow_replay(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gateway import replay

    logging.basicConfig(level="WARNING")
    gateway = _gateway(_load(args.config))
    app = _pick_app(gateway, args.app)
    out = Path(args.out) if args.out else Path(args.file).with_suffix(".shadow.jsonl")
    return replay.run(gateway, app, Path(args.file), out)


def _edge_plan(args: argparse.Namespace) -> int:
    from edge_runtime.gguf import ModelFileError
    from edge_runtime.plan import check_fits, describe, model_plans

    config = _load(args.config, secrets=False)
    try:
        plans = [made for m in config.edge.models for made in model_plans(m)]
    except ModelFileError as exc:
        print(f"edgeway: {exc}", file=sys.stderr)
        return 2
    print(describe(plans))
    try:
        check_fits(config.edge.models)
    except MemoryError as exc:
        print(f"edgeway: does not fit: {exc}", file=sys.stderr)
        return 1
    return 0


def _audit(args: argparse.Namespace) -> int:
    import json

    from classifiers.signals import Scorer
    from gateway import audit
    from gateway.usage import time_param
    from policies.policy import AppPolicy, load_policy
    from policies.yaml_source import FileError
    from router.documents import open_documents
    from router.egress import EgressLog
    from router.errors import InvalidRequest

    config = _load(args.config)
    if config.store.startswith("memory://"):
        print(
            "edgeway audit: this config's store is memory://, whose records live in the serving process "
            "only; ask it (GET /api/audit with the admin key), or give the gateway a sqlite:/// or redis:// store",
            file=sys.stderr,
        )
        return 2
    try:
        since, until = time_param(args.since, "--from"), time_param(args.until, "--to")
    except InvalidRequest as exc:
        print(f"edgeway audit: {exc.message}", file=sys.stderr)
        return 2
    records = EgressLog(open_documents(config.store, config.seal())).find(args.app, since, until)
    if not args.check:
        if args.format == "csv":
            sys.stdout.write(audit.as_csv(records))
        else:
            for record in records:
                print(json.dumps(record.as_dict(), ensure_ascii=False, sort_keys=True))
        return 0
    models = config.model_names()
    loaded: dict[str, AppPolicy | None] = {}

    def policy_of(app: str) -> AppPolicy | None:
        if app not in loaded:
            path = config.policy_path(app)
            loaded[app] = load_policy(path, models) if path is not None else None
        return loaded[app]

    try:
        breaches = audit.check(records, policy_of, Scorer())
    except FileError as exc:
        print(f"edgeway audit: invalid policy:\n{exc}", file=sys.stderr)
        return 2
    for breach in breaches:
        print(json.dumps(breach.as_dict(), ensure_ascii=False), file=sys.stderr)
    period = f"from {args.since or 'the first record'} to {args.until or 'now'}"
    providers = len({r.provider for r in records})
    if breaches:
        print(f"edgeway audit: {len(breaches)} of {len(records)} records {period} breach their app's policy")
        return 1
    print(
        f"edgeway audit: {len(records)} records {period}, to {providers} provider(s): none a local-only rule "
        f"of {args.config}'s policies covers, none readable under a masking rule"
    )
    return 0


def _mcp_tools(args: argparse.Namespace) -> int:
    from gateway.mcp import listing

    logging.basicConfig(level="WARNING")
    return listing.run(_load(args.config), args.app)


def _policy_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from policies.policy import load_policy
    from policies.yaml_source import FileError

    config = _load(args.config, secrets=False)
    models = config.model_names()
    # the app the config gives each file to: its `app:` must name that app
    owners = {config.resolve(a.policy).resolve(): a.name for a in config.apps if a.policy}
    failed = 0
    unknown_models = False
    for path in args.files:
        try:
            policy = load_policy(path, models, owners.get(Path(path).resolve()))
        except FileError as exc:
            failed += 1
            unknown_models |= any(
                p.message.startswith(("unknown edge model", "unknown cloud model")) for p in exc.problems
            )
            print(exc, file=sys.stderr)
        except OSError as exc:
            failed += 1
            print(f"{path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        else:
            print(f"{path}: ok ({len(policy.spec.rules)} rules)")
    if unknown_models and args.config is None:
        named = ", ".join([*models.edge, *models.cloud]) or "none"
        print(
            f"(model names were checked against the config `edgeway serve` makes with no file: {named}; "
            f"pass --config FILE to check them against your gateway's)",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _bench(args: argparse.Namespace) -> int:
    from gateway.bench import (
        agent_session,
        batch,
        cascade,
        classify,
        constrained,
        edge,
        event_loop,
        first_event,
        head_of_line,
        ladder,
        load,
        machine,
        mcp,
        overhead,
        routing,
        semantic_cache,
        speculative,
        startup,
        tail,
        tracing,
    )

    suites: dict[str, Callable[..., None]] = {
        "startup": startup.run,
        "classify": classify.run,
        "cascade": cascade.run,
        "overhead": overhead.run,
        "load": load.run,
        "edge": edge.run,
        "semantic-cache": semantic_cache.run,
        "routing": routing.run,
        "event-loop": event_loop.run,
        "batch": batch.run,
        "tracing": tracing.run,
        "head-of-line": head_of_line.run,
        "tail": tail.run,
        "speculative": speculative.run,
        "agent-session": agent_session.run,
        "first-event": first_event.run,
        "ladder": ladder.run,
        "constrained": constrained.run,
        "mcp": mcp.run,
    }
    options: dict[str, object] = {} if args.repeat is None else {"repeat": args.repeat}
    run = suites[args.suite]
    if args.suite == "ladder":
        if args.repeat is not None:
            print("edgeway: bench ladder measures fixed folds once: it takes no --repeat", file=sys.stderr)
            return 2
        options = {"reading": args.reading}
    elif args.reading:
        print("edgeway: --reading goes with ladder", file=sys.stderr)
        return 2
    if args.reader is not None:
        if args.suite != "routing":
            print("edgeway: --reader goes with routing", file=sys.stderr)
            return 2
        options["reader"] = args.reader
    if args.contention is not None:
        if args.suite != "edge" or args.contention < 1:
            print("edgeway: --contention N (N >= 1 busy processes) goes with edge", file=sys.stderr)
            return 2
        from gateway.bench import contention

        run = functools.partial(contention.run, args.contention)
    if args.against is not None:
        if args.suite not in ("classify", "overhead"):
            print("edgeway: --against compares builds: it goes with classify or overhead", file=sys.stderr)
            return 2
        from pathlib import Path

        from gateway.bench import builds, gateways

        try:
            if args.suite == "overhead":
                run = functools.partial(gateways.run, gateways.checkout(Path(args.against)))
            else:
                run = functools.partial(builds.run_loaded, builds.load(Path(args.against)))
        except (builds.BuildError, gateways.CheckoutError) as exc:
            print(f"edgeway: {exc}", file=sys.stderr)
            return 2
    print(machine.describe(), flush=True)
    run(**options)
    return 0


def _gateway(config: GatewayConfig) -> Gateway:
    from gateway.running import build_gateway
    from policies.yaml_source import FileError

    try:
        return build_gateway(config)
    except FileError as exc:
        print(f"edgeway: invalid policy:\n{exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _load(path: str | None, secrets: bool = True) -> GatewayConfig:
    from gateway.config import load_config
    from policies.yaml_source import FileError

    try:
        return load_config(path, secrets=secrets)
    except FileError as exc:
        print(f"edgeway: invalid config:\n{exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as exc:
        print(f"edgeway: cannot read config: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("edgeway")
    except PackageNotFoundError:  # (run from a checkout that was never installed)
        return "unknown"


def _serve(args: argparse.Namespace) -> int:
    from gateway import listening, logs

    logs.configure(args.log_level, args.log_format)
    # The port first, before the models, classifiers and tables load: a gateway that cannot listen
    # is refused at once, and never loads its models to say it is ready
    early = listening.address(args.config, args.host, args.port)
    bound = _bind(*early) if early is not None else None
    if early is not None and bound is None:
        return 2
    config = _load(args.config)
    if args.host:
        config.server.host = args.host
    if args.port is not None:
        config.server.port = args.port
    if args.edge_only:
        # A node answers what its callers send it: no cloud, no policies, no nodes of its own.
        config.cloud.models, config.edge.nodes, config.default_policy = [], [], None
        for app in config.apps:
            app.policy = None
    try:
        config.require_auth_or_loopback()
    except ValueError as exc:
        print(f"edgeway: {exc}", file=sys.stderr)
        return 2
    from edge_runtime import EdgeError
    from edge_runtime.drafting import check_drafts
    from edge_runtime.gguf import ModelFileError
    from edge_runtime.plan import check_fits

    try:
        check_fits(config.edge.models)
        check_drafts(config.edge.models)
    except (MemoryError, ModelFileError, EdgeError) as exc:
        print(f"edgeway: refusing to start: {exc}", file=sys.stderr)
        return 2
    # (where only the whole config says where: bound now)
    listening_on = bound if bound is not None else _bind(config.server.host, config.server.port)
    if listening_on is None:
        return 2
    import uvicorn

    from gateway.app import create_app
    from gateway.protocol import GatewayProtocol

    asgi = create_app(_gateway(config), started=STARTED)
    server = uvicorn.Server(
        uvicorn.Config(
            asgi,
            host=config.server.host,
            port=config.server.port,
            loop="uvloop",
            http=GatewayProtocol.configured(config.server.header_timeout_s, config.server.max_connections),
            log_level=args.log_level,
            access_log=False,
            # uvicorn waits any number of seconds; its annotation says int
            timeout_graceful_shutdown=config.server.shutdown_grace_s,  # type: ignore[arg-type]
            timeout_keep_alive=5,
            log_config=None,  # uvicorn's lines go through the one format `logs.configure` set
        )
    )
    server.run(sockets=[listening_on])
    return 0


def _bind(host: str, port: int) -> socket.socket | None:
    """A socket bound to `host:port`; None, said on stderr, where it cannot be."""
    from gateway.listening import listen

    try:
        return listen(host, port)
    except OSError as exc:
        print(f"edgeway: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return None


def _explain(args: argparse.Namespace) -> int:
    from gateway.probes import attach_probes
    from router.errors import EdgewayError
    from router.request import parse_chat_request

    logging.basicConfig(level="WARNING")
    config = _load(args.config)
    gateway = _gateway(config)
    app = _pick_app(gateway, args.app)
    # as the gateway starts: the edge's tokenizer gives exact token counts, its probe reads the
    # prompt where the app's router reads first, and its class sets the text prior's
    gateway.edge.load()
    attach_probes(gateway.edge, gateway.router, config.resolve(config.edge.probes))
    try:
        chat = parse_chat_request({"model": args.model, "messages": [{"role": "user", "content": args.prompt}]})
        # the stages POST /v1/route runs, the edge's reading included: one decision, explained or served
        signals, decision = asyncio.run(gateway.router.explain(chat, app.now()))
        print(json.dumps({"app": app.name, "signals": signals.as_dict(), "decision": decision.as_dict()}, indent=2))
        return 0
    except EdgewayError as exc:
        print(json.dumps(exc.body(), indent=2))
        return 1
    finally:
        gateway.edge.close()
        asyncio.run(gateway.http.close())


def _pick_app(gateway: Gateway, name: str | None) -> App:
    apps = {a.name: a for a in gateway.keys.apps()}
    if name is None:
        return next(iter(apps.values()))
    if name not in apps:
        print(f"edgeway: no app named {name!r}; apps: {sorted(apps)}", file=sys.stderr)
        raise SystemExit(2)
    return apps[name]


if __name__ == "__main__":
    sys.exit(main())
