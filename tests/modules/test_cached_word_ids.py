"""CachedWordIds: a static model's token ids assembled from cached per-word ids must equal the
tokenizer's own ids, text for text, on every input: Korean and English sentences, every whitespace
character, control characters, truncation, and tokenizers the shortcut does not suit."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

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

# Words XLM-R's normalizer empties ("\x01", "\x7f"), puts a space in ("a¨b", "x\u200dy") or maps to its
# word-start mark ("a▁b"), among plain words in one text, so that they share a tokenizer call: a word
# with no marked first token beside one with two would fool a mere count of the marks.
MARK_TRAPS = [
    " ".join(f"낱말{i}" for i in range(30))
    + " \x01 a¨b \x7f 가▁나 x\u200dy ▁ "
    + " ".join(map(str, range(30))),
    "\x01\x07 한국어¨문장 ▁▁ 끝",
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


# e5: SentencePiece keeping spacing (Metaspace alone); e5-split: the same splitting on whitespace first,
# as static models distilled from e5-small have it; minilm: WordPiece, no word-start marks.
@pytest.fixture(scope="module", params=["e5", "e5-split", "minilm"])
def tokenizer(request: pytest.FixtureRequest, e5_path: Path, minilm_path: Path) -> Tokenizer:
    folder = minilm_path if request.param == "minilm" else e5_path
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    if request.param == "e5-split":
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()]
        )
    tok.no_padding()
    tok.enable_truncation(512)
    return tok


def test_ids_equal_the_tokenizer_cold_and_warm(tokenizer: Tokenizer, sentences: list[str]) -> None:
    texts = ["query: " + s for s in sentences] + ODD_TEXTS + MARK_TRAPS
    want = _tokenizer_ids(tokenizer, texts)
    cache = CachedWordIds(tokenizer)
    assert _cached_ids(cache, texts) == want  # every word new
    assert cache.enabled and len(cache._words) > 1000
    assert (cache._marks is not None) == (tokenizer.model.__class__.__name__ == "Unigram")
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


def test_word_start_marks_give_each_word_its_tokens(e5_path: Path, sentences: list[str]) -> None:
    """SentencePiece marks each word's first token, so new words are placed by their ids alone; the
    words the normalizer empties, splits or marks go through the tokenizer one by one instead."""
    tok = Tokenizer.from_file(str(e5_path / "tokenizer.json"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()]
    )
    cache = CachedWordIds(tok)
    cache.ids(["warm"])  # the check runs on first use
    assert cache._marks is not None and cache._plain is not None and not cache._spacing_sensitive
    marks = cache._marks
    ids = np.array([tok.token_to_id(t) for t in ("\u2581가", "</s>", "가", "\u2581")])
    assert marks.mark == "\u2581" and marks(ids).tolist() == [True, False, False, True]
    assert cache._odd_words(["\x01", "a¨b", "가▁나", "plain", "한국어"]) == {
        "\x01": "spacing",
        "a¨b": "spacing",
        "가▁나": "spacing",  # XLM-R's normalizer turns its "▁" into a space
    }
    traps = ["\x01", "a¨b", "\x7f", "가▁나"]  # two words with no mark, two with two: as many as words
    words = [*traps, *dict.fromkeys(w for s in sentences for w in s.split())][:400]
    fresh = cache._tokenize_words(words)
    got = {w: np.frombuffer(fresh[w] or b"", dtype=np.int32).tolist() for w in words}
    assert got == dict(zip(words, _tokenizer_ids(tok, words), strict=True))


def test_a_normalizer_that_rewrites_plain_characters_is_asked_for_every_word(e5_path: Path) -> None:
    tok = Tokenizer.from_file(str(e5_path / "tokenizer.json"))
    tok.normalizer = normalizers.Sequence([tok.normalizer, normalizers.Replace("-", " - ")])
    texts = ["서울-부산 고속-도로 a-b-c 끝-", "-- - 가나다"]
    cache = CachedWordIds(tok)
    assert _cached_ids(cache, texts) == _tokenizer_ids(tok, texts)
    assert cache._marks is not None and cache._plain is None
    assert cache._odd_words(["서울-부산", "서울"]) == {"서울-부산": "spacing"}


def test_a_call_whose_marks_do_not_number_its_words_is_not_split_by_them(e5_path: Path) -> None:
    """The count of marks backs the filter: a call holding a word that gives no marked token (or
    two) hands all its words back to be tokenized alone, and nothing of it is cached."""
    from munjang.modules.cached_word_ids import _split_by_marks, word_start_marks

    tok = Tokenizer.from_file(str(e5_path / "tokenizer.json"))
    marks = word_start_marks(tok)
    assert marks is not None
    chunks = [["서울", "\x01", "부산"], ["a¨b", "대구"], ["광주", "대전"]]
    encodings = tok.encode_batch([" ".join(c) for c in chunks], add_special_tokens=False)
    fresh: dict[str, bytes | None] = {}
    alone = _split_by_marks(chunks, encodings, marks, None, fresh)
    assert alone == ["서울", "\x01", "부산", "a¨b", "대구"]
    assert {w: np.frombuffer(b or b"", dtype=np.int32).tolist() for w, b in fresh.items()} == {
        w: tok.encode(w, add_special_tokens=False).ids for w in ("광주", "대전")
    }
    assert _split_by_marks([["가나"]], tok.encode_batch(["가나"]), marks, 1, {}) == ["가나"]  # cut
