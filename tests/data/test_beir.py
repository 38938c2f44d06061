"""BEIR loaders (round trips, every malformed-file error names file and line) and the STS retrieval sets."""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path

import pytest

from munjang.data import RetrievalData, STSData, load_beir, read_sts, save_beir, sts_retrieval_set
from munjang.errors import DataFormatError


def sample() -> RetrievalData:
    return RetrievalData(
        corpus={
            "doc1": {"title": "서울", "text": "서울은 한국의 수도이다.", "url": "https://example.org/1"},
            "doc2": {"title": "", "text": "부산은 항구 도시다."},
            "doc3": {"title": "Paris", "text": "Paris is the capital of France.", "year": 2024},
        },
        queries={"q1": "한국의 수도는?", "q2": "Capital of France?", "q3": "아무것도 관련 없음"},
        qrels={"q1": {"doc1": 2, "doc2": 0}, "q2": {"doc3": 1}, "q3": {"doc2": 0}},
    )


def write(folder: Path, corpus: list[str], queries: list[str], qrels: list[str], split: str = "test") -> Path:
    """A BEIR folder from raw lines, so tests can write malformed files."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(line + "\n" for line in corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(line + "\n" for line in queries), encoding="utf-8")
    (folder / "qrels" / f"{split}.tsv").write_text("".join(line + "\n" for line in qrels), encoding="utf-8")
    return folder


CORPUS = ['{"_id": "d1", "title": "t", "text": "one"}', '{"_id": "d2", "text": "two"}']
QUERIES = ['{"_id": "q1", "text": "first"}', '{"_id": "q2", "text": "second"}']
QRELS = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t1"]


def error_at(tmp_path: Path, file: str, line: int, message: str, **files: list[str]) -> None:
    folder = write(
        tmp_path, files.get("corpus", CORPUS), files.get("queries", QUERIES), files.get("qrels", QRELS)
    )
    with pytest.raises(DataFormatError) as info:
        load_beir(folder)
    text = str(info.value)
    assert str(folder / file) in text
    assert f"line {line}:" in text
    assert re.search(message, text), text


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_save_then_load_round_trips(tmp_path: Path, compress: bool) -> None:
    data = sample()
    save_beir(data, tmp_path, split="dev", compress=compress)
    suffix = ".gz" if compress else ""
    assert (tmp_path / f"corpus.jsonl{suffix}").is_file()
    assert (tmp_path / "qrels" / f"dev.tsv{suffix}").is_file()
    loaded = load_beir(tmp_path, split="dev")
    assert loaded.corpus == data.corpus
    assert loaded.queries == data.queries
    assert loaded.qrels == data.qrels
    assert loaded.counts == {
        "corpus": 3,
        "queries_in_file": 3,
        "queries": 3,
        "qrels_rows": 4,
        "unknown_query_rows": 0,
        "unknown_corpus_rows": 0,
    }


def test_saved_files_are_beir_format(tmp_path: Path) -> None:
    save_beir(sample(), tmp_path)
    lines = (tmp_path / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "_id": "doc1",
        "title": "서울",
        "text": "서울은 한국의 수도이다.",
        "url": "https://example.org/1",
    }
    assert "서울" in lines[0]  # UTF-8, not \\u escapes
    qrels = (tmp_path / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert qrels[0] == "query-id\tcorpus-id\tscore"
    assert qrels[1:] == ["q1\tdoc1\t2", "q1\tdoc2\t0", "q2\tdoc3\t1", "q3\tdoc2\t0"]


def test_relevant_docs_leave_out_queries_without_a_relevant_document() -> None:
    data = sample()
    assert data.relevant_docs() == {"q1": {"doc1"}, "q2": {"doc3"}}
    assert data.stats() == {"corpus": 3, "queries": 3, "qrels": 4, "evaluated_queries": 2}


def test_corpus_texts_join_title_and_text() -> None:
    texts = sample().corpus_texts()
    assert texts == {
        "doc1": "서울 서울은 한국의 수도이다.",
        "doc2": "부산은 항구 도시다.",
        "doc3": "Paris Paris is the capital of France.",
    }


def test_only_queries_of_the_split_are_loaded(tmp_path: Path) -> None:
    queries = [*QUERIES, '{"_id": "q3", "text": "a training query", "metadata": {}}']
    folder = write(tmp_path, CORPUS, queries, QRELS)
    data = load_beir(folder)
    assert data.queries == {"q1": "first", "q2": "second"}
    assert data.counts["queries_in_file"] == 3
    assert data.corpus["d2"] == {"title": "", "text": "two"}


def test_headerless_qrels_integer_ids_and_blank_lines(tmp_path: Path) -> None:
    corpus = ['{"_id": 7, "text": "seven"}', "", '{"_id": "d2", "text": "two", "title": null}']
    queries = ['\ufeff{"_id": 1, "text": "first"}']
    folder = write(tmp_path, corpus, queries, ["1\t7\t1", "", "1\td2\t-1"])
    data = load_beir(folder)
    assert data.corpus == {"7": {"title": "", "text": "seven"}, "d2": {"title": "", "text": "two"}}
    assert data.qrels == {"1": {"7": 1, "d2": -1}}
    assert data.relevant_docs() == {"1": {"7"}}


def test_gzipped_files_are_read(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, QRELS)
    raw = (folder / "corpus.jsonl").read_bytes()
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(raw))
    assert load_beir(folder).corpus["d1"] == {"title": "t", "text": "one"}


# -- missing and ambiguous files -------------------------------------------------------------------


def test_missing_folder_and_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="BEIR folder not found"):
        load_beir(tmp_path / "nowhere")
    folder = write(tmp_path, CORPUS, QUERIES, QRELS)
    with pytest.raises(FileNotFoundError, match=re.escape(str(folder / "qrels" / "dev.tsv"))):
        load_beir(folder, split="dev")
    (folder / "queries.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="queries.jsonl"):
        load_beir(folder)


def test_plain_and_gzipped_copies_are_ambiguous(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, QRELS)
    (folder / "corpus.jsonl.gz").write_bytes(gzip.compress((folder / "corpus.jsonl").read_bytes()))
    with pytest.raises(DataFormatError, match="both corpus.jsonl and corpus.jsonl.gz"):
        load_beir(folder)


def test_bad_unknown_ids_option(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown_ids"):
        load_beir(tmp_path, unknown_ids="ignore")


# -- malformed files: each error names the file and the line ----------------------------------------


def test_bad_json(tmp_path: Path) -> None:
    error_at(tmp_path, "corpus.jsonl", 2, "invalid JSON", corpus=[CORPUS[0], '{"_id": "d2", "text": }'])


def test_record_not_an_object(tmp_path: Path) -> None:
    error_at(tmp_path, "queries.jsonl", 2, "expected a JSON object, got list", queries=[QUERIES[0], "[1, 2]"])


def test_missing_id(tmp_path: Path) -> None:
    error_at(tmp_path, "queries.jsonl", 2, "missing '_id'", queries=[QUERIES[0], '{"text": "second"}'])


def test_missing_text(tmp_path: Path) -> None:
    error_at(tmp_path, "corpus.jsonl", 2, "missing 'text'", corpus=[CORPUS[0], '{"_id": "d2", "title": "x"}'])


def test_text_not_a_string(tmp_path: Path) -> None:
    error_at(tmp_path, "corpus.jsonl", 1, "'text' is int", corpus=['{"_id": "d1", "text": 3}', CORPUS[1]])


def test_empty_query(tmp_path: Path) -> None:
    error_at(tmp_path, "queries.jsonl", 1, "empty text", queries=['{"_id": "q1", "text": "  "}', QUERIES[1]])


def test_empty_document(tmp_path: Path) -> None:
    error_at(
        tmp_path, "corpus.jsonl", 2, "empty title and text", corpus=[CORPUS[0], '{"_id": "d2", "text": ""}']
    )


def test_duplicate_id(tmp_path: Path) -> None:
    corpus = [*CORPUS, "", '{"_id": "d1", "text": "again"}']
    error_at(tmp_path, "corpus.jsonl", 4, r"duplicate _id 'd1' \(first on line 1\)", corpus=corpus)


def test_not_utf8(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, QRELS)
    (folder / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "\xff"}\n')
    with pytest.raises(DataFormatError, match=r"queries.jsonl line 2: not valid UTF-8"):
        load_beir(folder)


def test_not_gzip(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, QRELS)
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl.gz").write_bytes(b"this is not gzip\n")
    with pytest.raises(DataFormatError, match=r"corpus.jsonl.gz line 1: cannot read"):
        load_beir(folder)


def test_qrels_wrong_column_count(tmp_path: Path) -> None:
    error_at(
        tmp_path, "qrels/test.tsv", 3, "expected 3 tab-separated fields", qrels=[*QRELS[:2], "q2 0 d2 1"]
    )
    error_at(tmp_path, "qrels/test.tsv", 2, "got 4", qrels=[QRELS[0], "q1\td1\t1\textra"])


def test_qrels_score_not_an_integer(tmp_path: Path) -> None:
    error_at(
        tmp_path, "qrels/test.tsv", 3, "score '0.5' is not an integer", qrels=[*QRELS[:2], "q2\td2\t0.5"]
    )


def test_qrels_bad_header(tmp_path: Path) -> None:
    error_at(tmp_path, "qrels/test.tsv", 1, "nor the header", qrels=["qid\tdocid\trel", *QRELS[1:]])


def test_qrels_pair_judged_twice(tmp_path: Path) -> None:
    error_at(tmp_path, "qrels/test.tsv", 4, r"judged twice \(also on line 2\)", qrels=[*QRELS, "q1\td1\t2"])


def test_qrels_without_rows(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, [QRELS[0]])
    with pytest.raises(DataFormatError, match="no qrels rows"):
        load_beir(folder)


# -- qrels naming unknown ids ----------------------------------------------------------------------

UNKNOWN = [*QRELS, "q1\tgone\t1", "q9\td1\t1"]


def test_unknown_ids_are_kept_with_a_warning_by_default(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, UNKNOWN)
    with pytest.warns(UserWarning) as caught:
        data = load_beir(folder)
    messages = [str(w.message) for w in caught]
    assert any(
        "1 qrels rows with a query-id not in queries.jsonl dropped (first on line 5: 'q9')" in m
        for m in messages
    )
    assert any(
        "corpus-id not in corpus.jsonl kept (never retrievable) (first on line 4: 'gone')" in m
        for m in messages
    )
    assert data.qrels == {"q1": {"d1": 1, "gone": 1}, "q2": {"d2": 1}}
    assert data.counts["unknown_query_rows"] == 1
    assert data.counts["unknown_corpus_rows"] == 1


def test_unknown_ids_dropped(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, UNKNOWN)
    with pytest.warns(UserWarning) as caught:
        data = load_beir(folder, unknown_ids="drop")
    messages = " ".join(str(w.message) for w in caught)
    assert "1 qrels rows with a corpus-id not in corpus.jsonl dropped (first on line 4: 'gone')" in messages
    assert "1 qrels rows with a query-id not in queries.jsonl dropped" in messages
    assert data.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert data.counts["unknown_corpus_rows"] == 1


def test_unknown_ids_as_errors(tmp_path: Path) -> None:
    folder = write(tmp_path, CORPUS, QUERIES, UNKNOWN)
    with pytest.raises(
        DataFormatError, match=r"qrels/test.tsv line 4: corpus-id 'gone' is not in corpus.jsonl"
    ):
        load_beir(folder, unknown_ids="error")
    write(tmp_path, CORPUS, QUERIES, [*QRELS, "q9\td1\t1"])
    with pytest.raises(
        DataFormatError, match=r"qrels/test.tsv line 4: query-id 'q9' is not in queries.jsonl"
    ):
        load_beir(folder, unknown_ids="error")


def test_save_refuses_ids_beir_files_cannot_hold(tmp_path: Path) -> None:
    bad = RetrievalData({"a\tb": {"title": "", "text": "x"}}, {"q": "y"}, {"q": {"a\tb": 1}})
    with pytest.raises(ValueError, match="cannot be written"):
        save_beir(bad, tmp_path)
    no_text = RetrievalData({"d": {"title": "x"}}, {"q": "y"}, {"q": {"d": 1}})
    with pytest.raises(ValueError, match="string 'text'"):
        save_beir(no_text, tmp_path)


# -- retrieval sets from STS pairs -----------------------------------------------------------------


def test_sts_retrieval_set_merges_queries_and_documents() -> None:
    pairs = STSData(
        ["A cat.", "A cat.", "A dog.", "Rain.", "Sun.", "A bird."],
        ["Feline.", "Kitty.", "Canine.", "Feline.", "A dog.", "A bird."],
        [4.5, 4.0, 5.0, 1.0, 3.9, 4.2],
        source="toy",
    )
    data = sts_retrieval_set(pairs)
    assert data.corpus == {
        "d1": {"title": "", "text": "Feline."},
        "d2": {"title": "", "text": "Kitty."},
        "d3": {"title": "", "text": "Canine."},
        "d4": {"title": "", "text": "A dog."},
        "d5": {"title": "", "text": "A bird."},
    }
    assert data.queries == {"q1": "A cat.", "q2": "A dog.", "q3": "A bird."}
    # "A dog." is also a document (from the pair scored 3.9): an exact copy of the query, so relevant.
    assert data.qrels == {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1, "d4": 1}, "q3": {"d5": 1}}
    assert data.counts == {
        "pairs": 6,
        "relevant_pairs": 4,
        "queries": 3,
        "merged_pairs": 1,
        "corpus": 5,
        "duplicate_corpus_texts": 1,
        "multi_relevant_queries": 2,
        "identical_pairs": 1,
        "identical_text_qrels": 1,
    }
    assert sts_retrieval_set(pairs, identical_relevant=False).qrels["q2"] == {"d3": 1}
    assert sts_retrieval_set(pairs, min_score=4.4).queries == {"q1": "A cat.", "q2": "A dog."}
    with pytest.raises(ValueError, match="no pair in toy has a score of at least 5.5"):
        sts_retrieval_set(pairs, min_score=5.5)


def check_against_raw_file(data: RetrievalData, path: Path, first_column: int) -> None:
    """Each raw pair scored >= 4 is a query -> document judgement; the corpus is every sentence2."""
    with open(path, encoding="utf-8") as f:
        rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if r and r[4] != "score"]
    doc_of = {doc["text"]: doc_id for doc_id, doc in data.corpus.items()}
    query_of = {text: qid for qid, text in data.queries.items()}
    assert set(doc_of) == {r[first_column + 1] for r in rows}
    assert len(doc_of) == len(data.corpus)  # one document per distinct text
    relevant_rows = [r for r in rows if float(r[4]) >= 4.0]
    assert set(query_of) == {r[first_column] for r in relevant_rows}
    for r in relevant_rows:
        assert data.qrels[query_of[r[first_column]]][doc_of[r[first_column + 1]]] == 1
    for qid, judged in data.qrels.items():
        extra = set(judged) - {
            doc_of[r[first_column + 1]] for r in relevant_rows if query_of[r[first_column]] == qid
        }
        assert all(data.corpus[d]["text"] == data.queries[qid] for d in extra)


def test_korsts_test_retrieval_set(data_dir: Path) -> None:
    path = data_dir / "korsts" / "sts-test.tsv"
    data = sts_retrieval_set(path)
    assert data.source == str(path)
    assert len(data.queries) == 309
    assert len(data.corpus) == 1327
    assert data.counts["relevant_pairs"] == 338
    assert data.counts["identical_pairs"] == 8
    assert data.counts["identical_text_qrels"] == 15
    assert all(len(data.relevant_docs()[qid]) >= 1 for qid in data.queries)
    assert set(data.relevant_docs()) == set(data.queries)
    assert all(doc in data.corpus for judged in data.qrels.values() for doc in judged)
    assert list(data.queries)[:2] == ["q001", "q002"]
    assert next(iter(data.corpus)) == "d0001"
    assert any("\uac00" <= ch <= "\ud7a3" for ch in data.queries["q001"])  # Hangul
    check_against_raw_file(data, path, first_column=5)
    assert sts_retrieval_set(read_sts(path)) == sts_retrieval_set(path)  # deterministic ids and order


def test_stsb_test_retrieval_set(data_dir: Path) -> None:
    path = data_dir / "stsb" / "sts-test.csv"
    data = sts_retrieval_set(path)
    assert (len(data.queries), len(data.corpus)) == (309, 1337)
    check_against_raw_file(data, path, first_column=5)


def test_sts_retrieval_set_round_trips_through_beir_files(data_dir: Path, tmp_path: Path) -> None:
    data = sts_retrieval_set(data_dir / "korsts" / "sts-test.tsv")
    save_beir(data, tmp_path, compress=True)
    loaded = load_beir(tmp_path)
    assert (loaded.corpus, loaded.queries, loaded.qrels) == (data.corpus, data.queries, data.qrels)
