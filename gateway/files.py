"""OpenAI's Files API, for batches: `POST /v1/files` (multipart, `purpose=batch`), `GET /v1/files`,
`GET /v1/files/{id}`, `GET /v1/files/{id}/content`, `DELETE /v1/files/{id}`.

A file belongs to the app whose key uploaded it (another app's key gets a 404, as for a file that
does not exist). It is kept in the configured store beside the ledger (SQLite or Redis, so every
replica and a restarted gateway see it): the batch input the app uploaded, and the output and
error files its batches wrote (`purpose: batch_output`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON, read_bytes
from gateway.pipeline import identify
from gateway.running import gateway_of
from router.documents import Document, Documents
from router.errors import InvalidRequest, NotFound

FILES, CONTENTS = "file", "file_content"


class Purpose(StrEnum):
    BATCH = "batch"  # what a client uploads: one request a line
    BATCH_OUTPUT = "batch_output"  # what a batch writes: one answer (or error) a line


@dataclass(frozen=True)
class StoredFile:
    id: str
    app: str
    filename: str
    purpose: Purpose
    bytes: int
    created_at: int

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.bytes,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose.value,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


def save(documents: Documents, app: str, filename: str, purpose: Purpose, content: bytes) -> StoredFile:
    stored = StoredFile(f"file-{uuid.uuid4().hex[:24]}", app, filename, purpose, len(content), int(time.time()))
    # the content first: a file listed is a file that can be read
    documents.put(CONTENTS, Document(stored.id, app, stored.created_at, {"text": content.decode()}))
    meta = {"filename": filename, "purpose": purpose.value, "bytes": stored.bytes}
    documents.put(FILES, Document(stored.id, app, stored.created_at, meta))
    return stored


def find(documents: Documents, app: str, file_id: str) -> StoredFile:
    """The app's file, or a 404 (another app's file is as absent as one never uploaded)."""
    found = documents.get(FILES, file_id)
    if found is None or found.app != app:
        raise NotFound(f"No file with id {file_id[:64]!r}.", param="file_id", code="file_not_found")
    return _stored(found)


def content(documents: Documents, stored: StoredFile) -> str:
    """The text of a file `find` gave."""
    found = documents.get(CONTENTS, stored.id)
    if found is None:
        raise NotFound(f"The content of file {stored.id[:64]!r} is gone.", param="file_id", code="file_not_found")
    return str(found.data["text"])


def _stored(document: Document) -> StoredFile:
    data = document.data
    return StoredFile(
        document.key, document.app, data["filename"], Purpose(data["purpose"]), data["bytes"], int(document.ts)
    )


def _documents(request: Request) -> Documents:
    documents: Documents = gateway_of(request).documents
    return documents


async def upload(request: Request) -> Response:
    app = identify(request)
    config = gateway_of(request).config
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise InvalidRequest("Upload a file as multipart/form-data with the fields 'file' and 'purpose'.")
    body = await read_bytes(request, config.batches.max_file_bytes + 64 * 1024, config.server.body_timeout_s)

    async def stream() -> AsyncGenerator[bytes, None]:
        yield body

    try:
        form = await MultiPartParser(request.headers, stream(), max_files=1, max_fields=8).parse()
    except MultiPartException as exc:
        raise InvalidRequest(f"The upload is not valid multipart/form-data: {exc.message}") from None
    purpose, upload = form.get("purpose"), form.get("file")
    if purpose != Purpose.BATCH:
        raise InvalidRequest(
            f"'purpose' must be 'batch': this gateway keeps files for the Batch API only; got {str(purpose)[:40]!r}.",
            param="purpose",
        )
    if not isinstance(upload, UploadFile):
        raise InvalidRequest("The upload has no 'file' part.", param="file")
    data = await upload.read()
    if len(data) > config.batches.max_file_bytes:
        raise InvalidRequest(
            f"The file is {len(data)} bytes; this gateway takes batch files of at most "
            f"{config.batches.max_file_bytes}.",
            param="file",
            code="file_too_large",
        )
    try:
        data.decode()
    except UnicodeDecodeError:
        raise InvalidRequest("A batch file is JSON lines in UTF-8; this one is not UTF-8.", param="file") from None
    stored = save(_documents(request), app.name, upload.filename or "upload.jsonl", Purpose.BATCH, data)
    return JSON(stored.body())


async def list_files(request: Request) -> Response:
    app = identify(request)
    purpose = request.query_params.get("purpose")
    files = [_stored(d) for d in _documents(request).find(FILES, app=app.name)]
    data = [f.body() for f in reversed(files) if purpose is None or f.purpose == purpose]
    return JSON({"object": "list", "data": data, "has_more": False})


async def retrieve(request: Request) -> Response:
    app = identify(request)
    return JSON(find(_documents(request), app.name, request.path_params["file_id"]).body())


async def file_content(request: Request) -> Response:
    app = identify(request)
    documents = _documents(request)
    text = content(documents, find(documents, app.name, request.path_params["file_id"]))
    return Response(text, media_type="application/jsonl")


async def delete(request: Request) -> Response:
    app = identify(request)
    documents = _documents(request)
    stored = find(documents, app.name, request.path_params["file_id"])
    documents.delete(FILES, stored.id)
    documents.delete(CONTENTS, stored.id)
    return JSON({"id": stored.id, "object": "file", "deleted": True})
