"""Errors that end a request, each carrying the OpenAI error shape and HTTP status it maps to.

Every layer raises these (or its own, translated at the layer boundary); the gateway renders
them as `{"error": {"message", "type", "param", "code"}}` and never shows a traceback.
"""

from __future__ import annotations


class EdgewayError(Exception):
    status: int = 500
    type: str = "api_error"
    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        self.retry_after = retry_after
        self.rule = rule  # the policy rule whose decision this is (a denial), said as x-edgeway-rule
        self.model: str | None = None  # the configured model whose call ended in it, where one did

    def __str__(self) -> str:
        return self.message  # which a fallback chain may have extended since the error was raised

    def body(self) -> dict[str, dict[str, str | None]]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def headers(self) -> dict[str, str]:
        headers = {} if self.rule is None else {"x-edgeway-rule": self.rule}
        if self.retry_after is not None:
            headers["retry-after"] = str(max(1, round(self.retry_after)))
        return headers


class InvalidRequest(EdgewayError):
    status = 400
    type = "invalid_request_error"


class Unauthorized(EdgewayError):
    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"


class Forbidden(EdgewayError):
    status = 403
    type = "permission_error"
    code = "forbidden_by_policy"


class NotFound(EdgewayError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"


class ModelNotFound(NotFound):
    code = "model_not_found"


class UpstreamNotFound(NotFound):
    """The provider has no such model or path: the gateway's config names something it does not
    serve. Another target may still answer (unlike a request the client must fix)."""

    code = "upstream_not_found"


class BodyTooLarge(EdgewayError):
    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class RequestTimeout(EdgewayError):
    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class RateLimited(EdgewayError):
    status = 429
    type = "rate_limit_error"
    code = "rate_limit_exceeded"


class UpstreamError(EdgewayError):
    """The provider answered with an error or broke the connection."""

    status = 502
    type = "upstream_error"
    code = "upstream_error"

    def __init__(
        self,
        message: str,
        *,
        provider_status: int | None = None,
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, param=param, code=code, retry_after=retry_after)
        self.provider_status = provider_status


class UpstreamTimeout(UpstreamError):
    status = 504
    code = "upstream_timeout"


class InvalidOutput(EdgewayError):
    """The model's answer broke the schema its request set, sampled again and broken again: never
    sent as if it held. Another tier may answer."""

    status = 502
    type = "api_error"
    code = "invalid_model_output"


class NoCapacity(EdgewayError):
    """No tier that this request may use can serve it now."""

    status = 503
    type = "service_unavailable"
    code = "no_capacity"
