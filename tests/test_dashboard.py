"""The cost dashboard in a real headless Chromium, driven by Playwright, on a seeded gateway."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import openai
import pytest

from tests.conftest import ROOT, client_for
from tests.test_ledger import ADMIN, ledger_gateway  # noqa: F401  (the seeded gateway fixture)
from tests.test_shadow import chat, quality, shadow_gateway  # noqa: F401  (a gateway that compares)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "tests" / "artifacts"


def _browser():
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (apt-get install chromium); CI must run the dashboard test")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    return sync_playwright()


def test_the_dashboard_draws_its_charts_from_a_seeded_run_without_console_errors(ledger_gateway, upstream):  # noqa: F811
    alpha, beta = client_for(ledger_gateway, "alpha"), client_for(ledger_gateway, "beta")
    upstream.cache_read_tokens = 3  # the provider's prompt cache read 3 of each prompt's tokens
    for _ in range(3):
        alpha.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hello"}], max_tokens=2)
        beta.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hello"}])
    with pytest.raises(openai.BadRequestError):  # a client's mistake: refused before any rule or model
        alpha.chat.completions.create(model="auto", messages=[], max_tokens=2)
    with _browser() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("requestfailed", lambda r: problems.append(f"{r.url} failed"))
            page.goto(f"{ledger_gateway.url}/dashboard?key={ADMIN}")
            page.wait_for_selector("body[data-ready=true]", timeout=15000)
            assert page.locator("#c-spend rect.bar").count() >= 2  # spend and all-cloud bars
            assert page.locator("#c-split rect.bar").count() >= 2  # edge and cloud shares
            assert page.locator("#c-latency rect.bar").count() >= 2
            assert page.locator("#c-rules rect.bar").count() >= 2
            assert page.locator("#t-recent tbody tr").count() >= 6
            # per model (a ladder's tiers): the edge model and the cloud one each have a row
            models = page.locator("#t-models tbody tr td:first-child").all_inner_texts()
            assert {"smollm2", "gpt-fake"} <= set(models), models
            assert page.locator("#k-savings").inner_text().endswith(")")  # "NN% ($X)"
            assert page.locator("#k-cache").inner_text().endswith(")")  # "N (N%, $X)"
            assert page.locator("#k-batch").inner_text().endswith(" h)")  # "N (X.XX h)": batch lines, edge hours
            assert page.locator("#k-prompt-cache").inner_text().endswith(")")  # "N% ($X)": the provider's cache
            # money written for its size: a small spend is no "$0.0000", and nothing is in exponent form
            spent = page.locator("#k-cost").inner_text()
            assert re.fullmatch(r"\$(0|\d+\.\d\d|0\.0*[1-9]\d{0,2})", spent) and "e-" not in page.inner_text("main")
            # axes with their units; refusals as their own category, never "(none)"
            assert page.locator("#c-spend text.axis-top").text_content().startswith("$")
            assert page.locator("#c-latency text.axis-top").text_content().endswith(" ms")
            assert "refused before a rule" in page.locator("#c-rules").text_content()
            assert "(none)" not in page.inner_text("main")
            # rule labels on rows of their own: none overlaps another
            boxes = [t.bounding_box() for t in page.locator("#c-rules text.y-label").all()]
            assert len(boxes) >= 2 and all(
                a["y"] + a["height"] <= b["y"] for a, b in zip(boxes, boxes[1:], strict=False)
            )
            assert page.locator("#quality").is_hidden()  # no comparisons here: no empty panel on top
            assert re.fullmatch(r"[1-9]\d* \(\d+%\)", page.locator("#k-errors").inner_text())
            cached = page.locator("#t-models tbody tr", has_text="gpt-fake").locator("td").nth(6).inner_text()
            assert int(cached.split(" / ")[0]) >= 9, cached  # read / written: 3 tokens of each of beta's 3
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
            assert problems == []
            # everything the page loaded came from the gateway itself: no CDN
            assert all(url.startswith(ledger_gateway.url) for url in _loaded(page))
            # at 700 px wide the page holds: nothing runs off to the side
            page.set_viewport_size({"width": 700, "height": 1100})
            page.wait_for_timeout(300)
            assert page.evaluate("document.documentElement.scrollWidth") <= 700
            page.screenshot(path=str(ARTIFACTS / "dashboard-700.png"), full_page=True)
        finally:
            browser.close()


def test_without_its_key_the_dashboard_asks_for_it_and_opens_with_it(ledger_gateway):  # noqa: F811
    with _browser() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            asked = page.goto(f"{ledger_gateway.url}/dashboard")
            assert asked.status == 401 and "needs the admin key" in page.inner_text("body")
            page.fill("input[name=key]", "not-the-key")
            page.click("button[type=submit]")
            assert "That is not the admin key" in page.inner_text("body")
            page.fill("input[name=key]", ADMIN)
            page.click("button[type=submit]")
            page.wait_for_selector("body[data-ready=true]", timeout=15000)
            assert page.locator("#k-cost").inner_text().startswith("$")
        finally:
            browser.close()


def _loaded(page) -> list[str]:
    return page.evaluate("performance.getEntriesByType('resource').map(e => e.name)")


def test_the_quality_panel_shows_the_shadow_comparisons(shadow_gateway, upstream):  # noqa: F811
    for question, tags in (
        ("Name a colour. [judge: cloud]", ""),
        ("Name a city.", ""),
        ("Name a fruit. [judge: edge]", "hard"),
    ):
        chat(shadow_gateway, "shadowed", question, tags=tags)
    assert quality(shadow_gateway, 3)["comparisons"] >= 3
    with _browser() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"{shadow_gateway.url}/dashboard?key=admin-key-0123456789")
            page.wait_for_selector("body[data-ready=true]", timeout=15000)
            assert page.locator("#c-quality rect.bar").count() >= 2
            assert page.locator("#q-count").inner_text().startswith("3 (")
            assert "[" in page.locator("#q-edge").inner_text() and "[" in page.locator("#q-retained").inner_text()
            ARTIFACTS.mkdir(exist_ok=True)
            page.locator("#quality").screenshot(path=str(ARTIFACTS / "quality-panel.png"))
            assert problems == []
        finally:
            browser.close()


def test_the_tutorials_dashboard_picture_needs_no_pytest_and_is_written_where_told(tmp_path):
    """`python -m research.dashboard_picture PATH` (docs/tutorial.md) after the install it names
    (the package and Playwright: pytest is not among them), writing PATH and nothing else."""
    _browser()  # (chromium, or a skip: the picture is taken in it)
    docs_picture = ROOT / "docs" / "images" / "dashboard.png"
    before = docs_picture.read_bytes()
    picture = tmp_path / "taken" / "dashboard.png"
    without_pytest = (
        "import runpy, sys; sys.modules['pytest'] = None; "
        "runpy.run_module('research.dashboard_picture', run_name='__main__')"
    )
    ran = subprocess.run([sys.executable, "-c", without_pytest, str(picture)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == f"wrote {picture}"
    assert picture.read_bytes().startswith(b"\x89PNG") and docs_picture.read_bytes() == before
