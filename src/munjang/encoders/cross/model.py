"""CrossEncoder: both texts of a pair in one pass (`[CLS] a [SEP] b [SEP]`) -> a score or class logits.

More accurate than comparing two sentence vectors, because every token of one text attends to every
token of the other, but it runs once per pair: use it to re-order a bi-encoder's candidates.

Two heads, both saved in the layout sentence-transformers' `CrossEncoder` reads:

- the checkpoint's own `*ForSequenceClassification` head (`head="native"`, and what a folder that
  has one loads with): one `Transformer` module with `task="sequence-classification"`;
- a causal language model read as a reranker (`head == "causal-lm"`: Qwen3-Reranker, mxbai-rerank-v2):
  a text-generation `CausalLMTransformer` and `LogitScore`, the log-odds of "yes" against "no" at the
  last token, the pair rendered through the model's chat template, a prompt as its instruction;
- the SBERT paper's head on the [CLS] vector of any backbone (`head="seeds"`, the default for a plain
  encoder): dropout -> dense -> GELU -> dropout -> projection to `num_labels`, as the modules
  Pooling(cls), Dropout, Dense(GELU), Dropout, Dense(-> scores). sentence-transformers >= 6 loads it.

`num_labels == 1` gives a relevance / similarity score (sigmoid by default in `predict`);
`num_labels > 1` gives class logits (softmax with `apply_softmax=True`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from ..._util.devices import resolve_device
from ...modules import Dense, Dropout, Module, Pooling, Transformer
from ...modules.base import read_json, write_json
from ...modules.causal_lm import CausalLMTransformer
from ...modules.dense import activation_name
from ...modules.logit_score import LOGIT_IDS_KEY, LogitScore
from ..formats import library_versions, write_modules
from .backends import ScoreBackends

PROGRESS_BAR_MIN_PAIRS = 1024
HEADS = ("auto", "native", "seeds")

Pair = tuple[str, str]


def default_activation(num_labels: int) -> nn.Module:
    """Sigmoid for a single score (a probability-like relevance), identity for class logits."""
    return nn.Sigmoid() if num_labels == 1 else nn.Identity()


def seeds_head(hidden_size: int, num_labels: int, dropout: float, init_std: float) -> list[Module]:
    """The SBERT cross-encoder head on the [CLS] vector: dropout, dense, GELU, dropout, projection."""
    dense = Dense(hidden_size, hidden_size, activation=nn.GELU())
    projection = Dense(hidden_size, num_labels, activation=nn.Identity(), output_name="scores")
    for layer in (dense.linear, projection.linear):
        nn.init.normal_(layer.weight, std=init_std)
        nn.init.zeros_(layer.bias)
    return [Pooling(hidden_size, "cls"), Dropout(dropout), dense, Dropout(dropout), projection]


class CrossEncoder(ScoreBackends, nn.Sequential):
    """A transformer that reads a pair of texts and outputs `num_labels` logits (`features["scores"]`).

    Build one with `load_cross_encoder`. The first module is a `Transformer`; the last one writes
    `scores`. `activation` is what `predict` applies to the logits unless told otherwise.
    """

    activation: nn.Module

    def __init__(
        self,
        modules: Sequence[Module],
        activation: nn.Module | None = None,
        device: str | torch.device | None = None,
        base_model: str | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
    ) -> None:
        super().__init__(*modules)
        if not modules or not isinstance(modules[0], Transformer):
            raise ValueError("a CrossEncoder starts with a Transformer module")
        last = modules[-1]
        native = isinstance(last, Transformer) and last.task == "sequence-classification"
        causal = isinstance(last, LogitScore)
        if causal != isinstance(modules[0], CausalLMTransformer):
            raise ValueError("a LogitScore head goes with a text-generation transformer, and only with one")
        if isinstance(last, LogitScore) and isinstance(modules[0], CausalLMTransformer):
            modules[0].score_token_ids = last.token_ids  # two rows of the output head, not the vocabulary
        if not (native or causal or (isinstance(last, Dense) and last.output_name == "scores")):
            raise ValueError("a CrossEncoder ends with a module that writes `scores`")
        self.prompts: dict[str, str] = dict(prompts or {})
        if default_prompt_name is not None and default_prompt_name not in self.prompts:
            raise ValueError(f"default_prompt_name {default_prompt_name!r} is not one of the prompts")
        self.default_prompt_name = default_prompt_name
        self.base_model = base_model
        self._init_backends()
        self.activation = activation or default_activation(self.num_labels)
        self.to(resolve_device(device))
        self.eval()

    def __setattr__(self, name: str, value: Any) -> None:
        # The activation is a plain attribute: as a sub-module it would join the pipeline's modules.
        if name in ("activation", "_scorers"):
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)

    # -- description -----------------------------------------------------------------------------
    @property
    def transformer(self) -> Transformer:
        first = self[0]
        assert isinstance(first, Transformer)
        return first

    @property
    def tokenizer(self) -> Any:
        return self.transformer.tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def head(self) -> str:
        """ "native" (the checkpoint's sequence-classification head), "causal-lm" (LogitScore on a
        causal LM's next-token logits) or "seeds" (the SBERT head)."""
        if isinstance(self[-1], LogitScore):
            return "causal-lm"
        return "native" if len(self) == 1 else "seeds"

    @property
    def num_labels(self) -> int:
        last = self[-1]
        if isinstance(last, Dense):
            return last.out_features
        if isinstance(last, LogitScore):
            return 1
        return int(self.transformer.auto_model.config.num_labels)

    @property
    def max_seq_length(self) -> int:
        return self.transformer.max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self.transformer.max_seq_length = value

    def describe(self) -> dict[str, Any]:
        """What the model is, for `munjang info` and model cards."""
        config = self.transformer.auto_model.config
        return {
            "kind": "cross-encoder",
            "architecture": type(self.transformer.auto_model).__name__,
            "layers": getattr(config, "num_hidden_layers", None),
            "hidden_size": self.transformer.hidden_size,
            "head": self.head,
            "num_labels": self.num_labels,
            "activation": type(self.activation).__name__,
            "max_seq_length": self.max_seq_length,
            "device": str(self.device),
        }

    def train(self, mode: bool = True) -> CrossEncoder:
        """Training mode reads released weights back first (see `backends.py`)."""
        if mode:
            self._restore_torch_weights()
        super().train(mode)
        return self

    def to(self, *args: Any, **kwargs: Any) -> CrossEncoder:
        self._restore_torch_weights()  # released weights are read back before they move
        super().to(*args, **kwargs)
        return self

    def forward(self, features: dict[str, Any]) -> dict[str, Any]:
        """The modules in order on a padded batch (torch; released weights are read back first)."""
        self._restore_torch_weights()
        out: dict[str, Any] = super().forward(features)
        return out

    # -- tokenizing ------------------------------------------------------------------------------
    def resolve_prompt(self, prompt: str | None = None, prompt_name: str | None = None) -> str | None:
        """The prompt text to use: `prompt`, else the named one, else the default one (if any)."""
        if prompt is not None:
            return prompt
        name = prompt_name if prompt_name is not None else self.default_prompt_name
        if name is None:
            return None
        if name not in self.prompts:
            raise ValueError(f"no prompt named {name!r}; this model has {sorted(self.prompts) or 'none'}")
        return self.prompts[name]

    def encode_pairs(
        self, firsts: Sequence[str], seconds: Sequence[str], truncate: bool = True, prompt: str | None = None
    ) -> dict[str, list[list[int]]]:
        """Token ids of pairs, with the prompt where the model reads it: a causal LM's instruction (its
        chat template's system message), otherwise before the first text, as sentence-transformers does."""
        transformer = self.transformer
        if isinstance(transformer, CausalLMTransformer):
            return transformer.tokenize_pairs(firsts, seconds, truncate, prompt=prompt)
        if prompt:
            firsts = [prompt + text for text in firsts]
        return transformer.tokenize_pairs(firsts, seconds, truncate)

    def tokenize(self, pairs: Sequence[Pair], prompt: str | None = None) -> dict[str, Tensor]:
        """A padded batch of pairs for `forward` (training path)."""
        firsts, seconds = _split_pairs(pairs)
        encoded = self.encode_pairs(firsts, seconds, prompt=self.resolve_prompt(prompt))
        return self.transformer.collate(encoded, range(len(firsts)))

    def training_features(
        self, columns: Sequence[Sequence[str]], prompt_name: str | None = None
    ) -> list[dict[str, Any]]:
        """What the trainer feeds a cross-encoder loss: one padded batch of (column 0, column 1) pairs."""
        if len(columns) != 2:
            raise ValueError(f"a cross-encoder trains on pairs (2 text columns), got {len(columns)} columns")
        prompt = self.resolve_prompt(prompt_name=prompt_name)
        return [self.tokenize(list(zip(columns[0], columns[1], strict=True)), prompt=prompt)]

    def word_embeddings(self) -> nn.Module:
        """The backbone's input embedding table (frozen by `freeze_word_embeddings`)."""
        embeddings: nn.Module = self.transformer.auto_model.get_input_embeddings()
        return embeddings

    # -- inference -------------------------------------------------------------------------------
    @torch.inference_mode()
    def predict(
        self,
        pairs: Sequence[Pair] | Pair,
        *,
        batch_size: int = 32,
        activation: Callable[[Tensor], Tensor] | None = None,
        apply_softmax: bool = False,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        truncate: bool = True,
        prompt: str | None = None,
        prompt_name: str | None = None,
    ) -> Any:
        """Scores of text pairs: shape (n,) for one label, (n, num_labels) otherwise; one pair -> one row.

        Pairs are tokenized once, sorted by token length and batched so that each batch pads only to
        its own longest member; results come back in input order. `activation` replaces the model's
        (`nn.Identity()` gives raw logits); `apply_softmax` turns class logits into probabilities.
        `truncate=False` raises `InputTooLongError` for a pair over `max_seq_length` tokens.
        `prompt` (or `prompt_name`, one of `prompts`; default `default_prompt_name`) is an instruction:
        an LLM reranker reads it as its chat template's system message.
        """
        if isinstance(pairs, str):
            raise TypeError("expected a (text, text) pair or a list of pairs, got a single string")
        single = _is_pair(pairs)
        items: list[Pair] = [pairs] if single else list(pairs)  # type: ignore[list-item,arg-type]
        firsts, seconds = _split_pairs(items)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if self.training:
            self.eval()
        transformer = self.transformer
        encoded = self.encode_pairs(firsts, seconds, truncate, self.resolve_prompt(prompt, prompt_name))
        order = transformer.longest_first(encoded, truncate, "pairs", "predict with truncate=True")
        if show_progress_bar is None:
            show_progress_bar = len(items) >= PROGRESS_BAR_MIN_PAIRS
        act = self.activation if activation is None else activation
        out = torch.empty((len(items), self.num_labels), dtype=torch.float32)
        device = self.device
        starts = range(0, len(items), batch_size)
        for start in tqdm(starts, desc="Scoring pairs", unit="batch", disable=not show_progress_bar):
            rows = order[start : start + batch_size]
            features: dict[str, Any] = {
                k: v.to(device, non_blocking=True) for k, v in transformer.collate(encoded, rows).items()
            }
            logits = self._scores(features)
            scores = act(logits)
            if apply_softmax and self.num_labels > 1:
                scores = torch.softmax(scores, dim=-1)
            out[torch.from_numpy(rows)] = scores.cpu()
        result: Tensor = out[:, 0] if self.num_labels == 1 else out
        if single:
            result = result[0]
        if convert_to_tensor or not convert_to_numpy:
            return result
        return result.numpy()

    def _scores(self, features: dict[str, Any]) -> Tensor:
        """(batch, num_labels) float logits of one padded batch, on the chosen backend."""
        scorer = self.active_scorer()
        if scorer is None:
            return self(features)["scores"].float()
        if not isinstance(self.transformer, CausalLMTransformer):
            return scorer(features)
        features["causal_logits"] = scorer(features).unsqueeze(1)
        features[LOGIT_IDS_KEY] = self.transformer.score_token_ids
        return self[-1](features)["scores"].float()

    def rank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        top_k: int | None = None,
        return_documents: bool = False,
        batch_size: int = 32,
        activation: Callable[[Tensor], Tensor] | None = None,
        show_progress_bar: bool | None = None,
        prompt: str | None = None,
        prompt_name: str | None = None,
    ) -> list[dict[str, Any]]:
        """Documents ordered by their score against `query`, best first (ties keep input order).

        Each result is `{"corpus_id": index, "score": float}`, plus `"text"` with `return_documents`.
        Needs a single-score model (`num_labels == 1`).
        """
        if self.num_labels != 1:
            raise ValueError(
                f"rank needs a model with one output score, this one has {self.num_labels} labels"
            )
        if not isinstance(query, str):
            raise TypeError(f"query is {type(query).__name__}, not str")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {top_k}")
        docs = list(documents)
        scores = self.predict(
            [(query, d) for d in docs],
            batch_size=batch_size,
            activation=activation,
            show_progress_bar=show_progress_bar,
            prompt=prompt,
            prompt_name=prompt_name,
        )
        order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:top_k]
        results = []
        for i in order.tolist():
            hit: dict[str, Any] = {"corpus_id": i, "score": float(scores[i])}
            if return_documents:
                hit["text"] = docs[i]
            results.append(hit)
        return results

    # -- persistence -----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the layout sentence-transformers' CrossEncoder reads (and munjang loads back)."""
        self._restore_torch_weights()
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        write_modules(folder, list(self))  # type: ignore[arg-type]
        activation = activation_name(self.activation)
        write_json(
            folder / "config_sentence_transformers.json",
            {
                "__version__": library_versions(),
                "model_type": "CrossEncoder",
                "activation_fn": activation,
                "prompts": self.prompts,
                "default_prompt_name": self.default_prompt_name,
            },
        )
        # sentence-transformers 4 and 5 read the activation from config.json.
        config_file = folder / "config.json"
        config = read_json(config_file)
        config["sentence_transformers"] = {"activation_fn": activation}
        write_json(config_file, config)


def _is_pair(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _split_pairs(pairs: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Check that every item is a (str, str) pair and return the two columns."""
    if isinstance(pairs, str):
        raise TypeError("expected a list of (text, text) pairs, got a single string")
    firsts: list[str] = []
    seconds: list[str] = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, str) or not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"pairs[{i}] is not a (text, text) pair: {pair!r:.80}")
        a, b = pair
        for j, text in enumerate((a, b)):
            if not isinstance(text, str):
                raise TypeError(f"pairs[{i}][{j}] is {type(text).__name__}, not str")
        firsts.append(a)
        seconds.append(b)
    return firsts, seconds
