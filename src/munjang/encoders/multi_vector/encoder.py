"""MultiVectorEncoder: a transformer whose every token vector is kept (projected, unit length), for
late interaction (ColBERT): queries and documents become token matrices scored with MaxSim.

Loads sentence-transformers >= 6 `MultiVectorEncoder` folders and PyLate ColBERT folders (see
settings.py for what each stores), and saves the sentence-transformers layout, which both
sentence-transformers and munjang load.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..._util.devices import resolve_device
from ...errors import ModelLoadError
from ...models.hub import resolve_model_path
from ...modules import Transformer
from ...modules.base import read_json, write_json
from ..formats import library_versions
from ..m3.encoder import is_m3_folder, load_m3_encoder
from ..m3.views import M3MultiVectorView
from .maxsim import maxsim
from .projection import ST_TYPE as DENSE_TYPE
from .projection import TokenProjection
from .settings import LateInteractionSettings, QueryExpansion, is_multi_vector_folder, read_settings
from .tokens import pad_ids, plan_for, token_id_lists

ST_TYPES = {
    "transformer": "sentence_transformers.base.modules.transformer.Transformer",
    "mask": "sentence_transformers.multi_vector_encoder.modules.multi_vector_mask.MultiVectorMask",
    "normalize": "sentence_transformers.base.modules.normalize.Normalize",
}
_KNOWN_TYPES = {"Transformer", "Dense", "MultiVectorMask", "Normalize", "BERT", "XLMRoBERTa", "RoBERTa"}


class MultiVectorEncoder(nn.Module):
    """Transformer → token projection → unit token vectors; `encode_query` / `encode_document` give
    one (tokens, dim) matrix per text, `similarity` scores them with MaxSim."""

    def __init__(
        self,
        transformer: Transformer,
        projection: TokenProjection | None = None,
        settings: LateInteractionSettings | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        super().__init__()
        self.transformer = transformer
        self.projection = projection
        self.settings = settings or LateInteractionSettings()
        self.settings.check()
        if projection is not None and projection.in_features != transformer.hidden_size:
            raise ValueError(
                f"the projection reads {projection.in_features}-d tokens, the transformer gives "
                f"{transformer.hidden_size}"
            )
        self.model_folder: Path | None = None
        self.to(resolve_device(device))
        self.eval()

    @classmethod
    def from_transformer(
        cls,
        transformer: Transformer,
        dim: int = 128,
        query_length: int = 32,
        document_length: int = 180,
        skiplist_words: Sequence[str] = (),
        prompts: dict[str, str] | None = None,
        seed: int = 0,
    ) -> MultiVectorEncoder:
        """A new ColBERT on top of a transformer: a random `dim` projection and query expansion to
        `query_length` tokens (it needs training before it is useful)."""
        torch.manual_seed(seed)
        settings = LateInteractionSettings(
            document_length=document_length,
            expansion=QueryExpansion(length=query_length),
            skiplist_words=list(skiplist_words),
            prompts=dict(prompts or {}),
        )
        return cls(transformer, TokenProjection(transformer.hidden_size, dim), settings)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def tokenizer(self) -> Any:
        return self.transformer.tokenizer

    def get_embedding_dimension(self) -> int:
        return self.projection.out_features if self.projection is not None else self.transformer.hidden_size

    # -- tokens and forward ---------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str], task: str, prompt: str | None = None) -> dict[str, torch.Tensor]:
        """The padded batch for `forward`: ids, attention mask, and `score_mask` (scored tokens)."""
        plan = plan_for(task, self.settings, self.tokenizer, self.transformer.max_seq_length, prompt)
        ids = token_id_lists(self.tokenizer, texts, plan, self.transformer.do_lower_case)
        return pad_ids(ids, plan, self.transformer.pad_token_id, self.transformer._wants_token_type_ids)

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """(batch, tokens, dim) token vectors of a `tokenize` batch (with gradients when training)."""
        inputs = {k: v.to(self.device) for k, v in features.items() if k != "score_mask"}
        tokens = self.transformer(inputs)["token_embeddings"]
        if self.projection is not None:
            tokens = self.projection(tokens)
        if self.settings.normalize:
            tokens = F.normalize(tokens, p=2, dim=-1)
        return tokens

    def _encode(
        self, texts: Sequence[str] | str, task: str, batch_size: int, prompt: str | None
    ) -> list[np.ndarray] | np.ndarray:
        single = isinstance(texts, str)
        items = [texts] if isinstance(texts, str) else list(texts)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        order = np.argsort([-len(t) for t in items], kind="stable")
        out: list[np.ndarray] = [np.zeros((0, 0), np.float32)] * len(items)
        with torch.inference_mode():
            for start in range(0, len(items), batch_size):
                rows = order[start : start + batch_size]
                batch = self.tokenize([items[i] for i in rows], task, prompt)
                tokens = self(batch).float().cpu()
                for r, i in enumerate(rows):
                    out[i] = tokens[r][batch["score_mask"][r]].numpy()
        return out[0] if single else out

    def encode_query(
        self, texts: Sequence[str] | str, batch_size: int = 32, prompt: str | None = None
    ) -> list[np.ndarray] | np.ndarray:
        """One (tokens, dim) float32 matrix per query (expansion tokens included)."""
        return self._encode(texts, "query", batch_size, prompt)

    def encode_document(
        self, texts: Sequence[str] | str, batch_size: int = 32, prompt: str | None = None
    ) -> list[np.ndarray] | np.ndarray:
        """One (tokens, dim) float32 matrix per document (skiplist tokens left out)."""
        return self._encode(texts, "document", batch_size, prompt)

    def similarity(self, queries: Any, documents: Any) -> np.ndarray:
        """(queries, documents) MaxSim (or MeanMaxSim, as the model says) of encoded token sets."""
        return maxsim(queries, documents, length_normalize=self.settings.similarity_fn_name == "meanmaxsim")

    # -- persistence ----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the sentence-transformers >= 6 MultiVectorEncoder layout."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        s = self.settings
        self.transformer.auto_model.save_pretrained(str(folder), safe_serialization=True)
        self.tokenizer.save_pretrained(str(folder))
        st_config: dict[str, Any] = {
            "transformer_task": "feature-extraction",
            "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
            "module_output_name": "token_embeddings",
        }
        for key, value in (
            ("query_length", s.query_length),
            ("document_length", s.document_length),
            ("query_expansion", s.expansion.to_dict() if s.expansion else None),
        ):
            if value is not None:
                st_config[key] = value
        write_json(folder / "sentence_bert_config.json", st_config)
        entries = [_entry(0, "", ST_TYPES["transformer"])]
        if self.projection is not None:
            self.projection.save(folder / "1_Dense")
            entries.append(_entry(1, "1_Dense", DENSE_TYPE))
        mask_dir = f"{len(entries)}_MultiVectorMask"
        (folder / mask_dir).mkdir(exist_ok=True)
        write_json(
            folder / mask_dir / "config.json",
            {
                "skiplist_words": s.skiplist_words,
                "skiplist_tasks": s.skiplist_tasks,
                "keep_only_token_ids": None,
            },
        )
        entries.append(
            {"idx": len(entries), "name": str(len(entries)), "path": mask_dir, "type": ST_TYPES["mask"]}
        )
        if s.normalize:
            norm_dir = f"{len(entries)}_Normalize"
            (folder / norm_dir).mkdir(exist_ok=True)
            write_json(
                folder / norm_dir / "config.json",
                {"module_input_name": "token_embeddings", "module_output_name": "token_embeddings"},
            )
            entries.append(
                {
                    "idx": len(entries),
                    "name": str(len(entries)),
                    "path": norm_dir,
                    "type": ST_TYPES["normalize"],
                }
            )
        write_json(folder / "modules.json", entries)
        top: dict[str, Any] = {
            "__version__": library_versions(),
            "model_type": "MultiVectorEncoder",
            "prompts": s.prompts,
            "default_prompt_name": None,
            "similarity_fn_name": s.similarity_fn_name,
        }
        # Marker tokens (PyLate's [Q] / [D]): sentence-transformers reads these keys as markers too.
        if s.query_prefix is not None or s.document_prefix is not None:
            top["query_prefix"] = s.query_prefix or ""
            top["document_prefix"] = s.document_prefix or ""
        write_json(folder / "config_sentence_transformers.json", top)


def _entry(idx: int, path: str, type_name: str) -> dict[str, Any]:
    return {"idx": idx, "name": str(idx), "path": path, "type": type_name}


def load_multi_vector_encoder(
    name_or_path: str | os.PathLike[str],
    *,
    device: str | torch.device | None = None,
    trust_remote_code: bool = False,
    local_files_only: bool = False,
    revision: str | None = None,
    cache_folder: str | None = None,
    token: str | bool | None = None,
) -> MultiVectorEncoder | M3MultiVectorView:
    """Load a multi-vector (ColBERT) model: a sentence-transformers >= 6 MultiVectorEncoder folder or
    a PyLate ColBERT folder, by path or hub id (as `load_encoder` resolves names). A bge-m3 folder
    gives its ColBERT vectors (`M3MultiVectorView`)."""
    folder = resolve_model_path(
        name_or_path,
        revision=revision,
        cache_folder=cache_folder,
        local_files_only=local_files_only,
        token=token,
    )
    if is_m3_folder(folder):
        return M3MultiVectorView(load_m3_encoder(folder, device=device))
    if not (folder / "modules.json").exists() or not is_multi_vector_folder(folder):
        raise ModelLoadError(
            f"{folder} is not a multi-vector model (config_sentence_transformers.json names no "
            "MultiVectorEncoder or ColBERT model_type); load a single-vector model with munjang.load_encoder"
        )
    entries = read_json(folder / "modules.json")
    if not isinstance(entries, list) or not entries:
        raise ModelLoadError(f"{folder / 'modules.json'}: expected a non-empty list of modules")
    root = folder.resolve()
    where = folder / "modules.json"
    projection = None
    for entry in sorted(entries, key=lambda e: int(e.get("idx", 0))):
        kind = str(entry.get("type", "")).rsplit(".", 1)[-1]
        sub = folder / str(entry.get("path", ""))
        if not sub.resolve().is_relative_to(root):
            raise ModelLoadError(f"{where}: module path {entry.get('path')!r} leaves the folder")
        if kind not in _KNOWN_TYPES:
            raise ModelLoadError(f"{where}: module type {entry.get('type')!r} is not supported")
        if kind == "Dense":
            if projection is not None:
                raise ModelLoadError(f"{folder}: more than one Dense module is not supported")
            projection = TokenProjection.load(sub, trust_remote_code)
    settings = read_settings(folder, entries)
    transformer = Transformer.load(folder, trust_remote_code=trust_remote_code)
    encoder = MultiVectorEncoder(transformer, projection, settings, device=device)
    encoder.model_folder = folder
    return encoder
