"""The run command's install, as a new user gets it: `pip install .` into a new virtual environment,
no extras, and `edgeway serve` from a folder outside the checkout (so that nothing is imported
from the source tree). One request to every endpoint family, files and batches included, then a
look at the log: every dependency a route needs is a dependency of the package, and every
request has its access line and no traceback.

It installs the package for real (llama.cpp's wheel comes from pip's cache after the suite's own
install), so it takes a minute or two.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from gateway.bench.ports import free_port
from tests.conftest import ROOT
from tests.fake_upstream import FakeUpstream

KEY, ADMIN = "base-key-0123456789", "base-admin-0123456789"
ASK = [{"role": "user", "content": "Say hi."}]


class Installed:
    def __init__(self, venv: Path, url: str, log: Path) -> None:
        self.venv, self.url, self.log = venv, url, log

    def post(self, path: str, body: object, **kwargs: object) -> httpx.Response:
        return httpx.post(self.url + path, json=body, headers={"authorization": f"Bearer {KEY}"}, timeout=120, **kwargs)

    def get(self, path: str, key: str = KEY) -> httpx.Response:
        return httpx.get(self.url + path, headers={"authorization": f"Bearer {key}"}, timeout=60)


@pytest.fixture(scope="module")
def installed(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("base-install")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # The pip a new venv comes with (23.2) spends most of the install matching 120,000 files on the
    # index against the platform's tags; a current one does it in a fraction (55 s -> 28 s here)
    upgrade = [str(venv / "bin" / "pip"), "install", "-q", "pip==26.3"]
    subprocess.run(upgrade, env=env, capture_output=True, check=True, timeout=600)
    pip = subprocess.run(
        # --no-compile: byte-compiling every installed module (litellm alone is thousands) took a
        # third of the install; what the gateway imports is compiled as it is imported
        [str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(ROOT)],
        env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    port, config = free_port(), tmp / "edgeway.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "edge": {"models": [{"name": "smollm2", "gguf": "bundled:smollm2-135m", "n_ctx": 2048}]},
                "cloud": {
                    "models": [
                        {
                            "name": "gpt-fake",
                            "provider_model": "openai/gpt-4o-mini",
                            "api_key": "sk-fake",
                            "api_base": upstream.url + "/v1",
                        }  # fmt: skip
                    ]
                },
                "apps": [{"name": "base", "key": KEY}],
                "admin_key": ADMIN,
                "store": f"sqlite:///{tmp / 'ledger.db'}",
            }
        )
    )
    log = tmp / "serve.log"
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(venv / "bin" / "edgeway"), "serve", "--config", str(config), "--port", str(port)],
            cwd=tmp,  # not the checkout: the installed package, and nothing else, is imported
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield Installed(venv, url, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_installed_package_is_what_is_imported(installed):
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import gateway, classifiers; print(gateway.__file__)"],
        cwd=installed.venv,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(installed.venv) in where.stdout and str(ROOT) not in where.stdout


def test_every_endpoint_family_answers_on_the_base_install(installed, upstream):
    ok = {
        "chat": installed.post("/v1/chat/completions", {"model": "smollm2", "messages": ASK, "max_tokens": 4}),
        "cloud chat": installed.post("/v1/chat/completions", {"model": "gpt-fake", "messages": ASK}),
        "completions": installed.post("/v1/completions", {"model": "smollm2", "prompt": "Hi", "max_tokens": 4}),
        "responses": installed.post("/v1/responses", {"model": "smollm2", "input": "Hi", "max_output_tokens": 4}),
        "messages": installed.post("/v1/messages", {"model": "smollm2", "messages": ASK, "max_tokens": 4}),
        "count": installed.post("/v1/messages/count_tokens", {"model": "smollm2", "messages": ASK}),
        "embeddings": installed.post("/v1/embeddings", {"model": "smollm2", "input": "Hi"}),
        "route": installed.post("/v1/route", {"model": "auto", "messages": ASK}),
        "models": installed.get("/v1/models"),
        "model": installed.get("/v1/models/smollm2"),
        "health": installed.get("/healthz"),
        "ready": installed.get("/readyz"),
        "metrics": installed.get("/metrics"),
        "openapi": installed.get("/openapi.json"),
        "usage": installed.get("/api/usage", ADMIN),
        "quality": installed.get("/api/quality", ADMIN),
        "dashboard": httpx.get(installed.url + f"/dashboard?key={ADMIN}"),
    }
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "smollm2", "messages": ASK, "max_tokens": 2}}  # fmt: skip
    upload = httpx.post(
        installed.url + "/v1/files",
        headers={"authorization": f"Bearer {KEY}"},
        files={"file": ("requests.jsonl", json.dumps(line).encode() + b"\n")},
        data={"purpose": "batch"},
        timeout=60,
    )
    ok["upload"] = upload
    file_id = upload.json()["id"]
    ok["files"], ok["file"] = installed.get("/v1/files"), installed.get(f"/v1/files/{file_id}")
    ok["content"] = installed.get(f"/v1/files/{file_id}/content")
    batch = installed.post("/v1/batches", {"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                                           "completion_window": "24h"})  # fmt: skip
    ok["batch"] = batch
    ok["batches"], ok["one batch"] = installed.get("/v1/batches"), installed.get(f"/v1/batches/{batch.json()['id']}")
    for name, answer in ok.items():
        assert answer.status_code == 200, (name, answer.status_code, answer.text[:500])
    log = installed.log.read_text()
    assert "Traceback" not in log and "python-multipart" not in log, log[-3000:]
    request_id = ok["chat"].headers["x-edgeway-request-id"]
    assert f"request {request_id} POST /v1/chat/completions 200" in log
    assert "app=base route=edge model=smollm2" in log


def test_the_benchmarks_data_is_installed_with_them(installed):
    found = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "from gateway.bench.semantic_cache import PAIRS; print(PAIRS.is_file(), PAIRS)",
        ],  # fmt: skip
        cwd=installed.venv,
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.startswith("True") and str(installed.venv) in found.stdout


def test_a_benchmark_made_from_the_repositorys_data_says_where_to_run_it(installed):
    """`bench classify` and `bench routing` make conversations from research/data, which is not
    installed: from an install they say so, not a FileNotFoundError."""
    ran = subprocess.run(
        [str(installed.venv / "bin" / "edgeway"), "bench", "classify", "--repeat", "1"],
        cwd=installed.venv,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr[-2000:]
    assert "run it from a checkout of edgeway" in ran.stderr


def test_the_readmes_first_example_runs_after_the_quickstarts_install(installed):
    """The README's first example, as a reader pastes it, after the Quickstart's two commands: the
    extra its install names (`pip install -e ".[clients]"`) puts its SDKs beside the gateway."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", readme, re.S)
    quickstart = readme[readme.index("## Quickstart") :]
    command = re.search(r"```bash\n(.*?)```", quickstart, re.S)
    assert example is not None and command is not None
    assert "python3 -m venv .venv && . .venv/bin/activate" in command.group(1)  # PEP 668: no system pip
    extras = re.search(r'pip install -e "\.\[([\w,]+)\]" && edgeway serve', command.group(1))
    assert extras is not None, command.group(1)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = [requirement for extra in extras.group(1).split(",") for requirement in declared[extra]]
    pip = [str(installed.venv / "bin" / "pip"), "install", "-q", "--no-compile", *wanted]
    added = subprocess.run(pip, capture_output=True, text=True, timeout=600)
    assert added.returncode == 0, added.stderr[-3000:]
    # the reader's gateway is on 127.0.0.1:8080 without keys; this one is on another port, with one
    code = example.group(1).replace("http://127.0.0.1:8080", installed.url).replace("your-app-key", KEY)
    ran = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", code + "\nprint(answer.choices[0].message.content)"],
        cwd=installed.venv, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip()
    log = installed.log.read_text()
    assert "POST /v1/chat/completions 200" in log and "POST /v1/messages 200" in log
