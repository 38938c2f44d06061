"""A collection's Korean analysis as search teams tune it (issue 73): the defaults change no token;
a user dictionary keeps a term whole (or split, or both); synonyms expand queries; typos are read
as the word they misspell; nori dictionaries and Solr synonym files load, a malformed line named by
number with nothing applied; a dictionary edit re-analyses stored passages for BM25 only and every
reader switches to it at once, on every backend (Qdrant in a second BM25 slot), with the same hits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from munjang.errors import DataFormatError
from munjang.search.collection import reanalysis
from munjang.search.collection.collection import Collection
from munjang.search.index.analysis import AnalysisError, AnalysisSettings, Analyzer
from munjang.search.index.synonyms import SynonymRule, parse_synonyms
from munjang.search.index.tokenizers import get_tokenizer
from munjang.search.index.user_dictionary import UserWord, parse_user_dictionary
from tests.helpers.cli import run_cli
from tests.helpers.collection_backends import fresh_database, qdrant_url

TEXTS = [
    "카카오뱅크에서 주택담보대출 금리를 내렸다",
    "카카오 캐릭터 상품과 뱅크 샐러드 앱을 비교했다",
    "전세사기피해자법이 국회를 통과했다",
    "ESG경영은 기업의 지속가능성을 다룬다",
    "학교에 갔습니다. BERT-2 모델을 공부했습니다.",
]


@pytest.mark.parametrize("name", ["auto", "kiwi", "word"])
def test_the_default_settings_make_exactly_todays_tokens(name: str) -> None:
    base = get_tokenizer(name)
    analyzer = Analyzer(base.get_config_dict(), AnalysisSettings())
    assert analyzer.documents.tokenize_many(TEXTS) == base.tokenize_many(TEXTS)
    assert [analyzer.queries(t) for t in TEXTS] == [base(t) for t in TEXTS]
    assert AnalysisSettings().to_config() == {}
    assert analyzer.documents.get_config_dict() == base.get_config_dict()


def test_a_user_word_is_kept_whole_split_or_both() -> None:
    base = get_tokenizer("auto").get_config_dict()
    words = (UserWord("카카오뱅크"), UserWord("전세사기피해자법", parts=("전세", "사기", "피해자", "법")))
    assert get_tokenizer("auto")(TEXTS[0])[:2] == ["카카오", "뱅크"]
    assert Analyzer(base, AnalysisSettings(user_words=words)).documents("카카오뱅크") == [
        "카카오뱅크",
        "카카오",
        "뱅크",
    ]
    whole = Analyzer(base, AnalysisSettings(user_words=words, compounds="whole"))
    assert whole.documents(TEXTS[0])[0] == "카카오뱅크"
    assert whole.explain("전세사기피해자법") == [("전세사기피해자법", "NNP", "user word")]
    split = Analyzer(base, AnalysisSettings(user_words=words, compounds="split"))
    assert split.documents("전세사기피해자법") == ["전세", "사기", "피해자", "법"]
    assert split.documents(TEXTS[0])[:2] == ["카카오", "뱅크"]
    both = Analyzer(base, AnalysisSettings(user_words=words, compounds="both"))
    assert both.documents("카카오뱅크") == ["카카오뱅크", "카카오", "뱅크"]


def test_synonyms_expand_queries_and_one_way_rules_replace() -> None:
    rules = tuple(parse_synonyms(["주담대, 주택담보대출", "카뱅 => 카카오뱅크"]))
    analyzer = Analyzer(get_tokenizer("auto").get_config_dict(), AnalysisSettings(synonyms=rules))
    assert analyzer.queries("주담대 금리") == ["주담대", "주택", "담보", "대출", "금리"]
    assert analyzer.queries("주택담보대출") == ["주택", "담보", "대출", "주담대"]
    assert analyzer.queries("카뱅") == ["카카오", "뱅크"]
    assert analyzer.documents("주담대") == ["주담대"]  # query-time by default: documents untouched
    rules_at_index = AnalysisSettings(synonyms=rules, synonyms_at="index")
    assert Analyzer(get_tokenizer("auto").get_config_dict(), rules_at_index).documents("주담대")[-1] == "대출"
    assert ("주택", "NNG", "synonym: 주담대, 주택담보대출") in analyzer.explain("주담대")


def test_typo_tolerant_queries_read_the_word_a_typo_misspells() -> None:
    base = get_tokenizer("auto").get_config_dict()
    analyzer = Analyzer(base, AnalysisSettings(typos="basic"))
    assert analyzer.queries("대출 금니") == ["대출", "금리"]
    assert analyzer.documents("대출 금니") == get_tokenizer("auto")("대출 금니")  # documents as written
    assert ("금리", "NNG", "typo") in analyzer.explain("대출 금니")


def test_settings_a_tokenizer_cannot_honour_are_refused() -> None:
    with pytest.raises(AnalysisError, match="Kiwi"):
        Analyzer(
            get_tokenizer("mecab").get_config_dict(), AnalysisSettings(user_words=(UserWord("카카오뱅크"),))
        )
    with pytest.raises(AnalysisError, match="no Korean analysis"):
        Analyzer(get_tokenizer("word").get_config_dict(), AnalysisSettings(compounds="both"))
    with pytest.raises(ValueError, match="tag"):
        UserWord("카카오뱅크", "XYZ")


def test_nori_dictionaries_and_solr_synonyms_load_and_malformed_lines_are_named() -> None:
    nori = ["# comment", "카카오뱅크", "삼성전자 삼성 전자", "", "ESG경영\tNNP\t3.5"]
    assert parse_user_dictionary(nori) == [
        UserWord("카카오뱅크"),
        UserWord("삼성전자", parts=("삼성", "전자")),
        UserWord("ESG경영", "NNP", 3.5),
    ]
    with pytest.raises(DataFormatError, match=r"line 2: .*do not spell.*line 3: .*tag"):
        parse_user_dictionary(["카카오뱅크", "삼성전자 삼성 전기", "단어\tXYZ"], "user.txt")
    assert parse_synonyms(["# c", "a, b, c", "i pod, ipod => ipod"]) == [
        SynonymRule(("a", "b", "c")),
        SynonymRule(("i pod", "ipod"), ("ipod",)),
    ]
    with pytest.raises(DataFormatError, match=r"line 2: .*line 3: "):
        parse_synonyms(["a, b", "a =>", "only"])


def test_settings_round_trip_through_the_config() -> None:
    settings = AnalysisSettings(
        (UserWord("카카오뱅크", "NNP", 2.0, ("카카오", "뱅크")),),
        (SynonymRule(("카뱅",), ("카카오뱅크",)),),
        "index",
        "both",
        "basic",
    )
    assert AnalysisSettings.from_config(json.loads(json.dumps(settings.to_config()))) == settings


def place(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str | Path, str | None]:
    if kind == "postgres":
        return "c", fresh_database(request.getfixturevalue("postgres_url"))
    if kind == "qdrant":
        return "c", qdrant_url(tmp_path)
    return tmp_path / "c", None


@pytest.mark.parametrize("kind", ["folder", "qdrant", pytest.param("postgres", marks=pytest.mark.slow)])
def test_a_dictionary_edit_reanalyses_stored_passages_and_every_reader_switches(
    kind: str, encoder, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    where, backend = place(kind, tmp_path, request)
    writer = Collection.create(where, backend=backend, encoder=encoder)
    writer.add([f"d{i}" for i in range(len(TEXTS))], TEXTS)
    reader = Collection.open(where, backend=backend, encoder=encoder, readonly=True)
    before = [h.id for h in reader.search("카카오뱅크", mode="lexical", k=5)]
    assert set(before) == {"d0", "d1"}  # today: the fragments 카카오 and 뱅크 match another page too

    def no_encoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("a dictionary edit encoded a vector")

    monkeypatch.setattr(writer.encoding, "encode", no_encoding)
    analysed = writer.set_analysis(AnalysisSettings(user_words=(UserWord("카카오뱅크"),), compounds="whole"))
    assert analysed == len(TEXTS)
    for col in (writer, reader):
        assert [h.id for h in col.search("카카오뱅크", mode="lexical", k=5)] == ["d0"]
        assert col.analyze("카카오뱅크") == [("카카오뱅크", "NNP", "user word")]
    # a query-side change needs no re-analysis, and a reader follows it at its next search
    assert (
        writer.set_analysis(writer.analysis.replace(synonyms=(SynonymRule(("카뱅",), ("카카오뱅크",)),))) == 0
    )
    assert [h.id for h in reader.search("카뱅", mode="lexical", k=5)] == ["d0"]
    found = {q: [(h.id, round(h.score, 4)) for h in reader.search(q, mode="lexical", k=5)] for q in QUERIES}
    reader.close()
    writer.close()
    reopened = Collection.open(where, backend=backend, encoder=encoder)
    assert [h.id for h in reopened.search("카카오뱅크", mode="lexical", k=5)] == ["d0"]
    assert reopened.check() == []
    reopened.close()
    RESULTS[kind] = found
    if "folder" in RESULTS:  # the same answers on every backend
        assert all(answers == RESULTS["folder"] for answers in RESULTS.values())


QUERIES = ["카카오뱅크", "카뱅 금리", "주택담보대출", "국회 통과", "BERT 모델"]
RESULTS: dict[str, dict[str, list[tuple[str, float]]]] = {}


@pytest.mark.parametrize("kind", ["folder", "qdrant", pytest.param("postgres", marks=pytest.mark.slow)])
def test_an_interrupted_reanalysis_keeps_the_old_analysis_and_resumes(
    kind: str, encoder, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    where, backend = place(kind, tmp_path, request)
    writer = Collection.create(where, backend=backend, encoder=encoder)
    writer.add([f"d{i}" for i in range(len(TEXTS))], TEXTS)
    reader = Collection.open(where, backend=backend, encoder=encoder, readonly=True)
    monkeypatch.setattr(reanalysis, "BATCH", 2)
    stage = type(writer.store).stage_tokens
    batches: list[int] = []

    def interrupted_at_the_second_batch(self, rows, restart=False):  # type: ignore[no-untyped-def]
        if rows:
            batches.append(len(rows))
            if len(batches) == 2:
                raise KeyboardInterrupt
        stage(self, rows, restart)

    monkeypatch.setattr(type(writer.store), "stage_tokens", interrupted_at_the_second_batch)
    settings = AnalysisSettings(user_words=(UserWord("카카오뱅크"),), compounds="whole")
    with pytest.raises(KeyboardInterrupt):
        writer.set_analysis(settings)
    assert {h.id for h in reader.search("카카오뱅크", mode="lexical", k=5)} == {"d0", "d1"}  # still the old
    assert writer.analysis == AnalysisSettings() and reader.analysis == AnalysisSettings()
    monkeypatch.setattr(type(writer.store), "stage_tokens", stage)
    assert writer.set_analysis(settings) == len(TEXTS) - 2  # the first batch was kept
    assert [h.id for h in reader.search("카카오뱅크", mode="lexical", k=5)] == ["d0"]
    assert writer.store.staged_through() == 0
    reader.close()
    writer.close()


def test_the_cli_analyzes_and_edits_and_a_bad_file_changes_nothing(
    tmp_path: Path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "c"
    assert run_cli(["index", "create", str(folder)], capsys, monkeypatch)[0] == 0
    code, out, err = run_cli(["index", "analyze", str(folder), "카카오뱅크에서"], capsys, monkeypatch)
    assert code == 0, err
    assert out.splitlines() == ["카카오\tNNP\tmorpheme", "뱅크\tNNG\tmorpheme"]
    good = tmp_path / "user.txt"
    good.write_text("카카오뱅크\n삼성전자 삼성 전자\n", encoding="utf-8")
    assert run_cli(["index", "dict", "import", str(folder), str(good)], capsys, monkeypatch)[0] == 0
    bad = tmp_path / "bad.txt"
    bad.write_text("토스뱅크\n삼성전자 삼성 전기\n", encoding="utf-8")
    code, _, err = run_cli(["index", "dict", "import", str(folder), str(bad)], capsys, monkeypatch)
    assert code == 2 and "line 2" in err and err.startswith("error:") and "Traceback" not in err
    code, out, _ = run_cli(["index", "dict", "list", str(folder)], capsys, monkeypatch)
    assert [line.split("\t")[0] for line in out.splitlines()] == [
        "카카오뱅크",
        "삼성전자",
    ]  # 토스뱅크 not added
    syn = tmp_path / "syn.txt"
    syn.write_text("주담대, 주택담보대출\n", encoding="utf-8")
    assert run_cli(["index", "synonyms", "import", str(folder), str(syn)], capsys, monkeypatch)[0] == 0
    code, out, _ = run_cli(["index", "analyze", str(folder), "카카오뱅크 주담대"], capsys, monkeypatch)
    assert out.splitlines()[0] == "카카오뱅크\tNNP\tuser word"
    assert "주택\tNNG\tsynonym: 주담대, 주택담보대출" in out.splitlines()
    assert run_cli(["index", "dict", "remove", str(folder), "카카오뱅크"], capsys, monkeypatch)[0] == 0
    code, out, _ = run_cli(["index", "synonyms", "list", str(folder)], capsys, monkeypatch)
    assert out.splitlines() == ["주담대, 주택담보대출"]


def qdrant_state(col: Collection) -> tuple[dict[str, list[float]], set[str]]:
    """Each point's dense vector, and the sparse vector names of the Qdrant collection."""
    points = col.store.points
    assert points is not None
    found, _ = points.client.scroll(points.name, limit=1000, with_vectors=["dense"], with_payload=False)
    info = points.client.get_collection(points.name).config.params
    return {str(p.id): p.vector["dense"] for p in found}, set(info.sparse_vectors or {})


@pytest.mark.slow
def test_a_qdrant_collection_fills_a_second_bm25_slot_and_switches_even_when_killed_at_each_step(
    encoder, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from munjang.search.backends.folder.sqlite_store import DocumentStore
    from munjang.search.backends.qdrant.index import QdrantPoints

    texts = [*TEXTS, *(f"{t} 그리고 카카오뱅크 {i}번" for i, t in enumerate(TEXTS))]
    ids = [f"d{i}" for i in range(len(texts))]
    where, backend = place("qdrant", tmp_path, request)
    col = Collection.create(where, backend=backend, encoder=encoder)
    col.add(ids, texts)
    folder = Collection.create(tmp_path / "f", encoder=encoder)
    folder.add(ids, texts)
    dense, names = qdrant_state(col)
    assert names == {"bm25"}
    reader = Collection.open(where, backend=backend, encoder=encoder, readonly=True)
    monkeypatch.setattr(reanalysis, "BATCH", 3)
    settings = AnalysisSettings(user_words=(UserWord("카카오뱅크"),), compounds="whole")

    # killed between a batch's write to the pending slot and its staging in the store
    keep = DocumentStore.stage_tokens
    calls: list[int] = []

    def killed_at_the_third_batch(self, rows, restart=False):  # type: ignore[no-untyped-def]
        calls.append(len(rows))
        if len(calls) == 4:  # the restart, then two batches kept
            raise KeyboardInterrupt
        keep(self, rows, restart)

    monkeypatch.setattr(DocumentStore, "stage_tokens", killed_at_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        col.set_analysis(settings)
    monkeypatch.setattr(DocumentStore, "stage_tokens", keep)
    assert qdrant_state(col)[1] == {"bm25", "bm25_2"}
    old = {q: [(h.id, round(h.score, 4)) for h in reader.search(q, mode="lexical", k=5)] for q in QUERIES}
    assert {h.id for h in reader.search("카카오뱅크", mode="lexical", k=20)} >= {"d0", "d1"}

    # killed after the store's switch, before Qdrant's state adopted the new slot
    adopt = QdrantPoints.adopt

    def killed(self, store):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(QdrantPoints, "adopt", killed)
    with pytest.raises(KeyboardInterrupt):
        col.set_analysis(settings)
    monkeypatch.setattr(QdrantPoints, "adopt", adopt)
    folder.set_analysis(settings)

    def answers(c: Collection) -> dict[str, list[tuple[str, float]]]:
        return {q: [(h.id, round(h.score, 4)) for h in c.search(q, mode="lexical", k=5)] for q in QUERIES}

    expected = answers(folder)
    assert expected != old
    assert answers(reader) == expected  # the new slot, announced before the switch
    reader.close()
    col.close()
    col = Collection.open(where, backend=backend, encoder=encoder)  # its first sync finishes the switch
    assert answers(col) == expected
    after, names = qdrant_state(col)
    assert names == {"bm25_2"} and after == dense  # the old slot dropped; no dense vector touched
    held, _ = col.store.points.client.scroll(col.store.points.name, limit=1000, with_payload=True)
    assert {k for p in held for k in p.payload or {} if k.startswith("bm25_")} == {
        "bm25_2_members", "bm25_2_terms", "bm25_2_tfs", "bm25_2_length"
    }  # fmt: skip
    assert not (col.folder / "bm25_stats.db").exists() and (col.folder / "bm25_2_stats.db").is_file()

    # another edit fills a third slot; a document added afterwards is searched with the new analysis
    words = (UserWord("카카오뱅크"), UserWord("주택담보대출"))
    for c in (col, folder):
        c.set_analysis(settings.replace(user_words=words))
        c.add(["new"], ["주택담보대출 카카오뱅크 상품"])
    assert qdrant_state(col)[1] == {"bm25_3"}
    assert answers(col) == answers(folder)
    assert [h.id for h in col.search("주택담보대출", mode="lexical", k=1)] == ["new"]
    assert col.check() == []
    # a snapshot of it restores as a new Qdrant collection, searched in its first slot
    col.export(tmp_path / "c.snapshot")
    restored = Collection.import_(tmp_path / "c.snapshot", "r", backend=backend, encoder=encoder)
    assert qdrant_state(restored)[1] == {"bm25"} and answers(restored) == answers(folder)
    restored.close()
    col.close()
    folder.close()


def test_a_qdrant_search_that_read_the_slot_just_dropped_is_made_again_on_the_new_one(
    encoder, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from munjang.search.backends.qdrant.index import QdrantPoints

    where, backend = place("qdrant", tmp_path, request)
    writer = Collection.create(where, backend=backend, encoder=encoder)
    writer.add([f"d{i}" for i in range(len(TEXTS))], TEXTS)
    reader = Collection.open(where, backend=backend, encoder=encoder, readonly=True)
    assert {h.id for h in reader.search("카카오뱅크", mode="lexical", k=5)} == {"d0", "d1"}
    writer.set_analysis(AnalysisSettings(user_words=(UserWord("카카오뱅크"),), compounds="whole"))
    follow = QdrantPoints._follow_slot
    late: list[str] = []

    def late_once(self, store):  # type: ignore[no-untyped-def]
        if not late:  # this sync ran just before the switch: the search goes to the old slot
            late.append(self.slot)
            return
        follow(self, store)

    monkeypatch.setattr(QdrantPoints, "_follow_slot", late_once)
    assert [h.id for h in reader.search("카카오뱅크", mode="lexical", k=5)] == ["d0"]
    assert late == ["bm25"] and reader.store.points.slot == "bm25_2"
    reader.close()
    writer.close()
