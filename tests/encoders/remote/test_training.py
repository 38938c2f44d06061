"""A remote model as a training config's teacher: distillation labels and the MSE evaluator's targets
come from the API (the same vectors as the local model's); a remote student is refused."""

from __future__ import annotations

import pytest

from munjang.training.config import ConfigError, build, load_config
from tests.encoders.remote.conftest import MODEL
from tests.training.test_config import TRAINING, write_config


def test_a_remote_teacher_labels_distillation_data(server, encoder, minilm_path, tmp_path):
    teacher = f"remote:{server}#{MODEL}"
    (tmp_path / "par.tsv").write_text("사과\tapple\n고양이\tcat\n", encoding="utf-8")
    config = {
        "model": str(minilm_path),
        "device": "cpu",
        "tasks": [
            {"data": {"path": "par.tsv", "format": "parallel", "teacher": teacher}, "loss": {"name": "mse"}}
        ],
        "evaluator": {"type": "mse", "path": "par.tsv", "teacher": teacher},
        "training": TRAINING,
    }
    trainer, _ = build(load_config(write_config(tmp_path, config)))
    label = trainer.datasets["parallel"][0].label
    assert label == pytest.approx(tuple(encoder.encode("사과").tolist()), abs=1e-5)
    config["model"] = teacher
    with pytest.raises(ConfigError, match="remote API, which cannot be trained"):
        load_config(write_config(tmp_path, config))
