"""What the loss parity tests share: a tiny BERT both libraries load, a Korean and English batch, the
reference's features, and the check that every parameter's gradient agrees.

sentence-transformers is the reference (a test-only dependency).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer, BertConfig

from munjang.models.hub import embedded_default_path

try:  # sentence-transformers >= 6 moved the module; older releases only have the second path
    from sentence_transformers.sentence_transformer import losses as st_losses
except ImportError:  # pragma: no cover
    from sentence_transformers import losses as st_losses

try:  # sentence-transformers >= 6 may merge the columns into one padded forward pass
    from sentence_transformers.base.losses.merged_forward import column_merging_disabled
except ImportError:  # pragma: no cover
    from contextlib import nullcontext as column_merging_disabled

__all__ = [
    "ANCHORS",
    "NEGATIVES",
    "POSITIVES",
    "TOLERANCE",
    "assert_same_gradients",
    "character_tokenizer",
    "column_merging_disabled",
    "gradients",
    "one_thread",
    "st_features",
    "st_losses",
    "tiny_parity_bert",
]

TOLERANCE = 1e-5

ANCHORS = [
    "한 남자가 기타를 치고 있다.",
    "A man is playing a guitar.",
    "오늘은 날씨가 맑고 따뜻해서 공원에 산책을 나온 사람들이 많았다.",
    "고양이",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "아이들이 운동장에서 축구를 한다.",
]
POSITIVES = [
    "남자가 악기를 연주한다.",
    "Someone plays an instrument.",
    "맑은 날 공원에 사람이 많다.",
    "고양이 한 마리가 소파 위에서 자고 있다.",
    "A fox jumps over a dog.",
    "Children are playing football.",
]
NEGATIVES = [
    "여자가 요리를 하고 있다.",
    "The stock market fell sharply today.",
    "비가 와서 모두 집에 있었다.",
    "A car is parked on the street.",
    "주식 시장이 폭락했다.",
    "노인이 책을 읽는다.",
]


def tiny_parity_bert(
    folder: Path, dropout: float = 0.0, seed: int = 0, tokenizer_from: Path | None = None
) -> Path:
    """A seeded 2-layer, 32-dim BERT saved to `folder`, with the embedded model's tokenizer (or the one
    in `tokenizer_from`)."""
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_from or embedded_default_path()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    torch.manual_seed(seed)
    AutoModel.from_config(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def st_features(model: SentenceTransformer, texts: Sequence[str]) -> dict[str, Any]:
    """The reference's tokenized batch of `texts`."""
    preprocess = getattr(model, "preprocess", None) or model.tokenize
    return dict(preprocess(list(texts)))


def gradients(module: torch.nn.Module) -> dict[str, torch.Tensor | None]:
    """Every named parameter's gradient (None where it got none)."""
    return {name: param.grad for name, param in module.named_parameters()}


def assert_same_gradients(
    ours: Mapping[str, torch.Tensor | None],
    ref: Mapping[str, torch.Tensor | None],
    tolerance: float = TOLERANCE,
    at_least: int = 10,
) -> None:
    """Same parameter names; each gradient present in both or neither, and within `tolerance`."""
    assert ours.keys() == ref.keys()
    compared = 0
    for name, grad in ours.items():
        other = ref[name]
        if grad is None or other is None:
            assert grad is None and other is None, name
            continue
        diff = (grad - other).abs().max().item()
        assert diff <= tolerance, f"{name}: gradients differ by {diff}"
        compared += 1
    assert compared >= at_least  # the embeddings and both layers received gradients


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread: tiny models are dominated by thread hand-offs on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def character_tokenizer(folder: Path, texts: Sequence[str]) -> Path:
    """A BERT tokenizer whose vocabulary is the characters of `texts` (another vocabulary than the
    embedded model's, built offline), saved to `folder`."""
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    characters = sorted({c for text in texts for c in text if not c.isspace()})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = characters + [f"##{c}" for c in characters]  # a word is its first character, then the rest
    (folder / "vocab.txt").write_text("\n".join(specials + pieces) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=False, strip_accents=False)
    tokenizer.save_pretrained(str(folder))
    return folder
