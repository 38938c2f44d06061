"""CachedWordIds: a static model's token ids assembled from cached per-word ids must equal the
tokenizer's own ids, text for text, on every input: Korean and English sentences, every whitespace
character, control characters, truncation, and tokenizers the shortcut does not suit."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from munjang.data import read_sts
from munjang.modules.cached_word_ids import WHITESPACE, CachedWordIds

ODD_TEXTS = [
    "",
    "   ",
    "a",
    *(f"앞{chr(c)}뒤 a{chr(c)}{chr(c)}b" for c in range(0x110000) if chr(c).isspace()),
    "\x00\x01\x07 control \x7f\x9f characters",
    "zero\u200bwidth\u200d joiner\ufeff bom",
    "가" * 700,  # one word longer than e5's truncation
    "단어 " * 600,  # a text longer than it
    "😀👍🏽 ﬁ ① ㈜ ½ e\u0301",
]


def _tokenizer_ids(tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def _cached_ids(cache: CachedWordIds, texts: list[str]) -> list[list[int]]:
    flat, lengths = cache.ids(texts)
    assert flat.dtype == np.int64 and lengths.dtype == np.int64 and len(lengths) == len(texts)
    ends = np.cumsum(lengths)
    return [flat[end - n : end].tolist() for end, n in zip(ends, lengths, strict=True)]


@pytest.fixture(scope="module")
def sentences(data_dir: Path) -> list[str]:
    dev = read_sts(data_dir / "korsts" / "sts-dev.tsv")
    english = read_sts(data_dir / "stsb" / "sts-dev.csv")
    return [*dev.sentences1, *dev.sentences2, *english.sentences1[:300]]


@pytest.fixture(scope="module", params=["e5", "minilm"])
def tokenizer(request: pytest.FixtureRequest, e5_path: Path, minilm_path: Path) -> Tokenizer:
    folder = e5_path if request.param == "e5" else minilm_path
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(512)
    return tok


def test_ids_equal_the_tokenizer_cold_and_warm(tokenizer: Tokenizer, sentences: list[str]) -> None:
    texts = ["query: " + s for s in sentences] + ODD_TEXTS
    want = _tokenizer_ids(tokenizer, texts)
    cache = CachedWordIds(tokenizer)
    assert _cached_ids(cache, texts) == want  # every word new
    assert cache.enabled and len(cache._words) > 1000
    assert _cached_ids(cache, texts) == want  # every word cached
    assert _cached_ids(cache, texts[::-1]) == want[::-1]
    assert max(len(ids) for ids in want) == 512  # truncation was exercised


def test_every_character_str_split_splits_on_is_probed() -> None:
    assert sorted(WHITESPACE) == [chr(c) for c in range(0x110000) if chr(c).isspace()]


def test_whitespace_the_normalizer_removes_is_not_split_on(e5_path: Path) -> None:
    tok = Tokenizer.from_file(str(e5_path / "tokenizer.json"))
    cache = CachedWordIds(tok)
    text = "a\x0bb 가\x1c나"  # XLM-R's normalizer deletes these: "ab", "가나" are single words to it
    assert _cached_ids(cache, [text]) == _tokenizer_ids(tok, [text])
    assert cache._unsafe is not None
    assert cache._unsafe.search("a\x0bb") and not cache._unsafe.search("a b 가 나")


def test_left_truncation_keeps_the_last_ids(minilm_path: Path) -> None:
    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(7, direction="left")
    texts = ["one two three four five six seven eight nine ten", "short one"]
    assert _cached_ids(CachedWordIds(tok), texts) == _tokenizer_ids(tok, texts)


def test_byte_level_bpe_is_not_shortcut_and_stays_exact(sentences: list[str]) -> None:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=400, show_progress=False))
    texts = sentences[:50] + ODD_TEXTS[:5]
    cache = CachedWordIds(tok)
    assert _cached_ids(cache, texts) == _tokenizer_ids(tok, texts)
    assert not cache.enabled and not cache._words  # " word" and "word" differ to it


def test_the_cache_is_bounded_and_stays_exact(minilm_path: Path, sentences: list[str]) -> None:
    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    tok.no_padding()
    cache = CachedWordIds(tok, max_words=50)
    texts = sentences[:200]
    assert _cached_ids(cache, texts) == _tokenizer_ids(tok, texts)
    assert len(cache._words) == 50
    assert _cached_ids(cache, texts) == _tokenizer_ids(tok, texts)


def test_a_pickled_copy_starts_empty_and_agrees(minilm_path: Path, sentences: list[str]) -> None:
    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    tok.no_padding()
    cache = CachedWordIds(tok)
    texts = sentences[:100]
    cache.ids(texts)
    copy = pickle.loads(pickle.dumps(cache))
    assert not copy._words
    assert _cached_ids(copy, texts) == _tokenizer_ids(tok, texts)


def test_a_static_model_can_keep_no_words(minilm_path: Path, sentences: list[str]) -> None:
    from munjang.modules import StaticEmbedding

    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    static = StaticEmbedding(tok, embedding_dim=8)
    texts = sentences[:100]
    cached = static.tokenize(texts)
    assert static._word_ids is not None and len(static._word_ids._words) > 100
    static.word_cache_size = 0
    bare = static.tokenize(texts)
    assert static._word_ids is not None and not static._word_ids._words
    for key in ("input_ids", "offsets"):
        assert bare[key].tolist() == cached[key].tolist()
    assert bare["input_ids"].tolist() == [i for ids in _tokenizer_ids(static.tokenizer, texts) for i in ids]
