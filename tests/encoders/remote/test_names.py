"""Remote model names: each scheme parses to its URL, model, options and key variable, and the
canonical name reads back to the same spec; bad names fail naming what is wrong."""

from __future__ import annotations

import pytest

from munjang.encoders.remote import RemoteNameError, is_remote_name, parse_remote_name
from munjang.errors import MunjangError

OPENAI, REMOTE_KEY = "https://api.openai.com/v1", "MUNJANG_REMOTE_API_KEY"


@pytest.mark.parametrize(
    ("name", "base_url", "model", "dimensions", "key"),
    [
        ("openai:text-embedding-3-small", OPENAI, "text-embedding-3-small", None, "OPENAI_API_KEY"),
        (
            "openai:text-embedding-3-large?dimensions=256",
            OPENAI,
            "text-embedding-3-large",
            256,
            "OPENAI_API_KEY",
        ),
        ("tei:http://gpu:8080", "http://gpu:8080/v1", "tei", None, REMOTE_KEY),
        ("tei:http://gpu:8080/v1/", "http://gpu:8080/v1", "tei", None, REMOTE_KEY),
        (
            "remote:http://127.0.0.1:8000/v1#e5?key_env=MY_KEY",
            "http://127.0.0.1:8000/v1",
            "e5",
            None,
            "MY_KEY",
        ),
        (
            "remote:https://x.ai/v1/#BAAI/bge-base-en-v1.5",
            "https://x.ai/v1",
            "BAAI/bge-base-en-v1.5",
            None,
            REMOTE_KEY,
        ),
    ],
)
def test_names_parse_and_round_trip(name, base_url, model, dimensions, key):
    spec = parse_remote_name(name)
    assert (spec.base_url, spec.model, spec.dimensions, spec.key_variable) == (
        base_url,
        model,
        dimensions,
        key,
    )
    assert parse_remote_name(spec.name) == spec
    assert is_remote_name(name)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("openai:", "not a remote model name"),
        ("remote:http://host/v1", "name the model after the URL"),
        ("remote:ftp://host/v1#m", "is not an http"),
        ("remote:http://user:secret@host/v1#m", "environment variable, not in the URL"),
        ("openai:m?dimensions=0", "dimensions must be a positive integer"),
        ("openai:m?batch=3", "unknown option 'batch'"),
        ("openai:m?key_env=not a name", "key_env must name an environment variable"),
        ("remote:http://host/v1#", "the model name is empty"),
    ],
)
def test_bad_names_say_what_is_wrong(name, problem):
    with pytest.raises(RemoteNameError, match=problem):
        parse_remote_name(name)


def test_local_names_are_not_remote():
    for name in (None, "all-MiniLM-L6-v2", "intfloat/multilingual-e5-small", "/models/e5", "C:/models/e5"):
        assert not is_remote_name(name)


def test_openai_needs_its_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MunjangError, match=r"needs an API key: set \$OPENAI_API_KEY"):
        parse_remote_name("openai:text-embedding-3-small").api_key()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert parse_remote_name("openai:text-embedding-3-small").api_key() == "sk-test"
    monkeypatch.delenv("MUNJANG_REMOTE_API_KEY", raising=False)
    assert parse_remote_name("remote:http://h/v1#m").api_key() is None
