"""munjang models under the `mteb` package (MTEB(kor, v2) and every other benchmark it runs).

`MTEBEncoder(encoder)` is mteb's `EncoderProtocol` over a munjang sentence encoder, and
`MTEBCrossEncoder(cross)` its `CrossEncoderProtocol` over a munjang cross-encoder (LLM rerankers
included): `mteb.evaluate(MTEBEncoder(munjang.load_encoder(name)), tasks)` runs the tasks with
munjang's own encoding (its backends, batching and prompts). Prompts are chosen as mteb chooses
them for a sentence-transformers model: the first of the model's prompts named
`<task>-<query|document>`, `<task>`, `<task type>-<query|document>`, `<task type>`,
`<query|document>` (a model with "passage" and no "document" prompt, as e5, gets "passage").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from .._util.extras import require
from ..encoders.cross import CrossEncoder
from ..encoders.dense.encoder import SentenceEncoder


def _meta(name: str, revision: str | None, loader: Any) -> Any:
    model_meta = require("mteb.models.model_meta")
    return model_meta.ModelMeta.create_empty(
        overwrites={"name": name, "revision": revision, "loader": loader}
    )


def _texts(batches: Iterable[dict[str, Any]]) -> list[str]:
    return [str(t) for batch in batches for t in batch["text"]]


class MTEBEncoder:
    """mteb's encoder interface over a munjang `SentenceEncoder`."""

    def __init__(
        self,
        encoder: SentenceEncoder,
        *,
        name: str | None = None,
        revision: str | None = None,
        model_prompts: dict[str, str] | None = None,
        batch_size: int | None = None,
    ) -> None:
        abs_encoder = require("mteb.models.abs_encoder")
        self.encoder = encoder
        self.batch_size = batch_size
        prompts = dict(model_prompts or encoder.prompts)
        if "document" not in prompts and "passage" in prompts:
            prompts["document"] = prompts["passage"]
        resolved, _ = abs_encoder.AbsEncoder.validate_task_to_prompt_name(
            prompts, raise_for_invalid_keys=False
        )
        self.model_prompts: dict[str, str] = dict(resolved or {})
        self._meta = _meta(
            name or str(getattr(encoder, "model_name", None) or "munjang-encoder"), revision, type(self)
        )

    @property
    def mteb_model_meta(self) -> Any:
        return self._meta

    def prompt(self, task_metadata: Any, prompt_type: Any) -> str | None:
        """The prompt text mteb would give a sentence-transformers model with these prompts."""
        abs_encoder = require("mteb.models.abs_encoder")
        name = abs_encoder.get_prompt_name(self.model_prompts, task_metadata, prompt_type)
        return None if name is None else self.model_prompts.get(name)

    def encode(
        self,
        inputs: Iterable[dict[str, Any]],
        *,
        task_metadata: Any,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Vectors of every text the loader yields, in order, with the task's prompt."""
        prompt = self.prompt(task_metadata, prompt_type)
        vectors = self.encoder.encode(
            _texts(inputs), prompt=prompt if prompt is not None else "", batch_size=self.batch_size,
            show_progress_bar=False,
        )  # fmt: skip
        return np.asarray(vectors, dtype=np.float32)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        return torch.as_tensor(np.asarray(self.encoder.similarity(_numpy(embeddings1), _numpy(embeddings2))))

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        scores = self.encoder.similarity_pairwise(_numpy(embeddings1), _numpy(embeddings2))
        return torch.as_tensor(np.asarray(scores))


class MTEBCrossEncoder:
    """mteb's cross-encoder interface over a munjang `CrossEncoder` (reranking tasks)."""

    def __init__(
        self,
        cross: CrossEncoder,
        *,
        name: str | None = None,
        revision: str | None = None,
        batch_size: int = 32,
        prompt: str | None = None,
    ) -> None:
        self.cross = cross
        self.batch_size = batch_size
        self.prompt = prompt
        self._meta = _meta(name or str(cross.base_model or "munjang-cross-encoder"), revision, type(self))

    @property
    def mteb_model_meta(self) -> Any:
        return self._meta

    def predict(
        self,
        inputs1: Iterable[dict[str, Any]],
        inputs2: Iterable[dict[str, Any]],
        *,
        task_metadata: Any,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Scores of the (query, document) pairs the two loaders yield side by side."""
        pairs = list(zip(_texts(inputs1), _texts(inputs2), strict=True))
        scores = self.cross.predict(
            pairs, batch_size=self.batch_size, prompt=self.prompt, show_progress_bar=False
        )
        return np.asarray(scores, dtype=np.float32)


def _numpy(values: Any) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        return values.detach().cpu().float().numpy()
    return np.asarray(values, dtype=np.float32)
