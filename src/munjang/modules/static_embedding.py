"""StaticEmbedding: a token embedding bag (the mean of one learned vector per token), the static tier
of sentence-transformers (v3.2+) and model2vec. No attention, so it encodes orders of magnitude faster
than a transformer, at some cost in quality.

Saved exactly as sentence-transformers saves it, at the model root: `model.safetensors` holding
`embedding.weight` (vocab x dim) and `tokenizer.json`; there is no config file. model2vec folders
(`embeddings`, optional `mapping` and per-token `weights`) load too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ..errors import ModelLoadError
from .base import Features, Module, load_safetensors_state
from .cached_word_ids import DEFAULT_MAX_WORDS, CachedWordIds

# Inputs longer than this are truncated when a tokenizer has no truncation of its own (a static model
# has no position limit; this only bounds the work one very long text costs).
NO_TRUNCATION = 2**31 - 1


class StaticEmbedding(Module):
    """Mean of per-token vectors: `tokenizer` (a `tokenizers.Tokenizer`) gives ids without special
    tokens, `nn.EmbeddingBag(mode="mean")` averages their rows into `sentence_embedding`.

    Build one from `embedding_weights` (vocab x dim) or, randomly initialised, from `embedding_dim`.
    """

    st_type: ClassVar[str] = "sentence_transformers.models.StaticEmbedding"
    folder_name: ClassVar[str] = ""

    def __init__(
        self,
        tokenizer: Any,
        embedding_weights: np.ndarray | torch.Tensor | None = None,
        embedding_dim: int | None = None,
    ) -> None:
        super().__init__()
        from tokenizers import Tokenizer

        rust = getattr(tokenizer, "backend_tokenizer", tokenizer)  # a transformers fast tokenizer
        if not isinstance(rust, Tokenizer):
            raise TypeError("StaticEmbedding needs a fast tokenizer (tokenizers.Tokenizer)")
        if embedding_weights is not None:
            weights = torch.as_tensor(embedding_weights).detach().float().clone()
            if weights.ndim != 2:
                raise ValueError(f"embedding_weights must be 2-D (vocab x dim), not {tuple(weights.shape)}")
            self.embedding = nn.EmbeddingBag.from_pretrained(weights, freeze=False, mode="mean")
        elif embedding_dim is not None:
            self.embedding = nn.EmbeddingBag(rust.get_vocab_size(), embedding_dim, mode="mean")
        else:
            raise ValueError("give either embedding_weights or embedding_dim")
        if self.embedding.num_embeddings < rust.get_vocab_size():
            raise ValueError(
                f"the tokenizer has {rust.get_vocab_size()} tokens but the embedding only "
                f"{self.embedding.num_embeddings} rows"
            )
        self.tokenizer = rust
        self.tokenizer.no_padding()
        # Distinct words whose token ids are kept (about 160 bytes each); 0 keeps none.
        self.word_cache_size = DEFAULT_MAX_WORDS
        self._word_ids: CachedWordIds | None = None

    @property
    def output_dimension(self) -> int:
        return int(self.embedding.embedding_dim)

    def describe(self) -> dict[str, Any]:
        """The architecture part of `SentenceEncoder.describe` (what `munjang info` prints)."""
        vocab_size = self.embedding.num_embeddings
        return {"architecture": "StaticEmbedding", "model_type": "static", "vocab_size": vocab_size}

    @property
    def max_seq_length(self) -> int:
        """Tokens kept per input: the tokenizer's own truncation, if it has one."""
        truncation = self.tokenizer.truncation
        return int(truncation["max_length"]) if truncation else NO_TRUNCATION

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Flat `input_ids` and per-text `offsets` (the EmbeddingBag input) for `texts`: the tokenizer's
        ids, assembled from cached per-word ids where that is exact (`CachedWordIds`)."""
        cache = self._word_ids
        if cache is None or cache.tokenizer is not self.tokenizer or cache.max_words != self.word_cache_size:
            self._word_ids = cache = CachedWordIds(self.tokenizer, max_words=self.word_cache_size)
        flat, lengths = cache.ids(texts)
        offsets = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        return {"input_ids": torch.from_numpy(flat), "offsets": torch.from_numpy(offsets)}

    def forward(self, features: Features) -> Features:
        features["sentence_embedding"] = self.embedding(features["input_ids"], features["offsets"])
        return features

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        weight = self.embedding.weight.detach().float().cpu().contiguous()
        save_file({"embedding.weight": weight}, str(path / "model.safetensors"))
        self.tokenizer.save(str(path / "tokenizer.json"))

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> StaticEmbedding:
        """Read `tokenizer.json` and `model.safetensors` (sentence-transformers or model2vec keys)."""
        from tokenizers import Tokenizer

        path = Path(path)
        for name in ("tokenizer.json", "model.safetensors"):
            if not (path / name).exists():
                extra = " (munjang loads safetensors weights only)" if name == "model.safetensors" else ""
                raise ModelLoadError(f"{path}: static embedding model has no {name}{extra}")
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        state = load_safetensors_state(path / "model.safetensors")
        if "embedding.weight" in state:
            weights = state["embedding.weight"]
        elif "embeddings" in state:
            weights = fold_model2vec_weights(state["embeddings"], state.get("mapping"), state.get("weights"))
        else:
            raise ModelLoadError(
                f"{path / 'model.safetensors'}: neither 'embedding.weight' nor model2vec 'embeddings' in it"
            )
        return cls(tokenizer, embedding_weights=weights)

    def extra_repr(self) -> str:
        return f"vocab={self.embedding.num_embeddings}, dim={self.output_dimension}"


def fold_model2vec_weights(
    embeddings: torch.Tensor, mapping: torch.Tensor | None = None, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """One row per token id from model2vec's tables: `embeddings[mapping[id]] * weights[id]`."""
    if mapping is not None:
        embeddings = embeddings[mapping.long()]
    embeddings = embeddings.float()
    if weights is not None:
        embeddings = embeddings * weights.float()[:, None]
    return embeddings.contiguous()
