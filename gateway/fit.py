"""`edgeway router fit`: the complexity threshold this deployment's comparisons support.

Reads the app's shadow comparisons (from the configured store, or from a `shadow replay` output
file), finds the largest threshold whose predicted quality meets the target (router/quality.py),
and prints it with the edge share and the savings it predicts, and their 95% intervals; with
`--write`, sets it in the app's policy file in place (policies/edit.py), which a running gateway
reloads. With too few comparisons it says how many more it needs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from gateway.config import GatewayConfig
from policies.edit import NoThreshold, find_threshold, write_threshold
from policies.policy import Models
from policies.yaml_source import FileError
from router import quality
from router.comparisons import Comparison, open_comparisons
from router.ledger import open_store


def comparisons_of(config: GatewayConfig, app: str, from_file: Path | None) -> list[Comparison]:
    if from_file is not None:
        rows = [json.loads(line) for line in from_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [Comparison(**row["comparison"]) for row in rows if row.get("comparison") and row["app"] == app]
    store = open_comparisons(config.store)
    try:
        return store.comparisons(app)
    finally:
        store.close()


def _daily_cloud_usd(config: GatewayConfig, app: str) -> tuple[float, float]:
    """The app's all-cloud cost a day and a request, from its ledger (0, 0 without history)."""
    store = open_store(config.store)
    try:
        rows = [r for r in store.rows(app) if r.kind == "request" and r.status == 200]
    finally:
        store.close()
    if not rows:
        return 0.0, 0.0
    days = max(1.0, (rows[-1].ts - rows[0].ts) / 86400)
    total = sum(r.counterfactual_usd for r in rows)
    return total / days, total / len(rows)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def run(
    config: GatewayConfig,
    app: str,
    target: float,
    write: bool,
    from_file: Path | None = None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    comparisons = comparisons_of(config, app, from_file)
    found = quality.fit(comparisons, target)
    print(f"{app}: {len(comparisons)} comparisons, {found.judged} judged; target quality {target:.0%}", file=out)
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
    models = Models(tuple(m.name for m in config.edge.models), tuple(m.name for m in config.cloud.models))
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
