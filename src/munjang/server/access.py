"""Checking who may do what: the request's key (401 when missing or unknown), the scope its route
needs (403 naming it, by `route_scopes.ROUTE_SCOPES`), the collection it touches (403 naming it),
and one audit line per write on the `munjang.audit` logger (key, route, collection, counts).

Keys come from the server's `--api-key` (every scope, every collection) and its keys file
(`munjang.access.keys`, read again when it changes, so a revoked key is refused at the next request).
A server with neither serves everyone with every scope (the loopback default; `guard.py` holds the
cross-site rules)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import Request

from ..access import Grant, KeyFileError, KeyRing
from ..access.grants import FULL, OPEN
from .errors import APIError
from .route_scopes import ROUTE_SCOPES, Rule
from .settings import ServerSettings

audit_log = logging.getLogger("munjang.audit")

# Where a request's grant is kept in its ASGI scope (FastAPI's request.state, MCP's request).
GRANT = "munjang.grant"
# What a write route reports for its audit line (`record`).
AUDIT = "munjang.audit"


class Access:
    """The server's keys, and the checks every /v1 route and MCP call goes through."""

    def __init__(self, api_key: str | None, ring: KeyRing | None) -> None:
        self.api_key = api_key
        self.ring = ring

    @classmethod
    def of(cls, settings: ServerSettings) -> Access:
        ring = KeyRing(settings.keys_file) if settings.keys_file is not None else None
        return cls(settings.api_key, ring)

    @property
    def protected(self) -> bool:
        """Whether a request needs a key."""
        return self.api_key is not None or self.ring is not None

    def authenticate(self, headers: Mapping[str, str]) -> Grant:
        """The grant of the request's `Authorization: Bearer` key; 401 for none or an unknown one,
        503 while the keys file is unusable (no key of a damaged file is trusted)."""
        if not self.protected:
            return OPEN
        scheme, _, key = headers.get("authorization", "").partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise APIError(
                401, "missing API key: send 'Authorization: Bearer <key>'", None, "missing_api_key"
            )
        if self.api_key is not None and secrets.compare_digest(key.encode(), self.api_key.encode()):
            return FULL
        if self.ring is not None:
            try:
                grant = self.ring.grant(key)
            except KeyFileError as e:
                raise APIError(503, f"the keys file cannot be used: {e}", None, "keys_unavailable") from None
            if grant is not None:
                return grant
        raise APIError(401, "incorrect or revoked API key", None, "invalid_api_key")

    @staticmethod
    def check(grant: Grant, rule: Rule, collection: str | None) -> None:
        """403 naming the scope or the collection `grant` lacks."""
        if not grant.allows(rule.scope):
            message = f"this key ({grant.name!r}) lacks the {rule.scope!r} scope"
            raise APIError(403, message, None, f"missing_scope_{rule.scope}")
        if collection is not None:
            check_collection(grant, collection)

    async def guard(self, request: Request) -> AsyncIterator[None]:
        """The /v1 router's dependency: authenticate, check the route's declared scope and
        collection, then (for a write or admin route) write the audit line once it is answered."""
        route: Any = request.scope["route"]  # the matched route, as registered
        method = "GET" if request.method == "HEAD" else request.method
        path: str = route.path
        grant = self.authenticate(request.headers)
        rule = ROUTE_SCOPES.get((method, path))
        if rule is None:
            raise APIError(403, f"{method} {path} has no declared scope", None, "scope_undeclared")
        collection = request.path_params.get(rule.collection) if rule.collection else None
        self.check(grant, rule, collection)
        request.scope[GRANT] = grant
        if rule.scope == "read":
            yield
            return
        try:
            yield
        except APIError as e:
            audit(grant, f"{method} {path}", collection, {"status": e.status})
            raise
        done = request.scope.get(AUDIT, {})
        audit(
            grant,
            f"{method} {path}",
            done.get("collection", collection),
            {"status": 200, **done.get("counts", {})},
        )

    async def read_only(self, request: Request) -> None:
        """For routes outside /v1 that show the API (/openapi.json): a key with the read scope."""
        self.check(self.authenticate(request.headers), Rule("read"), None)


def check_collection(grant: Grant, collection: str) -> None:
    """403 when `grant` may not touch `collection`."""
    if not grant.reaches(collection):
        message = f"this key ({grant.name!r}) may not touch collection {collection!r}"
        raise APIError(403, message, "name", "collection_not_allowed")


def grant_of(request: Request) -> Grant:
    """The grant `Access.guard` gave this request."""
    grant: Grant = request.scope[GRANT]
    return grant


def record(request: Request, collection: str | None = None, **counts: int | None) -> None:
    """What this write did, for its audit line: counts (added, updated, deleted …) and, for a route
    whose path does not name it (create), the collection."""
    request.scope[AUDIT] = {"counts": counts, **({"collection": collection} if collection else {})}


def audit(grant: Grant, route: str, collection: str | None, counts: Mapping[str, Any]) -> None:
    """One audit line: which key did what to which collection, with its counts."""
    shown = " ".join(f"{k}={v}" for k, v in counts.items())
    audit_log.info(
        "key=%s route=%r collection=%s %s",
        grant.name,
        route,
        collection if collection is not None else "-",
        shown,
        extra={"key": grant.name, "route": route, "collection": collection, "counts": dict(counts)},
    )
