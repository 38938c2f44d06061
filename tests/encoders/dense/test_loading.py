"""Loading and saving: ST folders, plain HF folders, other backbones, the embedded default, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel as HFAutoModel
from transformers import AutoTokenizer, BertConfig, ElectraConfig, RobertaConfig, XLMRobertaConfig

import munjang
from munjang import CorruptModelError, ModelLoadError, ModelNotFoundError
from munjang.modules import Dense

TEXTS = ["형태소 분석기는 필요 없다.", "Backbones differ, pooling does not.", "", "klue/roberta 와 KoELECTRA"]


def test_default_is_the_embedded_minilm(minilm_path: Path) -> None:
    enc = munjang.load_encoder(device="cpu")
    info = enc.describe()
    assert (info["architecture"], info["embedding_dimension"], info["pooling"]) == ("BertModel", 384, "mean")
    assert enc.normalizes
    same = munjang.load_encoder("all-MiniLM-L6-v2", device="cpu")
    np.testing.assert_array_equal(enc.encode(TEXTS), same.encode(TEXTS))


def test_save_load_round_trip_is_exact(tmp_path: Path, minilm_path: Path) -> None:
    enc = munjang.load_encoder(minilm_path, device="cpu", pooling="mean+max")
    dense = Dense(768, 128, activation=torch.nn.Tanh())
    enc = munjang.SentenceEncoder(
        [*list(enc)[:2], dense, munjang.Normalize()],
        prompts={"query": "query: ", "passage": "passage: "},
        default_prompt_name="query",
        similarity_fn_name="dot",
        device="cpu",
    )
    enc.max_seq_length = 128
    enc.save(tmp_path / "m")
    again = munjang.load_encoder(tmp_path / "m", device="cpu")
    np.testing.assert_array_equal(enc.encode(TEXTS), again.encode(TEXTS))
    assert again.describe() == enc.describe()
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Dense", "3_Normalize"]
    # sentence-transformers reads the Dense module and the prompts too.
    st = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    np.testing.assert_allclose(st.encode(TEXTS, prompt_name="query"), enc.encode(TEXTS), atol=1e-5)


def test_plain_hf_folder_gets_mean_pooling(tmp_path: Path, minilm_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(minilm_path / name, plain / name)
    enc = munjang.load_encoder(plain, device="cpu")
    assert enc.describe()["pooling"] == "mean" and not enc.normalizes
    st = SentenceTransformer(str(minilm_path), device="cpu")
    ref = st.encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(enc.encode(TEXTS, normalize_embeddings=True), ref, atol=1e-5)
    assert munjang.load_encoder(plain, device="cpu", pooling="cls").get_embedding_dimension() == 384


def _tiny(tmp_path: Path, kind: str, tokenizer_dir: Path) -> Path:
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    common = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    if kind == "bert":
        config = BertConfig(vocab_size=len(tokenizer), **common)
    elif kind == "electra":
        config = ElectraConfig(vocab_size=len(tokenizer), embedding_size=16, **common)
    elif kind == "roberta":
        config = RobertaConfig(
            vocab_size=len(tokenizer), pad_token_id=1, max_position_embeddings=514, **common
        )
    else:
        config = XLMRobertaConfig(
            vocab_size=len(tokenizer), pad_token_id=1, max_position_embeddings=514, **common
        )
    torch.manual_seed(0)
    model = HFAutoModel.from_config(config)
    folder = tmp_path / kind
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize(  # roberta and xlm-roberta take ~10 s each: with -m slow
    "kind",
    [
        "bert",
        "electra",
        pytest.param("roberta", marks=pytest.mark.slow),
        pytest.param("xlm-roberta", marks=pytest.mark.slow),
    ],
)
def test_any_automodel_backbone(kind: str, tmp_path: Path, minilm_path: Path, e5_path: Path) -> None:
    """BERT, ELECTRA (KoELECTRA), RoBERTa (klue/roberta), XLM-R (e5): each against sentence-transformers."""
    tokenizer_dir = minilm_path if kind in ("bert", "electra") else e5_path
    folder = _tiny(tmp_path, kind, tokenizer_dir)
    enc = munjang.load_encoder(folder, device="cpu", pooling="cls+max+mean")
    if kind in ("roberta", "xlm-roberta"):
        assert enc.max_seq_length == 512  # 514 positions, 2 reserved
        assert "token_type_ids" not in enc.transformer.collate(enc.transformer.tokenize(TEXTS), [0])
    st = SentenceTransformer(str(folder), device="cpu")
    pooling_cls = type(st[1])
    st = SentenceTransformer(
        modules=[st[0], pooling_cls(32, pooling_mode=("cls", "max", "mean"))], device="cpu"
    )
    np.testing.assert_allclose(enc.encode(TEXTS), st.encode(TEXTS), atol=1e-5)


def test_missing_folder_and_file_instead_of_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no such model folder"):
        munjang.load_encoder(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelNotFoundError, match="is a file"):
        munjang.load_encoder(tmp_path / "file")
    with pytest.raises(ModelLoadError, match="neither modules.json nor config.json"):
        munjang.load_encoder(tmp_path)


def test_hub_id_offline_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelNotFoundError, match="local_files_only is set.*huggingface-cli download"):
        munjang.load_encoder("jhgan/ko-sbert-nli", local_files_only=True, cache_folder=str(tmp_path))


def _copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_corrupt_safetensors_is_named(tmp_path: Path, minilm_path: Path) -> None:
    folder = _copy_model(minilm_path, tmp_path / "m")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(CorruptModelError, match=r"model\.safetensors: corrupt or truncated"):
        munjang.load_encoder(folder)


def test_corrupt_or_incomplete_configs(tmp_path: Path, minilm_path: Path) -> None:
    folder = _copy_model(minilm_path, tmp_path / "m")
    (folder / "modules.json").write_text("[{not json")
    with pytest.raises(CorruptModelError, match=r"modules\.json: not valid JSON"):
        munjang.load_encoder(folder)
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "path": "", "type": "x.y.LSTM"}]))
    with pytest.raises(ModelLoadError, match="module type 'x.y.LSTM'"):
        munjang.load_encoder(folder)
    shutil.rmtree(folder / "1_Pooling")
    (folder / "modules.json").write_text((minilm_path / "modules.json").read_text())
    with pytest.raises(ModelLoadError, match="'1_Pooling' listed in modules.json is missing"):
        munjang.load_encoder(folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no weights"):
        munjang.load_encoder(folder)


def test_remote_code_is_refused_unless_trusted(tmp_path: Path, minilm_path: Path) -> None:
    folder = _copy_model(minilm_path, tmp_path / "m")
    marker = tmp_path / "remote-code-ran"
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "evil-bert"
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel", "AutoConfig": "modeling_evil.EvilConfig"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    with pytest.raises(ModelLoadError, match="trust_remote_code"):
        munjang.load_encoder(folder)
    assert not marker.exists()


def test_pooling_override_that_breaks_a_dense_layer_is_refused(tmp_path: Path, minilm_path: Path) -> None:
    enc = munjang.load_encoder(minilm_path, device="cpu")
    enc = munjang.SentenceEncoder([*list(enc)[:2], Dense(384, 16)], device="cpu")
    enc.save(tmp_path / "d")
    with pytest.raises(ValueError, match="Dense layer expects 384"):
        munjang.load_encoder(tmp_path / "d", pooling="mean+max")
