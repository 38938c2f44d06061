"""Classical models wherever a model goes: the evaluators (sparse rows ranked and correlated by
cosine, as scikit-learn computes it), a collection (word2vec as its dense model, TF-IDF as its
sparse retriever; folder and Qdrant), the server's sparse route, and the shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.stats import spearmanr
from sklearn.metrics.pairwise import cosine_similarity

import munjang
from munjang import Collection
from munjang.data import RetrievalData
from munjang.encoders.classical import fit_classical
from munjang.encoders.sparse.encoder import sparse_rows
from munjang.evaluation import InformationRetrievalEvaluator, STSEvaluator
from munjang.server import ServerSettings, create_app
from tests.helpers.classical import CORPUS
from tests.helpers.cli import run_cli
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.processes import ROOT
from tests.helpers.server import LOCAL


@pytest.fixture(scope="module")
def tfidf_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("m") / "tfidf"
    fit_classical("tfidf", CORPUS).save(folder)
    return folder


@pytest.fixture(scope="module")
def tfidf(tfidf_folder):
    return munjang.load_embedder(str(tfidf_folder))


def test_sts_evaluator_correlates_the_sparse_cosines(tfidf) -> None:
    left = [CORPUS[0], CORPUS[2], CORPUS[1], CORPUS[3]]
    right = [CORPUS[6], CORPUS[7], CORPUS[4], CORPUS[5]]
    gold = [3.0, 4.0, 0.5, 1.0]
    metrics = STSEvaluator(left, right, gold)(tfidf)
    a, b = tfidf.encode(left), tfidf.encode(right)
    want = [cosine_similarity(a[i], b[i])[0, 0] for i in range(4)]
    assert metrics["spearman_cosine"] == pytest.approx(spearmanr(want, gold)[0])


@pytest.mark.parametrize("fn", ["cosine", "dot", "euclidean", "manhattan"])
def test_sparse_similarities_equal_the_dense_ones(tfidf, fn) -> None:
    from munjang.similarity import pairwise_similarity, similarity

    a, b = tfidf.encode(CORPUS[:5]), tfidf.encode(CORPUS[3:])
    dense_a, dense_b = a.toarray().astype(np.float64), b.toarray().astype(np.float64)
    np.testing.assert_allclose(similarity(a, b, fn), similarity(dense_a, dense_b, fn), atol=1e-6)
    np.testing.assert_allclose(
        pairwise_similarity(a, b, fn), pairwise_similarity(dense_a, dense_b, fn), atol=1e-6
    )


def test_retrieval_evaluator_ranks_by_the_sparse_cosine(tfidf) -> None:
    corpus = {f"d{i}": {"title": "", "text": t} for i, t in enumerate(CORPUS)}
    queries = {"q1": "서울에 비", "q2": "고양이 생선"}
    data = RetrievalData(corpus, queries, {"q1": {"d2": 1}, "q2": {"d6": 1}})
    evaluator = InformationRetrievalEvaluator.from_data(data, k_values=(1, 3))
    ranked = evaluator.rank(tfidf)
    scores = cosine_similarity(tfidf.encode(list(queries.values())), tfidf.encode(CORPUS))
    ids = sorted(corpus)
    for row, qid in enumerate(queries):
        order = sorted(range(len(ids)), key=lambda j: (-scores[row, int(ids[j][1:])], ids[j]))
        want = [ids[j] for j in order if scores[row, int(ids[j][1:])] > 0]
        assert ranked[qid][: len(want)] == want
    assert evaluator(tfidf)["cosine_accuracy@1"] == 1.0


@pytest.mark.parametrize("backend", ["folder", "qdrant"])
def test_a_collection_with_word2vec_dense_and_tfidf_sparse(
    tmp_path: Path, tfidf_folder, tfidf, backend
) -> None:
    pytest.importorskip("gensim")
    w2v = tmp_path / "cbow"
    fit_classical("cbow", CORPUS, min_count=1, vector_size=16, epochs=2).save(w2v)
    where, place = (str(tmp_path / "col"), None) if backend == "folder" else ("c", qdrant_url(tmp_path))
    collection = Collection.create(
        where, backend=place, model=str(w2v), retrievers={"sparse": str(tfidf_folder)}
    )
    collection.add([f"d{i}" for i in range(len(CORPUS))], CORPUS)
    hits = collection.search("고양이 생선", k=3, mode="sparse")
    scores = cosine_similarity(tfidf.encode(["고양이 생선"]), tfidf.encode(CORPUS))[0]
    want = [f"d{i}" for i in np.argsort(-scores, kind="stable")[:3] if scores[i] > 0]
    assert [h.id for h in hits] == want
    assert hits[0].score == pytest.approx(scores[6], abs=1e-5)
    dense = collection.search("고양이", k=2, mode="dense")
    assert len(dense) == 2 and all(h.scores["dense"] <= 1.0 + 1e-6 for h in dense)
    collection.close()
    again = Collection.open(where, backend=place)
    assert [h.id for h in again.search("고양이 생선", k=3, mode="sparse")] == want
    again.close()


def test_a_collection_refuses_word2vec_as_its_sparse_retriever(tmp_path: Path) -> None:
    pytest.importorskip("gensim")
    w2v = tmp_path / "cbow"
    fit_classical("cbow", CORPUS, min_count=1, vector_size=8, epochs=1).save(w2v)
    with pytest.raises(ValueError, match="dense word2vec"):
        Collection.create(str(tmp_path / "col"), model=str(w2v), retrievers={"sparse": str(w2v)})


def test_a_collection_refuses_term_vectors_as_its_dense_model(tmp_path: Path, tfidf_folder) -> None:
    with pytest.raises(ValueError, match="sparse term vectors.*sparse retriever"):
        Collection.create(str(tmp_path / "col"), model=str(tfidf_folder))
    assert not (tmp_path / "col" / "collection.db").exists()


def test_the_server_serves_term_vectors(encoder, tfidf) -> None:
    settings = ServerSettings(models={"mini": encoder}, sparse_models={"tfidf": tfidf})
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        body = {"input": CORPUS[:2], "task": "document", "return_tokens": True}
        answer = client.post("/v1/sparse_embeddings", json=body)
        assert answer.status_code == 200, answer.text
        for item, (ids, values) in zip(
            answer.json()["data"], sparse_rows(tfidf.encode_document(CORPUS[:2])), strict=True
        ):
            assert item["indices"] == ids.tolist()
            np.testing.assert_allclose(item["values"], values, rtol=1e-6)
            assert item["tokens"] == tfidf.tokenizer.convert_ids_to_tokens(ids)
        top = client.post("/v1/sparse_embeddings", json={"input": CORPUS[5], "top_k": 2}).json()["data"][0]
        assert len(top["indices"]) == 2 and top["values"] == sorted(top["values"], reverse=True)


def test_fit_and_compare_from_the_shell(tmp_path: Path, capsys, monkeypatch) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*CORPUS, "철수가 영희를 때렸다"]) + "\n", encoding="utf-8")
    model = tmp_path / "bow"
    code, out, _ = run_cli(
        ["models", "fit-classical", "bow", "-c", str(corpus), "-o", str(model)], capsys, monkeypatch
    )
    assert code == 0 and "bow: 9 texts" in out
    sts = tmp_path / "sts.tsv"
    rows = ["genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"]
    rows += [
        f"g\tf\t2020\t{i}\t{s}\t{a}\t{b}"
        for i, (s, a, b) in enumerate(
            [
                (4.5, CORPUS[0], CORPUS[6]),
                (0.5, CORPUS[0], CORPUS[4]),
                (3.0, CORPUS[2], CORPUS[7]),
                (1.0, CORPUS[3], CORPUS[5]),
            ]
        )
    ]
    sts.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = run_cli(
        ["eval", "compare", "-m", str(model), "-m", "bm25", "--sts", str(sts), "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    found = {r["name"]: r for r in json.loads(out)}
    assert set(found) == {str(model), "bm25"}
    particle = found[str(model)]["examples"]["particle change"]
    assert particle["farther"] == pytest.approx(1.0)  # content morphemes alone cannot see who did what
    code, out, err = run_cli(
        ["models", "fit-classical", "tfidf", "-c", str(tmp_path / "none.txt"), "-o", str(model)],
        capsys,
        monkeypatch,
    )
    assert code != 0 and err.strip().startswith("error:") and "Traceback" not in err


def test_a_word2vec_collection_searches_alike_in_a_fresh_process(tmp_path: Path) -> None:
    pytest.importorskip("gensim")
    w2v = tmp_path / "skipgram"
    fit_classical("skipgram", CORPUS, min_count=1, vector_size=16, epochs=2).save(w2v)
    where = tmp_path / "col"
    with Collection.create(str(where), model=str(w2v)) as collection:
        collection.add([f"d{i}" for i in range(len(CORPUS))], CORPUS)
        here = collection.search("고양이 생선", k=4, mode="dense")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MUNJANG_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "munjang.cli", "index", "search", str(where), "-q", "고양이 생선"]
    done = subprocess.run(
        [*command, "-k", "4", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    there = json.loads(done.stdout.splitlines()[0])["results"]
    assert [h["id"] for h in there] == [h.id for h in here]
    np.testing.assert_allclose([h["score"] for h in there], [h.score for h in here], atol=1e-6)
