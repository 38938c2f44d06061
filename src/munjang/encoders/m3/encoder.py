"""bge-m3's three outputs from one forward pass: a dense vector, lexical (sparse) weights and ColBERT
token vectors.

A bge-m3 folder is a sentence-transformers folder (transformer, CLS pooling, normalize) plus two
linear heads beside it, as FlagEmbedding writes them: `sparse_linear.pt` (hidden → 1: a weight per
token, relu'd, the highest per token id kept) and `colbert_linear.pt` (hidden → d: a vector per token
after the first, normalised). One transformer pass feeds all three, so asking for the three costs one
encode. The heads are read with torch's weights-only unpickler: tensors only, no code runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...errors import ModelLoadError
from ...modules import Normalize, Transformer
from ..dense.encoder import SentenceEncoder, load_encoder

SPARSE_HEAD = "sparse_linear.pt"
COLBERT_HEAD = "colbert_linear.pt"
# The model card's weights for dense, sparse and ColBERT scores in the combined score.
DEFAULT_WEIGHTS = (0.4, 0.2, 0.4)


@dataclass
class M3Output:
    """What `M3Encoder.encode` returns, each part in input order (None when not asked for).

    dense: (n, dim) float32; sparse: one {token id: weight} per text; colbert: one (tokens, d) float32
    matrix per text (the first token, [CLS], and padding left out)."""

    dense: np.ndarray | None
    sparse: list[dict[int, float]] | None
    colbert: list[np.ndarray] | None


def _read_head(path: Path) -> dict[str, torch.Tensor]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a truncated or foreign file: name it
        raise ModelLoadError(f"{path}: not a readable weights file ({e})") from e
    if not isinstance(state, dict) or "weight" not in state:
        raise ModelLoadError(f"{path}: expected a linear layer's state (weight, bias)")
    return state


def _linear(state: dict[str, torch.Tensor], hidden: int, path: Path) -> nn.Linear:
    weight = state["weight"]
    if weight.ndim != 2 or weight.shape[1] != hidden:
        raise ModelLoadError(f"{path}: weight of shape {tuple(weight.shape)} does not take {hidden}-d tokens")
    layer = nn.Linear(hidden, weight.shape[0], bias="bias" in state)
    layer.load_state_dict(state)
    return layer


class M3Encoder(nn.Module):
    """A dense encoder with bge-m3's sparse and ColBERT heads on its token vectors."""

    def __init__(self, encoder: SentenceEncoder, sparse_linear: nn.Linear, colbert_linear: nn.Linear) -> None:
        super().__init__()
        if not isinstance(encoder[0], Transformer):
            raise ModelLoadError("a bge-m3 model needs a transformer as its first module")
        self.encoder = encoder
        self.sparse_linear = sparse_linear
        self.colbert_linear = colbert_linear
        tokenizer = encoder.tokenizer
        self.unused_token_ids = {
            t
            for t in (
                tokenizer.cls_token_id,
                tokenizer.eos_token_id,
                tokenizer.pad_token_id,
                tokenizer.unk_token_id,
            )
            if t is not None
        }

    @property
    def transformer(self) -> Transformer:
        return self.encoder.transformer

    def get_embedding_dimension(self) -> int:
        return self.encoder.get_embedding_dimension()

    @property
    def colbert_dimension(self) -> int:
        return int(self.colbert_linear.out_features)

    @torch.no_grad()
    def encode(
        self,
        texts: Sequence[str],
        *,
        dense: bool = True,
        sparse: bool = True,
        colbert: bool = True,
        batch_size: int = 32,
        max_length: int | None = None,
    ) -> M3Output:
        """Encode `texts` once and read the asked-for outputs from the same token vectors.

        Texts are tokenized to `max_length` tokens (default: the model's max_seq_length), batched
        longest first to pad little, and returned in input order."""
        if isinstance(texts, str):
            raise TypeError("encode takes a list of texts; wrap a single text in a list")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        texts = list(texts)
        self.eval()
        transformer = self.transformer
        saved_length = transformer.max_seq_length
        if max_length is not None:
            transformer.max_seq_length = max_length
        try:
            encoded = transformer.tokenize(texts)
        finally:
            transformer.max_seq_length = saved_length
        order = np.argsort([-len(ids) for ids in encoded["input_ids"]], kind="stable")
        dense_rows: list[np.ndarray] = [np.empty(0, np.float32)] * len(texts)
        sparse_rows: list[dict[int, float]] = [{}] * len(texts)
        colbert_rows: list[np.ndarray] = [np.empty(0, np.float32)] * len(texts)
        device = self.encoder.device
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            features = {k: v.to(device) for k, v in transformer.collate(encoded, rows).items()}
            features = transformer(features)
            hidden = features["token_embeddings"]
            mask = features["attention_mask"]
            if dense:
                for module in list(self.encoder)[1:]:
                    features = module(features)
                vectors = features["sentence_embedding"].float().cpu().numpy()
                for i, row in enumerate(rows):
                    dense_rows[row] = vectors[i]
            if sparse:
                for i, row in enumerate(rows):
                    sparse_rows[row] = self._lexical_weights(hidden[i], features["input_ids"][i], mask[i])
            if colbert:
                vectors = F.normalize(self.colbert_linear(hidden[:, 1:]) * mask[:, 1:, None], dim=-1)
                lengths = mask.sum(dim=1) - 1
                for i, row in enumerate(rows):
                    colbert_rows[row] = vectors[i, : int(lengths[i])].float().cpu().numpy()
        dense_out = (
            np.stack(dense_rows) if texts else np.zeros((0, self.get_embedding_dimension()), np.float32)
        )
        return M3Output(
            dense_out if dense else None, sparse_rows if sparse else None, colbert_rows if colbert else None
        )

    def _lexical_weights(
        self, hidden: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor
    ) -> dict[int, float]:
        weights = torch.relu(self.sparse_linear(hidden)).squeeze(-1).float().cpu().tolist()
        result: dict[int, float] = {}
        for token, weight, keep in zip(ids.tolist(), weights, mask.tolist(), strict=True):
            if keep and weight > 0 and token not in self.unused_token_ids and weight > result.get(token, 0.0):
                result[token] = weight
        return result

    def encode_query(self, texts: Sequence[str], **kwargs: Any) -> M3Output:
        """`encode`: bge-m3 encodes queries and documents alike (no prompts, no asymmetry); here so
        that every encoder kind answers `encode_query` / `encode_document`."""
        return self.encode(texts, **kwargs)

    def encode_document(self, texts: Sequence[str], **kwargs: Any) -> M3Output:
        """`encode` (see `encode_query`)."""
        return self.encode(texts, **kwargs)

    def decode(self, weights: dict[int, float]) -> dict[str, float]:
        """Token strings for lexical weights (to read what a text matched on)."""
        tokens = self.encoder.tokenizer.convert_ids_to_tokens(list(weights))
        return dict(zip(tokens, weights.values(), strict=True))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the encoder folder and the two heads beside it, as FlagEmbedding reads them."""
        path = Path(path)
        self.encoder.save(path)
        torch.save({k: v.cpu() for k, v in self.sparse_linear.state_dict().items()}, path / SPARSE_HEAD)
        torch.save({k: v.cpu() for k, v in self.colbert_linear.state_dict().items()}, path / COLBERT_HEAD)


def lexical_scores(queries: Sequence[dict[int, float]], documents: Sequence[dict[int, float]]) -> np.ndarray:
    """Sum over shared tokens of the product of weights: (queries × documents)."""
    scores = np.zeros((len(queries), len(documents)), dtype=np.float32)
    for i, q in enumerate(queries):
        for j, d in enumerate(documents):
            small, large = (q, d) if len(q) <= len(d) else (d, q)
            scores[i, j] = sum(w * large[t] for t, w in small.items() if t in large)
    return scores


def colbert_scores(queries: Sequence[np.ndarray], documents: Sequence[np.ndarray]) -> np.ndarray:
    """ColBERT MaxSim averaged over query tokens, as bge-m3 scores it: (queries × documents)."""
    scores = np.zeros((len(queries), len(documents)), dtype=np.float32)
    for j, d in enumerate(documents):
        for i, q in enumerate(queries):
            scores[i, j] = (q @ d.T).max(axis=1).mean() if len(q) and len(d) else 0.0
    return scores


def combined_scores(
    queries: M3Output, documents: M3Output, weights: Sequence[float] = DEFAULT_WEIGHTS
) -> dict[str, np.ndarray]:
    """Dense, sparse and ColBERT score matrices and their weighted mean ("combined"), as bge-m3's
    `compute_score` defines it: (w_dense·dense + w_sparse·sparse + w_colbert·colbert) / Σw."""
    if len(weights) != 3 or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError(
            f"weights are three non-negative numbers (dense, sparse, colbert), not {list(weights)}"
        )
    parts = (
        queries.dense,
        queries.sparse,
        queries.colbert,
        documents.dense,
        documents.sparse,
        documents.colbert,
    )
    if any(p is None for p in parts):
        raise ValueError("combined scores need dense, sparse and colbert outputs on both sides")
    assert queries.dense is not None and documents.dense is not None
    assert queries.sparse is not None and documents.sparse is not None
    assert queries.colbert is not None and documents.colbert is not None
    result = {
        "dense": queries.dense @ documents.dense.T,
        "sparse": lexical_scores(queries.sparse, documents.sparse),
        "colbert": colbert_scores(queries.colbert, documents.colbert),
    }
    w_dense, w_sparse, w_colbert = weights
    result["combined"] = (
        w_dense * result["dense"] + w_sparse * result["sparse"] + w_colbert * result["colbert"]
    ) / sum(weights)
    return result


def is_m3_folder(folder: str | os.PathLike[str]) -> bool:
    """True when the folder holds both bge-m3 heads."""
    return (Path(folder) / SPARSE_HEAD).exists() and (Path(folder) / COLBERT_HEAD).exists()


def load_m3_encoder(name_or_path: str | os.PathLike[str], **kwargs: object) -> M3Encoder:
    """Load a bge-m3-style model: a local folder or hub id (e.g. "BAAI/bge-m3") holding the encoder
    and `sparse_linear.pt` / `colbert_linear.pt`. A folder without modules.json gets bge-m3's CLS
    pooling. Other keyword arguments go to `load_encoder`."""
    from ...models.hub import resolve_model_path

    folder = resolve_model_path(name_or_path)
    if not is_m3_folder(folder):
        raise ModelLoadError(
            f"{folder}: no {SPARSE_HEAD} and {COLBERT_HEAD}, so it is not a bge-m3 model folder"
        )
    if not (folder / "modules.json").exists():
        kwargs.setdefault("pooling", "cls")
    encoder = load_encoder(folder, **kwargs)  # type: ignore[arg-type]
    if not encoder.normalizes:
        encoder.append(Normalize())
    hidden = encoder.transformer.hidden_size
    sparse = _linear(_read_head(folder / SPARSE_HEAD), hidden, folder / SPARSE_HEAD)
    colbert = _linear(_read_head(folder / COLBERT_HEAD), hidden, folder / COLBERT_HEAD)
    if sparse.out_features != 1:
        raise ModelLoadError(f"{folder / SPARSE_HEAD}: a sparse head gives one weight per token")
    return M3Encoder(encoder, sparse, colbert).to(encoder.device)
