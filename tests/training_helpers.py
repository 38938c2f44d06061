"""Tiny models and data for trainer tests (fast on two cores)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, BertConfig

from munjang.hub import embedded_default_path
from munjang.training import Example

WORDS = [
    "사과",
    "바나나",
    "고양이",
    "강아지",
    "서울",
    "부산",
    "apple",
    "banana",
    "cat",
    "dog",
    "rain",
    "sun",
    "car",
    "road",
]


def tiny_bert(folder: Path, dropout: float = 0.1, seed: int = 0) -> Path:
    """A 2-layer, 32-dim BERT with the MiniLM tokenizer, saved to `folder`."""
    tokenizer = AutoTokenizer.from_pretrained(str(embedded_default_path()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    torch.manual_seed(seed)
    AutoModel.from_config(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def pair_examples(n: int, seed: int = 0) -> list[Example]:
    """Sentence pairs with a score in [0, 1] that depends on word overlap."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        a = [WORDS[int(i)] for i in torch.randint(len(WORDS), (4,), generator=g)]
        b = [WORDS[int(i)] for i in torch.randint(len(WORDS), (3,), generator=g)]
        overlap = len(set(a) & set(b)) / 3
        out.append(Example((" ".join(a), " ".join(b)), float(overlap)))
    return out
