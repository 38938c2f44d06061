"""Remote model names: how `--model`, `load_embedder` and a collection's configuration name an
encoder behind an OpenAI-compatible embeddings API, without ever holding its key.

- `openai:<model>`: OpenAI (https://api.openai.com/v1), key from `$OPENAI_API_KEY`.
- `tei:<url>`: a text-embeddings-inference server (its OpenAI route, `<url>/v1`), key from
  `$MUNJANG_REMOTE_API_KEY` when set.
- `remote:<base_url>#<model>`: any OpenAI-compatible API (a munjang server, vLLM, Together, ...)
  whose `POST <base_url>/embeddings` serves `<model>`, key from `$MUNJANG_REMOTE_API_KEY` when set.

Any of them may end in `?dimensions=N` (the API's `dimensions` parameter: text-embedding-3 and
munjang servers shorten their vectors) and `&key_env=VAR` (read the key from `$VAR` instead), e.g.
`openai:text-embedding-3-small?dimensions=512` or
`remote:https://api.together.xyz/v1#BAAI/bge-base-en-v1.5?key_env=TOGETHER_API_KEY`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from ...errors import MunjangError

SCHEMES = ("openai", "tei", "remote")
OPENAI_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = {"openai": "OPENAI_API_KEY", "tei": "MUNJANG_REMOTE_API_KEY", "remote": "MUNJANG_REMOTE_API_KEY"}
# The model name sent to a TEI server, which serves one model and ignores the field.
TEI_MODEL = "tei"
OPTIONS = ("dimensions", "key_env")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RemoteNameError(MunjangError, ValueError):
    """A remote model name that does not parse (the message says what is wrong and the forms)."""


def is_remote_name(name: object) -> bool:
    """True when `name` is a string in one of the remote schemes (`openai:`, `tei:`, `remote:`)."""
    return isinstance(name, str) and name.split(":", 1)[0] in SCHEMES and ":" in name


@dataclass(frozen=True)
class RemoteSpec:
    """A parsed remote name: where the API is, which model, which dimensions, where the key lives."""

    scheme: str
    base_url: str
    model: str
    dimensions: int | None = None
    key_env: str | None = None

    @property
    def name(self) -> str:
        """The canonical name: what a collection records, and what `parse_remote_name` reads back."""
        if self.scheme == "openai":
            head = f"openai:{self.model}"
        elif self.scheme == "tei":
            head = f"tei:{self.base_url.removesuffix('/v1')}"
        else:
            head = f"remote:{self.base_url}#{self.model}"
        options = [f"dimensions={self.dimensions}"] if self.dimensions is not None else []
        if self.key_env is not None:
            options.append(f"key_env={self.key_env}")
        return head + ("?" + "&".join(options) if options else "")

    @property
    def key_variable(self) -> str:
        """The environment variable the API key is read from."""
        return self.key_env or KEY_ENV[self.scheme]

    def api_key(self) -> str | None:
        """The key from the environment; OpenAI needs one, other APIs may be open."""
        key = os.environ.get(self.key_variable) or None
        if key is None and self.scheme == "openai":
            raise MunjangError(f"{self.name} needs an API key: set ${self.key_variable}")
        return key


def parse_remote_name(name: str) -> RemoteSpec:
    """A RemoteSpec from `openai:<model>`, `tei:<url>` or `remote:<base_url>#<model>` (+ `?options`)."""
    scheme, _, rest = name.partition(":")
    if scheme not in SCHEMES or not rest:
        raise RemoteNameError(
            f"{name!r} is not a remote model name: use openai:<model>, tei:<url> or remote:<base_url>#<model>"
        )
    target, _, query = rest.partition("?")
    dimensions, key_env = _options(name, query)
    if scheme == "openai":
        base_url, model = OPENAI_BASE_URL, target
    elif scheme == "tei":
        base_url, model = _check_url(name, target.rstrip("/")), TEI_MODEL
        base_url = base_url if base_url.endswith("/v1") else base_url + "/v1"
    else:
        url, hash_, model = target.partition("#")
        if not hash_:
            raise RemoteNameError(f"{name!r}: name the model after the URL, remote:<base_url>#<model>")
        base_url = _check_url(name, url.rstrip("/"))
    if not model.strip():
        raise RemoteNameError(f"{name!r}: the model name is empty")
    return RemoteSpec(scheme, base_url, model, dimensions, key_env)


def _options(name: str, query: str) -> tuple[int | None, str | None]:
    """(dimensions, key_env) from the `?` part of a name."""
    dimensions: int | None = None
    key_env: str | None = None
    for key, value in parse_qsl(query, keep_blank_values=True) if query else []:
        if key == "dimensions":
            if not value.isdigit() or int(value) < 1:
                raise RemoteNameError(f"{name!r}: dimensions must be a positive integer, not {value!r}")
            dimensions = int(value)
        elif key == "key_env":
            if not _ENV_NAME.fullmatch(value):
                raise RemoteNameError(f"{name!r}: key_env must name an environment variable, not {value!r}")
            key_env = value
        else:
            raise RemoteNameError(f"{name!r}: unknown option {key!r}; known: {', '.join(OPTIONS)}")
    return dimensions, key_env


def _check_url(name: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteNameError(f"{name!r}: {url!r} is not an http(s) URL")
    if parts.username or parts.password:
        raise RemoteNameError(f"{name!r}: put the API key in an environment variable, not in the URL")
    if parts.query or parts.fragment:
        raise RemoteNameError(f"{name!r}: the base URL {url!r} must not carry a query or fragment")
    return url
