"""Nothing private at rest: what the store keeps of requests and answers is sealed (AES-256-GCM
under the store's key), the cache's keys are keyed hashes, and what SQLite deletes leaves neither
the database nor its write-ahead log. Checked on the files themselves: the SQLite database, its
WAL, and Redis's append-only file and dump."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
import redis

from router.cache import RedisCache, SqliteCache
from router.documents import Document, RedisDocuments, SqliteDocuments
from router.sealing import KEY_ENV, Seal, SealError, store_seal

SECRET = "jane.roe@example.com 4111 1111 1111 1111"


def on_disk(folder: Path) -> bytes:
    """Every byte of every file in `folder` (a database, its WAL and shared memory, Redis's files)."""
    return b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())


# --- the seal -------------------------------------------------------------------------------
def test_a_sealed_value_opens_with_its_key_where_it_was_kept_and_nowhere_else():
    seal = Seal("store-key-0123456789")
    sealed = seal.seal(SECRET.encode(), b"file/1")
    assert SECRET.encode() not in sealed
    assert seal.open(sealed, b"file/1") == SECRET.encode()
    with pytest.raises(SealError):
        seal.open(sealed, b"file/2")  # moved to another row
    with pytest.raises(SealError):
        Seal("another-key-0123456789").open(sealed, b"file/1")
    with pytest.raises(SealError):
        seal.open(sealed[:-1] + bytes([sealed[-1] ^ 1]), b"file/1")  # altered


def test_a_digest_is_keyed():
    assert Seal("store-key-0123456789").digest(SECRET) != Seal("another-key-0123456789").digest(SECRET)
    assert Seal("store-key-0123456789").digest(SECRET) == Seal("store-key-0123456789").digest(SECRET)


def test_a_short_key_is_refused():
    with pytest.raises(ValueError, match="16 characters"):
        Seal("short")


def test_the_key_comes_from_the_config_then_the_environment_then_a_file_beside_sqlite(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    database = tmp_path / "ledger.db"
    first = store_seal(f"sqlite:///{database}", None)
    key_file = Path(f"{database}.key")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert store_seal(f"sqlite:///{database}", None).digest("x") == first.digest("x")  # a restart reads it
    monkeypatch.setenv(KEY_ENV, "from-the-environment-0123")
    assert store_seal(f"sqlite:///{database}", None).digest("x") == Seal("from-the-environment-0123").digest("x")
    configured = store_seal(f"sqlite:///{database}", "from-the-config-0123456")
    assert configured.digest("x") == Seal("from-the-config-0123456").digest("x")


def test_a_redis_store_without_a_key_is_refused(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ValueError, match="Redis store needs a key"):
        store_seal("redis://127.0.0.1:6379/0", None)


# --- SQLite ---------------------------------------------------------------------------------
def test_sqlite_documents_keep_no_value_readable_in_the_database_or_its_wal(tmp_path):
    documents = SqliteDocuments(str(tmp_path / "ledger.db"))
    documents.put("file_content", Document("file-1", "alpha", time.time(), {"text": SECRET}))
    assert documents.get("file_content", "file-1").data == {"text": SECRET}
    assert documents.find("file_content", "alpha")[0].data == {"text": SECRET}
    assert SECRET.encode() not in on_disk(tmp_path) and b"jane.roe" not in on_disk(tmp_path)


def test_a_deleted_document_leaves_nothing_once_scrubbed(tmp_path):
    """A parked line's originals, once the line settles: not in the database, not in the WAL,
    not even sealed."""
    documents = SqliteDocuments(str(tmp_path / "ledger.db"), Seal("store-key-0123456789"))
    with documents._connect() as db:
        db.execute("PRAGMA journal_mode=WAL")
    documents.put("batch_jobs", Document("line-1", "alpha", time.time(), {"originals": {"[EMAIL_1]": SECRET}}))
    with documents._connect() as db:
        (sealed,) = db.execute("SELECT data FROM documents").fetchone()
    documents.delete("batch_jobs", "line-1")
    documents.scrub()
    assert sealed.encode() not in on_disk(tmp_path)
    assert (tmp_path / "ledger.db-wal").stat().st_size == 0


def test_documents_written_before_sealing_are_still_read(tmp_path):
    documents = SqliteDocuments(str(tmp_path / "ledger.db"))
    with documents._connect() as db:
        db.execute("INSERT INTO documents VALUES ('feedback', 'k', 'alpha', 1.0, '{\"score\": 1}')")
    assert documents.get("feedback", "k").data == {"score": 1}


def test_a_document_sealed_under_another_key_is_an_error_that_says_so(tmp_path):
    SqliteDocuments(str(tmp_path / "ledger.db"), Seal("store-key-0123456789")).put(
        "batch", Document("b", "alpha", 1.0, {"x": 1})
    )
    with pytest.raises(SealError, match="this store's key"):
        SqliteDocuments(str(tmp_path / "ledger.db"), Seal("another-key-0123456789")).get("batch", "b")


def test_the_sqlite_cache_keeps_keyed_hashes_and_sealed_answers(tmp_path):
    cache = SqliteCache(str(tmp_path / "ledger.db"))
    cache.put("alpha", "semantic:" + SECRET, SECRET.encode(), 60)
    assert cache.get("alpha", "semantic:" + SECRET) == SECRET.encode()
    assert b"jane.roe" not in on_disk(tmp_path) and b"semantic:" not in on_disk(tmp_path)


def test_a_cached_answer_under_another_key_is_a_miss(tmp_path):
    SqliteCache(str(tmp_path / "ledger.db"), Seal("store-key-0123456789")).put("alpha", "k", b"answer", 60)
    assert SqliteCache(str(tmp_path / "ledger.db"), Seal("another-key-0123456789")).get("alpha", "k") is None


# --- Redis ----------------------------------------------------------------------------------
def test_redis_keeps_no_value_readable_in_its_files(redis_server):
    documents, cache = RedisDocuments(redis_server.url), RedisCache(redis_server.url)
    documents.put("file_content", Document("file-1", "alpha", time.time(), {"text": SECRET}))
    cache.put("alpha", SECRET, SECRET.encode(), 60)
    assert documents.get("file_content", "file-1").data == {"text": SECRET}
    assert cache.get("alpha", SECRET) == SECRET.encode()
    redis.Redis.from_url(redis_server.url).save()  # the dump, beside the append-only file
    assert b"jane.roe" not in on_disk(redis_server.folder)
    assert any(name.endswith(".rdb") for name in os.listdir(redis_server.folder))
