"""A live munjang server serving the embedded all-MiniLM-L6-v2 (a real OpenAI-compatible API) for
the remote encoder's tests, and a fault-injecting proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from munjang.server import ServerSettings, create_app
from tests.helpers.fault_proxy import FaultProxy
from tests.helpers.server import live_server

MODEL = "all-MiniLM-L6-v2"
KEY = "test-key"


@pytest.fixture(scope="package")
def server(encoder) -> Iterator[str]:
    """The base URL (…/v1) of a munjang server that needs the key KEY."""
    with live_server(create_app(ServerSettings(models={MODEL: encoder}, api_key=KEY))) as url:
        yield f"{url}/v1"


@pytest.fixture(scope="package")
def proxy_and_url(server) -> Iterator[tuple[FaultProxy, str]]:
    proxy = FaultProxy(server.removesuffix("/v1"))
    with live_server(proxy.app) as url:
        yield proxy, f"{url}/v1"


@pytest.fixture()
def proxy(proxy_and_url) -> Iterator[FaultProxy]:
    """The proxy with no failure planned and its POST count at zero."""
    proxy, _ = proxy_and_url
    proxy.faults.clear()
    proxy.posts = 0
    yield proxy
    proxy.faults.clear()


@pytest.fixture(autouse=True)
def remote_env(monkeypatch, tmp_path) -> None:
    """The key in the environment, as users give it; the disk cache in a fresh folder per test."""
    monkeypatch.setenv("MUNJANG_REMOTE_API_KEY", KEY)
    monkeypatch.setenv("MUNJANG_CACHE", str(tmp_path / "cache"))
