"""Texts → the padded id batch a late-interaction model reads, and the mask of tokens MaxSim scores.

For a query: the marker (a prompt before the text, or a marker token inserted after the first
token), truncation to the query length, then query expansion: padding positions up to the
expansion length become the expansion token ([MASK]), left out of attention unless `attend`,
and scored. For a document: the marker, truncation to the document length, and the skiplist:
tokens such as punctuation are left out of scoring (they still shape the others through attention).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .settings import LateInteractionSettings

TASKS = ("query", "document")


@dataclass
class TokenPlan:
    """What one task needs to tokenize: the prompt text, the marker id, the truncation length."""

    prompt: str
    marker_id: int | None
    max_length: int
    floor: int  # the width expansion pads queries to (0: no expansion)
    attend: bool
    expansion_id: int | None
    skip_ids: torch.Tensor | None


def resolve_token(tokenizer: Any, token: str) -> int | None:
    """The id of `token` in the vocabulary, None when the tokenizer only knows it as [UNK]."""
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None:
        return None
    unk = getattr(tokenizer, "unk_token_id", None)
    if token_id == unk and token != getattr(tokenizer, "unk_token", None):
        return None
    return int(token_id)


def plan_for(
    task: str, settings: LateInteractionSettings, tokenizer: Any, model_max_length: int, prompt: str | None
) -> TokenPlan:
    """The tokenization plan of `task` ("query" or "document") under `settings`.

    `prompt` overrides the model's prompt for the task (the query prompt, or the first of
    document / passage / corpus).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    if prompt is None:
        names = ("query",) if task == "query" else ("document", "passage", "corpus")
        prompt = next((settings.prompts[n] for n in names if n in settings.prompts), "")
    marker = settings.query_prefix if task == "query" else settings.document_prefix
    marker_id = None
    if marker and marker.split():
        marker_id = resolve_token(tokenizer, marker)
        if marker_id is None:
            marker_id = resolve_token(tokenizer, marker.split()[0])
    if marker and marker_id is None:
        # A marker the vocabulary lacks is plain text before the input (as sentence-transformers reads it).
        prompt, marker = marker + prompt, None
    length = settings.query_length if task == "query" else settings.document_length
    max_length = min(length, model_max_length) if length else model_max_length
    expansion = settings.expansion if task == "query" else None
    floor, attend, expansion_id = 0, False, None
    if expansion is not None:
        floor, attend = expansion.length, expansion.attend
        max_length = expansion.length if expansion.strategy == "fixed" else max(max_length, expansion.length)
        if expansion.token is not None:
            expansion_id = resolve_token(tokenizer, expansion.token)
        else:
            expansion_id = tokenizer.mask_token_id
            if expansion_id is None:
                expansion_id = tokenizer.eos_token_id
    skip_ids = None
    if task in settings.skiplist_tasks and settings.skiplist_words:
        ids = [resolve_token(tokenizer, w) for w in settings.skiplist_words]
        known = sorted({i for i in ids if i is not None})
        skip_ids = torch.tensor(known, dtype=torch.long) if known else None
    return TokenPlan(prompt, marker_id, max_length, floor, attend, expansion_id, skip_ids)


def token_id_lists(
    tokenizer: Any, texts: Sequence[str], plan: TokenPlan, lower: bool = False
) -> list[list[int]]:
    """Unpadded ids per text: prompt, truncation, and the marker token inserted after the first."""
    inputs = [plan.prompt + (t.lower() if lower else t) for t in texts]
    room = plan.max_length - (1 if plan.marker_id is not None else 0)
    encoded = tokenizer(
        inputs,
        padding=False,
        truncation=True,
        max_length=room,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,
    )["input_ids"]
    if plan.marker_id is None:
        return [list(ids) for ids in encoded]
    return [[ids[0], plan.marker_id, *ids[1:]] for ids in encoded]


def pad_ids(
    ids: Sequence[Sequence[int]], plan: TokenPlan, pad_id: int, token_type_ids: bool
) -> dict[str, torch.Tensor]:
    """Pad to the batch's longest row (at least the expansion floor): input ids, the attention mask
    the encoder sees, and `score_mask`, the tokens MaxSim scores."""
    width = max([len(row) for row in ids] + [plan.floor])
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(ids), width), dtype=torch.long)
    for r, row in enumerate(ids):
        input_ids[r, : len(row)] = torch.tensor(row, dtype=torch.long)
        attention[r, : len(row)] = 1
    score = attention.bool()
    if plan.floor:
        expansion = (attention == 0) & (torch.arange(width) < plan.floor)
        if plan.expansion_id is not None:
            input_ids = input_ids.masked_fill(expansion, plan.expansion_id)
        if plan.attend:
            attention = attention.masked_fill(expansion, 1)
        score = score | expansion
    if plan.skip_ids is not None:
        score = score & ~torch.isin(input_ids, plan.skip_ids)
    batch = {"input_ids": input_ids, "attention_mask": attention, "score_mask": score}
    if token_type_ids:
        batch["token_type_ids"] = torch.zeros_like(input_ids)
    return batch
