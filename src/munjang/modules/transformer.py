"""Transformer: text -> token ids -> contextual token vectors, with any `transformers.AutoModel` backbone.

Tokenization and padding are split on purpose: the encoder tokenizes every input once (without
padding) to sort by true token length, then pads each batch only to its own longest member.

With `task="sequence-classification"` the backbone is an `AutoModelForSequenceClassification` and the
module produces `scores` (its logits) instead of token vectors: a cross-encoder with the checkpoint's
own head, written the way sentence-transformers >= 6 writes it (`transformer_task` in
sentence_bert_config.json). With `task="fill-mask"` it is an `AutoModelForMaskedLM` whose MLM logits
(one vocabulary-wide row per token) take the place of token vectors: the input of SPLADE pooling.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from tokenizers import Tokenizer
from torch import nn

from ..errors import CorruptModelError, InputTooLongError, ModelLoadError
from .base import Features, Module, read_json, write_json

# Tokenizers report "no limit" as a huge sentinel; anything above this is treated as unknown.
_NO_LIMIT = 1_000_000
# Tokens past the model's limit a text keeps when it is cut before pairing (`Transformer._cut_pairs`).
PAIR_MARGIN = 16

TASKS = ("feature-extraction", "sequence-classification", "fill-mask", "text-generation")


def pad_batch(
    encoded: dict[str, list[list[int]]], rows: Sequence[int] | np.ndarray, pad_token_id: int
) -> dict[str, torch.Tensor]:
    """Pad the chosen rows of `encoded` to their longest member and build the attention mask."""
    ids = [encoded["input_ids"][i] for i in rows]
    width = max((len(x) for x in ids), default=0)
    input_ids = np.full((len(ids), width), pad_token_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for r, seq in enumerate(ids):
        input_ids[r, : len(seq)] = seq
        mask[r, : len(seq)] = 1
    batch = {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}
    if "token_type_ids" in encoded:
        types = np.zeros((len(ids), width), dtype=np.int64)
        for r, i in enumerate(rows):
            seq = encoded["token_type_ids"][i]
            types[r, : len(seq)] = seq
        batch["token_type_ids"] = torch.from_numpy(types)
    return batch


def _check_safetensors(folder: Path) -> None:
    """Open each safetensors file's header so a corrupt file fails with its name, not deep in transformers."""
    from safetensors import SafetensorError, safe_open

    for weights in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(weights), framework="pt") as f:
                f.keys()
        except (SafetensorError, OSError, ValueError) as e:
            raise CorruptModelError(f"{weights}: corrupt or truncated safetensors file ({e})") from e


def _quiet_transformers() -> None:
    """transformers draws its own bar while loading weights; munjang's callers did not ask for it."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def _has_weights(folder: Path) -> tuple[bool, bool]:
    safetensors = any(folder.glob("*.safetensors"))
    pickled = any(folder.glob("pytorch_model*.bin"))
    return safetensors, pickled


class Transformer(Module):
    """A Hugging Face encoder and its tokenizer; produces `token_embeddings`.

    `max_seq_length` is the truncation length in tokens (special tokens included);
    `do_lower_case` lower-cases text before tokenizing, for models trained that way; `task` is
    "feature-extraction" (token vectors) or "sequence-classification" (the checkpoint's logits as `scores`).
    """

    st_type: ClassVar[str] = "sentence_transformers.models.Transformer"
    folder_name: ClassVar[str] = ""
    default_task: ClassVar[str] = "feature-extraction"  # when sentence_bert_config.json names none

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
        task: str = "feature-extraction",
    ) -> None:
        super().__init__()
        if task not in TASKS:
            raise ValueError(f"unknown transformer task {task!r}; choose from {', '.join(TASKS)}")
        self.auto_model = model
        self.tokenizer = tokenizer
        self.do_lower_case = do_lower_case
        self.task = task
        self._tokenizer_lock = threading.Lock()
        limit = self._model_limit()
        self.max_seq_length: int = min(max_seq_length, limit) if max_seq_length else limit
        self._wants_token_type_ids = "token_type_ids" in getattr(tokenizer, "model_input_names", [])
        pad_id = tokenizer.pad_token_id
        self.pad_token_id: int = int(pad_id) if pad_id is not None else 0
        # Set while an encoder has freed the weights (backend_selection.py): reads them back.
        self.restore_weights: Callable[[], None] | None = None

    def ensure_weights(self) -> None:
        """Read back weights an encoder freed (backend_selection.py); a no-op when they are in memory."""
        if self.restore_weights is not None:
            self.restore_weights()

    def named_parameters(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, nn.Parameter]]:
        self.ensure_weights()
        return super().named_parameters(*args, **kwargs)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        self.ensure_weights()
        return super().state_dict(*args, **kwargs)

    def _model_limit(self) -> int:
        """The longest input the backbone and tokenizer both accept."""
        limits = []
        positions = getattr(self.auto_model.config, "max_position_embeddings", None)
        if positions:
            # RoBERTa-style models reserve padding_idx + 1 positions (514 -> 512).
            if getattr(self.auto_model.config, "model_type", "") in {"roberta", "xlm-roberta", "camembert"}:
                positions -= 2
            limits.append(int(positions))
        tok_max = getattr(self.tokenizer, "model_max_length", None)
        if tok_max and tok_max < _NO_LIMIT:
            limits.append(int(tok_max))
        return min(limits) if limits else 512

    @property
    def hidden_size(self) -> int:
        return int(self.auto_model.config.hidden_size)

    @property
    def output_dimension(self) -> int:
        if self.task == "fill-mask":
            return int(self.auto_model.config.vocab_size)
        return self.hidden_size

    def describe(self) -> dict[str, Any]:
        """The architecture part of `SentenceEncoder.describe` (what `munjang info` prints)."""
        config = self.auto_model.config
        return {
            "architecture": type(self.auto_model).__name__,
            "model_type": getattr(config, "model_type", "?"),
            "layers": getattr(config, "num_hidden_layers", None),
            "hidden_size": self.hidden_size,
            "vocab_size": getattr(config, "vocab_size", None),
        }

    def tokenize(self, texts: Sequence[str], truncate: bool = True) -> dict[str, list[list[int]]]:
        """Token ids per text (special tokens added, no padding), truncated to `max_seq_length`."""
        return self._token_ids(list(texts), None, truncate)

    def tokenize_pairs(
        self, firsts: Sequence[str], seconds: Sequence[str], truncate: bool = True
    ) -> dict[str, list[list[int]]]:
        """Token ids of text pairs, `[CLS] a [SEP] b [SEP]` (segment ids where the model uses them).

        Truncation takes tokens from the longer text of a pair first, so both keep some context. A
        long text is first cut alone a few tokens past the model's limit (`_cut_pairs`): the
        tokenizer's pair truncation keeps every combination of the two texts' overflowing pieces,
        which grows with the product of their lengths (two 63,000-character texts: 25 s and 12 GB).
        """
        firsts, seconds = list(firsts), list(seconds)
        if truncate:
            self._cut_pairs(firsts, seconds)
        return self._token_ids(firsts, seconds, truncate)

    def _cut_pairs(self, firsts: list[str], seconds: list[str]) -> None:
        """Cut, in place, each text of a pair that has more tokens than a pair could keep after its
        first `max_seq_length + PAIR_MARGIN` tokens (its last ones, for a tokenizer that truncates
        on the left), the longer text of the pair `PAIR_MARGIN` tokens later than the shorter: the
        pair truncation keeps the same ids, since it looks at the lengths only through which text
        is longer and the shorter one's length up to the limit; the margins keep a cut inside a
        word away from them. Two texts of equal length longer than the limit may split the limit
        one token differently. Linear in the texts' length."""
        rust = getattr(self.tokenizer, "_tokenizer", None)
        cap = self.max_seq_length + PAIR_MARGIN
        # a token is at least one character, or one byte of one (at most 4): shorter texts fit
        pairs = [i for i in range(len(firsts)) if 4 * max(len(firsts[i]), len(seconds[i])) > cap]
        if not pairs or not isinstance(rust, Tokenizer):
            return
        left = getattr(self.tokenizer, "truncation_side", "right") == "left"
        with self._tokenizer_lock:
            rust.no_truncation()
            rust.no_padding()
            fast = getattr(rust, "encode_batch_fast", rust.encode_batch)
            n1 = [len(e.ids) for e in fast([firsts[i] for i in pairs], add_special_tokens=False)]
            n2 = [len(e.ids) for e in fast([seconds[i] for i in pairs], add_special_tokens=False)]
        cuts: dict[int, list[tuple[list[str], int]]] = {}  # tokens kept -> (texts, index) to cut
        for i, a, b in zip(pairs, n1, n2, strict=True):
            for texts, n, other in ((firsts, a, b), (seconds, b, a)):
                keep = cap + (PAIR_MARGIN if n > other else 0)
                if n > keep:
                    cuts.setdefault(keep, []).append((texts, i))
        for keep, where in cuts.items():
            with self._tokenizer_lock:
                rust.enable_truncation(keep, strategy="longest_first", direction="left" if left else "right")
                encodings = rust.encode_batch([texts[i] for texts, i in where], add_special_tokens=False)
            for (texts, i), encoding in zip(where, encodings, strict=True):
                text = texts[i]
                texts[i] = text[encoding.offsets[0][0] :] if left else text[: encoding.offsets[-1][1]]

    def _token_ids(
        self, texts: list[str], pairs: list[str] | None, truncate: bool
    ) -> dict[str, list[list[int]]]:
        if not texts:
            empty: dict[str, list[list[int]]] = {"input_ids": []}
            if self._wants_token_type_ids:
                empty["token_type_ids"] = []
            return empty
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
            pairs = None if pairs is None else [t.lower() for t in pairs]
        rust = getattr(self.tokenizer, "_tokenizer", None)
        with self._tokenizer_lock:  # fast tokenizers are not safe to reconfigure from several threads
            if isinstance(rust, Tokenizer):
                return self._rust_token_ids(rust, texts, pairs, truncate)
            enc = self.tokenizer(
                texts,
                pairs,
                padding=False,
                truncation="longest_first" if truncate else False,
                max_length=self.max_seq_length if truncate else None,
                return_attention_mask=False,
                return_token_type_ids=self._wants_token_type_ids,
                verbose=False,
            )
        out = {"input_ids": enc["input_ids"]}
        if self._wants_token_type_ids:
            out["token_type_ids"] = enc["token_type_ids"]
        return out

    def _rust_token_ids(
        self, rust: Any, texts: list[str], pairs: list[str] | None, truncate: bool
    ) -> dict[str, list[list[int]]]:
        """The same ids as the transformers call, straight from the Rust tokenizer: transformers'
        per-sentence conversion of the results into Python dicts costs several times the tokenization
        itself."""
        if truncate:
            side = getattr(self.tokenizer, "truncation_side", "right")
            rust.enable_truncation(self.max_seq_length, strategy="longest_first", direction=side)
        else:
            rust.no_truncation()
        rust.no_padding()
        inputs: list[Any] = texts if pairs is None else list(zip(texts, pairs, strict=True))
        encode = getattr(rust, "encode_batch_fast", rust.encode_batch)  # the same ids, no character offsets
        encodings = encode(inputs, add_special_tokens=True)
        out = {"input_ids": [e.ids for e in encodings]}
        if self._wants_token_type_ids:
            out["token_type_ids"] = [e.type_ids for e in encodings]
        return out

    def check_lengths(
        self, encoded: dict[str, list[list[int]]], what: str, hint: str, offset: int = 0
    ) -> None:
        """Raise InputTooLongError naming `what[offset + i]` for the first input over `max_seq_length`
        (`encoded` must come from `tokenize(..., truncate=False)`); `hint` says how to call again."""
        for i, ids in enumerate(encoded["input_ids"]):
            if len(ids) > self.max_seq_length:
                raise InputTooLongError(
                    f"{what}[{offset + i}] has {len(ids)} tokens, over the model's limit of "
                    f"{self.max_seq_length}; shorten it or {hint}"
                )

    def longest_first(
        self, encoded: dict[str, list[list[int]]], truncate: bool, what: str, hint: str
    ) -> np.ndarray:
        """Row order by token count, longest first (stable), for length-sorted batching.

        With `truncate=False`, an input over `max_seq_length` raises InputTooLongError naming
        `what[i]`; `hint` says how to call again with truncation.
        """
        if not truncate:
            self.check_lengths(encoded, what, hint)
        ids = encoded["input_ids"]
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        return np.argsort(-lengths, kind="stable")

    def collate(
        self, encoded: dict[str, list[list[int]]], rows: Sequence[int] | np.ndarray
    ) -> dict[str, torch.Tensor]:
        """Pad the chosen rows of `encoded` to their longest member and build the attention mask."""
        return pad_batch(encoded, rows, self.pad_token_id)

    def forward(self, features: Features) -> Features:
        self.ensure_weights()
        inputs = {k: features[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in features}
        output = self.auto_model(**inputs, return_dict=True)
        if self.task == "sequence-classification":
            features["scores"] = output.logits
        elif self.task == "fill-mask":  # the MLM head's logits, one vocabulary-wide row per token (SPLADE)
            features["token_embeddings"] = output.logits
        else:
            features["token_embeddings"] = output.last_hidden_state
        return features

    def get_config_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {"max_seq_length": self.max_seq_length, "do_lower_case": self.do_lower_case}
        if self.task != "feature-extraction":
            # The keys sentence-transformers >= 6 reads to build the same module.
            config["transformer_task"] = self.task
            config["modality_config"] = {"text": {"method": "forward", "method_output_name": "logits"}}
            config["module_output_name"] = (
                "scores" if self.task == "sequence-classification" else "token_embeddings"
            )
        return config

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.ensure_weights()
        self.auto_model.save_pretrained(str(path), safe_serialization=True)
        self.tokenizer.save_pretrained(str(path))
        write_json(path / "sentence_bert_config.json", self.get_config_dict())

    @classmethod
    def load(
        cls,
        path: str | Path,
        trust_remote_code: bool = False,
        dtype: str | torch.dtype = torch.float32,
        max_seq_length: int | None = None,
        model_kwargs: dict[str, Any] | None = None,
        tokenizer_kwargs: dict[str, Any] | None = None,
        task: str | None = None,
        config_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Transformer:
        """Load backbone and tokenizer from a folder holding `config.json` and weights.

        Weights come from safetensors; a folder with only `pytorch_model.bin` is read through
        torch's weights-only unpickler (tensors only, no code runs). `task` overrides the folder's
        `transformer_task`; `config_kwargs` (e.g. `num_labels`) update the model config.
        """
        from transformers import (
            AutoConfig,
            AutoModel,
            AutoModelForCausalLM,
            AutoModelForMaskedLM,
            AutoModelForSequenceClassification,
            AutoTokenizer,
        )

        path = Path(path)
        if not (path / "config.json").exists():
            raise ModelLoadError(f"{path}: no config.json, so this is not a Hugging Face model folder")
        has_safetensors, has_pickle = _has_weights(path)
        if not (has_safetensors or has_pickle):
            raise ModelLoadError(f"{path}: no weights (model.safetensors) in the model folder")
        _check_safetensors(path)
        st_file = path / "sentence_bert_config.json"
        st_config = read_json(st_file) if st_file.exists() else {}
        read_json(path / "config.json")  # names the file if it is not valid JSON
        task = task or str(st_config.get("transformer_task", cls.default_task))
        if task not in TASKS:
            raise ModelLoadError(
                f"{st_file}: transformer_task {task!r} is not supported (use one of {TASKS})"
            )
        auto_class = {
            "sequence-classification": AutoModelForSequenceClassification,
            "fill-mask": AutoModelForMaskedLM,
            "text-generation": AutoModelForCausalLM,  # an LLM reranker: modules/causal_lm.py
        }.get(task, AutoModel)
        try:
            config = AutoConfig.from_pretrained(
                str(path), trust_remote_code=trust_remote_code, **(config_kwargs or {})
            )
            _quiet_transformers()
            model = auto_class.from_pretrained(
                str(path),
                config=config,
                trust_remote_code=trust_remote_code,
                dtype=dtype,
                use_safetensors=has_safetensors,
                **(model_kwargs or {}),
            )
            tokenizer = AutoTokenizer.from_pretrained(
                str(path), trust_remote_code=trust_remote_code, use_fast=True, **(tokenizer_kwargs or {})
            )
        except pickle.UnpicklingError:
            raise ModelLoadError(
                f"{path}: its pytorch_model.bin holds more than plain tensors; munjang reads pickle weights "
                "only with torch's weights-only reader and never runs code from them. Convert the model "
                "to safetensors where you trust its source."
            ) from None
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            raise ModelLoadError(f"{path}: could not load the transformer ({type(e).__name__}: {e})") from e
        if not getattr(tokenizer, "is_fast", False):
            raise ModelLoadError(f"{path}: no fast (Rust) tokenizer could be built for this model")
        max_len = max_seq_length or st_config.get("max_seq_length")
        if max_len is None:
            tok_max = getattr(tokenizer, "model_max_length", None)
            max_len = tok_max if tok_max and tok_max < _NO_LIMIT else None
        model.eval()
        return cls(model, tokenizer, max_len, bool(st_config.get("do_lower_case", False)), task)

    def extra_repr(self) -> str:
        return (
            f"architecture={type(self.auto_model).__name__}, max_seq_length={self.max_seq_length}, "
            f"do_lower_case={self.do_lower_case}"
            + (f", task={self.task}" if self.task != "feature-extraction" else "")
        )
