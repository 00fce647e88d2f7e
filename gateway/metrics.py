"""What GET /metrics exposes (gateway/health.py serves it as Prometheus text).

Request metrics are counted from the ledger's usage rows (`RequestMetrics.observe`, once per row);
policy and edge state is read at scrape time from what the gateway already keeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from edge_runtime import EdgePool
from policies.reload import PolicyFiles
from router.ledger import UsageRow
from router.routing import Router


class GatewayCollector:
    """The policies', edge engines' and circuit breakers' state, read when scraped."""

    def __init__(self, policies: PolicyFiles, edge: EdgePool, router: Router) -> None:
        self._policies, self._edge, self._router = policies, edge, router

    def collect(self) -> Iterator[Metric]:
        policies = self._policies
        valid = GaugeMetricFamily(
            "edgeway_policy_valid",
            "1 if the app's policy file loaded on its last change, "
            "0 if the last good policy is in force after a failed reload",
            labels=["app"],
        )
        failed = CounterMetricFamily(
            "edgeway_policy_reload_failures", "Policy file changes that failed to load", labels=["app"]
        )
        reloads = CounterMetricFamily("edgeway_policy_reloads", "Policy file changes that took effect", labels=["app"])
        for app, entry in policies.loaded.items():
            valid.add_metric([app], 0.0 if entry.error else 1.0)
            failed.add_metric([app], entry.failed_reloads)
            reloads.add_metric([app], entry.reloads)
        yield from (valid, failed, reloads)
        queue = GaugeMetricFamily("edgeway_edge_queue_depth", "Edge requests waiting", labels=["model"])
        outstanding = GaugeMetricFamily(
            "edgeway_edge_outstanding_tokens", "Prompt and max tokens of edge work queued or running", labels=["model"]
        )
        drafted = CounterMetricFamily(
            "edgeway_edge_draft_tokens", "Tokens guessed by speculative decoding", labels=["model"]
        )
        kept = CounterMetricFamily(
            "edgeway_edge_draft_tokens_kept", "Guessed tokens the model agreed with", labels=["model"]
        )
        for state in self._edge.states():
            queue.add_metric([state.model], state.queued)
            outstanding.add_metric([state.model], state.outstanding_tokens)
            drafted.add_metric([state.model], state.drafted)
            kept.add_metric([state.model], state.drafts_kept)
        yield from (queue, outstanding, drafted, kept)
        circuit = GaugeMetricFamily(
            "edgeway_upstream_circuit_state",
            "Circuit breaker per cloud model: 0 closed, 1 half-open, 2 open",
            labels=["model"],
        )
        for name, breaker in self._router.breakers.items():
            circuit.add_metric([name], {"closed": 0, "half-open": 1, "open": 2}[breaker.state])
        yield circuit


_LABELS = ("app", "route", "model", "status")
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_MCP_LABELS = ("app", "server", "tool", "outcome")
_MCP_BUCKETS = (0.001, 0.0025, *_BUCKETS)  # a local server answers in a millisecond or two


class RequestMetrics:
    """Counters and histograms of requests, tokens, cost and savings, fed by usage rows; with the
    gateway's state, in `registry`."""

    def __init__(self, policies: PolicyFiles, edge: EdgePool, router: Router) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=False)
        registry.register(GatewayCollector(policies, edge, router))
        # the process's resident memory, CPU seconds and open file descriptors (`process_*`, read
        # from /proc when scraped; none where there is no /proc)
        ProcessCollector(registry=registry)
        self.requests = Counter(
            "edgeway_requests",
            "Requests of every API, answered or refused, by their ledger rows",
            _LABELS,
            registry=registry,
        )
        self.tokens = Counter(
            "edgeway_tokens",
            "Tokens by kind: prompt and completion; of the prompt, cache_read and cache_write by a provider's cache",
            _LABELS + ("kind",),
            registry=registry,
        )
        self.cost = Counter("edgeway_cost_usd", "What the requests cost", _LABELS, registry=registry)
        self.counterfactual = Counter(
            "edgeway_counterfactual_usd",
            "What the same tokens would have cost on the app's default cloud model (a ladder's top)",
            _LABELS,
            registry=registry,
        )
        self.savings = Counter("edgeway_savings_usd", "All-cloud counterfactual minus cost", _LABELS, registry=registry)
        self.cache_savings = Counter(
            "edgeway_prompt_cache_saved_usd",
            "What providers' prompt caches saved against the same tokens uncached (a request whose writes cost more "
            "than its reads saved counts 0)",
            _LABELS,
            registry=registry,
        )
        self.decisions = Counter(
            "edgeway_rule_decisions",
            "Requests by the policy rule that decided them (a denial's too) and where they went",
            ("app", "rule", "route"),
            registry=registry,
        )
        self.response_cache = Counter(
            "edgeway_response_cache",
            "Requests of apps that cache answers, by outcome: hit or miss",
            ("app", "outcome"),
            registry=registry,
        )
        self.ttft = Histogram(
            "edgeway_time_to_first_token_seconds",
            "Time to first token",
            ("app", "route"),
            buckets=_BUCKETS,
            registry=registry,
        )
        self.latency = Histogram(
            "edgeway_request_duration_seconds",
            "Total request time",
            ("app", "route"),
            buckets=_BUCKETS,
            registry=registry,
        )

        self.anomalies = Counter(
            "edgeway_usage_anomalies",
            "Usage a provider reported that no answer to the request could have: charged at the request's bound",
            ("app", "model"),
            registry=registry,
        )
        self.mcp_calls = Counter(
            "edgeway_mcp_calls",
            "MCP tool calls through /mcp, by app, server, tool (<server>.<tool>) and outcome",
            _MCP_LABELS,
            registry=registry,
        )
        self.mcp_latency = Histogram(
            "edgeway_mcp_call_duration_seconds",
            "MCP tool call time through /mcp, the gateway's reading of it included",
            _MCP_LABELS,
            buckets=_MCP_BUCKETS,
            registry=registry,
        )
        self._series: dict[tuple[str, str, str, int], tuple[Any, ...]] = {}

    def _for(self, app: str, route: str, model: str, status: int) -> tuple[Any, ...]:
        """The labeled series of one (app, route, model, status), looked up once (labels() locks)."""
        key = (app, route, model, status)
        series = self._series.get(key)
        if series is None:
            labels = (app, route, model, str(status))
            series = self._series[key] = (
                self.requests.labels(*labels),
                self.tokens.labels(*labels, "prompt"),
                self.tokens.labels(*labels, "completion"),
                self.tokens.labels(*labels, "cache_read"),
                self.tokens.labels(*labels, "cache_write"),
                self.cost.labels(*labels),
                self.counterfactual.labels(*labels),
                self.savings.labels(*labels),
                self.cache_savings.labels(*labels),
                self.ttft.labels(app, route),
                self.latency.labels(app, route),
            )
        return series

    def observe(self, row: UsageRow, anomalous: bool = False) -> None:
        if anomalous:
            self.anomalies.labels(row.app, row.model).inc()
        requests, prompt, completion, read, written, cost, counterfactual, savings, cache_saved, ttft, latency = (
            self._for(row.app, row.route, row.model, row.status)
        )
        requests.inc()
        prompt.inc(row.prompt_tokens)
        completion.inc(row.completion_tokens)
        read.inc(row.cache_read_tokens)
        written.inc(row.cache_write_tokens)
        cost.inc(row.cost_usd)
        if row.counterfactual_usd is not None:  # (an app with no cloud has none, and saves nothing against it)
            counterfactual.inc(row.counterfactual_usd)
            savings.inc(max(0.0, row.counterfactual_usd - row.cost_usd))
        if row.prompt_cache_saved_usd > 0:  # (a counter only grows: a cache that cost more counts 0)
            cache_saved.inc(row.prompt_cache_saved_usd)
        if row.rule:
            self.decisions.labels(row.app, row.rule, row.route).inc()
        if row.cache is not None:
            self.response_cache.labels(row.app, row.cache).inc()
        if row.ttft_ms is not None:
            ttft.observe(row.ttft_ms / 1e3)
        latency.observe(row.latency_ms / 1e3)

    def observe_tool_call(self, app: str, server: str, tool: str, outcome: str, seconds: float) -> None:
        """One MCP tool call (gateway/mcp/calls.py), counted once its ledger row is written."""
        self.mcp_calls.labels(app, server, tool, outcome).inc()
        self.mcp_latency.labels(app, server, tool, outcome).observe(seconds)
