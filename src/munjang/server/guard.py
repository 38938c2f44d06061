"""Refusing cross-site requests before any route runs: Host and Origin allow-lists, JSON-only bodies.

A web page the user happens to visit can make the browser send requests to `127.0.0.1:8000`. Three
rules keep such a page from writing to, or reading from, a server that has no API key:

- **Content-Type.** Every request with a body under `/v1/` must say `application/json` (the one
  route taking a snapshot archive, `application/x-tar`, `ARCHIVE_ROUTE`). A browser sends a
  cross-site request of either type only after a CORS preflight, which this server never approves;
  `text/plain` or form bodies, which need no preflight, are refused with 415.
- **Origin.** A request that carries an `Origin` (browsers add it to cross-origin requests and to
  every POST) is served only when that origin is the server itself (same host and port as the `Host`
  header) or is on the allow-list; else 403.
- **One value each.** A request that repeats `Host`, `Origin` or `Content-Type` is refused with 400:
  a rule must not judge one value while the app reads another.
- **Host.** A server bound to a loopback address answers only requests whose `Host` is a loopback
  name (or on the allow-list), so a DNS-rebinding page (`attacker.example` resolved to 127.0.0.1) is
  refused with 403 even for reads. A server bound to another address answers any `Host` unless an
  allow-list is given (it is reachable by name or address from elsewhere by design; use an API key).

`allowed_hosts` entries are host names (`munjang.internal`) or `*` for any; `allowed_origins` are
origins (`https://app.example`) or `*`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from .errors import error_response

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Headers the rules read: each must come once (a repeated one is refused with 400).
SINGLE_HEADERS = frozenset({"host", "origin", "content-type"})
# The route whose body is a snapshot archive (`snapshots_api.py`), not JSON.
ARCHIVE_ROUTE = re.compile(r"/v1/collections/[^/]+/restore")
ARCHIVE_TYPE = "application/x-tar"


def is_loopback(host: str) -> bool:
    """Whether a bind address or host name stays on this machine."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


_BRACKETED = re.compile(r"\[([0-9a-f:.%]+)\](:[0-9]{1,5})?")


def host_name(value: str) -> str:
    """The host of a `Host` header value (`127.0.0.1:8000` -> `127.0.0.1`, `[::1]:80` -> `::1`). A
    bracketed host must be a whole IPv6 literal (`[::1]`, an optional port after it); anything else
    (`[127.0.0.1]evil.com`) is returned as written, which no allow-list holds."""
    value = value.strip().lower()
    if value.startswith("["):
        match = _BRACKETED.fullmatch(value)
        if match is None:
            return value
        try:
            ipaddress.IPv6Address(match.group(1))
        except ValueError:
            return value
        return match.group(1)
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def default_allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The Host allow-list for a server bound to `bind_host`: loopback names (and `extra`) for a
    loopback bind; for any other bind only `extra`, or None (any Host) when there is none."""
    names = {host_name(h) if h != "*" else "*" for h in extra}
    if "*" in names:
        return None
    if is_loopback(bind_host):
        return frozenset(LOOPBACK_NAMES | names)
    return frozenset(names) if names else None


class RequestGuard:
    """ASGI middleware applying the three rules above; answers 403 / 415 in the API's error shape."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: frozenset[str] | None,
        allowed_origins: Iterable[str] = (),
        on_refusal: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.any_origin = "*" in origins
        self.allowed_origins = frozenset(origins - {"*"})
        self.on_refusal = on_refusal

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        """(status, message, code) when the request must be refused, else None."""
        headers: dict[str, str] = {}
        for raw_key, raw_value in scope.get("headers", []):
            key = raw_key.decode("latin-1").lower()
            if key in SINGLE_HEADERS and key in headers:
                # two values: a check that reads one could be fooled by the other
                return 400, f"the {key!r} header is sent more than once", "duplicate_header"
            headers[key] = raw_value.decode("latin-1")
        host = headers.get("host", "")
        if self.allowed_hosts is not None:
            name = host_name(host)
            # host_name leaves a malformed bracketed host as written: never loopback
            loopback_ok = "localhost" in self.allowed_hosts and not name.startswith("[") and is_loopback(name)
            if not (name in self.allowed_hosts or loopback_ok):
                message = f"host {host!r} is not allowed (start the server with --allowed-host)"
                return 403, message, "host_not_allowed"
        origin = headers.get("origin")
        if origin is not None and not self.any_origin and not self._same_or_allowed(origin, host):
            return 403, f"cross-origin request from {origin!r} refused", "origin_not_allowed"
        path = scope.get("path", "")
        if scope.get("method", "GET") in BODY_METHODS and path.startswith("/v1/"):
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            wanted = ARCHIVE_TYPE if ARCHIVE_ROUTE.fullmatch(path) else "application/json"
            if kind != wanted:
                shown = kind or "none"
                return 415, f"Content-Type must be {wanted}, not {shown}", "unsupported_media_type"
        return None

    def _same_or_allowed(self, origin: str, host: str) -> bool:
        value = origin.strip().rstrip("/").lower()
        if value in self.allowed_origins:
            return True
        parts = urlsplit(value)
        return (
            parts.scheme in ("http", "https") and bool(parts.netloc) and parts.netloc == host.strip().lower()
        )

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, message, code = refused
        if self.on_refusal is not None:
            self.on_refusal(code)
        await error_response(status, message, None, code)(scope, receive, send)
