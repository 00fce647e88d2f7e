"""What an app's router learns from and how: routing records and feedback kept as documents beside
the ledger, the examples they make, and the fit that is installed only when it ranks the later
examples better than the router in use."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gateway.feedback import parse_feedback
from router import fitting
from router.app_router import AppRouter, Combination, logit
from router.comparisons import Comparison
from router.documents import Document, MemoryDocuments, RedisDocuments, SqliteDocuments
from router.errors import InvalidRequest
from router.routings import Example, Feedback, RoutingRecord, examples, from_comparison


def test_documents_are_kept_in_memory_sqlite_and_redis_by_kind_key_app_and_time(tmp_path, redis_server):
    for store in (MemoryDocuments(), SqliteDocuments(str(tmp_path / "l.db")), RedisDocuments(redis_server.url)):
        store.put("k", Document("a", "x", 2.0, {"v": 1}))
        store.put("k", Document("b", "y", 1.0, {"v": 2}))
        store.put("k", Document("a", "x", 3.0, {"v": 3}))  # the same key replaces
        store.put("other", Document("a", "x", 1.0, {}))
        assert [d.key for d in store.find("k")] == ["b", "a"] and store.get("k", "a").data == {"v": 3}
        assert [d.key for d in store.find("k", app="x")] == ["a"]
        assert [d.key for d in store.find("k", since=1.5, until=3.5)] == ["a"]
        assert store.get("k", "missing") is None and store.find("none") == []
        store.close()


def test_documents_are_deleted_and_a_lease_is_held_by_one_owner_at_a_time(tmp_path, redis_server):
    """What batches stand on: a file deleted, and one replica running a batch (tests/test_batches.py)."""
    path = str(tmp_path / "l.db")
    for store, rival in (
        (MemoryDocuments(), None),
        (SqliteDocuments(path), SqliteDocuments(path)),  # two processes' handles on one file
        (RedisDocuments(redis_server.url), RedisDocuments(redis_server.url)),
    ):
        other = rival or store
        store.put("k", Document("a", "x", 1.0, {}))
        store.delete("k", "a")
        store.delete("k", "never-there")
        assert store.get("k", "a") is None and store.find("k") == []
        assert store.claim("batch:1", "one", 30) and store.claim("batch:1", "one", 30)  # taken, then renewed
        assert not other.claim("batch:1", "two", 30)
        assert store.claim("batch:1", "one", 0.001)  # let go
        time.sleep(0.01)
        assert other.claim("batch:1", "two", 30) and not store.claim("batch:1", "one", 30)
        store.close()


def test_feedback_names_a_request_and_gives_a_score_or_a_preferred_tier():
    assert parse_feedback({"request_id": "r1", "score": 1}, "a") == Feedback(
        "r1", "a", 1.0, None, ts=pytest.approx(0, abs=1e12)
    )
    assert parse_feedback({"request_id": "r1", "preferred": "cloud"}, "a").preferred == "cloud"
    for body, param in [
        ([], None),
        ({"score": 1}, "request_id"),
        ({"request_id": "r", "score": 1, "preferred": "edge"}, "score"),
        ({"request_id": "r"}, "score"),
        ({"request_id": "r", "score": 1.5}, "score"),
        ({"request_id": "r", "score": True}, "score"),
        ({"request_id": "r", "score": float("nan")}, "score"),
        ({"request_id": "r", "preferred": "gpu"}, "preferred"),
        ({"request_id": "r", "score": 1, "extra": 1}, "extra"),
    ]:
        with pytest.raises(InvalidRequest) as raised:
            parse_feedback(body, "a")
        assert raised.value.param == param


def test_a_preference_labels_a_request_and_a_score_only_an_edge_answer():
    docs = MemoryDocuments()
    for rid, served in (("e", "edge"), ("c", "cloud"), ("p", "cloud")):
        RoutingRecord(rid, "a", served, 0.4, None, [0.0] * 15, 0.4, 0, ts=1.0).save(docs)
    Feedback("e", "a", score=0.25).save(docs)
    Feedback("c", "a", score=0.0).save(docs)  # a bad cloud answer says nothing of the edge's
    Feedback("p", "a", preferred="edge").save(docs)
    Feedback("unknown", "a", preferred="cloud").save(docs)
    made = {e.cloud_better for e in examples([], docs, "a")}
    assert made == {0.75, 0.0}
    comparison = Comparison("x", "a", "r", 0.3, "edge", "e", "c", "tie", "j", ts=0.5)
    assert from_comparison(comparison) == Example(0.3, None, None, 0.0, 1.0, 1.0, 0.5)
    assert examples([comparison], docs, "a")[0].ts == 0.5  # oldest first


def test_apgr_is_routellms_area_under_the_recovered_gap():
    from gateway.bench.curves import measure  # the research's own measure: the same numbers

    rng = np.random.default_rng(1)
    scores, edge = rng.random(300), (rng.random(300) < 0.6).astype(float)
    cloud = np.maximum(edge, (rng.random(300) < 0.8).astype(float))
    scores[::7] = 0.5  # ties are split evenly in both
    assert fitting.apgr(scores, edge, cloud) == pytest.approx(measure(scores, edge, cloud).apgr, abs=1e-12)
    assert np.isnan(fitting.apgr(scores, edge, edge))


def _examples(n: int, feature_weight: float, seed: int = 0) -> list[Example]:
    """Requests whose need for the cloud follows the prior a little and one feature a lot."""
    rng = np.random.default_rng(seed)
    made = []
    for i in range(n):
        prior, asks = float(rng.uniform(0.2, 0.8)), [0.0] * 15
        asks[5] = float(rng.random() < 0.3)  # code
        p = 1 / (1 + np.exp(-(0.5 * logit(prior) + feature_weight * asks[5] - 0.5)))
        better = float(rng.random() < p)
        made.append(Example(prior, None, asks, better, 1 - better, 1.0, float(i)))
    return made


def test_a_fit_that_ranks_the_later_requests_better_is_ahead_and_its_threshold_keeps_the_target():
    found = _examples(600, 3.0)
    early, later = fitting.split(found)
    assert [e.ts for e in early] == sorted(e.ts for e in early) and early[-1].ts < later[0].ts
    current = AppRouter()
    assert not fitting.weighs_asks(len(found), current)  # a few hundred examples: the prior and a bias alone
    fitted = fitting.fit(early, current, asks=True)
    assert fitted.text.asks["code"] > 1.0
    check = fitting.compare(fitted, current, later)
    assert check.ahead and check.low > 0
    chosen = fitting.threshold_for(fitted, found, 0.9)
    assert chosen.quality >= 0.9 and 0 < chosen.edge_share < 1


def test_where_the_traffic_says_nothing_new_the_fit_stays_near_the_router_in_use():
    found = _examples(300, 0.0, seed=2)
    current = AppRouter(Combination(0.5, 0.0, -0.5))
    fitted = fitting.fit(found, current, asks=True)
    assert abs(fitted.text.prior - 0.5) < 0.3 and max(abs(w) for w in fitted.text.asks.values()) < 0.3


def test_the_pulled_logistic_regression_reaches_its_optimum():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 2))
    t = (rng.random(400) < 1 / (1 + np.exp(-(x @ [1.0, -2.0] + 0.3)))).astype(float)
    w = fitting.pulled_logistic(x, t, np.zeros(3), pull=1.0)
    design = np.hstack([x, np.ones((400, 1))])
    p = 1 / (1 + np.exp(-design @ w))
    gradient = design.T @ (p - t) + np.r_[1.0, 1.0, 0.0] * w
    assert np.abs(gradient).max() < 1e-8


def test_a_fit_that_starts_far_from_its_data_still_reaches_its_optimum():
    """A ladder step whose prompts are all short (a length score near 0.1, a logit near -2.5) and
    whose upper model is mostly better (soft targets near 0.7): full Newton steps from the start
    overshot and ran the bias to 1e11, every request then scored 1."""
    rng = np.random.default_rng(4)
    x = logit(0.1) + 0.3 * rng.normal(size=(334, 1))
    t = np.clip(0.7 + 0.2 * rng.normal(size=334), 0, 1)
    w = fitting.pulled_logistic(x, t, np.array([1.0, 0.0]), pull=fitting.PULL)
    design = np.hstack([x, np.ones((334, 1))])
    p = 1 / (1 + np.exp(-design @ w))
    gradient = design.T @ (p - t) + np.r_[fitting.PULL, 0.0] * (w - [1.0, 0.0])
    assert np.abs(gradient).max() < 1e-6 and abs(w[1]) < 20


def test_a_fit_whose_gain_is_inside_the_noise_is_not_ahead():
    found = _examples(300, 0.0, seed=5)
    early, later = fitting.split(found)
    check = fitting.compare(fitting.fit(early, AppRouter()), AppRouter(), later)
    assert check.low <= 0 <= check.high and not check.ahead
