"""configs/deploy/ as a team would take it: the images' Dockerfiles clean under hadolint, the
Kubernetes base and its GPU overlay rendered by `kubectl kustomize` and accepted by the Kubernetes
schemas (`kubernetes-validate --strict`), the pieces the issue of deployment asks for present in
what renders, and every config the images, the manifests and compose run with valid for
`edgeway serve`.

Building and running the images needs a container engine and a cluster, which CI lacks: those are
checked by hand (docs/deploy.md). kubectl is used where it is installed (1.32 with kustomize 5.5
on the development machines); the manifests need kubectl 1.30 or later."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gateway.config import load_config
from policies.yaml_source import FileError

DEPLOY = Path(__file__).resolve().parent.parent / "configs" / "deploy"
BIN = Path(sys.executable).parent
KUBERNETES = "1.32.0"
SECRETS = {
    "EDGEWAY_APP_KEY": "app-key-0123456789",
    "EDGEWAY_NODE_KEY": "node-key-0123456789",
    "EDGEWAY_STORE": "redis://edgeway-redis:6379/0",
}


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "Dockerfile.cuda"])
def test_the_dockerfiles_are_clean_under_hadolint(dockerfile):
    linted = subprocess.run([str(BIN / "hadolint"), str(DEPLOY / dockerfile)], capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    text = (DEPLOY / dockerfile).read_text()
    final = text[text.rindex("\nFROM ") :]  # the stage the image is
    assert "USER 10001" in final and "HEALTHCHECK" in final and "/healthz" in final
    assert "build-essential" not in final and "-devel" not in final.split("\n", 2)[1]  # no compiler
    assert ("GGML_NATIVE=OFF" in text) and (("GGML_CUDA=on" in text) == dockerfile.endswith("cuda"))


def rendered(overlay: str) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed here")
    made = subprocess.run([kubectl, "kustomize", str(DEPLOY / overlay)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return [doc for doc in yaml.safe_load_all(made.stdout) if doc]


@pytest.mark.parametrize("overlay", ["k8s", "k8s/gpu"])
def test_the_manifests_render_and_the_kubernetes_schemas_accept_them(overlay, tmp_path):
    documents = rendered(overlay)
    manifest = tmp_path / "all.yaml"
    manifest.write_text(yaml.safe_dump_all(documents))
    checked = subprocess.run(
        [str(BIN / "kubernetes-validate"), "--strict", "--quiet", "-k", KUBERNETES, str(manifest)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents}
    for wanted in [
        ("Deployment", "edgeway"),
        ("Deployment", "edgeway-edge"),
        ("Service", "edgeway"),
        ("HorizontalPodAutoscaler", "edgeway"),
        ("PodDisruptionBudget", "edgeway"),
        ("StatefulSet", "edgeway-redis"),
        ("ConfigMap", "edgeway-policies"),
        ("Secret", "edgeway-secrets"),
    ]:
        assert wanted in kinds


def test_the_gateway_deployment_drains_probes_and_is_scraped():
    documents = rendered("k8s")
    gateway = next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "edgeway")
    pod = gateway["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    config_map = next(d for d in documents if d["kind"] == "ConfigMap" and "edgeway.yaml" in d.get("data", {}))
    grace = yaml.safe_load(config_map["data"]["edgeway.yaml"])["server"]["shutdown_grace_s"]
    assert gateway["spec"]["replicas"] >= 2
    assert pod["spec"]["terminationGracePeriodSeconds"] >= grace  # the gateway drains before it is killed
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert pod["spec"]["securityContext"]["runAsNonRoot"]


def test_the_gpu_overlay_puts_the_edge_nodes_on_gpus():
    documents = rendered("k8s/gpu")
    edge = next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "edgeway-edge")
    (container,) = edge["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1" and container["image"].endswith("-cuda")
    assert "--edge-only" in container["args"]
    node_config = next(d for d in documents if d["kind"] == "ConfigMap" and "edge-node.yaml" in d.get("data", {}))
    assert yaml.safe_load(node_config["data"]["edge-node.yaml"])["edge"]["models"][0]["n_gpu_layers"] == -1


@pytest.mark.parametrize(
    "config", ["edgeway.yaml", "k8s/base/edgeway.yaml", "k8s/base/edge-node.yaml", "k8s/gpu/edge-node.yaml"]
)
def test_every_shipped_config_is_valid_for_edgeway_serve(config, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("EDGEWAY_STORE_KEY", raising=False)
    try:
        loaded = load_config(DEPLOY / config)
    except FileError as refused:  # replicas share what they seal: the key is the Secret's, none is refused
        assert "store_key: a Redis store needs a key" in str(refused) and "EDGEWAY_STORE_KEY" in str(refused)
        monkeypatch.setenv("EDGEWAY_STORE_KEY", "store-key-0123456789")
        loaded = load_config(DEPLOY / config)
    assert loaded.store.startswith("redis://") == ("EDGEWAY_STORE_KEY" in os.environ)
    assert loaded.server.host == "0.0.0.0" and loaded.apps  # off loopback, only with app keys
    loaded.seal()


def test_the_store_key_is_a_secret_of_every_gateway():
    secret = next(d for d in rendered("k8s") if d["kind"] == "Secret")
    assert "EDGEWAY_STORE_KEY" in secret["stringData"]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert "EDGEWAY_STORE_KEY" in compose["services"]["gateway-1"]["environment"]


def test_compose_runs_two_gateways_behind_a_balancer_with_redis_and_an_edge_node():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"gateway-1", "gateway-2", "edgeway-edge", "edgeway-redis", "lb"} <= set(services)
    for service in services.values():
        for volume in service.get("volumes", []):
            if volume.startswith("./"):
                assert (DEPLOY / volume.split(":")[0]).exists(), volume
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert "server gateway-1:8080" in nginx and "server gateway-2:8080" in nginx
    # one policy, shipped twice (kustomize reads files only below its folder): kept alike
    assert (DEPLOY / "policies" / "default.yaml").read_text() == (DEPLOY / "k8s/base/default.yaml").read_text()
