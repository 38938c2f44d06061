"""SparseStaticEmbedding: the query side of an inference-free SPLADE model.

A query's vector is one learned weight (an IDF-like value) per vocabulary entry its tokens hit:

    v_j = weight_j  if token j occurs in the text (special tokens not added), else 0

so a query costs a tokenization and no transformer, while documents go through the MLM path once at
indexing time. Saved as sentence-transformers saves it: `config.json` ({"frozen": ...}),
`model.safetensors` holding `weight` (vocab,) and the tokenizer files.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..errors import CorruptModelError, ModelLoadError
from .base import Features, Module, load_safetensors_state, read_json, write_json
from .transformer import pad_batch

# Tokenizers report "no limit" as a huge sentinel; anything above this is treated as no truncation.
_NO_LIMIT = 1_000_000


class SparseStaticEmbedding(Module):
    """Token presence times a learned per-token weight; produces `sentence_embedding` (batch, vocab).

    `tokenizer` is a transformers fast tokenizer (it is saved beside the weights, as
    sentence-transformers expects); `weight` defaults to ones over the tokenizer's vocabulary.
    """

    st_type: ClassVar[str] = "sentence_transformers.sparse_encoder.models.SparseStaticEmbedding"
    folder_name: ClassVar[str] = ""

    def __init__(self, tokenizer: Any, weight: torch.Tensor | None = None, frozen: bool = False) -> None:
        super().__init__()
        if not getattr(tokenizer, "is_fast", False):
            raise TypeError("SparseStaticEmbedding needs a fast (Rust) tokenizer")
        self.tokenizer = tokenizer
        vocab = len(tokenizer.get_vocab())
        values = torch.ones(vocab) if weight is None else torch.as_tensor(weight).detach().float().clone()
        if values.ndim != 1 or values.shape[0] < vocab:
            raise ValueError(f"weight must be 1-D with at least {vocab} entries, not {tuple(values.shape)}")
        self.weight = torch.nn.Parameter(values, requires_grad=not frozen)
        self.frozen = frozen
        limit = getattr(tokenizer, "model_max_length", None)
        self.max_seq_length: int = int(limit) if limit and limit < _NO_LIMIT else 2**31 - 1
        pad_id = tokenizer.pad_token_id
        self.pad_token_id: int = int(pad_id) if pad_id is not None else 0
        self._tokenizer_lock = threading.Lock()

    @property
    def output_dimension(self) -> int:
        return int(self.weight.shape[0])

    def tokenize(self, texts: Sequence[str], truncate: bool = True) -> dict[str, list[list[int]]]:
        """Token ids per text, without special tokens (sentence-transformers adds none here)."""
        rust = self.tokenizer.backend_tokenizer
        with self._tokenizer_lock:  # fast tokenizers are not safe to reconfigure from several threads
            if truncate:
                rust.enable_truncation(self.max_seq_length)
            else:
                rust.no_truncation()
            rust.no_padding()
            encode = getattr(rust, "encode_batch_fast", rust.encode_batch)  # the same ids, no offsets
            encodings = encode(list(texts), add_special_tokens=False)
        return {"input_ids": [e.ids for e in encodings]}

    def collate(self, encoded: dict[str, list[list[int]]], rows: Any) -> dict[str, torch.Tensor]:
        return pad_batch(encoded, rows, self.pad_token_id)

    def forward(self, features: Features) -> Features:
        ids = features["input_ids"]
        present = torch.zeros(ids.shape[0], self.output_dimension, device=ids.device, dtype=self.weight.dtype)
        present.scatter_add_(1, ids, features["attention_mask"].to(self.weight.dtype))
        features["sentence_embedding"] = (present > 0).to(self.weight.dtype) * self.weight
        return features

    def get_config_dict(self) -> dict[str, Any]:
        return {"frozen": self.frozen}

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save_pretrained(str(path))
        save_file({"weight": self.weight.detach().cpu().contiguous()}, str(path / "model.safetensors"))
        write_json(path / "config.json", self.get_config_dict())

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> SparseStaticEmbedding:
        from transformers import AutoTokenizer

        path = Path(path)
        weights = path / "model.safetensors"
        if not weights.exists():
            raise ModelLoadError(f"{path}: no model.safetensors (the per-token weights)")
        state = load_safetensors_state(weights)
        if "weight" not in state:
            raise CorruptModelError(f"{weights}: holds no 'weight' tensor")
        config_file = path / "config.json"
        config = read_json(config_file) if config_file.exists() else {}
        if config.get("path"):
            raise ModelLoadError(f"{config_file}: weights given as an IDF JSON file are not supported")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), use_fast=True)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"{path}: could not load the tokenizer ({e})") from e
        try:
            return cls(tokenizer, state["weight"], frozen=bool(config.get("frozen", False)))
        except (TypeError, ValueError) as e:
            raise ModelLoadError(f"{path}: {e}") from e

    def extra_repr(self) -> str:
        return f"vocab={self.output_dimension}, frozen={self.frozen}"
