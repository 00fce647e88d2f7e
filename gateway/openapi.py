"""GET /openapi.json: the API this gateway serves, as OpenAPI 3.0 (what the fuzz tests read)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from router.request import PART_TYPES, ROLES

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
                "param": {"type": "string", "nullable": True},
                "code": {"type": "string", "nullable": True},
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
        "type": {"type": "string", "enum": ["text", "image", "tool_use", "tool_result"]},
        "text": {"type": "string"},
    },
}
_ANTHROPIC_MESSAGES = {
    "type": "object",
    "required": ["model", "max_tokens", "messages"],
    "properties": {
        "model": {"type": "string"},
        "max_tokens": {"type": "integer", "minimum": 1},
        "system": {"type": "string"},
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
    "required": ["role", "content"],
    "properties": {
        "role": {"type": "string", "enum": sorted(ROLES)},
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": _PART}]},
        "name": {"type": "string"},
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
        "n": {"type": "integer", "enum": [1]},
        "stop": {"oneOf": [{"type": "string"}, {"type": "array", "maxItems": 4, "items": {"type": "string"}}]},
        "tools": {"type": "array", "items": {"type": "object"}},
        "response_format": {"type": "object"},
    },
}


def _errors(*statuses: int) -> dict:
    return {
        str(s): {"description": "an OpenAI-shaped error", "content": {"application/json": {"schema": _ERROR}}}
        for s in statuses
    }


def _json(description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"type": "object"}}}}


SPEC = {
    "openapi": "3.0.3",
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
                    **{
                        str(s): {
                            "description": "an error",
                            "content": {"application/json": {"schema": _ANTHROPIC_ERROR}},
                        }
                        for s in (400, 401, 403, 404, 413, 429, 502, 503, 504)
                    },
                },
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
        "/healthz": {"get": {"security": [], "responses": {"200": _json("alive")}}},
        "/readyz": {"get": {"security": [], "responses": {"200": _json("ready"), "503": _json("loading")}}},
    },
}


async def openapi(request: Request) -> Response:
    return JSON(SPEC)
