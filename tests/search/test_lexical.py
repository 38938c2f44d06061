"""Lexical search: BM25 parity with rank_bm25 and a direct numpy BM25, Korean tokenization, save/load, edges.

Which bm25s method equals which reference (bm25s/scoring.py vs rank_bm25.py):
- bm25+ == rank_bm25.BM25Plus exactly (same idf ln((N+1)/df), same tf part plus delta, and both give
  a document without the term idf * delta).
- robertson * (k1 + 1) == rank_bm25.BM25Okapi for terms with df <= N/2. Okapi's tf part carries the
  factor (k1 + 1) that bm25s's robertson leaves out; for df > N/2 Okapi floors the negative idf at
  epsilon * mean idf, bm25s floors it at 0.
- bm25l == rank_bm25.BM25L where each term occurs at most once per document, plus bm25s's
  non-occurrence score idf * (k1 + 1) * delta / (k1 + delta) for each query term a document lacks
  (rank_bm25 multiplies that whole term by tf, so it gives 0 there and tf times the score for tf > 1).
- lucene (default) and atire match no rank_bm25 class; they (and robertson) are checked against
  `reference_bm25` below, a direct numpy implementation of the formulas.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest
from rank_bm25 import BM25L, BM25Okapi, BM25Plus

from munjang.errors import DataFormatError
from munjang.search.index.bm25 import CONFIG_NAME, METHODS, BM25Index, LexicalHit
from munjang.search.index.tokenizers import (
    AutoTokenizer,
    KiwiTokenizer,
    Tokenizer,
    WordTokenizer,
    get_tokenizer,
    shared_kiwi,
    tokenizer_from_config,
)


def random_corpus(seed: int, n_docs: int = 60, vocab: int = 40, max_len: int = 25) -> list[list[str]]:
    """Zipf-distributed tokens, so some terms are in most documents and some in one; includes empty docs."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    return [[str(w) for w in rng.choice(words, size=rng.integers(0, max_len), p=p)] for _ in range(n_docs)]


def random_queries(seed: int, n: int = 12, vocab: int = 40) -> list[list[str]]:
    rng = np.random.default_rng(seed + 1000)
    queries = [[f"w{i}" for i in rng.integers(0, vocab, size=rng.integers(1, 5))] for _ in range(n)]
    return [*queries, ["w0", "w0", "w3"], ["w5", "unknown"], ["w1"]]


def reference_bm25(docs: list[list[str]], query: list[str], method: str, k1: float, b: float) -> np.ndarray:
    """BM25 written out from the formulas (Lucene, ATIRE, Robertson with idf floored at 0), float64."""
    n = len(docs)
    lengths = np.array([len(d) for d in docs], dtype=np.float64)
    norm = 1 - b + b * lengths / lengths.mean()
    norm[lengths == 0] = 1.0  # tf is 0 there anyway; avoids 0/0 for an empty document at b=1
    counts = [Counter(d) for d in docs]
    scores = np.zeros(n)
    for term in query:
        tf = np.array([c[term] for c in counts], dtype=np.float64)
        df = int((tf > 0).sum())
        if df == 0:
            continue
        if method == "lucene":
            idf, tfc = math.log(1 + (n - df + 0.5) / (df + 0.5)), tf / (tf + k1 * norm)
        elif method == "robertson":
            idf, tfc = max(0.0, math.log((n - df + 0.5) / (df + 0.5))), tf / (tf + k1 * norm)
        elif method == "atire":
            idf, tfc = math.log(n / df), tf * (k1 + 1) / (tf + k1 * norm)
        else:
            raise AssertionError(method)
        scores += idf * tfc
    return scores


def expected_ranking(docs: list[list[str]], query: list[str], scores: np.ndarray) -> list[int]:
    """Documents with at least one query token, by score (rounded against float noise), then row."""
    rows = [i for i, d in enumerate(docs) if set(d) & set(query)]
    return sorted(rows, key=lambda i: (-round(float(scores[i]), 9), i))


def tolerance(dtype: str) -> dict[str, float]:
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-6, "atol": 1e-6}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("k1", "b", "delta"), [(1.5, 0.75, 1.0), (1.2, 0.3, 0.5), (0.9, 0.9, 2.0)])
def test_bm25plus_equals_rank_bm25(dtype: str, k1: float, b: float, delta: float) -> None:
    docs = random_corpus(1)
    ref = BM25Plus(docs, k1=k1, b=b, delta=delta)
    index = BM25Index("word", method="bm25+", k1=k1, b=b, delta=delta, dtype=dtype)
    index.index_tokens(docs)
    for query in random_queries(1):
        want = ref.get_scores(query)
        np.testing.assert_allclose(index.get_scores_tokens(query), want, **tolerance(dtype))
        hits = index.search_tokens([query], k=len(docs))[0]
        assert [h.row for h in hits] == expected_ranking(docs, query, want)
        np.testing.assert_allclose([h.score for h in hits], want[[h.row for h in hits]], **tolerance(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.5)])
def test_robertson_times_k1_plus_1_equals_okapi_for_df_up_to_half(dtype: str, k1: float, b: float) -> None:
    docs = random_corpus(2)
    n = len(docs)
    df = Counter(t for d in docs for t in set(d))
    ref = BM25Okapi(docs, k1=k1, b=b)
    index = BM25Index("word", method="robertson", k1=k1, b=b, dtype=dtype)
    index.index_tokens(docs)
    checked = 0
    for query in random_queries(2):
        query = [t for t in query if df[t] <= n / 2]
        if not query:
            continue
        checked += 1
        np.testing.assert_allclose(
            index.get_scores_tokens(query) * (k1 + 1), ref.get_scores(query), **tolerance(dtype)
        )
    assert checked >= 8
    # Where df > N/2 the variants part: bm25s floors the idf at 0, rank_bm25 at epsilon * mean idf > 0.
    common = max(df, key=lambda t: df[t])
    assert df[common] > n / 2
    assert not index.get_scores_tokens([common]).any()
    assert ref.get_scores([common]).max() > 0


@pytest.mark.parametrize(("k1", "b", "delta"), [(1.5, 0.75, 0.5), (1.2, 0.4, 1.0)])
def test_bm25l_equals_rank_bm25_plus_nonoccurrence_when_tf_at_most_one(
    k1: float, b: float, delta: float
) -> None:
    docs = [list(dict.fromkeys(d)) for d in random_corpus(3)]  # each term at most once per document
    ref = BM25L(docs, k1=k1, b=b, delta=delta)
    index = BM25Index("word", method="bm25l", k1=k1, b=b, delta=delta, dtype="float64")
    index.index_tokens(docs)
    for query in random_queries(3):
        absent_bonus = np.zeros(len(docs))
        for term in query:
            if term in ref.idf:
                lacks = np.array([term not in d for d in docs])
                absent_bonus += lacks * ref.idf[term] * (k1 + 1) * delta / (k1 + delta)
        np.testing.assert_allclose(
            index.get_scores_tokens(query), ref.get_scores(query) + absent_bonus, rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", ["lucene", "atire", "robertson"])
@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (0.8, 0.0), (2.0, 1.0)])
def test_matches_direct_formula(method: str, k1: float, b: float, dtype: str) -> None:
    docs = random_corpus(4)
    index = BM25Index("word", method=method, k1=k1, b=b, dtype=dtype)
    index.index_tokens(docs)
    for query in random_queries(4):
        want = reference_bm25(docs, query, method, k1, b)
        np.testing.assert_allclose(index.get_scores_tokens(query), want, **tolerance(dtype))
        hits = index.search_tokens([query], k=len(docs))[0]
        assert [h.row for h in hits] == expected_ranking(docs, query, want)
        top3 = index.search_tokens([query], k=3)[0]
        assert top3 == hits[:3]


def test_search_text_matches_bm25s_directly() -> None:
    texts = ["the quick brown fox", "a quick quick dog", "lazy brown dogs sleep", "fox and dog", ""]
    index = BM25Index("word")
    index.index(texts)
    raw = bm25s.BM25()  # bm25s defaults: lucene, k1=1.5, b=0.75
    raw.index([WordTokenizer()(t) for t in texts], show_progress=False)
    for query in ["quick fox", "brown dog", "sleep"]:
        np.testing.assert_array_equal(index.get_scores(query), raw.get_scores(WordTokenizer()(query)))


def test_ties_go_to_the_lower_row_including_at_the_cut() -> None:
    index = BM25Index("word")
    index.index_tokens([["a", "x"], ["b", "x"], ["a", "x"], ["a", "x"], ["c", "x"]])
    assert [h.row for h in index.search_tokens([["a"]], k=2)[0]] == [0, 2]
    hits = index.search_tokens([["a"]], k=10)[0]
    assert [h.row for h in hits] == [0, 2, 3] and len({h.score for h in hits}) == 1
    # Rows 1 and 4 tie on "b"/"c" with "x"; row 1 has "b": first, then ties among the rest by row.
    assert [h.row for h in index.search_tokens([["b", "x"]], k=3)[0]] == [1, 0, 2]


@pytest.fixture(scope="module")
def kiwi() -> KiwiTokenizer:
    return KiwiTokenizer()


def test_kiwi_keeps_content_morphemes(kiwi: KiwiTokenizer) -> None:
    assert kiwi("학교에 갔습니다") == ["학교", "가"]
    tokens = kiwi("어제 학교에서 친구를 만났습니다")
    assert {"학교", "친구", "만나"} <= set(tokens)
    assert not {"에서", "를", "었", "습니다", "어제"} & set(tokens)
    assert kiwi("추워서 더웠다") == ["춥", "덥"]  # irregular adjectives (VA-I) keep their stems
    assert kiwi("나는 학생이 아니다") == ["학생"]  # pronoun, particles, copula dropped
    assert kiwi("BERT 모델을 학습했다") == ["bert", "모델", "학습"]
    assert kiwi("Ｐｙｔｈｏｎ 코드") == ["python", "코드"]  # NFKC: full-width Latin is SL, not a symbol
    assert kiwi("ㅋㅋㅋ 재밌다") == ["재밌"]  # compatibility jamo stay symbols, not nouns
    assert kiwi("\u1112\u1161\u11a8\u1100\u116d\u110b\u1166") == kiwi("학교에") == ["학교"]  # NFD input
    assert kiwi("COVID-19 백신 3.14") == ["covid", "19", "백신", "3", "14"]
    assert kiwi("") == [] and kiwi("   ") == []


def test_kiwi_batch_equals_single_and_shares_one_analyser(kiwi: KiwiTokenizer) -> None:
    texts = ["학교에 갔습니다", "", "도서관에서 공부했다", "English only", "서울의 지하철"]
    assert kiwi.tokenize_many(texts) == [kiwi(t) for t in texts]
    assert kiwi.tokenize_many([]) == []
    assert shared_kiwi() is shared_kiwi()
    narrow = KiwiTokenizer(pos_tags=["NNG"], stopwords=["친구"])
    assert narrow("어제 학교에서 친구를 만났습니다") == ["학교"]


def test_word_tokenizer_normalises_and_drops_stopwords() -> None:
    word = WordTokenizer()
    assert word("Ｈｅｌｌｏ, Wörld! ﬁne Straße — 2024") == ["hello", "wörld", "fine", "straße", "2024"]
    assert word("Привет, мир; Γειά σου") == ["привет", "мир", "γειά", "σου"]
    assert word("학교에 갔습니다") == ["학교에", "갔습니다"]  # no morphology: particles stay attached
    assert WordTokenizer(stopwords=["The", "a"])("The cat saw a dog") == ["cat", "saw", "dog"]
    assert word.tokenize_many(["A b", "", "c"]) == [["a", "b"], [], ["c"]]


KOREAN_DOCS = [
    "오늘 날씨가 맑고 따뜻합니다",
    "어제 학교에서 친구를 만났습니다",
    "도서관은 조용한 공부 장소입니다",
    "서울의 지하철은 편리합니다",
    "고양이가 창가에서 잠을 잔다",
]


@pytest.mark.parametrize(
    ("query", "row"), [("친구와 학교", 1), ("도서관에서 공부하기", 2), ("지하철이 편리한가", 3)]
)
def test_korean_query_needs_morphological_analysis(kiwi: KiwiTokenizer, query: str, row: int) -> None:
    by_words = BM25Index("word")
    by_words.index(KOREAN_DOCS)
    assert by_words.search([query], k=3) == [[]]  # "학교에서" != "학교": particles block every match
    by_morphemes = BM25Index(kiwi)
    by_morphemes.index(KOREAN_DOCS)
    hits = by_morphemes.search([query], k=3)[0]
    assert hits[0].row == row and hits[0].score > 0
    assert all(h.score < hits[0].score for h in hits[1:])


def test_auto_routes_each_text_and_shares_latin_tokens(kiwi: KiwiTokenizer) -> None:
    auto = get_tokenizer("auto")
    word = WordTokenizer()
    mixed = [
        "BERT 모델을 한국어 데이터로 미세조정했다",
        "Fine-tuning a BERT model on English data",
        "고양이가 잔다",
    ]
    assert auto("BERT 모델을 학습했다") == kiwi("BERT 모델을 학습했다") == ["bert", "모델", "학습"]
    assert auto("The BERT model") == word("The BERT model") == ["the", "bert", "model"]
    assert auto.tokenize_many(mixed) == [kiwi(mixed[0]), word(mixed[1]), kiwi(mixed[2])]
    index = BM25Index("auto")
    index.index(mixed)
    assert {h.row for h in index.search(["BERT"], k=5)[0]} == {0, 1}
    assert [h.row for h in index.search(["한국어 모델"], k=5)[0]] == [0]
    assert [h.row for h in index.search(["english data"], k=5)[0]] == [1]


def test_tokenizer_names_and_configs() -> None:
    assert isinstance(get_tokenizer("kiwi"), KiwiTokenizer)
    assert isinstance(get_tokenizer("word"), WordTokenizer)
    assert isinstance(get_tokenizer("auto"), AutoTokenizer)
    with pytest.raises(ValueError, match="auto, auto-mecab, kiwi, mecab, word"):
        get_tokenizer("whitespace")
    for tok in (
        WordTokenizer(stopwords=["The"]),
        KiwiTokenizer(pos_tags=["NNG", "NNP"], stopwords=["것"]),
        AutoTokenizer(word=WordTokenizer(stopwords=["a"])),
    ):
        rebuilt = tokenizer_from_config(json.loads(json.dumps(tok.get_config_dict())))
        assert type(rebuilt) is type(tok) and rebuilt.get_config_dict() == tok.get_config_dict()
        assert isinstance(tok, Tokenizer)
    with pytest.raises(ValueError, match="cannot rebuild"):
        tokenizer_from_config({"name": "mine"})
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        get_tokenizer("word").tokenize_many(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single string"):
        get_tokenizer("auto").tokenize_many("not a list")


def test_kiwi_multi_word_dictionary_is_off_by_default_and_kept_for_older_indexes() -> None:
    # New tokenizers skip Kiwi's multi-word dictionary ("뉴 노멀" stays two words); a config
    # saved before the option existed was tokenized with it, and must keep tokenizing the same way.
    phrase = "뉴 노멀 시대"
    light = KiwiTokenizer()
    assert light.get_config_dict()["multi_words"] is False
    assert {"뉴", "노멀"} <= set(light(phrase)) and "뉴 노멀" not in light(phrase)
    legacy_config = {k: v for k, v in light.get_config_dict().items() if k != "multi_words"}
    legacy = tokenizer_from_config(legacy_config)
    assert isinstance(legacy, KiwiTokenizer) and legacy.multi_words
    assert "뉴 노멀" in legacy(phrase) and legacy.tokenize_many([phrase]) == [legacy(phrase)]
    auto_legacy = tokenizer_from_config({"name": "auto", "kiwi": legacy_config, "word": {"name": "word"}})
    assert isinstance(auto_legacy, AutoTokenizer) and isinstance(auto_legacy.korean, KiwiTokenizer)
    assert auto_legacy.korean.multi_words
    assert get_tokenizer("auto").get_config_dict()["kiwi"]["multi_words"] is False


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_save_load_round_trip(tmp_path: Path, method: str) -> None:
    docs = [*KOREAN_DOCS, "The cat sat on the mat", ""]
    index = BM25Index("auto", method=method, k1=1.2, b=0.6)
    index.index(docs)
    folder = tmp_path / "bm25"
    index.save(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]  # no temporary folder left behind
    loaded = BM25Index.load(folder)
    assert len(loaded) == len(index) == len(docs)
    assert loaded.get_config_dict() == index.get_config_dict()
    queries = ["친구와 학교", "cat on a mat", "고양이 잠", "nothing known"]
    for q in queries:
        np.testing.assert_array_equal(loaded.get_scores(q), index.get_scores(q))
    assert loaded.search(queries, k=3) == index.search(queries, k=3)
    # Saving again over an existing index replaces it.
    index.index(docs[:2])
    index.save(folder)
    assert len(BM25Index.load(folder)) == 2


def test_save_is_atomic_when_writing_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = BM25Index("word")
    index.index(["old corpus one", "old corpus two"])
    folder = tmp_path / "bm25"
    index.save(folder)
    before = BM25Index.load(folder).get_scores("one")

    def crash(self: bm25s.BM25, save_dir: Path, **kwargs: object) -> None:
        (Path(save_dir) / "data.csc.index.npy").write_bytes(b"half")
        raise OSError("disk full")

    index.index(["new", "corpus", "of", "four"])
    monkeypatch.setattr(bm25s.BM25, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        index.save(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]
    reloaded = BM25Index.load(folder)
    assert len(reloaded) == 2
    np.testing.assert_array_equal(reloaded.get_scores("one"), before)


def test_save_load_errors(tmp_path: Path) -> None:
    index = BM25Index("word")
    index.index(["a b", "c"])
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a BM25 index"):
        index.save(precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    with pytest.raises(FileNotFoundError, match="no BM25 index"):
        BM25Index.load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match=CONFIG_NAME):
        BM25Index.load(precious)
    folder = tmp_path / "idx"
    index.save(folder)
    (folder / CONFIG_NAME).write_text("{not json")
    with pytest.raises(DataFormatError, match="not valid JSON"):
        BM25Index.load(folder)


def test_a_saved_index_is_verified_on_load(tmp_path: Path) -> None:
    """Every file of a saved index is checksummed: any flipped byte, a file cut short, missing or
    replaced by a FIFO, a garbled config and a newer format are refused with a DataFormatError
    naming the file, before bm25s reads a byte; an index of an older munjang (version 1, no
    checksums) still loads."""
    import os
    import shutil

    from tests.helpers import damaged_index_files as damaged

    index = BM25Index("word")
    index.index(["a cat on the mat", "the dog barks", "a cat and a dog"])
    whole = tmp_path / "whole"
    index.save(whole)
    want = BM25Index.load(whole).get_scores("cat dog")
    names = sorted(p.name for p in whole.iterdir())
    assert CONFIG_NAME in names and len(names) > 3

    def damaged_copy(name: str, damage: object) -> Path:
        folder = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(whole, folder)
        damage(folder / name)  # type: ignore[operator]
        return folder

    for name in names:
        size = (whole / name).stat().st_size
        for at in range(0, size, max(1, size // 16)):  # one flipped byte anywhere in any file
            folder = damaged_copy(name, lambda path, at=at: path.write_bytes(_flipped(path, at)))
            refused = "checksum mismatch|not valid JSON|not a munjang|newer munjang"
            with pytest.raises(DataFormatError, match=refused):
                BM25Index.load(folder)
        for how, message in [(damaged.truncate, "cut short|not valid JSON"), (damaged.fifo, "not a regular")]:
            with pytest.raises(DataFormatError, match=message):
                BM25Index.load(damaged_copy(name, how))
        if name != CONFIG_NAME:
            with pytest.raises(DataFormatError, match=f"{name}: missing"):
                BM25Index.load(damaged_copy(name, os.unlink))

    def rewrite(path: Path, **changes: object) -> None:
        config = {**json.loads(path.read_text()), **changes}
        path.write_text(json.dumps(config))

    def rewrite_old(path: Path) -> None:
        config = json.loads(path.read_text())
        del config["xxh3"], config["files"]
        path.write_text(json.dumps({**config, "format_version": 1}))

    newer = damaged_copy(CONFIG_NAME, lambda path: rewrite(path, format_version=3))
    with pytest.raises(DataFormatError, match="written by a newer munjang .* upgrade munjang"):
        BM25Index.load(newer)
    older = damaged_copy(CONFIG_NAME, lambda path: rewrite_old(path))
    np.testing.assert_array_equal(BM25Index.load(older).get_scores("cat dog"), want)


def _flipped(path: Path, at: int) -> bytes:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    return bytes(data)


def test_custom_tokenizer_needs_to_be_given_on_load(tmp_path: Path) -> None:
    class Whitespace:
        name = "whitespace"

        def __call__(self, text: str) -> list[str]:
            return text.split()

        def tokenize_many(self, texts: list[str], show_progress_bar: bool = False) -> list[list[str]]:
            return [self(t) for t in texts]

        def get_config_dict(self) -> dict[str, str]:
            return {"name": self.name}

    index = BM25Index(Whitespace())
    index.index(["Apple pie", "apple juice"])
    assert [h.row for h in index.search(["Apple"], k=5)[0]] == [0]  # case-sensitive: custom tokenizer used
    index.save(tmp_path / "idx")
    with pytest.raises(ValueError, match="whitespace"):
        BM25Index.load(tmp_path / "idx")
    with pytest.raises(ValueError, match="built with tokenizer 'whitespace'"):
        BM25Index.load(tmp_path / "idx", tokenizer=WordTokenizer())
    loaded = BM25Index.load(tmp_path / "idx", tokenizer=Whitespace())
    assert loaded.search(["apple"], k=5) == index.search(["apple"], k=5)
    with pytest.raises(TypeError, match="tokenizer must be a name or a Tokenizer"):
        BM25Index(str.split)  # type: ignore[arg-type]


def test_edge_cases(tmp_path: Path) -> None:
    empty = BM25Index("word")
    assert len(empty) == 0 and empty.search(["anything"], k=3) == [[]]
    empty.index([])
    assert len(empty) == 0 and empty.get_scores("x").shape == (0,)
    empty.save(tmp_path / "empty")
    assert BM25Index.load(tmp_path / "empty").search(["x"], k=1) == [[]]

    blank = BM25Index("word")
    blank.index(["", "  ", "!!"])  # documents without tokens are allowed and keep their rows
    assert len(blank) == 3 and blank.search(["x"], k=2) == [[]]
    np.testing.assert_array_equal(blank.get_scores("x"), np.zeros(3))

    index = BM25Index("word")
    index.index(["", "red apple", "", "green apple", "blue sky"])
    assert [h.row for h in index.search(["apple"], k=100)[0]] == [1, 3]  # k > N: what exists
    assert index.search(["unknown words", ""], k=5) == [[], []]  # no known token: no hits, no error
    assert not index.get_scores("unknown").any()
    assert index.search(["sky", "red"], k=1) == [
        [LexicalHit(4, pytest.approx(index.get_scores("sky")[4]))],
        [LexicalHit(1, pytest.approx(index.get_scores("red")[1]))],
    ]

    # rows= filters hits (e.g. by metadata) without changing scores; matching and ties as without it.
    assert [h.row for h in index.search(["apple sky"], k=5, rows=[3, 4, 0])[0]] == [4, 3]
    assert index.search(["apple"], k=5, rows=np.array([1]))[0] == index.search(["apple"], k=1)[0]
    assert index.search_tokens([["apple"]], k=5, rows=[]) == [[]]
    with pytest.raises(ValueError, match="rows must be between 0 and 4"):
        index.search(["apple"], k=1, rows=[5])
    with pytest.raises(TypeError, match=r"texts\[1\] is int, not str"):
        index.index(["fine", 42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single string"):
        index.search("apple", k=1)
    with pytest.raises(TypeError, match=r"documents\[0\] is str"):
        index.index_tokens(["apple"])
    with pytest.raises(ValueError, match="empty string"):
        index.index_tokens([["apple", ""]])
    with pytest.raises(ValueError, match="k must be a positive integer"):
        index.search(["apple"], k=0)
    with pytest.raises(ValueError, match="lucene, robertson, atire, bm25l, bm25\\+"):
        BM25Index(method="okapi")
    with pytest.raises(ValueError, match="delta applies only"):
        BM25Index(method="lucene", delta=0.5)
    with pytest.raises(ValueError, match="b must be between"):
        BM25Index(b=1.5)
    with pytest.raises(ValueError, match="valid names"):
        BM25Index("spacy")
    assert set(METHODS) == {"lucene", "robertson", "atire", "bm25l", "bm25+"}


def test_progress_bars_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    index = BM25Index("word")
    index.index(["one two", "two three"])
    index.search(["two"], k=1)
    assert capsys.readouterr().err == ""
    index.index(["one two", "two three"], show_progress_bar=True)
    assert "BM25S" in capsys.readouterr().err
