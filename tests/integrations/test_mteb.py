"""munjang models under the `mteb` package, on small Korean tasks built here (no downloads): the same
scores as mteb's own sentence-transformers wrappers over the same folders."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

mteb = pytest.importorskip("mteb")
from datasets import Dataset  # noqa: E402
from mteb.abstasks.retrieval import AbsTaskRetrieval  # noqa: E402
from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData  # noqa: E402
from mteb.abstasks.task_metadata import TaskMetadata  # noqa: E402
from mteb.models.sentence_transformer_wrapper import (  # noqa: E402
    CrossEncoderWrapper,
    SentenceTransformerEncoderWrapper,
)
from sentence_transformers import CrossEncoder as STCrossEncoder  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

from munjang import load_cross_encoder, load_encoder  # noqa: E402
from munjang.integrations.mteb import MTEBCrossEncoder, MTEBEncoder  # noqa: E402
from tests.helpers.llm import tiny_decoder_embedder, tiny_llm_reranker  # noqa: E402

logging.getLogger("mteb").setLevel(logging.ERROR)

QUERIES = {"q1": "서울 날씨는 어때?", "q2": "기타 치는 사람", "q3": "아이들은 어디서 노나?"}
CORPUS = {
    "d1": "서울은 오늘 맑고 따뜻하다.",
    "d2": "한 남자가 기타를 친다.",
    "d3": "아이들이 공원에서 뛰어논다.",
    "d4": "부산은 항구 도시이다.",
    "d5": "주식 시장이 급락했다.",
    "d6": "A man is playing a guitar.",
}
RELEVANT = {"q1": {"d1": 1}, "q2": {"d2": 1, "d6": 1}, "q3": {"d3": 1}}


def _metadata(name: str, kind: str) -> TaskMetadata:
    return TaskMetadata(
        name=name,
        description="A Korean toy task built inside the test.",
        reference="https://github.com/embeddings-benchmark/mteb",
        dataset={"path": "NA", "revision": "NA"},
        type=kind,
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs=["kor-Hang"],
        main_score="ndcg_at_10" if kind == "Retrieval" else "map_at_1000",
        date=("2024-01-01", "2024-01-01"),
        domains=[],
        task_subtypes=[],
        license="cc-by-4.0",
        annotations_creators="derived",
        dialect=[],
        sample_creation="found",
        bibtex_citation="",
    )


def _split(ranked: bool) -> RetrievalSplitData:
    return RetrievalSplitData(
        queries=Dataset.from_list([{"id": k, "text": v} for k, v in QUERIES.items()]),
        corpus=Dataset.from_list([{"id": k, "text": v, "title": ""} for k, v in CORPUS.items()]),
        relevant_docs=RELEVANT,
        top_ranked={q: list(CORPUS) for q in QUERIES} if ranked else None,
    )


class KoToyRetrieval(AbsTaskRetrieval):
    metadata = _metadata("MunjangKoToyRetrieval", "Retrieval")

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        self.dataset = {"default": {"test": _split(ranked=False)}}
        self.data_loaded = True


class KoToyReranking(AbsTaskRetrieval):
    metadata = _metadata("MunjangKoToyReranking", "Reranking")

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        self.dataset = {"default": {"test": _split(ranked=True)}}
        self.data_loaded = True


def _scores(model: Any, task: AbsTaskRetrieval) -> dict[str, float]:
    result = mteb.evaluate(model, task, cache=None, show_progress_bar=False)
    scores = result.task_results[0].scores["test"][0]
    return {k: float(v) for k, v in scores.items() if k.startswith(("ndcg_at", "map_at", "recall_at"))}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("mteb")
    return tiny_decoder_embedder(root / "emb"), tiny_llm_reranker(root / "rr")


def test_an_encoder_scores_as_sentence_transformers_does(folders: tuple[Path, Path]) -> None:
    emb, _ = folders
    ours = _scores(MTEBEncoder(load_encoder(emb, device="cpu"), name="munjang/tiny-qwen3"), KoToyRetrieval())
    theirs = _scores(
        SentenceTransformerEncoderWrapper(SentenceTransformer(str(emb), device="cpu")), KoToyRetrieval()
    )
    assert ours.keys() == theirs.keys() and ours
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-4), key


def test_the_query_prompt_is_the_models(folders: tuple[Path, Path]) -> None:
    emb, _ = folders
    wrapper = MTEBEncoder(load_encoder(emb, device="cpu"))
    query, document = mteb.types.PromptType.query, mteb.types.PromptType.document
    assert wrapper.prompt(KoToyRetrieval.metadata, query).startswith("Instruct:")
    assert wrapper.prompt(KoToyRetrieval.metadata, document) == ""


def test_an_llm_reranker_scores_as_sentence_transformers_does(folders: tuple[Path, Path]) -> None:
    _, rr = folders
    ours = _scores(
        MTEBCrossEncoder(load_cross_encoder(rr, device="cpu"), name="munjang/tiny-rr"), KoToyReranking()
    )
    theirs = _scores(CrossEncoderWrapper(STCrossEncoder(str(rr), device="cpu")), KoToyReranking())
    assert ours.keys() == theirs.keys() and ours
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-4), key


def test_munjang_eval_mteb_runs_local_tasks(
    folders: tuple[Path, Path], tmp_path: Path, capsys, monkeypatch
) -> None:
    import json

    from tests.helpers.cli import run_cli

    emb, rr = folders
    tasks, ranked = tmp_path / "tasks.py", tmp_path / "ranked.py"
    for file, name in ((tasks, "KoToyRetrieval"), (ranked, "KoToyReranking")):
        file.write_text(
            f"from tests.integrations.test_mteb import {name}\nclass Local({name}):\n    pass\n",
            encoding="utf-8",
        )
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):  # --offline sets them: undone after the test
        monkeypatch.setenv(name, "")
    code, out, err = run_cli(["eval", "mteb", "-m", str(emb), "--tasks-file", str(tasks), "--json",
                              "--offline", "--device", "cpu"], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    rows = {r["task"]: r["main_score"] for r in json.loads(out)}
    expected = _scores(
        SentenceTransformerEncoderWrapper(SentenceTransformer(str(emb), device="cpu")), KoToyRetrieval()
    )
    assert rows["MunjangKoToyRetrieval"] == pytest.approx(expected["ndcg_at_10"], abs=1e-4)
    args = [
        "eval",
        "mteb",
        "-m",
        str(rr),
        "--reranker",
        "--tasks-file",
        str(ranked),
        "--json",
        "--device",
        "cpu",
    ]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert "MunjangKoToyReranking" in {r["task"] for r in json.loads(out)}
    code, _, err = run_cli(["eval", "mteb", "-m", str(emb)], capsys, monkeypatch)
    assert code != 0 and "name the tasks" in err
