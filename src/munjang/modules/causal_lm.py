"""CausalLMTransformer: a decoder language model (`*ForCausalLM`) read as a reranker: its next-token
logits at the last position of `query + document`, the input of `LogitScore`.

sentence-transformers (>= 5.4) saves it as a `Transformer` with `transformer_task: "text-generation"`.
What munjang does the same way, for the same scores:

- a pair is rendered through the tokenizer's chat template when the folder's `modality_config` has a
  "message" entry (sentence-transformers adds it when the tokenizer has a template): the messages
  `[{"role": "query", ...}, {"role": "document", ...}]`, a prompt (an instruction) first as a
  "system" message; `processing_kwargs["chat_template"]` (e.g. `add_generation_prompt`) is passed to
  the template. Without a template the pair is the tokenizer's own pair encoding and a prompt is
  put before the query;
- over `max_seq_length` tokens the rendered text is cut on the right and the template's tail (the
  tokens after the document: end of turn, assistant prefix) written back over the last tokens,
  because the score is read at the last position;
- batches are padded on the left, so the last position is a real token of every row.

Where munjang differs, for speed: the backbone's last hidden state is projected on the output
head's rows of the scored tokens only (two rows, not the whole vocabulary) when `score_token_ids`
is set, which `CrossEncoder` does for a `LogitScore` head.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ..errors import ModelLoadError
from .base import Features, read_json
from .logit_score import LOGIT_IDS_KEY
from .transformer import Transformer

# Two fillers that tokenize differently: the longest common token tail of their renders is the template's.
_FILLERS = ("0", "1 2 3 4")


def left_pad(
    encoded: dict[str, list[list[int]]], rows: Sequence[int] | np.ndarray, pad_id: int
) -> dict[str, Any]:
    """Pad the chosen rows on the left to their longest member (the last position is real in every row)."""
    ids = [encoded["input_ids"][i] for i in rows]
    width = max((len(x) for x in ids), default=0)
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for r, seq in enumerate(ids):
        if seq:
            input_ids[r, width - len(seq) :] = seq
            mask[r, width - len(seq) :] = 1
    return {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}


class CausalLMTransformer(Transformer):
    """A `*ForCausalLM` backbone and its tokenizer; produces `causal_logits` at the last position."""

    default_task: ClassVar[str] = "text-generation"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
        task: str = "text-generation",
        use_chat_template: bool | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if task != "text-generation":
            raise ValueError(
                f"a CausalLMTransformer gives next-token logits (task 'text-generation'), not {task!r}"
            )
        super().__init__(model, tokenizer, max_seq_length, do_lower_case, task)
        template = getattr(tokenizer, "chat_template", None)
        self.use_chat_template = bool(template) if use_chat_template is None else use_chat_template
        if self.use_chat_template and not template:
            raise ModelLoadError("the folder asks for the chat template, but the tokenizer has none")
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.score_token_ids: list[int] | None = None
        self._suffixes: dict[str | None, list[int]] = {}
        if self.pad_token_id == 0 and tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
            self.pad_token_id = int(tokenizer.eos_token_id)  # masked anyway; keeps ids in the vocabulary

    # -- tokenizing ------------------------------------------------------------------------------
    def tokenize_pairs(
        self, firsts: Sequence[str], seconds: Sequence[str], truncate: bool = True, prompt: str | None = None
    ) -> dict[str, list[list[int]]]:
        """Token ids of (query, document) pairs as sentence-transformers builds them for this model."""
        if not self.use_chat_template:
            if prompt:
                firsts = [prompt + q for q in firsts]
            return super().tokenize_pairs(firsts, seconds, truncate)
        rendered = [self._render(q, d, prompt) for q, d in zip(firsts, seconds, strict=True)]
        rust = self.tokenizer._tokenizer
        with self._tokenizer_lock:
            rust.no_truncation()
            rust.no_padding()
            encodings = getattr(rust, "encode_batch_fast", rust.encode_batch)(
                rendered, add_special_tokens=False
            )
        ids = [list(e.ids) for e in encodings]
        if truncate:
            limit = self.max_seq_length
            left = getattr(self.tokenizer, "truncation_side", "right") == "left"
            for i, row in enumerate(ids):
                if len(row) >= limit:
                    row = row[len(row) - limit :] if left else row[:limit]
                    suffix = self._suffix(prompt)[-limit:]
                    if suffix and not left:
                        row[len(row) - len(suffix) :] = suffix
                    ids[i] = row
        return {"input_ids": ids}

    def _messages(self, query: str, document: str, prompt: str | None) -> list[dict[str, str]]:
        messages = [{"role": "query", "content": query}, {"role": "document", "content": document}]
        return ([{"role": "system", "content": prompt}] if prompt else []) + messages

    def _render(self, query: str, document: str, prompt: str | None) -> str:
        text = self.tokenizer.apply_chat_template(
            self._messages(query, document, prompt), tokenize=False, **self._template_kwargs()
        )
        return str(text)

    def _template_kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in self.chat_template_kwargs.items() if k != "restore_suffix"}

    def _suffix(self, prompt: str | None) -> list[int]:
        """The template's token tail after the document (what truncation must not remove)."""
        if not self.chat_template_kwargs.get("restore_suffix", True):
            return []
        if prompt not in self._suffixes:
            renders = [
                self.tokenizer.encode(self._render(f, f, prompt), add_special_tokens=False) for f in _FILLERS
            ]
            count = 0
            for a, b in zip(reversed(renders[0]), reversed(renders[1]), strict=False):
                if a != b:
                    break
                count += 1
            short = min(len(r) for r in renders)
            self._suffixes[prompt] = renders[0][len(renders[0]) - count :] if 0 < count < short else []
        return self._suffixes[prompt]

    def collate(
        self, encoded: dict[str, list[list[int]]], rows: Sequence[int] | np.ndarray
    ) -> dict[str, torch.Tensor]:
        return left_pad(encoded, rows, self.pad_token_id)

    # -- forward ---------------------------------------------------------------------------------
    def forward(self, features: Features) -> Features:
        model = self.auto_model
        inputs = {k: features[k] for k in ("input_ids", "attention_mask") if k in features}
        config = model.config
        rows = self.score_token_ids
        if (
            rows is None
            or getattr(config, "final_logit_softcapping", None)
            or getattr(config, "logit_scale", None)
        ):
            features["causal_logits"] = model(**inputs, logits_to_keep=1, return_dict=True).logits
            return features
        hidden = model.get_decoder()(**inputs, return_dict=True).last_hidden_state[:, -1:]
        head = model.get_output_embeddings()
        index = torch.tensor(rows, device=hidden.device)
        bias = None if head.bias is None else head.bias[index]
        features["causal_logits"] = torch.nn.functional.linear(hidden, head.weight[index], bias)
        features[LOGIT_IDS_KEY] = rows
        return features

    # -- persistence -----------------------------------------------------------------------------
    def get_config_dict(self) -> dict[str, Any]:
        text = {"method": "forward", "method_output_name": "logits"}
        modality: dict[str, Any] = {"text": dict(text)}
        if self.use_chat_template:
            modality["message"] = {**text, "format": "flat"}
        config: dict[str, Any] = {
            "max_seq_length": self.max_seq_length,
            "do_lower_case": self.do_lower_case,
            "transformer_task": "text-generation",
            "modality_config": modality,
            "module_output_name": "causal_logits",
        }
        if self.chat_template_kwargs:
            config["processing_kwargs"] = {"chat_template": self.chat_template_kwargs}
        return config

    @classmethod
    def load(  # type: ignore[override]  # the same arguments, read through **kwargs
        cls, path: str | Path, **kwargs: Any
    ) -> CausalLMTransformer:
        """Load a text-generation `Transformer` folder (sentence-transformers' LLM reranker layout)."""
        kwargs.pop("task", None)
        base = Transformer.load(path, task="text-generation", **kwargs)
        st_file = Path(path) / "sentence_bert_config.json"
        st_config = read_json(st_file) if st_file.exists() else {}
        modality = st_config.get("modality_config")
        use_chat = None if not isinstance(modality, dict) else "message" in modality
        processing = st_config.get("processing_kwargs") or {}
        if not isinstance(processing, dict):
            raise ModelLoadError(f"{st_file}: processing_kwargs must be an object")
        template_kwargs = processing.get("chat_template") or {}
        if not isinstance(template_kwargs, dict):
            raise ModelLoadError(f"{st_file}: processing_kwargs.chat_template must be an object")
        return cls(
            base.auto_model,
            base.tokenizer,
            base.max_seq_length,
            base.do_lower_case,
            "text-generation",
            use_chat,
            template_kwargs,
        )
