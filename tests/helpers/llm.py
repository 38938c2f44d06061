"""Tiny decoder language models built offline (Qwen3 shape: hidden 32, 2 layers, a byte-level BPE
tokenizer trained on a few sentences) and saved by sentence-transformers itself, the reference: an
LLM reranker (text-generation Transformer + LogitScore) and a last-token decoder embedder."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM, Qwen3Model

# query / document roles, as sentence-transformers renders a pair; a system message for the prompt.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "<|im_start|>assistant\n"
)
CORPUS = [
    "한 남자가 기타를 친다.",
    "아이들이 공원에서 뛰어논다.",
    "서울은 한국의 수도이다. 부산은 항구 도시이다.",
    "Judge whether the document answers the query. Answer yes or no.",
    "Instruct: Given a web search query, retrieve relevant passages\nQuery: ",
    "A man is playing a guitar. The weather is lovely today.",
]


def qwen_tokenizer(chat_template: str | None = CHAT_TEMPLATE) -> PreTrainedTokenizerFast:
    """A Qwen2-style byte-level BPE tokenizer (vocabulary ~400), left padding, `<|endoftext|>` pad."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=chat_template,
    )


def qwen_config(vocab_size: int, hidden: int = 32, layers: int = 2) -> Qwen3Config:
    return Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=hidden // 4,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )


def tiny_llm_reranker(
    folder: Path, chat: bool = True, seed: int = 0, prompts: dict[str, str] | None = None
) -> Path:
    """A random Qwen3ForCausalLM saved by sentence-transformers as an LLM reranker (yes / no log-odds)."""
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.cross_encoder.modules import LogitScore

    tokenizer = qwen_tokenizer(CHAT_TEMPLATE if chat else None)
    torch.manual_seed(seed)
    raw = folder.parent / f"{folder.name}-raw"
    Qwen3ForCausalLM(qwen_config(len(tokenizer))).save_pretrained(str(raw))
    tokenizer.save_pretrained(str(raw))
    yes, no = tokenizer.convert_tokens_to_ids(["yes", "no"])
    transformer = Transformer(str(raw), transformer_task="text-generation")
    model = CrossEncoder(
        modules=[transformer, LogitScore(true_token_id=yes, false_token_id=no)], prompts=prompts
    )
    model.save(str(folder))
    return folder


def tiny_decoder_embedder(folder: Path, seed: int = 0) -> Path:
    """A random Qwen3Model saved by sentence-transformers as Qwen3-Embedding is: last-token pooling,
    normalized, left padding, an instruction prompt for queries."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    tokenizer = qwen_tokenizer(None)
    torch.manual_seed(seed)
    raw = folder.parent / f"{folder.name}-raw"
    Qwen3Model(qwen_config(len(tokenizer))).save_pretrained(str(raw))
    tokenizer.save_pretrained(str(raw))
    transformer = Transformer(str(raw))
    model = SentenceTransformer(
        modules=[transformer, Pooling(32, pooling_mode="lasttoken"), Normalize()],
        prompts={
            "query": "Instruct: Given a web search query, retrieve relevant passages\nQuery: ",
            "document": "",
        },
    )
    model.save(str(folder))
    return folder
