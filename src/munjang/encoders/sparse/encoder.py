"""SparseEncoder: texts -> sparse vocabulary-wide vectors (SPLADE), as sentence-transformers'
`SparseEncoder` computes them, and the loader `load_sparse_encoder`.

Two pipelines load: MLMTransformer -> SpladePooling (SPLADE: one learned weight per vocabulary token,
most of them zero), and a Router that sends queries through a SparseStaticEmbedding (one fixed weight
per query token, no transformer) and documents through the SPLADE path (inference-free SPLADE). A
vector is a torch sparse COO tensor (rows x vocabulary); `token_weights` gives token -> weight maps and
`decode` the top tokens. Relevance is the dot product of two vectors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ..._util.devices import resolve_device
from ...errors import InputTooLongError, ModelLoadError
from ...inference.batching import token_budget_batches
from ...models.hub import resolve_model_path
from ...modules import MLMTransformer, Module, Router, SparseStaticEmbedding, SpladePooling
from ...modules.base import read_json
from ..formats import EncoderSettings, is_cross_encoder_folder, read_modules, write_modules
from ..m3.encoder import is_m3_folder, load_m3_encoder
from ..m3.views import M3SparseView
from ..settings import prompt_text, side_prompt_name

# Budget per batch: MLM logits take tokens x vocabulary floats (1024 x 30k x 4 B = 120 MiB).
DEFAULT_MAX_TOKENS = 1024
DEFAULT_MAX_ROWS = 64
SIMILARITIES = ("dot", "cosine")
InputModule = MLMTransformer | SparseStaticEmbedding


def _check_route(modules: Sequence[Module], where: str) -> None:
    """A route starts with an input module and ends in a sparse vector (SpladePooling, or the static one)."""
    if not modules or not isinstance(modules[0], (MLMTransformer, SparseStaticEmbedding)):
        raise ValueError(f"{where} must start with an MLMTransformer or a SparseStaticEmbedding")
    if isinstance(modules[0], MLMTransformer) and not any(isinstance(m, SpladePooling) for m in modules):
        raise ValueError(f"{where}: an MLMTransformer needs a SpladePooling after it")


class SparseEncoder(nn.Module):
    """A SPLADE pipeline ([MLMTransformer, SpladePooling]) or a [Router] of such pipelines.

    `prompts` are prepended to texts (`encode_query` uses "query" and `encode_document` "document"
    when the model has them); `max_active_dims` keeps only that many largest weights per vector.
    """

    def __init__(
        self,
        modules: Sequence[Module],
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        similarity_fn_name: str = "dot",
        max_active_dims: int | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        super().__init__()
        modules = list(modules)
        if len(modules) == 1 and isinstance(modules[0], Router):
            for name in modules[0].routes:
                _check_route(modules[0].route(name), f"route {name!r}")
        else:
            _check_route(modules, "a SparseEncoder")
        self.pipeline = nn.ModuleList(modules)
        self.prompts: dict[str, str] = dict(prompts or {})
        if default_prompt_name is not None and default_prompt_name not in self.prompts:
            raise ValueError(
                f"default_prompt_name {default_prompt_name!r} is not one of {sorted(self.prompts)}"
            )
        self.default_prompt_name = default_prompt_name
        if similarity_fn_name not in SIMILARITIES:
            raise ValueError(
                f"a sparse encoder's similarity is one of {SIMILARITIES}, not {similarity_fn_name!r}"
            )
        self.similarity_fn_name = similarity_fn_name
        self.max_active_dims = _check_active_dims(max_active_dims)
        self.model_folder: Path | None = None
        self.to(resolve_device(device))
        self.eval()

    # -- introspection -------------------------------------------------------------------------
    @property
    def router(self) -> Router | None:
        module = self.pipeline[0]
        return module if isinstance(module, Router) else None

    def route(self, task: str | None = None) -> list[Module]:
        """The modules `task` ("query", "document", None) runs through."""
        if self.router is not None:
            return self.router.route(task)
        return [m for m in self.pipeline if isinstance(m, Module)]

    def input_module(self, task: str | None = None) -> InputModule:
        module = self.route(task)[0]
        assert isinstance(module, (MLMTransformer, SparseStaticEmbedding))
        return module

    @property
    def tokenizer(self) -> Any:
        return self.input_module().tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def max_seq_length(self) -> int:
        return self.input_module().max_seq_length

    def get_embedding_dimension(self) -> int:
        """The vocabulary size: the length of every sparse vector (the widest route's, so that query
        and document vectors of an inference-free model always multiply)."""
        if self.router is None:
            return self.input_module().output_dimension
        heads = [self.router.route(name)[0] for name in self.router.routes]
        return max(int(getattr(head, "output_dimension", 0)) for head in heads)

    def describe(self) -> dict[str, Any]:
        """Architecture, vocabulary, routes and limits, for `munjang info`-like listings."""
        routes = list(self.router.routes) if self.router is not None else []
        return {
            "kind": "sparse",
            "vocab_size": self.get_embedding_dimension(),
            "max_seq_length": self.max_seq_length,
            "routes": routes,
            "inference_free_queries": isinstance(
                self.route("query" if "query" in routes else None)[0], SparseStaticEmbedding
            ),
            "max_active_dims": self.max_active_dims,
            "prompts": self.prompts,
            "similarity_fn_name": self.similarity_fn_name,
            "device": str(self.device),
        }

    def _prompt_text(self, prompt_name: str | None, prompt: str | None) -> str:
        return prompt_text(self.prompts, self.default_prompt_name, prompt_name, prompt)

    # -- encoding ------------------------------------------------------------------------------
    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        task: str | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        max_active_dims: int | None = None,
        truncate: bool = True,
        convert_to_sparse_tensor: bool = True,
        show_progress_bar: bool | None = None,
    ) -> torch.Tensor:
        """Sparse vectors (rows x vocabulary, float32, CPU) of the texts, in input order; one text -> 1-D.

        - `task` picks a Router's route ("query" / "document"; None: its default route).
        - `prompt_name` / `prompt`: as in `SentenceEncoder.encode`.
        - `max_active_dims` keeps the largest weights of each vector (default: the model's setting).
        - `truncate=False` raises InputTooLongError naming the first text over `max_seq_length`.
        - Batches are length-sorted under a token budget (`max_tokens`, at most `batch_size` rows).
        - `convert_to_sparse_tensor=False` gives a dense tensor.
        """
        single = isinstance(sentences, str)
        texts: list[str] = [sentences] if single else list(sentences)  # type: ignore[list-item]
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"sentences[{i}] is {type(text).__name__}, not str")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        keep = _check_active_dims(max_active_dims) or self.max_active_dims
        if self.training:
            self.eval()
        modules = self.route(task)
        head = modules[0]
        assert isinstance(head, (MLMTransformer, SparseStaticEmbedding))
        text_prompt = self._prompt_text(prompt_name, prompt)
        encoded = head.tokenize([text_prompt + t for t in texts] if text_prompt else texts, truncate)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        if not truncate:
            for i, n in enumerate(lengths):
                if n > head.max_seq_length:
                    raise InputTooLongError(
                        f"sentences[{i}] has {n} tokens, over the model's limit of {head.max_seq_length}; "
                        "shorten it or encode with truncate=True"
                    )
        if batch_size is None and max_tokens is None:
            max_tokens, batch_size = DEFAULT_MAX_TOKENS, DEFAULT_MAX_ROWS
        if show_progress_bar is None:
            show_progress_bar = len(texts) >= 1024
        batches = token_budget_batches(lengths, max_tokens, batch_size)
        rows, cols, values = self._run(modules, encoded, batches, task, keep, show_progress_bar)
        vocab = self.get_embedding_dimension()
        # Built from numpy outside inference mode: inference tensors refuse later sparse operations.
        shape: tuple[int, ...]
        if single:
            indices, shape = torch.from_numpy(cols)[None], (vocab,)
        else:
            indices, shape = torch.from_numpy(np.stack([rows, cols])), (len(texts), vocab)
        out = torch.sparse_coo_tensor(indices, torch.from_numpy(values), shape, check_invariants=False)
        out = out.coalesce()
        return out if convert_to_sparse_tensor else out.to_dense()

    @torch.inference_mode()
    def _run(
        self,
        modules: list[Module],
        encoded: dict[str, list[list[int]]],
        batches: list[np.ndarray],
        task: str | None,
        keep: int | None,
        show_progress_bar: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The model over length-sorted batches: (row, token id, weight) of every non-zero weight."""
        head = modules[0]
        assert isinstance(head, (MLMTransformer, SparseStaticEmbedding))
        rows_out: list[np.ndarray] = [np.zeros(0, np.int64)]
        cols_out: list[np.ndarray] = [np.zeros(0, np.int64)]
        values_out: list[np.ndarray] = [np.zeros(0, np.float32)]
        total = sum(len(b) for b in batches)
        with tqdm(total=total, desc="Encoding", unit="sent", disable=not show_progress_bar) as bar:
            for batch in batches:
                features: dict[str, Any] = {
                    k: v.to(self.device) for k, v in head.collate(encoded, batch).items()
                }
                features["task"] = task
                for module in modules:
                    features = module(features)
                vectors = features["sentence_embedding"].float()
                if keep is not None:
                    vectors = select_max_active_dims(vectors, keep)
                where = vectors.nonzero(as_tuple=True)
                rows_out.append(batch[where[0].cpu().numpy()].astype(np.int64))
                cols_out.append(where[1].cpu().numpy().astype(np.int64))
                values_out.append(vectors[where].cpu().numpy().astype(np.float32))
                bar.update(len(batch))
        return np.concatenate(rows_out), np.concatenate(cols_out), np.concatenate(values_out)

    def encode_query(self, sentences: Sequence[str] | str, **kwargs: Any) -> torch.Tensor:
        """`encode` with task "query" and the model's "query" prompt (if it has one, and none is given)."""
        return self._encode_for("query", sentences, **kwargs)

    def encode_document(self, sentences: Sequence[str] | str, **kwargs: Any) -> torch.Tensor:
        """`encode` with task "document" and the model's "document" (else "passage", "corpus") prompt
        (if it has one, none given)."""
        return self._encode_for("document", sentences, **kwargs)

    def _encode_for(self, task: str, sentences: Sequence[str] | str, **kwargs: Any) -> torch.Tensor:
        kwargs["prompt_name"] = side_prompt_name(
            self.prompts, task, kwargs.get("prompt_name"), kwargs.get("prompt")
        )
        routed = self.router is not None and (
            task in self.router.routes or task in self.router.route_mappings
        )
        return self.encode(sentences, task=task if routed else None, **kwargs)

    # -- reading vectors -----------------------------------------------------------------------
    def decode(self, embeddings: torch.Tensor, top_k: int | None = None) -> Any:
        """(token, weight) pairs by falling weight, per vector (a 1-D input gives one list)."""
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {top_k}")
        one = embeddings.ndim == 1
        out = []
        for ids, values in sparse_rows(embeddings.unsqueeze(0) if one else embeddings):
            order = np.argsort(-values, kind="stable")[:top_k]
            tokens = self.tokenizer.convert_ids_to_tokens(ids[order].tolist())
            out.append(list(zip(tokens, values[order].tolist(), strict=True)))
        return out[0] if one else out

    def token_weights(self, embeddings: torch.Tensor) -> list[dict[str, float]]:
        """Each vector as a token -> weight map (its non-zero entries)."""
        rows = embeddings.unsqueeze(0) if embeddings.ndim == 1 else embeddings
        return [dict(pairs) for pairs in self.decode(rows)]

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Dense (len(a) x len(b)) scores: dot products, or cosine for a model saved with it."""
        left, right = _as_csr(a), _as_csr(b)
        if self.similarity_fn_name == "cosine":
            left, right = _unit_rows(left), _unit_rows(right)
        return torch.from_numpy(np.asarray((left @ right.T).toarray(), dtype=np.float32))

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the sentence-transformers SparseEncoder layout, which sentence-transformers reads too."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        write_modules(folder, [m for m in self.pipeline if isinstance(m, Module)])
        extra: dict[str, Any] = {"model_type": "SparseEncoder"}
        if self.max_active_dims is not None:
            extra["max_active_dims"] = self.max_active_dims
        settings = EncoderSettings(self.prompts, self.default_prompt_name, self.similarity_fn_name)
        settings.write(folder, extra)


def _check_active_dims(value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"max_active_dims must be a positive integer, not {value!r}")
    return value


def select_max_active_dims(vectors: torch.Tensor, keep: int) -> torch.Tensor:
    """Zero all but the `keep` largest-magnitude entries of each row (sentence-transformers' rule)."""
    top = torch.topk(vectors.abs(), k=min(keep, vectors.shape[-1]), dim=-1).indices
    out = torch.zeros_like(vectors)
    return out.scatter_(-1, top, vectors.gather(-1, top))


def sparse_rows(embeddings: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """(token ids int64, weights float32) of each row's non-zero entries, ids ascending; the rows of
    a torch sparse tensor or of a scipy sparse matrix (a classical term encoder's)."""
    import scipy.sparse as sp

    if sp.issparse(embeddings):
        csr = sp.csr_matrix(embeddings)
        csr.sort_indices()
        return [
            (
                csr.indices[csr.indptr[r] : csr.indptr[r + 1]].astype(np.int64),
                csr.data[csr.indptr[r] : csr.indptr[r + 1]].astype(np.float32),
            )
            for r in range(csr.shape[0])
        ]
    matrix = _as_sparse_2d(embeddings)
    indices = matrix.indices().numpy()
    values = matrix.values().float().numpy()
    starts = np.searchsorted(indices[0], np.arange(matrix.shape[0] + 1))
    return [
        (
            indices[1, starts[r] : starts[r + 1]].astype(np.int64),
            values[starts[r] : starts[r + 1]].astype(np.float32),
        )
        for r in range(matrix.shape[0])
    ]


def _as_sparse_2d(x: torch.Tensor) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch tensor of sparse vectors, not {type(x).__name__}")
    if x.ndim == 1:
        x = x.unsqueeze(0)
    if x.ndim != 2:
        raise ValueError(f"sparse vectors are 1-D or 2-D, not {x.ndim}-D")
    x = x if x.is_sparse else x.to_sparse()
    return x.float().cpu().coalesce()


def _as_csr(x: torch.Tensor) -> Any:
    """A scipy CSR matrix of sparse vectors (scipy multiplies two sparse matrices without torch's
    beta sparse-CSR path)."""
    import scipy.sparse as sp

    matrix = _as_sparse_2d(x)
    indices = matrix.indices().numpy()
    values = matrix.values().numpy().astype(np.float32)
    return sp.csr_matrix((values, (indices[0], indices[1])), shape=tuple(matrix.shape))


def _unit_rows(matrix: Any) -> Any:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel()).clip(min=1e-12)
    return matrix.multiply(1.0 / norms[:, None]).tocsr()


def load_sparse_encoder(
    name_or_path: str | os.PathLike[str],
    *,
    device: str | torch.device | None = None,
    trust_remote_code: bool = False,
    local_files_only: bool = False,
    revision: str | None = None,
    cache_folder: str | None = None,
    token: str | bool | None = None,
    max_seq_length: int | None = None,
    max_active_dims: int | None = None,
) -> SparseEncoder | M3SparseView:
    """Load a sparse (SPLADE) encoder: a sentence-transformers SparseEncoder folder or hub id, or a plain
    `*ForMaskedLM` folder (then MLM logits with max SPLADE pooling, as sentence-transformers builds it).

    `max_active_dims` overrides the folder's; custom model code never runs unless `trust_remote_code`.
    A bge-m3 folder gives its lexical weights (`M3SparseView`).
    """
    folder = resolve_model_path(
        name_or_path,
        revision=revision,
        cache_folder=cache_folder,
        local_files_only=local_files_only,
        token=token,
    )
    if is_cross_encoder_folder(folder):
        raise ModelLoadError(f"{folder} holds a cross-encoder; load it with munjang.load_cross_encoder")
    if is_m3_folder(folder):
        return M3SparseView(load_m3_encoder(folder, device=device))
    load_kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code, "max_seq_length": max_seq_length}
    settings_file = folder / "config_sentence_transformers.json"
    raw = read_json(settings_file) if settings_file.exists() else {}
    if (folder / "modules.json").exists():
        modules = read_modules(folder, **load_kwargs)
        settings = EncoderSettings.read(folder)
    elif (folder / "config.json").exists():
        modules = [MLMTransformer.load(folder, **load_kwargs), SpladePooling("max")]
        settings = EncoderSettings()
    else:
        raise ModelLoadError(f"{folder}: neither modules.json nor config.json, so it is not a model folder")
    similarity = raw.get("similarity_fn_name") or "dot"
    saved_dims = raw.get("max_active_dims")
    try:
        encoder = SparseEncoder(
            modules,
            settings.prompts,
            settings.default_prompt_name,
            {"cos_sim": "cosine", "dot_score": "dot"}.get(similarity, similarity),
            max_active_dims if max_active_dims is not None else saved_dims,
            device=device,
        )
    except ValueError as e:
        raise ModelLoadError(f"{folder}: not a sparse encoder ({e})") from e
    encoder.model_folder = folder
    return encoder
