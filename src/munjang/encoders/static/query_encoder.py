"""A static model's encoder in numpy, for processes that only encode queries.

A static model (StaticEmbedding, optionally then Normalize) is a table lookup and a mean: it needs
no torch. Loading torch and the model through it costs a new process about two CPU-seconds before
its first query, which a search-only process (a CLI call, a reader of a collection) pays for nothing.
This reads the same sentence-transformers folder with safetensors' numpy loader and the model's own
tokenizer (through `CachedWordIds`, as `StaticEmbedding` tokenizes) and gives the same vectors.
Anything else in the pipeline (Dense, other pooling) is not this; `load` answers None for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.json_files import read_json
from ...errors import ModelLoadError
from ...modules.cached_word_ids import CachedWordIds
from ..settings import EncoderSettings, prompt_text, side_prompt_name

__all__ = ["StaticQueryEncoder"]

# modules.json types (last name part) this reads: a static model, optionally normalized.
_PIPELINES = (("StaticEmbedding",), ("StaticEmbedding", "Normalize"))


class StaticQueryEncoder:
    """`encode` and `get_embedding_dimension` of a static model's `SentenceEncoder`, in numpy."""

    def __init__(
        self, tokenizer: Any, weights: np.ndarray, normalize: bool, settings: EncoderSettings
    ) -> None:
        if weights.ndim != 2 or weights.shape[0] < tokenizer.get_vocab_size():
            raise ModelLoadError(
                f"a static model's weights must have a row per token, not shape {weights.shape}"
            )
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.weights = np.ascontiguousarray(weights, dtype=np.float32)
        self.normalize = normalize
        self.prompts = settings.prompts
        self.default_prompt_name = settings.default_prompt_name
        self.similarity_fn_name = settings.similarity_fn_name
        self._word_ids = CachedWordIds(tokenizer)

    @classmethod
    def load(cls, folder: str | Path) -> StaticQueryEncoder | None:
        """The encoder of the static model in `folder`, None if the folder holds another kind."""
        folder = Path(folder)
        modules = folder / "modules.json"
        if not modules.is_file():
            return None
        entries = read_json(modules)
        kinds = tuple(str(m.get("type", "")).rsplit(".", 1)[-1] for m in entries if isinstance(m, dict))
        if kinds not in _PIPELINES or len(kinds) != len(entries) or entries[0].get("path", "") != "":
            return None
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        state = load_file(str(folder / "model.safetensors"))
        if "embedding.weight" in state:
            weights = state["embedding.weight"]
        elif "embeddings" in state:  # model2vec's tables: embeddings[mapping[id]] * weights[id]
            weights = state["embeddings"].astype(np.float32)
            if "mapping" in state:
                weights = weights[state["mapping"].astype(np.int64)]
            if "weights" in state:
                weights = weights * state["weights"].astype(np.float32)[:, None]
        else:
            return None
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        return cls(tokenizer, weights, kinds[-1] == "Normalize", EncoderSettings.read(folder))

    def get_embedding_dimension(self) -> int:
        return int(self.weights.shape[1])

    def _prompt_text(self, prompt_name: str | None, prompt: str | None) -> str:
        return prompt_text(self.prompts, self.default_prompt_name, prompt_name, prompt)

    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        normalize_embeddings: bool = False,
        **_: Any,
    ) -> np.ndarray:
        """float32 (n, dim) (or (dim,) for one string): each text's mean token vector, the prompt
        prepended, normalized when the model ends in Normalize or when asked. Batch sizes, progress
        bars and output types are the torch encoder's concerns: the result is always numpy."""
        single = isinstance(sentences, str)
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        text_prompt = self._prompt_text(prompt_name, prompt)
        if text_prompt:
            texts = [text_prompt + t for t in texts]
        out = np.zeros((len(texts), self.weights.shape[1]), dtype=np.float32)
        if texts:
            flat, lengths = self._word_ids.ids(texts)
            filled = lengths > 0  # an empty bag stays zeros, as EmbeddingBag's mean gives
            if filled.any():
                starts = (np.cumsum(lengths) - lengths)[filled]
                sums = np.add.reduceat(self.weights[flat], starts, axis=0)
                out[filled] = sums / lengths[filled, None].astype(np.float32)
        if self.normalize or normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.maximum(norms, 1e-12)
        return out[0] if single else out

    def encode_query(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """`encode` with the model's "query" prompt when it has one and the caller names none."""
        name = side_prompt_name(self.prompts, "query", prompt_name, prompt)
        return self.encode(sentences, prompt_name=name, prompt=prompt, **kwargs)

    def encode_document(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """`encode` with the model's "document" (else "passage", "corpus") prompt, when it has one and
        the caller names none."""
        name = side_prompt_name(self.prompts, "document", prompt_name, prompt)
        return self.encode(sentences, prompt_name=name, prompt=prompt, **kwargs)
