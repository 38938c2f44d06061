"""schemathesis against the served OpenAPI spec: generated requests (valid and invalid) for every
operation never get a 5xx answer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

schemathesis = pytest.importorskip("schemathesis")

from munjang import load_sparse_encoder  # noqa: E402
from munjang.server import ServerSettings, create_app  # noqa: E402
from tests.helpers.sparse import munjang_splade  # noqa: E402


def test_no_operation_answers_5xx(encoder, tmp_path):
    # schemathesis's ASGI client sends `Host: testserver`: allowed, as a deployment adds its own name
    sparse = load_sparse_encoder(munjang_splade(tmp_path / "models" / "splade"), device="cpu")
    served = ServerSettings(
        models={"mini": encoder},
        sparse_models={"splade": sparse},
        collections_dir=tmp_path,
        allowed_hosts=("testserver",),
    )
    app = create_app(served)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    checked = []
    statuses: dict[str, set[int]] = {}
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def no_server_error(case):
            response = case.call()
            statuses.setdefault(f"{case.method} {case.path}", set()).add(response.status_code)
            assert response.status_code < 500, (case.method, case.path, case.body, response.text)

        no_server_error()
        checked.append(f"{operation.method.upper()} {operation.path}")
    assert "POST /v1/embeddings" in checked and "POST /v1/collections/{name}/search" in checked
    assert len(checked) >= 10
    assert 200 in statuses["POST /v1/embeddings"], statuses  # valid bodies were generated too
    assert 200 in statuses["POST /v1/tokenize"], statuses
    assert 200 in statuses["POST /v1/sparse_embeddings"], statuses
