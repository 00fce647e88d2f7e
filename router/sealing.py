"""What the gateway keeps at rest, sealed: AES-256-GCM under the store's key.

Everything the store keeps that came from a request or an answer (batch input and output files,
batches' metadata, each line's result, a line parked at a provider with the values its answer is
restored with, cached answers and the asks the semantic cache compares) is written sealed: a
SQLite file, its write-ahead log and a Redis dump hold ciphertext, and the cache's keys are keyed
hashes (HMAC-SHA-256), so a key made from a private value cannot be found by hashing guesses.

Sealing rather than masking: a masked copy keeps whatever the scan missed (its recall on real
private prompts is about three quarters), a sealed one keeps nothing readable, and costs a
microsecond a kilobyte.

The key (`store_key` in the config, or `EDGEWAY_STORE_KEY`) is any secret string; the keys for
documents, the cache and the digests are derived from it (HKDF-SHA-256), each bound to what it
seals. Without one, a SQLite store keeps a random key in a file beside its database (mode 0600;
`<path>.key`: keep it elsewhere, or set the key, for the database alone to give nothing away),
and a memory store uses a key of the process's own. A Redis store needs a configured key: every
replica opens what the others sealed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

KEY_ENV = "EDGEWAY_STORE_KEY"
SHORTEST_KEY = 16  # bytes of a configured key
_NONCE = 12
_VERSION = b"s1"  # what sealed a value: a later scheme opens both


class SealError(ValueError):
    """A sealed value that does not open: another key, or altered bytes."""


class Seal:
    """Seals and opens values, and makes keyed digests, under one secret."""

    def __init__(self, secret: str | bytes) -> None:
        material = secret.encode() if isinstance(secret, str) else secret
        if len(material) < SHORTEST_KEY:
            raise ValueError(f"a store key must be at least {SHORTEST_KEY} characters")
        self._aead = AESGCM(_derived(material, b"edgeway seal"))
        self._digest_key = _derived(material, b"edgeway digest")

    def seal(self, plain: bytes, bound_to: bytes = b"") -> bytes:
        """`plain` encrypted and authenticated, bound to `bound_to` (where it is kept: a value
        moved to another row does not open)."""
        nonce = secrets.token_bytes(_NONCE)
        return _VERSION + nonce + self._aead.encrypt(nonce, plain, bound_to)

    def open(self, sealed: bytes, bound_to: bytes = b"") -> bytes:
        if not sealed.startswith(_VERSION) or len(sealed) < len(_VERSION) + _NONCE:
            raise SealError("not a sealed value")
        nonce, body = sealed[len(_VERSION) : len(_VERSION) + _NONCE], sealed[len(_VERSION) + _NONCE :]
        try:
            return self._aead.decrypt(nonce, body, bound_to)
        except Exception as exc:  # cryptography's InvalidTag: the key or the bytes differ
            raise SealError("the value does not open with this store's key") from exc

    def seal_text(self, plain: str, bound_to: str = "") -> str:
        """`seal`, as ASCII text (for a JSON document or a Redis string)."""
        return base64.b64encode(self.seal(plain.encode(), bound_to.encode())).decode()

    def open_text(self, sealed: str, bound_to: str = "") -> str:
        try:
            raw = base64.b64decode(sealed, validate=True)
        except ValueError as exc:
            raise SealError("not a sealed value") from exc
        return self.open(raw, bound_to.encode()).decode()

    def digest(self, material: str) -> str:
        """A keyed hash of `material` (HMAC-SHA-256, hexadecimal)."""
        return hmac.new(self._digest_key, material.encode(), hashlib.sha256).hexdigest()


def _derived(material: bytes, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"edgeway store", info=purpose).derive(material)


def key_problem(store_url: str, configured: str | None) -> str | None:
    """What keeps the store from having a seal (a Redis store with no key, a key too short), as
    an operator reads it; None: `store_seal` makes one."""
    secret = configured or os.environ.get(KEY_ENV)
    if secret:
        if len(secret.encode()) < SHORTEST_KEY:
            where = "store_key" if configured else KEY_ENV
            return f"a store key must be at least {SHORTEST_KEY} characters ({where} has {len(secret)})"
        return None
    if store_url.startswith(("redis://", "rediss://", "unix://")):
        return (
            f"a Redis store needs a key to seal what its replicas share (the same on every replica, "
            f"at least {SHORTEST_KEY} characters): set store_key in the config or {KEY_ENV}"
        )
    return None


def store_seal(store_url: str, configured: str | None) -> Seal:
    """The store's seal: from the configured key, else `EDGEWAY_STORE_KEY`, else a key file
    beside a SQLite database or a key of this process for memory. Raises ValueError where
    `key_problem` says one (a Redis store with no key, a key too short)."""
    problem = key_problem(store_url, configured)
    if problem is not None:
        raise ValueError(problem)
    secret = configured or os.environ.get(KEY_ENV)
    if secret:
        return Seal(secret)
    if store_url.startswith("sqlite:///"):
        return Seal(_key_file(Path(store_url.removeprefix("sqlite:///") + ".key")))
    return Seal(secrets.token_bytes(32))


def _key_file(path: Path) -> bytes:
    """The key kept in `path`, made (random, readable by this user only) if there is none. Two
    processes opening one database at once read the key the first of them wrote."""
    for _ in range(100):
        try:
            written = path.read_text().strip()
        except FileNotFoundError:
            written = None
        if written:
            return bytes.fromhex(written)
        if written is None:
            key = secrets.token_bytes(32)
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue  # another process made it first: read its key
            with os.fdopen(descriptor, "w") as out:
                out.write(key.hex())
            return key
        time.sleep(0.01)  # made, not yet written
    raise RuntimeError(f"the store's key file {path} stays empty")
