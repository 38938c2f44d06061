"""`munjang eval mteb`: a munjang encoder or cross-encoder on MTEB tasks, through the `mteb` package.

Tasks come by name (`-t KorSTS -t Ko-StrategyQA`), as a benchmark (`--benchmark "MTEB(kor, v2)"`),
or from a Python file of your own `AbsTask` subclasses whose data is on disk (`--tasks-file`).
mteb reads named tasks' data through Hugging Face `datasets`: `--offline` keeps it to what the local
cache holds (no network), and a task whose data is not there fails with its name.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import MunjangError
from .options import BatchOption, DeviceOption


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
