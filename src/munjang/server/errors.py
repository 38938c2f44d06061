"""OpenAI-style error answers: `{"error": {"message", "type", "param", "code"}}`, and the handlers
that turn every failure (ours, FastAPI's, pydantic's, munjang's, unexpected) into one."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import InputTooLongError, MunjangError

logger = logging.getLogger("munjang.server")

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    403: "permission_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    409: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    422: "invalid_request_error",
    500: "server_error",
    503: "overloaded_error",
    507: "server_error",
}


class APIError(Exception):
    """An error answer: HTTP status, message, and the request field at fault (`param`)."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers


def error_response(
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The JSON answer for an error (401 also carries `WWW-Authenticate`)."""
    body = {
        "error": {"message": message, "type": ERROR_TYPES.get(status, "error"), "param": param, "code": code}
    }
    extra = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    return JSONResponse(body, status_code=status, headers={**extra, **(headers or {})} or None)


def _location(loc: tuple[Any, ...]) -> str | None:
    """`("body", "input", 2)` -> `"input[2]"`; union branch names (`list[str]`) are skipped."""
    parts = [p for p in loc if p != "body"]
    if not parts:
        return None
    name = str(parts[0])
    for part in parts[1:]:
        if isinstance(part, int):
            name += f"[{part}]"
        elif "[" not in str(part) and part not in ("str", "int"):
            name += f".{part}"
    return name


def validation_error(errors: list[Any]) -> APIError:
    """An APIError for pydantic's errors: invalid JSON is a 400, a wrong field a 422 naming it."""
    first = errors[0]
    if first.get("type") == "json_invalid":
        return APIError(400, f"the body is not valid JSON: {first.get('msg')}", None, "invalid_json")
    if first.get("type") == "model_type":
        return APIError(400, "the body must be a JSON object", None, "invalid_body")
    param = _location(tuple(first.get("loc", ())))
    if first.get("type") == "missing":
        return APIError(422, f"'{param}' is required", param, "missing_field")
    return APIError(422, f"invalid '{param}': {first.get('msg')}", param, "invalid_type")


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers, so no bad request ever ends in a 500 or a traceback."""

    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, APIError)
        return error_response(exc.status, exc.message, exc.param, exc.code, exc.headers)

    async def request_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, (RequestValidationError, ValidationError))
        err = validation_error(list(exc.errors()))
        return error_response(err.status, err.message, err.param, err.code)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return error_response(exc.status_code, str(exc.detail))

    async def munjang_error(request: Request, exc: Exception) -> JSONResponse:
        param = "input" if isinstance(exc, InputTooLongError) else None
        return error_response(400, str(exc), param)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "internal server error", None, "internal_error")

    app.add_exception_handler(APIError, api_error)
    app.add_exception_handler(RequestValidationError, request_validation)
    app.add_exception_handler(ValidationError, request_validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(MunjangError, munjang_error)
    app.add_exception_handler(Exception, unexpected)
