"""Qwen3-0.6B-shaped models with random weights, for speed benchmarks (no weights can be downloaded).

The configuration is Qwen3-0.6B's (hidden 1024, FFN 3072, 16 query / 8 key-value heads of 128, the
151,936-token vocabulary, RoPE theta 1e6) with `layers` of its 28 decoder layers: throughput per layer
is what changes with depth, so a few layers keep a CPU run short at the real width. The tokenizer
is a byte-level BPE (Qwen2's kind) trained here on the Korean benchmark texts; token counts are
reported beside every figure since Qwen's own tokenizer cuts Korean differently. Both models are
saved by sentence-transformers itself, as a team would find them on the hub: the reranker as
`Transformer(text-generation)` + `LogitScore` (yes / no) with a Qwen3-Reranker-style chat template,
the embedder as Qwen3-Embedding is (last-token pooling, normalized, an instruction prompt for queries).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

RERANK_TEMPLATE = (
    "<|im_start|>system\n{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}"
    "{% endif %}{% endfor %}<|im_end|>\n<|im_start|>user\n{% for m in messages %}"
    "{% if m['role'] == 'query' %}<Query>: {{ m['content'] }}\n{% elif m['role'] == 'document' %}"
    "<Document>: {{ m['content'] }}{% endif %}{% endfor %}<|im_end|>\n<|im_start|>assistant\n"
    "<think>\n\n</think>\n\n"
)
QUERY_INSTRUCTION = (
    "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
)
RERANK_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


def qwen3_config(layers: int, vocab_size: int = 151_936):  # type: ignore[no-untyped-def]
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=layers,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40_960,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )


def korean_tokenizer(texts: Sequence[str], chat_template: str | None, vocab_size: int = 32_000):  # type: ignore[no-untyped-def]
    """A Qwen2-style byte-level BPE trained on `texts`: left padding, `<|endoftext|>` pad."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "yes", "no"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=chat_template,
        model_max_length=8192,
    )


def build_reranker(folder: Path, layers: int, texts: Sequence[str], seed: int = 0) -> Path:
    """A Qwen3-Reranker-0.6B-shaped LLM reranker, saved by sentence-transformers."""
    import torch
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.cross_encoder.modules import LogitScore
    from transformers import Qwen3ForCausalLM

    tokenizer = korean_tokenizer(texts, RERANK_TEMPLATE)
    torch.manual_seed(seed)
    raw = folder.parent / f"{folder.name}-raw"
    Qwen3ForCausalLM(qwen3_config(layers)).save_pretrained(str(raw))
    tokenizer.save_pretrained(str(raw))
    yes, no = tokenizer.convert_tokens_to_ids(["yes", "no"])
    transformer = Transformer(str(raw), transformer_task="text-generation")
    model = CrossEncoder(
        modules=[transformer, LogitScore(true_token_id=yes, false_token_id=no)],
        prompts={"web": RERANK_INSTRUCTION},
        default_prompt_name="web",
    )
    model.save(str(folder))
    return folder


def build_embedder(folder: Path, layers: int, texts: Sequence[str], seed: int = 0) -> Path:
    """A Qwen3-Embedding-0.6B-shaped decoder embedder, saved by sentence-transformers."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import Qwen3Model

    tokenizer = korean_tokenizer(texts, None)
    torch.manual_seed(seed)
    raw = folder.parent / f"{folder.name}-raw"
    Qwen3Model(qwen3_config(layers)).save_pretrained(str(raw))
    tokenizer.save_pretrained(str(raw))
    model = SentenceTransformer(
        modules=[Transformer(str(raw)), Pooling(1024, pooling_mode="lasttoken"), Normalize()],
        prompts={"query": QUERY_INSTRUCTION, "document": ""},
    )
    model.save(str(folder))
    return folder
