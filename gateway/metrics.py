"""GET /metrics: Prometheus text exposition.

Collected at scrape time from the state the gateway already keeps (policy files, edge engines), so
nothing on the request path updates a metric twice.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.requests import Request
from starlette.responses import Response


class GatewayCollector:
    def __init__(self, gateway) -> None:
        self.gateway = gateway

    def collect(self):
        policies = self.gateway.policies
        valid = GaugeMetricFamily("edgeway_policy_valid", "1 if the app's policy file loaded on its last change, "
                                  "0 if the last good policy is in force after a failed reload", labels=["app"])
        failed = CounterMetricFamily("edgeway_policy_reload_failures", "Policy file changes that failed to load",
                                     labels=["app"])
        reloads = CounterMetricFamily("edgeway_policy_reloads", "Policy file changes that took effect",
                                      labels=["app"])
        for app, entry in policies.loaded.items():
            valid.add_metric([app], 0.0 if entry.error else 1.0)
            failed.add_metric([app], entry.failed_reloads)
            reloads.add_metric([app], entry.reloads)
        yield from (valid, failed, reloads)
        queue = GaugeMetricFamily("edgeway_edge_queue_depth", "Edge requests waiting", labels=["model"])
        outstanding = GaugeMetricFamily("edgeway_edge_outstanding_tokens", "Prompt and max tokens of edge work "
                                        "queued or running", labels=["model"])
        for state in self.gateway.edge.states():
            queue.add_metric([state.model], state.queued)
            outstanding.add_metric([state.model], state.outstanding_tokens)
        yield from (queue, outstanding)


def registry_for(gateway) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GatewayCollector(gateway))
    return registry


async def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.registry),
                    media_type="text/plain; version=0.0.4; charset=utf-8")
