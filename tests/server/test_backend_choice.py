"""A server answers at once on torch fp32 while the automatic backend choice is measured in the
background, then switches to it: every request during the switch is answered, and the choice is
the one "auto" caches (what a process that measured in the foreground would run)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

import munjang
from munjang.server import ServerSettings, create_app
from munjang.server.backend_choice import BackgroundChoice, needs_measurement
from tests.helpers.server import LOCAL

TEXTS = ["주가가 급락했다.", "The stock market crashed.", "고양이가 잔다."]


@pytest.mark.slow  # the measurement runs every candidate at low priority: minutes on two busy cores
def test_requests_during_the_background_switch_all_succeed(auto_cache, minilm_path):
    encoder = munjang.load_encoder(minilm_path)
    reference = munjang.load_encoder(minilm_path, backend="torch", precision="fp32").encode(TEXTS)
    assert needs_measurement(encoder)
    # at the default priority: on a machine shared with other jobs, nice 10 can starve for many minutes
    background = BackgroundChoice(BackgroundChoice.provisional({"mini": encoder}), nice=0)
    assert encoder.configuration() == ("torch", "fp32")  # serving at once, exactly
    settings = ServerSettings(models={"mini": encoder}, model_processes=1, background_choice=background)
    answers: list[int] = []
    vectors: list[np.ndarray] = []
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        card = client.get("/v1/models").json()["data"][0]
        assert card["backend"].startswith("measuring in the background")

        def ask() -> None:
            while not background.wait(0):
                answer = client.post("/v1/embeddings", json={"input": TEXTS, "model": "mini"})
                answers.append(answer.status_code)
                if answer.status_code == 200:
                    vectors.append(np.array([row["embedding"] for row in answer.json()["data"]]))
                time.sleep(0.2)  # steady traffic, not a flood that starves the low-priority measurement

        askers = [threading.Thread(target=ask) for _ in range(2)]
        for asker in askers:
            asker.start()
        assert background.wait(900)
        for asker in askers:
            asker.join()
        after = client.post("/v1/embeddings", json={"input": TEXTS, "model": "mini"})
        card = client.get("/v1/models").json()["data"][0]
    assert answers and set(answers) == {200}, answers
    chosen = encoder.known_auto_choice()
    assert chosen is not None
    assert encoder.configuration() == (chosen.backend, chosen.precision)
    assert card["backend"] == f"{chosen.backend} {chosen.precision}, measured in the background"
    assert [key[:2] for key in encoder._backends] == [encoder.configuration()]  # torch fp32 released
    for got in [*vectors, np.array([row["embedding"] for row in after.json()["data"]])]:
        cosines = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(reference, axis=1)
        assert cosines.min() > 0.999
