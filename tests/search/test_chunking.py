"""Sentence splitting and chunking of long documents: Kiwi offsets, budgets, tiling, overlap."""

from __future__ import annotations

import re
import zlib
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from munjang.search.collection import chunking
from munjang.search.collection.chunking import Chunk, Chunker, split_sentences, token_counter
from munjang.search.index.tokenizers import shared_kiwi
from tests.helpers.paths import shared_dir


def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def chars(texts: list[str]) -> list[int]:
    return [len(t) for t in texts]


def alphanumeric(texts: list[str]) -> list[int]:
    """Punctuation and space count nothing, so a sentence like "?! " costs 0 tokens."""
    return [len(re.findall(r"\w+", t)) for t in texts]


def noisy(texts: list[str]) -> list[int]:
    """Not monotone in the text's length, as a subword tokenizer's count need not be."""
    return [len(t) // 2 + zlib.crc32(t.encode()) % 3 for t in texts]


def sentences_of(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def assert_tiles(text: str, spans: list[tuple[int, int]]) -> None:
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in pairwise(spans))
    assert all(s < e for s, e in spans)


def assert_valid(text: str, chunks: list[Chunk], count: Any, max_tokens: int, overlap: bool) -> None:
    """Offsets exact, every chunk within budget, the whole text covered, chunks moving forward."""
    assert chunks and chunks[0].start == 0 and chunks[-1].end == len(text)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.text == text[c.start : c.end] for c in chunks)
    assert all(n <= max_tokens for n in count([c.text for c in chunks]))
    for a, b in pairwise(chunks):
        assert a.start < b.start <= a.end < b.end  # covered, never the same chunk twice
        if not overlap:
            assert a.end == b.start


KOREAN = (
    "  서울은 대한민국의 수도입니다. 인구는 약 940만 명이고, 2024년 기준으로 25개의 자치구가 있어요. "
    "한강이 도시를 가로질러 흐릅니다!\n지하철은 1974년에 처음 개통되었습니다. "
    "요즘은 Seoul Metro가 운영하죠?\n\n"
    "두 번째 문단입니다. BERT와 Sentence-BERT 모델은 문장 임베딩에 쓰입니다. 3.14는 원주율의 근삿값이다.\n"
    "제목 없는 줄\n\n마지막 문단"
)
KOREAN_SENTENCES = [
    "  서울은 대한민국의 수도입니다. ",
    "인구는 약 940만 명이고, 2024년 기준으로 25개의 자치구가 있어요. ",
    "한강이 도시를 가로질러 흐릅니다!\n",
    "지하철은 1974년에 처음 개통되었습니다. ",
    "요즘은 Seoul Metro가 운영하죠?\n\n",
    "두 번째 문단입니다. ",
    "BERT와 Sentence-BERT 모델은 문장 임베딩에 쓰입니다. ",
    "3.14는 원주율의 근삿값이다.\n",
    "제목 없는 줄\n\n",
    "마지막 문단",
]

ENGLISH = (
    "Sentence embeddings map text to vectors. Similar meanings land close together!  "
    "Do they always? Not quite.\nA heading line\n\n"
    'A new paragraph starts here. It cites 3.14 and e5 models. "Quoted," he said. The end.'
)
ENGLISH_SENTENCES = [
    "Sentence embeddings map text to vectors. ",
    "Similar meanings land close together!  ",
    "Do they always? ",
    "Not quite.\n",
    "A heading line\n\n",
    "A new paragraph starts here. ",
    "It cites 3.14 and e5 models. ",
    '"Quoted," he said. ',
    "The end.",
]


@pytest.fixture(scope="module")
def e5_tokenizer(e5_path: Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(e5_path)
    assert tokenizer.is_fast
    return tokenizer


@pytest.fixture(scope="module")
def e5_count(e5_tokenizer: Any) -> Any:
    return token_counter(e5_tokenizer)


def e5_reference(tokenizer: Any, texts: list[str]) -> list[int]:
    ids = tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    return [len(i) for i in ids]


# --- split_sentences -------------------------------------------------------------------------------


def test_english_sentences_and_line_breaks() -> None:
    assert sentences_of(ENGLISH) == ENGLISH_SENTENCES
    assert sentences_of("  Lead. Tail") == ["  Lead. ", "Tail"]  # leading whitespace stays with sentence 0
    assert sentences_of("一句。二句。 三句") == ["一句。", "二句。 ", "三句"]


def test_korean_sentences_come_from_kiwi_with_exact_offsets() -> None:
    assert sentences_of(KOREAN) == KOREAN_SENTENCES
    assert_tiles(KOREAN, split_sentences(KOREAN))


def test_kiwi_offsets_are_character_offsets() -> None:
    # Emoji (outside the BMP), full-width Latin, hanja, tabs, CRLF and decomposed Hangul around sentences.
    text = (
        "오늘은 날씨가 좋네요 😀😀. Ｐｙｔｈｏｎ 코드를 짰어요.\t漢字도 씁니다.\r\n"
        "\u1112\u1161\u11a8\u1100\u116d\u110b\u1166 갔습니다. 끝났어요!"
    )
    spans = split_sentences(text)
    assert_tiles(text, spans)
    kiwi = shared_kiwi().split_into_sents(text)
    assert all(text[s.start : s.end] == s.text for s in kiwi)
    assert {s for s, _ in spans[1:]} == {s.start for s in kiwi[1:]}
    assert all(not text[s].isspace() for s, _ in spans[1:])


def test_blank_lines_always_end_a_sentence() -> None:
    assert sentences_of("첫 문단 제목\n\n둘째 문단도 마침표가 없음") == [
        "첫 문단 제목\n\n",
        "둘째 문단도 마침표가 없음",
    ]
    assert sentences_of("no stop here\n \n\t\nnext part") == ["no stop here\n \n\t\n", "next part"]
    mixed = "English paragraph without a stop\n\n한국어 문단입니다. 두 문장이에요."
    assert sentences_of(mixed) == [
        "English paragraph without a stop\n\n",
        "한국어 문단입니다. ",
        "두 문장이에요.",
    ]


def test_empty_and_whitespace_texts() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\n ") == [(0, 4)]
    assert split_sentences("한") == [(0, 1)]


def test_long_korean_paragraph_goes_to_kiwi_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    sentence = "이 문장은 긴 문단을 만들기 위해 여러 번 반복됩니다. "
    text = sentence * 60
    whole = sentences_of(text)
    monkeypatch.setattr(chunking, "KIWI_MAX_CHARS", 200)
    pieced = sentences_of(text)
    assert pieced == whole == [sentence] * 60  # pieces are cut at sentence ends, so nothing changes
    no_stops = "가나다라마바사 " * 100 + "아" * 500
    assert "".join(sentences_of(no_stops)) == no_stops


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("가나다라 ab.!?。\n\t😀")), max_size=120))
def test_sentences_always_tile_the_text(text: str) -> None:
    spans = split_sentences(text)
    if text:
        assert_tiles(text, spans)
        assert all(not text[s].isspace() for s, _ in spans[1:])
    else:
        assert spans == []


# --- Chunker: packing ------------------------------------------------------------------------------


def test_a_text_that_fits_is_one_chunk_and_blank_text_none() -> None:
    chunker = Chunker(words, max_tokens=100)
    assert chunker.split(KOREAN) == [Chunk(0, 0, len(KOREAN), KOREAN)]
    assert chunker.split("  padded  ") == [Chunk(0, 0, 10, "  padded  ")]
    assert chunker.split("") == [] and chunker.split(" \n\t ") == []


def test_chunks_are_whole_sentences_packed_greedily() -> None:
    chunks = Chunker(words, max_tokens=12).split(ENGLISH)
    assert [c.text for c in chunks] == [
        "Sentence embeddings map text to vectors. Similar meanings land close together!  ",
        "Do they always? Not quite.\nA heading line\n\n",
        "A new paragraph starts here. It cites 3.14 and e5 models. ",
        '"Quoted," he said. The end.',
    ]
    assert_valid(ENGLISH, chunks, words, 12, overlap=False)


def test_korean_chunks_fit_e5_and_start_on_sentences(e5_tokenizer: Any, e5_count: Any) -> None:
    spans = split_sentences(KOREAN)
    starts = {s for s, _ in spans}
    largest = max(e5_count([KOREAN[s:e] for s, e in spans]))
    for budget in (8, largest, largest + 10, 2 * largest):
        chunks = Chunker(e5_count, max_tokens=budget).split(KOREAN)
        assert len(chunks) > 1
        assert_valid(KOREAN, chunks, lambda t: e5_reference(e5_tokenizer, t), budget, overlap=False)
        if budget >= largest:  # every sentence fits: chunks are whole sentences
            assert {c.start for c in chunks} <= starts
        else:  # some sentence is split between words
            assert not {c.start for c in chunks} <= starts


def test_a_long_sentence_is_split_between_words() -> None:
    text = "Short one. " + " ".join(f"w{i}" for i in range(40)) + ". After."
    chunks = Chunker(words, max_tokens=8).split(text)
    assert_valid(text, chunks, words, 8, overlap=False)
    assert chunks[0].text == "Short one. "
    assert all(c.start == 0 or text[c.start - 1] == " " for c in chunks)  # no word is cut
    assert [len(c.text.split()) for c in chunks] == [2, 8, 8, 8, 8, 8, 1]


def test_a_giant_word_is_cut_between_characters(e5_tokenizer: Any, e5_count: Any) -> None:
    text = "첫 문장입니다. " + "가나다라마바사아자차카타파하" * 300 + " 끝."
    chunks = Chunker(e5_count, max_tokens=32).split(text)
    assert_valid(text, chunks, lambda t: e5_reference(e5_tokenizer, t), 32, overlap=False)
    assert len(chunks) > 20
    # With a character counter the cuts are exact: full chunks of 7 characters.
    chunks = Chunker(chars, max_tokens=7).split("x" * 30)
    assert [c.end for c in chunks] == [7, 14, 21, 28, 30]


def test_the_packed_text_is_counted_not_the_sum() -> None:
    # Joined text costs more than its parts (one extra token per 4 words): the packer backs off.
    def superadditive(texts: list[str]) -> list[int]:
        return [n + n // 4 for n in words(texts)]

    text = "One two three. " * 8
    chunks = Chunker(superadditive, max_tokens=9).split(text)
    assert_valid(text, chunks, superadditive, 9, overlap=False)
    assert [c.text for c in chunks] == ["One two three. " * 2] * 4  # 3+3+3 words would count 11

    # Joined text costs less than its parts (two tokens per text): the packer extends past the sum,
    # which would stop at two sentences (5 + 5 + 5 > 14) where three fit (9 + 2).
    def subadditive(texts: list[str]) -> list[int]:
        return [n + 2 if n else 0 for n in words(texts)]

    chunks = Chunker(subadditive, max_tokens=14).split(text)
    assert_valid(text, chunks, subadditive, 14, overlap=False)
    assert [c.text for c in chunks] == ["One two three. " * 3, "One two three. " * 3, "One two three. " * 2]


# --- Chunker: overlap ------------------------------------------------------------------------------


def test_overlap_repeats_the_last_whole_sentences() -> None:
    text = "a b. c d. e f. g h. i j. k l. m n. o p."
    chunks = Chunker(words, max_tokens=6, overlap_tokens=4).split(text)
    assert [c.text.strip() for c in chunks] == [
        "a b. c d. e f.",
        "c d. e f. g h.",
        "e f. g h. i j.",
        "g h. i j. k l.",
        "i j. k l. m n.",
        "k l. m n. o p.",
    ]
    assert_valid(text, chunks, words, 6, overlap=True)
    chunks = Chunker(words, max_tokens=6, overlap_tokens=3).split(text)
    assert [c.text.strip() for c in chunks] == [
        "a b. c d. e f.",
        "e f. g h. i j.",
        "i j. k l. m n.",
        "m n. o p.",
    ]


def test_no_overlap_when_the_last_sentence_is_larger() -> None:
    text = "one two. three four five six. seven eight nine."
    chunks = Chunker(words, max_tokens=6, overlap_tokens=3).split(text)
    assert [c.text for c in chunks] == ["one two. three four five six. ", "seven eight nine."]
    chunks = Chunker(words, max_tokens=6, overlap_tokens=2).split("aa bb cc dd. ee ff gg. hh ii jj.")
    assert [c.text for c in chunks] == ["aa bb cc dd. ", "ee ff gg. hh ii jj."]


def test_sentences_of_no_tokens_are_no_overlap() -> None:
    text = "a b c d. ?! e f. g h."
    chunks = Chunker(alphanumeric, max_tokens=4).split(text)
    assert [c.text for c in chunks] == ["a b c d. ?! ", "e f. g h."]
    chunks = Chunker(alphanumeric, max_tokens=4, overlap_tokens=1).split(text)
    assert [c.text for c in chunks] == ["a b c d. ?! ", "?! e f. g h."]


def test_overlap_gives_way_to_a_large_next_sentence() -> None:
    # "x y." fits the overlap, but beside the 6-word sentence it would not fit: the overlap shrinks.
    text = "a b. x y. one two three four five six. z."
    chunks = Chunker(words, max_tokens=6, overlap_tokens=2).split(text)
    assert [c.text for c in chunks] == ["a b. x y. ", "one two three four five six. ", "z."]
    assert_valid(text, chunks, words, 6, overlap=True)


def test_overlap_on_korean_with_e5(e5_tokenizer: Any, e5_count: Any) -> None:
    text = KOREAN * 3
    chunks = Chunker(e5_count, max_tokens=40, overlap_tokens=15).split(text)
    assert_valid(text, chunks, lambda t: e5_reference(e5_tokenizer, t), 40, overlap=True)
    assert any(b.start < a.end for a, b in pairwise(chunks))
    spans = split_sentences(text)
    assert max(e5_count([text[s:e] for s, e in spans])) <= 40
    assert {c.start for c in chunks} <= {s for s, _ in spans}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(alphabet=st.sampled_from(list("가나다 abc.!?\n")), max_size=200),
    max_tokens=st.integers(3, 25),
    overlap=st.integers(0, 24),
    counter=st.sampled_from([words, chars, alphanumeric, noisy]),
)
def test_chunks_cover_the_text_within_budget(text: str, max_tokens: int, overlap: int, counter: Any) -> None:
    overlap = min(overlap, max_tokens - 1)
    chunks = Chunker(counter, max_tokens, overlap).split(text)
    if not text.strip():
        assert chunks == []
        return
    assert_valid(text, chunks, counter, max_tokens, overlap=overlap > 0)
    if counter([text])[0] <= max_tokens:
        assert len(chunks) == 1


# --- token_counter and arguments -------------------------------------------------------------------


def test_token_counter_matches_the_tokenizer_and_ignores_truncation(e5_tokenizer: Any, e5_count: Any) -> None:
    texts = [KOREAN, ENGLISH, "", " ", "가" * 700]
    expected = e5_reference(e5_tokenizer, texts)
    assert e5_count(texts) == expected and expected[-1] > 512
    e5_tokenizer(texts, truncation=True, max_length=8)  # leaves truncation set on the shared backend
    assert e5_count(texts) == expected

    from tokenizers import Tokenizer

    raw = Tokenizer.from_str(e5_tokenizer.backend_tokenizer.to_str())
    raw.enable_truncation(max_length=8)
    assert token_counter(raw)(texts) == expected
    assert raw.truncation is not None and raw.truncation["max_length"] == 8  # the caller's is untouched
    with pytest.raises(TypeError):
        token_counter(42)


def test_token_counter_calls_a_tokenizer_without_a_fast_backend() -> None:
    seen: list[dict[str, Any]] = []

    def slow(texts: list[str], **options: Any) -> dict[str, list[list[int]]]:
        seen.append(options)
        return {"input_ids": [[0] * len(t.split()) for t in texts]}

    assert token_counter(slow)(["a b c", ""]) == [3, 0]
    assert seen == [{"add_special_tokens": False, "truncation": False, "verbose": False}]


def test_bad_arguments_are_refused() -> None:
    for max_tokens, overlap in [(0, 0), (5, -1), (5, 5), (5, 9)]:
        with pytest.raises(ValueError):
            Chunker(words, max_tokens, overlap)
    with pytest.raises(ValueError, match="one character"):
        Chunker(lambda texts: [2 * len(t) for t in texts], max_tokens=1).split("ab cd")
    with pytest.raises(ValueError, match="counts"):
        Chunker(lambda texts: [5], max_tokens=4).split("a b. c d.")


# --- a real corpus ---------------------------------------------------------------------------------

CORPUS = shared_dir() / "data" / "autorag-ko" / "ocr_corpus_v3.parquet"


@pytest.mark.skipif(not CORPUS.is_file(), reason=f"{CORPUS} is missing")
def test_ocr_pages_chunk_within_budget(e5_tokenizer: Any, e5_count: Any) -> None:
    import pandas as pd

    pages = pd.read_parquet(CORPUS, columns=["contents"])["contents"].head(12).tolist()
    document = "\n\n".join(pages)
    reference = lambda t: e5_reference(e5_tokenizer, t)  # noqa: E731
    for budget, overlap in [(64, 0), (128, 32)]:
        chunks = Chunker(e5_count, budget, overlap).split(document)
        assert_valid(document, chunks, reference, budget, overlap=overlap > 0)
        assert len(chunks) >= sum(reference(pages)) // budget
