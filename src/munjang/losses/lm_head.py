"""Language-model heads over a sentence encoder's backbone, for the objectives that predict tokens
(TSDAE's decoder, continued masked-language-model pretraining).

A munjang encoder holds only the backbone (`AutoModel`): checkpoints saved that way have no head. The
head is built from the backbone's config with its output projection tied to the word embeddings (as
in BERT and XLM-R), and its other weights (the transform before the projection, the bias) are read
from the encoder's own checkpoint where it kept them (a folder saved from `*ForMaskedLM`), else
initialised as transformers initialises a new head.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


def backbone_folder(backbone: nn.Module) -> Path | None:
    """The folder the backbone was loaded from, when transformers recorded one that still exists."""
    name = getattr(getattr(backbone, "config", None), "_name_or_path", "") or ""
    folder = Path(name)
    return folder if name and folder.is_dir() else None


def head_children(lm_model: nn.Module) -> list[str]:
    """The names of an LM model's top-level modules other than its backbone (e.g. "cls", "lm_head")."""
    prefix = getattr(lm_model, "base_model_prefix", "")
    return [name for name, _ in lm_model.named_children() if name != prefix]


def load_head_weights(lm_model: nn.Module, folder: Path | None) -> list[str]:
    """Copy the head weights found in `folder`'s safetensors files into `lm_model`; their names.

    Only the head's own tensors are read (keys under `head_children`); a tensor tied to the word
    embeddings is skipped, so the backbone is never overwritten. No safetensors file, or no head in
    it, leaves the new head as initialised and returns [].
    """
    if folder is None:
        return []
    from safetensors import safe_open

    heads = tuple(f"{name}." for name in head_children(lm_model))
    params: dict[str, torch.Tensor] = dict(lm_model.named_parameters(remove_duplicate=False))
    params.update(dict(lm_model.named_buffers()))
    embeddings = getattr(lm_model, "get_input_embeddings", None)
    tied = embeddings().weight if callable(embeddings) else None
    loaded: list[str] = []
    for weights in sorted(folder.glob("*.safetensors")):
        with safe_open(str(weights), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                target = params.get(key)
                if not key.startswith(heads) or target is None or target is tied:
                    continue
                value = f.get_tensor(key)
                if value.shape != target.shape:
                    continue
                with torch.no_grad():
                    target.copy_(value.to(target.dtype))
                loaded.append(key)
    return loaded


def share_backbone(source: nn.Module, target: nn.Module) -> int:
    """Make `target`'s parameters the very tensors of `source` wherever the names match (the decoder
    side of a tied encoder–decoder); parameters only `target` has (cross-attention) stay its own.
    Returns the number shared."""
    modules = dict(source.named_modules())
    shared = 0
    for name, _ in list(target.named_parameters()):
        module_name, _, attr = name.rpartition(".")
        owner = target.get_submodule(module_name) if module_name else target
        donor = modules.get(module_name)
        param = getattr(donor, attr, None) if donor is not None else None
        if isinstance(param, nn.Parameter) and param.shape == getattr(owner, attr).shape:
            setattr(owner, attr, param)
            shared += 1
    return shared
