"""Tiny SPLADE models saved by sentence-transformers' SparseEncoder (the reference), for parity tests."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

WORDS = [
    "the", "cat", "dog", "sat", "on", "mat", "rain", "sun", "car", "road", "is", "and", "of", "in",
    "사과", "바나나", "고양이", "강아지", "서울", "부산", "비", "가", "는", "##s", "##ing", "##ed",
]  # fmt: skip
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TEXTS = [
    "the cat sat on the mat",
    "서울 과 부산 에 비 가 온다",
    "dogs and cats in the rain",
    "",
    "사과 바나나 고양이 강아지 " * 6,
]


def tiny_mlm(folder: Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide BERT with its MLM head over a small WordPiece vocabulary, saved to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    vocab = list(dict.fromkeys(SPECIAL + letters + ["##" + c for c in letters] + WORDS))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(str(folder / "vocab.txt"), model_max_length=64)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def st_splade(mlm: Path, pooling: str = "max", activation: str = "relu"):
    """sentence-transformers' SPLADE over `mlm`: Transformer("fill-mask") + SpladePooling."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import SpladePooling, Transformer

    modules = [Transformer(str(mlm), transformer_task="fill-mask"), SpladePooling(pooling, activation)]
    return SparseEncoder(modules=modules, device="cpu")


def st_inference_free(mlm: Path, seed: int = 0):
    """sentence-transformers' inference-free SPLADE: a Router with SparseStaticEmbedding for queries
    (random positive per-token weights) and the SPLADE path for documents."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import (
        Router,
        SparseStaticEmbedding,
        SpladePooling,
        Transformer,
    )

    document = Transformer(str(mlm), transformer_task="fill-mask")
    g = torch.Generator().manual_seed(seed)
    weight = torch.rand(len(document.tokenizer.get_vocab()), generator=g) + 0.1
    query = SparseStaticEmbedding(tokenizer=document.tokenizer, weight=weight)
    router = Router.for_query_document(
        query_modules=[query], document_modules=[document, SpladePooling("max")]
    )
    return SparseEncoder(modules=[router], similarity_fn_name="dot", device="cpu")


def munjang_splade(folder: Path, seed: int = 0, inference_free: bool = False) -> Path:
    """A tiny SPLADE model built and saved by munjang alone (no reference needed): MLM + SpladePooling,
    or with `inference_free` a Router whose queries take a SparseStaticEmbedding of random weights."""
    from munjang import SparseEncoder
    from munjang.modules import MLMTransformer, Router, SparseStaticEmbedding, SpladePooling

    mlm = MLMTransformer.load(tiny_mlm(folder.parent / f"{folder.name}-mlm", seed))
    modules: list = [mlm, SpladePooling("max")]
    if inference_free:
        g = torch.Generator().manual_seed(seed)
        weight = torch.rand(len(mlm.tokenizer.get_vocab()), generator=g) + 0.1
        query = SparseStaticEmbedding(mlm.tokenizer, weight)
        modules = [Router({"query": [query], "document": modules}, default_route="document")]
    SparseEncoder(modules, prompts={"query": "", "document": ""}, device="cpu").save(folder)
    return folder
