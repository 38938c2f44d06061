"""Tiny models and data for trainer tests (fast on two cores)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, BertConfig

from munjang.models.hub import embedded_default_path
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


SUBJECTS = ["A man", "A woman", "A child", "A dog", "A cat", "An old farmer"]
ACTIONS = [
    "is playing a guitar",
    "is eating pasta",
    "is riding a horse",
    "is swimming in a lake",
    "is reading a book",
    "is cooking dinner",
]


def templated_pairs(n: int, seed: int = 0) -> list[tuple[tuple[str, str], int]]:
    """Sentence pairs and how many of (subject, action) they share: 0, 1 or 2.

    Natural sentences, so a pretrained model (MiniLM) learns to compare them in a few dozen steps,
    which a tiny random transformer cannot.
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        s1, a1 = (int(x) for x in torch.randint(6, (2,), generator=g))
        same_s, same_a = (bool(x) for x in torch.rand(2, generator=g) < 0.5)
        s2 = s1 if same_s else int(torch.randint(6, (1,), generator=g))
        a2 = a1 if same_a else int(torch.randint(6, (1,), generator=g))
        pair = (f"{SUBJECTS[s1]} {ACTIONS[a1]}.", f"{SUBJECTS[s2]} {ACTIONS[a2]}.")
        out.append((pair, int(s1 == s2) + int(a1 == a2)))
    return out


def weights(encoder: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the encoder's state on the CPU, to compare runs after training moved them."""
    return {k: v.detach().cpu().clone() for k, v in encoder.state_dict().items()}
