"""GET /openapi.json: the API this gateway serves, as OpenAPI 3.1 (JSON Schema 2020-12).

It is held to the server two ways in the suite: every route the app serves is described here and
nothing else is (`tests/test_openapi.py`), and bodies the server accepts, of every API, are valid
by it; schemathesis fuzzes the server from it (`tests/test_fuzz.py`).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from router.request import MAX_CHOICES, MAX_EMBEDDING_INPUTS, MAX_STOP_SEQUENCES, PART_TYPES, ROLES

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_ANTHROPIC_ERROR = {
    "type": "object",
    "required": ["type", "error"],
    "properties": {
        "type": {"type": "string", "enum": ["error"]},
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
        },
    },
}
_BLOCK = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"type": "string", "enum": ["text", "image", "document", "tool_use", "tool_result"]},
        "text": {"type": "string"},
    },
}
_ANTHROPIC_MESSAGES: dict[str, Any] = {
    "type": "object",
    "required": ["model", "max_tokens", "messages"],
    "properties": {
        "model": {"type": "string"},
        "max_tokens": {"type": "integer", "minimum": 1},
        "system": {"oneOf": [{"type": "string"}, {"type": "array", "items": _BLOCK}]},
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {
                    "role": {"type": "string", "enum": ["user", "assistant"]},
                    "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": _BLOCK}]},
                },
            },
        },
        "stream": {"type": "boolean"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 1},
        "stop_sequences": {"type": "array", "maxItems": 4, "items": {"type": "string"}},
        "tools": {"type": "array", "items": {"type": "object"}},
    },
}
_RESPONSES = {
    "type": "object",
    "required": ["model", "input"],
    "properties": {
        "model": {"type": "string"},
        "input": {"oneOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": {"type": "object"}}]},
        "instructions": {"type": "string"},
        "max_output_tokens": {"type": "integer", "minimum": 1},
        "stream": {"type": "boolean"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "tools": {"type": "array", "items": {"type": "object"}},
        "text": {"type": "object"},
    },
}
_PART = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"type": "string", "enum": sorted(PART_TYPES)},
        "text": {"type": "string"},
        "image_url": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
}
_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": sorted(ROLES)},
        # null (or left out) in an assistant message that calls tools
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": _PART}, {"type": "null"}]},
        "name": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
    },
}
_CHAT = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "description": "a model of GET /v1/models, or auto"},
        "messages": {"type": "array", "minItems": 1, "items": _MESSAGE},
        "stream": {"type": "boolean"},
        "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
        "max_tokens": {"type": "integer", "minimum": 1},
        "max_completion_tokens": {"type": "integer", "minimum": 1},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1},
        "seed": {"type": "integer"},
        "n": {"type": "integer", "minimum": 1, "maximum": MAX_CHOICES},
        "stop": {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "maxItems": MAX_STOP_SEQUENCES, "items": {"type": "string"}},
            ]
        },
        "tool_choice": {"oneOf": [{"type": "string", "enum": ["auto", "none", "required"]}, {"type": "object"}]},
        "logprobs": {"type": "boolean"},
        "top_logprobs": {"type": "integer", "minimum": 0, "maximum": 20},
        "user": {"type": "string"},
        "metadata": {"type": "object"},
        "tools": {"type": "array", "items": {"type": "object"}},
        "response_format": {"type": "object"},
    },
}


_EMBEDDINGS = {
    "type": "object",
    "required": ["model", "input"],
    "properties": {
        "model": {"type": "string"},
        "input": {
            "oneOf": [
                {"type": "string", "minLength": 1},
                {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_EMBEDDING_INPUTS,
                    "items": {"type": "string", "minLength": 1},
                },
            ]
        },
        "encoding_format": {"type": "string", "enum": ["float", "base64"]},
        "user": {"type": "string"},
    },
}
_COUNT_TOKENS = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {k: v for k, v in _ANTHROPIC_MESSAGES["properties"].items() if k != "max_tokens"},
}
_FEEDBACK = {
    "type": "object",
    "required": ["request_id"],
    "additionalProperties": False,
    "properties": {
        "request_id": {"type": "string", "minLength": 1},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "preferred": {"type": "string", "enum": ["edge", "cloud"]},
    },
}


_BATCH = {
    "type": "object",
    "required": ["input_file_id", "endpoint", "completion_window"],
    "additionalProperties": False,
    "properties": {
        "input_file_id": {"type": "string"},
        "endpoint": {
            "type": "string",
            "enum": ["/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses"],
        },
        "completion_window": {"type": "string", "pattern": "^[1-9][0-9]*(h|m)$"},
        "metadata": {"type": ["object", "null"], "additionalProperties": {"type": "string"}, "maxProperties": 16},
    },
}
_UPLOAD = {
    "type": "object",
    "required": ["file", "purpose"],
    "properties": {
        "file": {"type": "string", "contentMediaType": "application/octet-stream"},
        "purpose": {"type": "string", "enum": ["batch"]},
    },
}
_FILE_ID = [{"name": "file_id", "in": "path", "required": True, "schema": {"type": "string"}}]
_BATCH_ID = [{"name": "batch_id", "in": "path", "required": True, "schema": {"type": "string"}}]


def _anthropic_errors(*statuses: int) -> dict[str, Any]:
    return {
        str(s): {"description": "an error", "content": {"application/json": {"schema": _ANTHROPIC_ERROR}}}
        for s in statuses
    }


def _errors(*statuses: int) -> dict[str, Any]:
    return {
        str(s): {"description": "an OpenAI-shaped error", "content": {"application/json": {"schema": _ERROR}}}
        for s in statuses
    }


def _json(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"type": "object"}}}}


SPEC = {
    "openapi": "3.1.0",
    "info": {
        "title": "edgeway",
        "version": "0.1.0",
        "description": "OpenAI-compatible gateway that routes each request to a local or a cloud model.",
    },
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
    "paths": {
        "/v1/chat/completions": {
            "post": {
                "summary": "Chat completion, routed to the edge or the cloud",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _CHAT}}},
                "responses": {
                    "200": {
                        "description": "a chat.completion, or server-sent chunks when stream is true",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(400, 401, 403, 404, 413, 429, 502, 503, 504),
                },
            }
        },
        "/v1/messages": {
            "post": {
                "summary": "Anthropic Messages, routed to the edge or the cloud",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ANTHROPIC_MESSAGES}}},
                "responses": {
                    "200": {
                        "description": "a message, or server-sent events when stream is true",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_anthropic_errors(400, 401, 403, 404, 413, 429, 502, 503, 504),
                },
            }
        },
        "/v1/messages/count_tokens": {
            "post": {
                "summary": "Anthropic's token count of a Messages body; calls no model",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _COUNT_TOKENS}}},
                "responses": {
                    "200": {
                        "description": "the prompt's tokens",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["input_tokens"],
                                    "properties": {"input_tokens": {"type": "integer", "minimum": 0}},
                                }
                            }
                        },
                    },
                    **_anthropic_errors(400, 401, 404, 413),
                },
            }
        },
        "/v1/embeddings": {
            "post": {
                "summary": "Embeddings, on the edge or a cloud embedding model",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _EMBEDDINGS}}},
                "responses": {"200": _json("a list of embeddings"), **_errors(400, 401, 403, 404, 413, 429, 502, 503)},
            }
        },
        "/v1/feedback": {
            "post": {
                "summary": "How good an answer of a route: auto rule was, for the app's router to learn from",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _FEEDBACK}}},
                "responses": {"200": _json("kept"), **_errors(400, 401, 404)},
            }
        },
        "/v1/responses": {
            "post": {
                "summary": "OpenAI Responses, routed to the edge or the cloud",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _RESPONSES}}},
                "responses": {
                    "200": {
                        "description": "a response, or server-sent events when stream is true",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(400, 401, 403, 404, 413, 429, 502, 503, 504),
                },
            }
        },
        "/v1/completions": {
            "post": {
                "summary": "Legacy text completion, routed to the edge or the cloud",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["model", "prompt"],
                                "properties": {
                                    "model": {"type": "string"},
                                    "prompt": {"type": "string"},
                                    "max_tokens": {"type": "integer", "minimum": 1},
                                    "stream": {"type": "boolean"},
                                    "temperature": {"type": "number", "minimum": 0, "maximum": 2},
                                },
                            }
                        }
                    },
                },
                "responses": {"200": _json("a text_completion, or server-sent chunks"), **_errors(400, 401, 404, 502)},
            }
        },
        "/v1/route": {
            "post": {
                "summary": "The signals and decision for a body; calls no model",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _CHAT}}},
                "responses": {"200": _json("signals and decision"), **_errors(400, 401, 403, 404, 413, 429, 503)},
            }
        },
        "/v1/models": {
            "get": {"summary": "Models and auto", "responses": {"200": _json("a model list"), **_errors(401)}}
        },
        "/v1/models/{model}": {
            "get": {
                "summary": "One model, if this gateway has it",
                "parameters": [{"name": "model", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": _json("a model"), **_errors(401, 404)},
            }
        },
        "/api/usage": {
            "get": {
                "summary": "The usage ledger",
                "parameters": [
                    {"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
                    for n in ("app", "from", "to", "group_by", "format")
                ],
                "responses": {
                    "200": {
                        "description": "usage",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/csv": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(400, 401),
                },
            }
        },
        "/api/audit": {
            "get": {
                "summary": "What left for a cloud provider, request by request, masked as it left (the admin key)",
                "parameters": [
                    {"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
                    for n in ("app", "from", "to", "format")
                ],
                "responses": {
                    "200": {
                        "description": "the egress records",
                        "content": {
                            "application/json": {"schema": {"type": "object"}},
                            "text/csv": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(400, 401),
                },
            }
        },
        "/api/quality": {
            "get": {
                "summary": "What the shadow comparisons say: quality retained beside money saved",
                "parameters": [
                    {"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
                    for n in ("app", "from", "to")
                ],
                "responses": {"200": _json("quality"), **_errors(400, 401)},
            }
        },
        "/api/cache": {
            "delete": {
                "summary": "Empty the app's response cache",
                "parameters": [{"name": "app", "in": "query", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": _json("how many answers were dropped"), **_errors(400, 401)},
            }
        },
        "/metrics": {
            "get": {
                "security": [],
                "summary": "Prometheus metrics",
                "responses": {
                    "200": {"description": "metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}
                },
            }
        },
        "/dashboard": {
            "get": {
                "summary": "The usage dashboard (the admin key as ?key=)",
                "parameters": [{"name": "key", "in": "query", "required": False, "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}},
                    # a browser opens it: without the key it gets a page that asks for it, not JSON
                    "401": {
                        "description": "a page that asks for the admin key",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                },
            }
        },
        "/v1/files": {
            "post": {
                "summary": "Upload a batch input file (JSON lines: custom_id, method, url, body)",
                "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": _UPLOAD}}},
                "responses": {"200": _json("the file"), **_errors(400, 401, 413)},
            },
            "get": {
                "summary": "The app's files",
                "parameters": [{"name": "purpose", "in": "query", "required": False, "schema": {"type": "string"}}],
                "responses": {"200": _json("a list of files"), **_errors(401)},
            },
        },
        "/v1/files/{file_id}": {
            "get": {"parameters": _FILE_ID, "responses": {"200": _json("the file"), **_errors(401, 404)}},
            "delete": {"parameters": _FILE_ID, "responses": {"200": _json("deleted"), **_errors(401, 404)}},
        },
        "/v1/files/{file_id}/content": {
            "get": {
                "parameters": _FILE_ID,
                "responses": {
                    "200": {
                        "description": "JSON lines",
                        "content": {"application/jsonl": {"schema": {"type": "string"}}},
                    },
                    **_errors(401, 404),
                },
            }
        },
        "/v1/batches": {
            "post": {
                "summary": "Run a file of requests on the edge's idle time, routed by the app's policy",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _BATCH}}},
                "responses": {"200": _json("the batch"), **_errors(400, 401, 404)},
            },
            "get": {
                "summary": "The app's batches, newest first",
                "parameters": [
                    {"name": "after", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer"}},
                ],
                "responses": {"200": _json("a list of batches"), **_errors(400, 401, 404)},
            },
        },
        "/v1/batches/{batch_id}": {
            "get": {"parameters": _BATCH_ID, "responses": {"200": _json("the batch"), **_errors(401, 404)}}
        },
        "/v1/batches/{batch_id}/cancel": {
            "post": {
                "parameters": _BATCH_ID,
                "responses": {"200": _json("the batch, cancelling"), **_errors(400, 401, 404)},
            }
        },
        "/openapi.json": {"get": {"security": [], "responses": {"200": _json("this description")}}},
        "/healthz": {"get": {"security": [], "responses": {"200": _json("alive")}}},
        "/readyz": {"get": {"security": [], "responses": {"200": _json("ready"), "503": _json("loading")}}},
    },
}


async def openapi(request: Request) -> Response:
    return JSON(SPEC)
