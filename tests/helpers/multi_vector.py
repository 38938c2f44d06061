"""Tiny multi-vector models: one saved by sentence-transformers' MultiVectorEncoder, one as PyLate saves."""

from __future__ import annotations

import json
import string
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModel, AutoTokenizer

from tests.helpers.training import tiny_bert

QUERIES = ["what is a cat?", "hello", "고양이는 어떤 동물인가요?", "a much longer query " * 6]
DOCUMENTS = ["A cat, is an animal.", "Hello world!", "고양이는 포유류이다.", "tokens " * 40, "!!!"]


def st_multi_vector(folder: Path, attend: bool = False, strategy: str = "fixed") -> Path:
    """A 2-layer, 32-d BERT with a 16-d projection, query expansion to 12 tokens, a punctuation
    skiplist and [Q]/[D] prompts, built and saved by sentence-transformers' MultiVectorEncoder."""
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.base.modules.dense import Dense
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask

    bert = tiny_bert(folder.parent / f"{folder.name}-bert", dropout=0.0)
    transformer = Transformer(
        str(bert),
        document_length=20,
        query_expansion={"strategy": strategy, "length": 12, "attend": attend},
    )
    torch.manual_seed(1)
    dense = Dense(
        32, 16, bias=False, activation_function=torch.nn.Identity(), module_input_name="token_embeddings"
    )
    model = MultiVectorEncoder(
        modules=[
            transformer,
            dense,
            MultiVectorMask(skiplist_words=list(string.punctuation)),
            Normalize(module_input_name="token_embeddings"),
        ],
        prompts={"query": "[Q] ", "document": "[D] "},
        device="cpu",
    )
    model.save(str(folder))
    return folder


def pylate_colbert(folder: Path, query_length: int = 12, document_length: int = 20) -> Path:
    """A folder as PyLate's ColBERT.save writes it: the markers added to the vocabulary, modules
    Transformer + pylate Dense, and the ColBERT knobs at the top of config_sentence_transformers.json."""
    bert = tiny_bert(folder.parent / f"{folder.name}-bert", dropout=0.0)
    tokenizer = AutoTokenizer.from_pretrained(str(bert))
    model = AutoModel.from_pretrained(str(bert))
    tokenizer.add_tokens(["[Q] ", "[D] "])
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 512, "do_lower_case": False})
    )
    dense = folder / "1_Dense"
    dense.mkdir()
    config = {
        "in_features": 32,
        "out_features": 16,
        "bias": False,
        "activation_function": "torch.nn.modules.linear.Identity",
        "use_residual": False,
    }
    (dense / "config.json").write_text(json.dumps(config))
    torch.manual_seed(2)
    save_file({"linear.weight": torch.randn(16, 32) * 0.2}, str(dense / "model.safetensors"))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    top = {
        "__version__": {"sentence_transformers": "5.3.0", "pylate": "1.6.0"},
        "model_type": "ColBERT",
        "prompts": {},
        "default_prompt_name": None,
        "similarity_fn_name": "MaxSim",
        "query_prefix": "[Q] ",
        "document_prefix": "[D] ",
        "query_length": query_length,
        "document_length": document_length,
        "attend_to_expansion_tokens": False,
        "skiplist_words": list(string.punctuation),
        "do_query_expansion": True,
    }
    (folder / "config_sentence_transformers.json").write_text(json.dumps(top))
    return folder
