"""A picture of the whole dashboard, taken of a real gateway after a morning's worth of traffic, in
headless Chromium, written where it is told (the docs' is `docs/images/dashboard.png`):

    pip install -e . playwright   # and Debian's chromium: apt-get install chromium
    python -m research.dashboard_picture docs/images/dashboard.png

Two apps: `support` routes `auto` between the bundled edge model and a (fake) OpenAI cloud model,
keeps private requests on the edge and denies what is tagged legal; `batch` sends everything to the cloud,
whose provider's prompt cache reads part of each prompt. About fifty requests, a few refused, some
answered from the response cache. The cloud is the suite's fake provider on loopback, so the
picture needs no key and no network.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import openai

from tests.fake_upstream import FakeUpstream, UpstreamServer
from tests.gateways import GatewayProcess, gateway_config

ADMIN = "admin-key-for-the-picture"
KEYS = {"support": "support-key-0123456789", "batch": "batch-key-0123456789"}
SUPPORT = """
app: support
defaults: {edge: smollm2, cloud: gpt-4o-mini}
cache: {ttl_s: 3600}
rules:
  - name: private-stays-local
    when: {pii: any}
    route: edge
    fallback: none
  - name: no-legal-advice
    when: {tags: [legal]}
    action: deny
    message: "Legal questions go to the legal team."
  - name: decide
    route: auto
"""
BATCH = """
app: batch
defaults: {edge: smollm2, cloud: gpt-4o-mini}
rules:
  - name: cloud
    route: cloud
"""
ASKS = [
    "Say hi.", "What is 2 + 2?", "Translate 'good morning' into French.", "Name three primary colours.",
    "Prove that there are infinitely many primes, step by step.",
    "Write a detailed migration plan from a monolith to services, with risks and rollback steps.",
    "Summarise the causes of the First World War in three paragraphs.",
    "My card 4111 1111 1111 1111 was charged twice: what do I do?",
    "Email jane.roe@example.com the refund status.",
]  # fmt: skip


def take(picture: Path) -> Path:
    random.seed(7)
    fake = FakeUpstream()
    with UpstreamServer(fake) as server, tempfile.TemporaryDirectory() as folder:
        fake.url = server.url
        tmp = Path(folder)
        (tmp / "support.yaml").write_text(SUPPORT)
        (tmp / "batch.yaml").write_text(BATCH)
        config = gateway_config(server.url, tmp, admin_key=ADMIN, store=f"sqlite:///{tmp / 'ledger.db'}")
        config["cloud"]["models"] = [
            {
                "name": "gpt-4o-mini",
                "provider_model": "openai/gpt-4o-mini",
                "api_key": "sk-fake",
                "api_base": server.url + "/v1",
                "price": {"input_per_1m": 0.15, "output_per_1m": 0.6, "cache_read_per_1m": 0.075},
            }
        ]
        config["apps"] = [{"name": app, "key": key, "policy": str(tmp / f"{app}.yaml")} for app, key in KEYS.items()]
        process = GatewayProcess(config, tmp)
        try:
            process.wait_ready()
            _traffic(process.url, fake)
            _shoot(process.url, picture)
        finally:
            process.stop()
    return picture


def _traffic(url: str, fake: FakeUpstream) -> None:
    clients = {app: openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0) for app, key in KEYS.items()}
    fake.cache_read_tokens = 12  # the provider's prompt cache reads part of each prompt
    for _ in range(40):
        app = random.choice(("support", "support", "support", "batch"))
        ask = random.choice(ASKS)
        clients[app].chat.completions.create(
            model="auto", messages=[{"role": "user", "content": ask}], max_tokens=16, temperature=0
        )
    legal = {"x-edgeway-tags": "legal"}
    refused: list[tuple[Any, dict[str, str]]] = [([], {}), ([{"role": "user", "content": "Can I sue them?"}], legal)]
    for bad, headers in refused:
        try:  # a client's mistake, and a request a rule denies
            clients["support"].chat.completions.create(model="auto", messages=bad, max_tokens=8, extra_headers=headers)
        except openai.APIStatusError:
            pass


def _shoot(url: str, picture: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"{url}/dashboard?key={ADMIN}")
            page.wait_for_selector("body[data-ready=true]", timeout=15000)
            picture.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(picture), full_page=True)
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m research.dashboard_picture",
        description="A picture of the whole dashboard, of a gateway on loopback after a morning's traffic.",
    )
    parser.add_argument("picture", type=Path, help="where the PNG goes (docs/images/dashboard.png: the docs' own)")
    print(f"wrote {take(parser.parse_args(argv).picture)}")


if __name__ == "__main__":
    main()
