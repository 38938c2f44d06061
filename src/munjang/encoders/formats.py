"""The sentence-transformers folder layout, read and written.

    modules.json                      ordered list of {idx, name, path, type}
    config_sentence_transformers.json prompts, default_prompt_name, similarity_fn_name
    sentence_bert_config.json         max_seq_length, do_lower_case (Transformer, at the root)
    1_Pooling/config.json             pooling modes (classic boolean keys, or `pooling_mode`)
    2_Dense/config.json + weights     optional projection
    model.safetensors + tokenizer.json  StaticEmbedding in place of the Transformer (no config)
    config.json (clip) + processor    CLIPModel in place of the Transformer (texts and images)
    3_Normalize/                      optional, empty
    1_SpladePooling/config.json       a sparse (SPLADE) encoder's pooling, after an MLMTransformer
    router_config.json + <route>_<i>_<Class>/  a Router (inference-free SPLADE: queries and documents apart)

Both the classic type names (`sentence_transformers.models.Pooling`) and the newer ones
(`sentence_transformers.sentence_transformer.modules.pooling.Pooling`, ...) load; munjang writes the
classic names, which every sentence-transformers release reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._util.json_files import read_json, write_json
from ..errors import ModelLoadError
from ..modules import (
    Dense,
    Dropout,
    MLMTransformer,
    Module,
    Normalize,
    Pooling,
    Router,
    SparseStaticEmbedding,
    SpladePooling,
    StaticEmbedding,
    Transformer,
)
from ..modules.causal_lm import CausalLMTransformer
from ..modules.clip import CLIPModel, is_clip_folder
from ..modules.logit_score import LogitScore
from .settings import SIMILARITY_FUNCTIONS as SIMILARITY_FUNCTIONS
from .settings import EncoderSettings as EncoderSettings
from .settings import library_versions as library_versions

MODULE_CLASSES: dict[str, type[Module]] = {
    "Transformer": Transformer,
    "Pooling": Pooling,
    "Dense": Dense,
    "Dropout": Dropout,
    "Normalize": Normalize,
    "StaticEmbedding": StaticEmbedding,
    "CLIPModel": CLIPModel,
    "MLMTransformer": MLMTransformer,
    "SpladePooling": SpladePooling,
    "SparseStaticEmbedding": SparseStaticEmbedding,
    "Router": Router,
    "LogitScore": LogitScore,
}
# The modules that read text themselves: saved at the model root, as sentence-transformers saves them.
_ROOT_MODULES = (Transformer, StaticEmbedding, CLIPModel, SparseStaticEmbedding, Router)
# Old sentence-transformers names for the transformer module.
# How a classical encoder's folder marks itself in config_sentence_transformers.json.
CLASSICAL_MODEL_TYPE = "ClassicalEncoder"
_TRANSFORMER_ALIASES = {"BERT", "RoBERTa", "XLMRoBERTa", "DistilBERT", "ALBERT", "XLNet", "T5", "CamemBERT"}


def is_cross_encoder_folder(folder: Path) -> bool:
    """Whether a model folder holds a cross-encoder (sentence-transformers marks it, or a
    `*ForSequenceClassification` checkpoint) rather than a sentence encoder."""
    settings = folder / "config_sentence_transformers.json"
    if settings.exists() and read_json(settings).get("model_type") == "CrossEncoder":
        return True
    config = folder / "config.json"
    if config.exists() and not (folder / "modules.json").exists():
        architectures = read_json(config).get("architectures") or []
        return any(str(a).endswith("ForSequenceClassification") for a in architectures)
    return False


def is_sparse_encoder_folder(folder: Path) -> bool:
    """Whether a model folder holds a sparse (SPLADE) encoder, as sentence-transformers marks one."""
    settings = folder / "config_sentence_transformers.json"
    return settings.exists() and read_json(settings).get("model_type") == "SparseEncoder"


def is_classical_folder(folder: Path) -> bool:
    """Whether a model folder holds a classical encoder (one-hot, bag of words, TF-IDF, word2vec),
    fitted by munjang and marked `model_type: "ClassicalEncoder"`."""
    settings = folder / "config_sentence_transformers.json"
    return settings.exists() and read_json(settings).get("model_type") == CLASSICAL_MODEL_TYPE


def module_class(type_name: str) -> type[Module]:
    """Map a modules.json `type` (any sentence-transformers generation) to a munjang module class."""
    short = type_name.rsplit(".", 1)[-1]
    if short in _TRANSFORMER_ALIASES:
        short = "Transformer"
    if short not in MODULE_CLASSES:
        raise ModelLoadError(
            f"modules.json names module type {type_name!r}, which munjang does not support "
            f"(supported: {', '.join(MODULE_CLASSES)})"
        )
    return MODULE_CLASSES[short]


def read_modules(folder: Path, **load_kwargs: Any) -> list[Module]:
    """Load every module listed in `folder/modules.json`, in order."""
    entries = read_json(folder / "modules.json")
    if not isinstance(entries, list) or not entries:
        raise ModelLoadError(f"{folder / 'modules.json'}: expected a non-empty list of modules")
    where = folder / "modules.json"
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise ModelLoadError(f"{where}: entry {i} is not an object with a 'type' ({entry!r})")
        if not isinstance(entry.get("path", ""), str) or not isinstance(entry.get("idx", 0), int):
            raise ModelLoadError(f"{where}: entry {i}: 'path' must be text and 'idx' a number")
    settings = folder / "config_sentence_transformers.json"
    kind = read_json(settings).get("model_type") if settings.exists() else None
    if kind in ("MultiVectorEncoder", "ColBERT") or any("MultiVectorMask" in str(e["type"]) for e in entries):
        raise ModelLoadError(
            f"{folder} holds a multi-vector (ColBERT) model; load it with munjang.load_multi_vector_encoder"
        )
    root = folder.resolve()
    modules: list[Module] = []
    for entry in sorted(entries, key=lambda e: int(e.get("idx", 0))):
        cls = module_class(str(entry.get("type", "")))
        sub = folder / str(entry.get("path", ""))
        if cls is Transformer and is_clip_folder(sub):  # how sentence-transformers v5.4+ types CLIP
            cls = CLIPModel
        if Path(str(entry.get("path", ""))).is_absolute() or not sub.resolve().is_relative_to(root):
            raise ModelLoadError(
                f"{where}: module path {entry.get('path')!r} points outside the model folder"
            )
        if cls not in (Normalize, Dropout) and not sub.is_dir():
            raise ModelLoadError(
                f"{folder}: module folder {entry.get('path')!r} listed in modules.json is missing"
            )
        if cls is Pooling and not (sub / "config.json").exists():
            raise ModelLoadError(f"{sub}: pooling module has no config.json")
        modules.append(load_module(cls, sub, **load_kwargs))
    return modules


def load_module(cls: type[Module], folder: Path, **load_kwargs: Any) -> Module:
    """Load one module; a Transformer saved with `transformer_task: "fill-mask"` (sentence-transformers
    6) is an MLMTransformer, and a Router loads its routes' modules through the same table."""
    if cls is Transformer:
        st_file = folder / "sentence_bert_config.json"
        task = read_json(st_file).get("transformer_task") if st_file.exists() else None
        if task == "fill-mask":
            cls = MLMTransformer
        elif task == "text-generation":  # an LLM reranker (sentence-transformers >= 5.4)
            cls = CausalLMTransformer
    if cls is Router:
        return Router.load(folder, load=lambda name, sub: load_module(module_class(name), sub, **load_kwargs))
    return cls.load(folder, **load_kwargs)


def write_modules(folder: Path, modules: list[Module]) -> None:
    """Save each module into its own sub-folder and list them in `modules.json`."""
    entries = []
    for idx, module in enumerate(modules):
        # Input modules live at the root, as sentence-transformers saves them.
        sub = "" if isinstance(module, _ROOT_MODULES) else f"{idx}_{type(module).__name__}"
        module.save(folder / sub)
        entries.append({"idx": idx, "name": str(idx), "path": sub, "type": module.st_type})
    write_json(folder / "modules.json", entries)


def read_encoder_folder(folder: Path, load_kwargs: dict[str, Any]) -> tuple[list[Module], EncoderSettings]:
    """The modules and settings of a sentence-encoder folder: a sentence-transformers folder, a plain
    Hugging Face CLIP checkpoint (one module, as sentence-transformers builds it) or a plain encoder
    (mean pooling). A cross-encoder or sparse folder is refused, naming the loader that takes it."""
    if is_cross_encoder_folder(folder):
        raise ModelLoadError(
            f"{folder} holds a cross-encoder (it scores text pairs, it does not embed sentences); "
            "load it with munjang.load_cross_encoder"
        )
    if is_sparse_encoder_folder(folder):
        raise ModelLoadError(
            f"{folder} holds a sparse (SPLADE) encoder; load it with munjang.load_sparse_encoder"
        )
    if is_classical_folder(folder):
        raise ModelLoadError(
            f"{folder} holds a classical encoder (one-hot, bag of words, TF-IDF or word2vec); "
            "load it with munjang.load_embedder (collections and munjang eval take it by its folder; "
            "a server serves a term model with --sparse-model)"
        )
    if (folder / "modules.json").exists():
        modules = read_modules(folder, **load_kwargs)
        settings = EncoderSettings.read(folder)
    elif is_clip_folder(folder):
        modules = [CLIPModel.load(folder, **load_kwargs)]
        settings = EncoderSettings()
    elif (folder / "config.json").exists():
        transformer = Transformer.load(folder, **load_kwargs)
        modules = [transformer, Pooling(transformer.hidden_size, "mean")]
        settings = EncoderSettings()
    else:
        raise ModelLoadError(f"{folder}: neither modules.json nor config.json, so it is not a model folder")
    return modules, settings
