"""Collections of a served model encode with the served encoder: one copy of its weights, however
many collections a server opens."""

from __future__ import annotations

import shutil

from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from munjang.server.served_encoders import served_encoder_for
from tests.helpers.server import LOCAL


def _collection(folder, model, encoder) -> None:
    with Collection.create(folder, model, encoder=encoder) as collection:
        collection.add(["cat", "stock"], ["고양이가 소파에서 잔다.", "주식 시장이 폭락했다."])


def test_collections_of_a_served_model_share_its_encoder(encoder, minilm_path, tmp_path):
    root = tmp_path / "collections"
    # the embedded default recorded three ways: "default", its folder, its name
    _collection(root / "by-default", None, encoder)
    _collection(root / "by-folder", minilm_path, encoder)
    _collection(root / "by-name", "all-MiniLM-L6-v2", encoder)
    copy = shutil.copytree(minilm_path, tmp_path / "another-model")  # same weights, another folder
    _collection(root / "other", copy, encoder)
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=root))
    with TestClient(app, base_url=LOCAL) as client:
        for name in ["by-default", "by-folder", "by-name", "other"]:
            hits = client.post(f"/v1/collections/{name}/search", json={"query": "증시 급락", "mode": "dense"})
            assert hits.status_code == 200, hits.text
            assert hits.json()["data"][0]["id"] == "stock"
        served = app.state.collections
        for name in ["by-default", "by-folder", "by-name"]:
            assert served[name].collection.encoder is encoder, name
        assert served["other"].collection.encoder is not encoder  # another folder loads its own


def test_an_unknown_record_matches_no_served_encoder(encoder):
    assert served_encoder_for("no-such-model-anywhere", {"mini": encoder}) is None
    assert served_encoder_for("default", {"mini": encoder}) is encoder
