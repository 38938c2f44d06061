"""The MeCab (mecab-ko-dic) Korean tokenizer: content morphemes like Kiwi's, configs, and collections."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from munjang.errors import MissingExtraError
from munjang.search.index import tokenizers
from munjang.search.index.bm25 import BM25Index
from munjang.search.index.tokenizers import (
    AutoTokenizer,
    KiwiTokenizer,
    MecabTokenizer,
    WordTokenizer,
    get_tokenizer,
    shared_mecab,
    tokenizer_from_config,
)
from tests.helpers.collection_backends import Backend

pytest.importorskip("mecab", reason="python-mecab-ko is a dependency of munjang[mecab] (make install-dev)")


@pytest.fixture(scope="module")
def mecab() -> MecabTokenizer:
    return MecabTokenizer()


def test_mecab_keeps_the_content_morphemes_kiwi_keeps(mecab: MecabTokenizer) -> None:
    kiwi = KiwiTokenizer()
    same = [
        "학교에 갔습니다",  # an inflected verb (갔 = 가 + 았) gives its stem
        "추워서 더웠다",  # irregular adjectives keep their stems
        "나는 학생이 아니다",  # pronoun, particles, copula dropped
        "BERT 모델을 학습했다",
        "Ｐｙｔｈｏｎ 코드",  # NFKC: full-width Latin is a foreign word
        "ㅋㅋㅋ 재밌다",  # compatibility jamo are no nouns
        "\u1112\u1161\u11a8\u1100\u116d\u110b\u1166",  # NFD input
        "COVID-19 백신 3.14",
        "",
        "   ",
    ]
    for text in same:
        assert mecab(text) == kiwi(text), text
    assert mecab("학교에 갔습니다") == ["학교", "가"]
    assert mecab("COVID-19 백신 3.14") == ["covid", "19", "백신", "3", "14"]
    assert not {"에서", "를", "었", "습니다"} & set(mecab("어제 학교에서 친구를 만났습니다"))


def test_compound_nouns_split_whole_or_both() -> None:
    text = "교육청에서 형태소 분석기를 만들었다"
    assert MecabTokenizer(compounds="whole")(text) == ["교육청", "형태소", "분석기", "만들"]
    assert MecabTokenizer(compounds="split")(text) == ["교육", "청", "형태", "소", "분석", "기", "만들"]
    both = MecabTokenizer(compounds="both")(text)
    assert both == ["교육청", "교육", "청", "형태소", "형태", "소", "분석기", "분석", "기", "만들"]
    with pytest.raises(ValueError, match="compounds must be one of split, whole, both"):
        MecabTokenizer(compounds="mixed")


def test_batch_equals_single_shares_one_tagger_and_narrows(mecab: MecabTokenizer) -> None:
    texts = ["학교에 갔습니다", "", "도서관에서 공부했다", "English only", "서울의 지하철"]
    assert mecab.tokenize_many(texts) == [mecab(t) for t in texts]
    assert mecab.tokenize_many([]) == []
    assert shared_mecab() is shared_mecab()
    narrow = MecabTokenizer(pos_tags=["NNG"], stopwords=["친구"])
    assert narrow("어제 학교에서 친구를 만났습니다") == ["학교"]
    with pytest.raises(ValueError, match="pos_tags is empty"):
        MecabTokenizer(pos_tags=[])
    with pytest.raises(TypeError, match="text is int"):
        mecab(3)  # type: ignore[arg-type]


def test_configs_round_trip_and_auto_holds_either_analyser() -> None:
    mecab = MecabTokenizer(compounds="both", stopwords=["학교"])
    again = tokenizer_from_config(mecab.get_config_dict())
    assert isinstance(again, MecabTokenizer) and again.get_config_dict() == mecab.get_config_dict()
    assert isinstance(get_tokenizer("mecab"), MecabTokenizer)

    auto = AutoTokenizer(korean=MecabTokenizer())
    config = auto.get_config_dict()
    assert set(config) == {"name", "mecab", "word"}
    rebuilt = tokenizer_from_config(config)
    assert isinstance(rebuilt, AutoTokenizer) and isinstance(rebuilt.korean, MecabTokenizer)
    assert rebuilt("BERT 모델을 학습했다") == ["bert", "모델", "학습"]
    assert rebuilt("The BERT model") == WordTokenizer()("The BERT model")

    # A config saved before the choice names Kiwi under "kiwi", or nothing at all: both read as Kiwi.
    legacy = tokenizer_from_config({"name": "auto"})
    assert isinstance(legacy, AutoTokenizer) and isinstance(legacy.korean, KiwiTokenizer)
    auto_mecab = get_tokenizer("auto-mecab")
    assert isinstance(auto_mecab, AutoTokenizer) and isinstance(auto_mecab.korean, MecabTokenizer)
    with pytest.raises(TypeError, match="KiwiTokenizer or MecabTokenizer, not WordTokenizer"):
        AutoTokenizer(korean=WordTokenizer())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names two Korean tokenizers"):
        tokenizer_from_config({"name": "auto", "kiwi": {}, "mecab": {}})


def test_a_missing_library_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mecab", None)  # what `import mecab` meets when it is not installed
    monkeypatch.setattr(tokenizers, "_mecab_cache", {})
    with pytest.raises(MissingExtraError, match=r"MeCab tokenizer.*pip install 'munjang\[mecab\]'"):
        MecabTokenizer()("학교에 갔습니다")


def test_bm25_and_a_collection_keep_the_analyser(encoder: Any, backend: Backend) -> None:
    docs = ["어제 학교에서 친구를 만났습니다", "도서관은 조용한 공부 장소입니다", "서울의 지하철은 편리해요"]
    index = BM25Index(AutoTokenizer(korean=MecabTokenizer()))
    index.index(docs)
    assert [h.row for h in index.search(["도서관에서 공부하기"], k=1)[0]] == [1]

    config = AutoTokenizer(korean=MecabTokenizer()).get_config_dict()
    with backend.create("c", encoder=encoder, tokenizer=config) as col:
        col.add(["a", "b", "c"], docs)
        assert col.info()["lexical"]["tokenizer"] == config
        # MeCab splits the compound 지하철 (Kiwi keeps it whole): its part finds the passage.
        assert [h.id for h in col.search("지하", k=1, mode="lexical")] == ["c"]
    with backend.open("c", encoder=encoder) as col:
        assert col.info()["lexical"]["tokenizer"] == config
        assert [h.id for h in col.search("지하철이 편리한가", k=1, mode="lexical")] == ["c"]
