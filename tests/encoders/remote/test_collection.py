"""A collection made with a remote model records its name (never its key), and reopening it finds
the same remote model: its search results equal those of a collection on the local model."""

from __future__ import annotations

import numpy as np

from munjang import Collection
from munjang.encoders.remote import RemoteEncoder
from tests.encoders.remote.conftest import KEY, MODEL

DOCS = {
    "a": "Cats sleep on the sofa all afternoon.",
    "b": "The central bank raised interest rates again.",
    "c": "서울은 오늘 맑고 따뜻하다.",  # the word tokenizer: Kiwi takes seconds to load
}


def test_remote_collection_round_trips(server, encoder, tmp_path):
    name = f"remote:{server}#{MODEL}"
    with Collection.create(tmp_path / "remote", model=name, tokenizer="word") as made:
        assert isinstance(made.encoder, RemoteEncoder)
        made.add(list(DOCS), list(DOCS.values()))
    with Collection.create(tmp_path / "local", encoder=encoder, tokenizer="word") as local:
        local.add(list(DOCS), list(DOCS.values()))
        expected = local.search("a sleeping cat", k=3, mode="dense")
    with Collection.open(tmp_path / "remote") as reopened:
        assert reopened.config["model"] == name
        assert KEY not in (tmp_path / "remote" / "collection.db").read_bytes().decode("latin-1")
        hits = reopened.search("a sleeping cat", k=3, mode="dense")
        assert isinstance(reopened.encoder, RemoteEncoder) and reopened.encoder.name == name
    assert [h.id for h in hits] == [h.id for h in expected]
    np.testing.assert_allclose([h.score for h in hits], [h.score for h in expected], atol=1e-5)


def test_a_remote_encoder_passed_in_is_recorded_by_name(server, tmp_path):
    remote = RemoteEncoder(f"remote:{server}#{MODEL}?dimensions=64")
    with Collection.create(tmp_path / "c", encoder=remote, tokenizer="word") as made:
        assert made.config["model"] == remote.name and made.config["dim"] == 64
    with Collection.open(tmp_path / "c") as reopened:
        assert reopened.encoder.name == remote.name
        reopened.add(["x"], ["a short note"])
        assert reopened.search("a note", k=1, mode="dense")[0].id == "x"
