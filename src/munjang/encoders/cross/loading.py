"""Loading a cross-encoder from any of the layouts sentence-transformers' CrossEncoder reads or writes.

- sentence-transformers >= 6: `modules.json` (one sequence-classification Transformer, or a Transformer
  followed by a head that writes `scores`) and `config_sentence_transformers.json` (`activation_fn`);
- sentence-transformers 4 and 5, and every published reranker: a plain `*ForSequenceClassification`
  folder, the activation in `config.json` (`sentence_transformers.activation_fn`, or
  `sbert_ce_default_activation_function` before 4.0);
- a plain encoder (e5, KLUE-BERT, ...) or a bi-encoder folder: the transformer gets a new head.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...errors import ModelLoadError
from ...models.hub import resolve_model_path
from ...modules import Dense, Module, Transformer
from ...modules.base import read_json
from ...modules.dense import activation_from_name
from ...modules.logit_score import LogitScore
from ..formats import EncoderSettings, read_modules
from .model import HEADS, CrossEncoder, seeds_head

RERANK_BACKEND_ENV = "MUNJANG_RERANK_BACKEND"


def _saved_activation(folder: Path, trust_remote_code: bool) -> nn.Module | None:
    names = []
    settings = folder / "config_sentence_transformers.json"
    if settings.exists():
        names.append(read_json(settings).get("activation_fn"))
    config = read_json(folder / "config.json") if (folder / "config.json").exists() else {}
    names.append((config.get("sentence_transformers") or {}).get("activation_fn"))
    names.append(config.get("sbert_ce_default_activation_function"))
    name = next((n for n in names if n), None)
    return activation_from_name(name, trust_remote_code) if name else None


def _is_sequence_classifier(folder: Path) -> bool:
    config = read_json(folder / "config.json") if (folder / "config.json").exists() else {}
    return any(str(a).endswith("ForSequenceClassification") for a in config.get("architectures") or [])


def _writes_scores(modules: list[Module]) -> bool:
    last = modules[-1]
    if isinstance(last, LogitScore):  # an LLM reranker: next-token log-odds (sentence-transformers >= 5.4)
        return True
    if isinstance(last, Transformer):
        return last.task == "sequence-classification"
    return isinstance(last, Dense) and last.output_name == "scores"


def load_cross_encoder(
    name_or_path: str | os.PathLike[str],
    *,
    num_labels: int | None = None,
    head: str = "auto",
    dropout: float | None = None,
    activation: nn.Module | None = None,
    device: str | torch.device | None = None,
    max_seq_length: int | None = None,
    trust_remote_code: bool = False,
    local_files_only: bool = False,
    revision: str | None = None,
    cache_folder: str | None = None,
    token: str | bool | None = None,
    dtype: str | torch.dtype = torch.float32,
    backend: str | None = None,
    precision: str = "fp32",
) -> CrossEncoder:
    """Load a cross-encoder from a folder or hub id.

    `head`: "auto" keeps a saved head (native or SBERT) and puts the SBERT head (dropout -> dense ->
    GELU -> dropout -> projection on [CLS]) on a plain encoder; "seeds" always builds a new SBERT head;
    "native" uses the architecture's `*ForSequenceClassification` head (loaded when saved, new
    otherwise). `num_labels` sets the size of a new head (default 1) and must match a saved one.
    `activation` overrides the saved one (default: sigmoid for one label, identity for several).
    `backend="openvino"` (with `precision` "fp32" or "bf16") runs `predict` on OpenVINO, "auto" on
    the fastest backend measured to keep torch fp32's scores (`CrossEncoder.set_backend`); unset,
    `$MUNJANG_RERANK_BACKEND` ("auto", "openvino:bf16", ...) chooses (so `munjang serve --reranker`
    can), else torch.
    """
    if head not in HEADS:
        raise ValueError(f"head must be one of {', '.join(HEADS)}, not {head!r}")
    if num_labels is not None and num_labels < 1:
        raise ValueError(f"num_labels must be at least 1, not {num_labels}")
    folder = resolve_model_path(
        name_or_path,
        revision=revision,
        cache_folder=cache_folder,
        local_files_only=local_files_only,
        token=token,
    )
    if not (folder / "config.json").exists() and not (folder / "modules.json").exists():
        raise ModelLoadError(f"{folder}: neither modules.json nor config.json, so it is not a model folder")
    load_kwargs: dict[str, Any] = {
        "trust_remote_code": trust_remote_code,
        "dtype": dtype,
        "max_seq_length": max_seq_length,
    }
    saved_activation = _saved_activation(folder, trust_remote_code)
    modules: list[Module] | None = None
    complete = False  # every weight read from the folder (none newly initialised)
    backbone: Transformer | None = None
    if head != "native" and (folder / "modules.json").exists():
        candidate = read_modules(folder, **load_kwargs)
        if head == "auto" and _writes_scores(candidate):
            modules, complete = candidate, True
        elif isinstance(candidate[0], Transformer) and candidate[0].task == "feature-extraction":
            backbone = candidate[0]  # a bi-encoder's transformer, wherever its folder is
    if modules is None and head in ("auto", "native") and _is_sequence_classifier(folder):
        modules = [Transformer.load(folder, task="sequence-classification", **load_kwargs)]
        complete = True
    if modules is None and head == "native":
        config_kwargs = {"num_labels": num_labels or 1}
        modules = [
            Transformer.load(
                folder, task="sequence-classification", config_kwargs=config_kwargs, **load_kwargs
            )
        ]
    if modules is None:  # a new SBERT head on the folder's transformer
        transformer = backbone or Transformer.load(folder, task="feature-extraction", **load_kwargs)
        config = transformer.auto_model.config
        configured: Any = getattr(config, "classifier_dropout", None) or getattr(
            config, "hidden_dropout_prob", 0.1
        )
        p = float(configured) if dropout is None else dropout
        head_modules = seeds_head(
            transformer.hidden_size,
            num_labels or 1,
            float(p),
            float(getattr(config, "initializer_range", 0.02)),
        )
        modules = [transformer, *head_modules]
        saved_activation = None  # a new head has no saved activation
    settings = EncoderSettings.read(folder)
    model = CrossEncoder(
        modules,
        activation or saved_activation,
        device=device,
        base_model=str(name_or_path),
        prompts=settings.prompts,
        default_prompt_name=settings.default_prompt_name,
    )
    if complete and num_labels in (None, model.num_labels):
        model.mark_weights_from_folder()
    if backend is None and os.environ.get(RERANK_BACKEND_ENV):
        backend, _, chosen = os.environ[RERANK_BACKEND_ENV].partition(":")
        precision = chosen or precision
    if backend not in (None, "torch"):
        model.set_backend(backend, precision)
    if num_labels is not None and model.num_labels != num_labels:
        raise ModelLoadError(
            f"{folder}: the saved head has {model.num_labels} labels, not {num_labels}; "
            'pass head="seeds" or head="native" to train a new head'
        )
    return model
