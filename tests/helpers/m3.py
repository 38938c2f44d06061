"""A tiny random bge-m3-style model: a 2-layer BERT (the bundled MiniLM's tokenizer) with random
sparse and ColBERT heads, saved as FlagEmbedding saves bge-m3."""

from __future__ import annotations

from pathlib import Path

import torch

from munjang.encoders.m3.encoder import COLBERT_HEAD, SPARSE_HEAD


def tiny_m3(folder: Path) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    import munjang

    tokenizer = AutoTokenizer.from_pretrained(str(munjang.load_encoder().model_folder))
    tokenizer.eos_token = "[SEP]"  # XLM-R's </s>: bge-m3 leaves it out of the lexical weights
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    torch.save(torch.nn.Linear(32, 1).state_dict(), folder / SPARSE_HEAD)
    torch.save(torch.nn.Linear(32, 32).state_dict(), folder / COLBERT_HEAD)
    return folder
