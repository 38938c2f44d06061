"""`munjang eval mteb|sts|retrieval`: a model on a benchmark.

`sts` and `retrieval` read an STS file or a BEIR folder and score one model, or several side by side
(`--model A --model B`, compare.py). `mteb` runs a munjang encoder or cross-encoder on MTEB tasks,
through the `mteb` package.

`mteb`'s tasks come by name (`-t KorSTS -t Ko-StrategyQA`), as a benchmark (`--benchmark "MTEB(kor, v2)"`),
or from a Python file of your own `AbsTask` subclasses whose data is on disk (`--tasks-file`).
mteb reads named tasks' data through Hugging Face `datasets`: `--offline` keeps it to what the local
cache holds (no network), and a task whose data is not there fails with its name.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import MunjangError
from .loading import load
from .options import BatchOption, DeviceOption, ModelsOption, PromptNameOption, PromptOption

app = typer.Typer()


def _file_tasks(path: Path) -> list[Any]:
    """Instances of every mteb `AbsTask` subclass defined in the Python file `path`."""
    from mteb.abstasks.abstask import AbsTask

    spec = importlib.util.spec_from_file_location(f"munjang_mteb_tasks_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise MunjangError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = [
        cls()
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, AbsTask) and cls.__module__ == module.__name__ and not inspect.isabstract(cls)
    ]
    if not found:
        raise MunjangError(f"{path}: defines no mteb task (a subclass of mteb's AbsTask)")
    return found


@app.command("mteb")
def eval_mteb(
    model: Annotated[str, typer.Option("--model", "-m", help="Encoder or cross-encoder: folder or name.")],
    task: Annotated[
        list[str] | None, typer.Option("--task", "-t", help="An MTEB task name (repeatable).")
    ] = None,
    benchmark: Annotated[str | None, typer.Option(help='An MTEB benchmark, e.g. "MTEB(kor, v2)".')] = None,
    tasks_file: Annotated[
        Path | None, typer.Option(help="A Python file defining mteb tasks over local data.")
    ] = None,
    reranker: Annotated[bool, typer.Option(help="The model is a cross-encoder (reranking tasks).")] = False,
    instruction: Annotated[str | None, typer.Option(help="A reranker's task instruction.")] = None,
    offline: Annotated[bool, typer.Option(help="Read task data from the local cache only.")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="mteb's results folder.")] = None,
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
) -> None:
    """Run MTEB tasks on a munjang model (pip install 'munjang[mteb]')."""
    from .._util.extras import require

    mteb = require("mteb")
    if offline:
        os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    tasks: list[Any] = []
    if task:
        tasks += list(mteb.get_tasks(tasks=list(task)))
    if benchmark:
        tasks += list(mteb.get_benchmark(benchmark).tasks)
    if tasks_file:
        tasks += _file_tasks(tasks_file)
    if not tasks:
        raise MunjangError("name the tasks: --task NAME, --benchmark NAME or --tasks-file FILE")
    from ..integrations.mteb import MTEBCrossEncoder, MTEBEncoder

    wrapped: Any
    if reranker:
        from ..encoders.cross import load_cross_encoder

        wrapped = MTEBCrossEncoder(load_cross_encoder(model, device=device), name=model,
                                   batch_size=batch_size, prompt=instruction)  # fmt: skip
    else:
        from ..encoders.dense.encoder import load_encoder

        wrapped = MTEBEncoder(load_encoder(model, device=device), name=model, batch_size=batch_size)
    cache = mteb.ResultCache(str(output)) if output else None
    result = mteb.evaluate(wrapped, tasks, cache=cache, show_progress_bar=False)
    rows = [
        {"task": r.task_name, "main_score": float(r.get_score()), "scores": r.scores}
        for r in result.task_results
    ]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, default=float))
        return
    for row in rows:
        typer.echo(f"{row['task']:<40} {row['main_score'] * 100:7.2f}")


def _evaluate(
    models: list[str] | None,
    device: str | None,
    evaluator: Any,
    columns: tuple[tuple[str, str | None], ...],
    scale: float,
    as_json: bool,
    title: str,
) -> tuple[Any, dict[str, float], float, dict[str, Any]] | None:
    """`eval sts` and `eval retrieval` alike: with several --model, print their comparison under
    `title` and return None; else (encoder, metrics, seconds, {"usage": ...} for a remote model or
    {}) for the one model given, or the default."""
    from .compare import compare, usage_of

    if models and len(models) > 1:
        compare(models, lambda m: load(m, device), evaluator, columns, scale, as_json, title)
        return None
    encoder = load(models[0] if models else None, device)
    start = time.perf_counter()
    metrics = evaluator(encoder)
    seconds = time.perf_counter() - start
    usage = usage_of(encoder)
    return encoder, metrics, seconds, {"usage": usage} if usage is not None else {}


@app.command("sts")
def eval_sts(
    data: Annotated[
        Path, typer.Option("--data", "-d", help="STS file: KorSTS .tsv, STSb .csv, KLUE .json, ...")
    ],
    model: ModelsOption = None,
    data_format: Annotated[str, typer.Option("--format", help="auto, korsts, stsb, klue, generic.")] = "auto",
    batch_size: BatchOption = 32,
    prompt_name: PromptNameOption = None,
    prompt: PromptOption = None,
    device: DeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Pearson and Spearman correlation with gold scores, for each similarity function.

    With --model given several times: one row per model (remote ones with requests, tokens, cost)."""
    from ..data import read_sts
    from ..evaluation import STSEvaluator
    from ..similarity import SIMILARITY_NAMES
    from .compare import STS_COLUMNS, usage_line

    pairs = read_sts(data, data_format)
    evaluator = STSEvaluator.from_data(pairs, batch_size=batch_size, prompt_name=prompt_name, prompt=prompt)
    run = _evaluate(model, device, evaluator, STS_COLUMNS, 100, as_json, f"{data}: {len(pairs)} pairs")
    if run is None:
        return
    encoder, metrics, seconds, usage = run
    if as_json:
        typer.echo(
            json.dumps(
                {"data": str(data), "pairs": len(pairs), "seconds": seconds, **metrics, **usage}, indent=2
            )
        )
        return
    typer.echo(f"{data}: {len(pairs)} pairs, {seconds:.1f} s")
    typer.echo(f"  {'similarity':<10} {'Pearson':>8} {'Spearman':>9}")
    for name in SIMILARITY_NAMES:
        if f"spearman_{name}" in metrics:
            pearson, spearman = metrics[f"pearson_{name}"] * 100, metrics[f"spearman_{name}"] * 100
            typer.echo(f"  {name:<10} {pearson:8.2f} {spearman:9.2f}")
    primary = evaluator.primary_metric or "spearman_cosine"
    typer.echo(f"  primary: {primary} = {metrics[primary] * 100:.2f}")
    if (spent := usage_line(encoder)) is not None:
        typer.echo(spent)


@app.command("retrieval")
def eval_retrieval(
    data: Annotated[Path, typer.Option(help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).")],
    split: Annotated[str, typer.Option(help="The qrels split.")] = "test",
    model: ModelsOption = None,
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Recall@k, MRR@10, nDCG@10 and MAP of an encoder on a BEIR-format retrieval set.

    With --model given several times: one row per model (remote ones with requests, tokens, cost)."""
    from ..data import load_beir
    from ..evaluation import InformationRetrievalEvaluator
    from .compare import RETRIEVAL_COLUMNS, usage_line

    retrieval = load_beir(data, split)
    evaluator = InformationRetrievalEvaluator.from_data(
        retrieval, batch_size=batch_size, show_progress_bar=len(retrieval.corpus) > 1000
    )
    stats = retrieval.stats()
    size = f"{data}: {stats['evaluated_queries']} queries, {stats['corpus']} documents"
    run = _evaluate(model, device, evaluator, RETRIEVAL_COLUMNS, 1, as_json, size)
    if run is None:
        return
    encoder, metrics, seconds, usage = run
    if as_json:
        typer.echo(json.dumps({"data": str(data), **stats, "seconds": seconds, **metrics, **usage}, indent=2))
        return
    typer.echo(f"{data}: {stats['evaluated_queries']} queries, {stats['corpus']} documents, {seconds:.1f} s")
    for name, value in metrics.items():
        typer.echo(f"  {name:<24}{value:.4f}")
    if (spent := usage_line(encoder)) is not None:
        typer.echo(spent)


@app.command("compare")
def eval_compare(
    model: Annotated[
        list[str], typer.Option("--model", "-m", help="A model folder or name, or bm25 (repeatable).")
    ],
    sts: Annotated[
        Path | None, typer.Option(help="An STS file (KorSTS .tsv, ...) for the Spearman column.")
    ] = None,
    retrieval: Annotated[
        list[Path] | None, typer.Option(help="A BEIR folder (repeatable): R@1 and nDCG@10 columns.")
    ] = None,
    split: Annotated[str, typer.Option(help="The qrels split of the BEIR folders.")] = "test",
    tokenizer: Annotated[
        str, typer.Option(help="BM25's tokenizer (auto: Kiwi morphemes for Korean).")
    ] = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Representations side by side: one-hot, bag of words, TF-IDF, BM25, word2vec, Sentence-BERT.

    One row each: STS Spearman, R@1 / nDCG@10 per retrieval set, encode speed (sentences/s over the
    STS sentences), peak memory, and worked examples (a paraphrase with no shared words, a reordered
    sentence with the opposite meaning, a particle change) showing which ranks the closer sentence
    first. Fit classical models with `munjang models fit-classical`."""
    from ..data import load_beir, read_sts
    from ..evaluation.representations import (
        BM25Representation,
        EncoderRepresentation,
        Representation,
        example_lines,
        measure,
        table,
    )

    pairs = read_sts(sts, "auto") if sts is not None else None
    sets = {path.name: load_beir(path, split) for path in retrieval or []}
    rows = []
    for name in model:
        representation: Representation = (
            BM25Representation(tokenizer)
            if name == "bm25"
            else EncoderRepresentation(name, load(name, device), batch_size)
        )
        rows.append(measure(representation, pairs, sets))
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in rows], ensure_ascii=False, indent=2))
        return
    for line in table(rows, list(sets)):
        typer.echo(line)
    typer.echo("")
    for line in example_lines(rows):
        typer.echo(line)
