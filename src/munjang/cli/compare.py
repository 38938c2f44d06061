"""`munjang eval sts|retrieval --model A --model B ...`: several models on one benchmark in one
command, one row each, local and remote side by side with their time and, for a remote model, the
requests, cache hits, tokens and estimated cost it took."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import typer

# (column header, metric key relative to the primary metric's similarity function); None: the primary.
STS_COLUMNS = (("Spearman", None), ("Pearson", "pearson_{fn}"))
RETRIEVAL_COLUMNS = (("nDCG@10", None), ("MRR@10", "{fn}_mrr@10"), ("Recall@10", "{fn}_recall@10"))
EMBEDDED = "all-MiniLM-L6-v2 (embedded)"


@dataclass
class ModelResult:
    """One model's run: its metrics, the primary one, the seconds it took and a remote model's usage."""

    model: str
    metrics: dict[str, float]
    primary: str
    seconds: float
    usage: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        usage = {"usage": self.usage} if self.usage is not None else {}
        return {
            "model": self.model,
            "seconds": self.seconds,
            "primary": self.primary,
            **self.metrics,
            **usage,
        }


def usage_of(encoder: Any) -> dict[str, Any] | None:
    """A remote encoder's counters (requests, retries, cache hits, tokens, estimated cost); None if local."""
    from ..encoders.remote import RemoteEncoder

    return encoder.usage.as_dict() if isinstance(encoder, RemoteEncoder) else None


def usage_line(encoder: Any) -> str | None:
    """`remote: 3 requests (0 retries), ...` for a remote encoder, None for a local one."""
    from ..encoders.remote import RemoteEncoder

    return f"  remote: {encoder.usage.summary()}" if isinstance(encoder, RemoteEncoder) else None


def evaluate_models(
    models: Sequence[str | None], load: Callable[[str | None], Any], evaluator: Any
) -> list[ModelResult]:
    """Run `evaluator` on each model in turn (loaded by `load`), timing the evaluation alone."""
    results = []
    for name in models:
        encoder = load(name)
        start = time.perf_counter()
        metrics = evaluator(encoder)
        seconds = time.perf_counter() - start
        primary = evaluator.primary_metric or next(iter(metrics))
        results.append(ModelResult(name or EMBEDDED, metrics, primary, seconds, usage_of(encoder)))
        close = getattr(encoder, "close", None)
        if usage_of(encoder) is not None and callable(close):
            close()
    return results


def _metric(result: ModelResult, key: str | None) -> float | None:
    """The primary metric (key None), or `key` with the primary metric's similarity function in it."""
    if key is None:
        return result.metrics[result.primary]
    head, _, tail = result.primary.partition("_")
    return result.metrics.get(key.format(fn=tail if head in ("spearman", "pearson") else head))


def _cell(value: float | None, scale: float) -> str:
    if value is None:
        return f" {'-':>9}"
    return f" {value * scale:9.2f}" if scale != 1 else f" {value:9.4f}"


def table(
    results: Sequence[ModelResult], columns: Sequence[tuple[str, str | None]], scale: float
) -> list[str]:
    """The comparison as aligned text lines: model, metrics (times `scale`), seconds, remote usage."""
    width = max(len("model"), *(len(r.model) for r in results))
    head = f"  {'model':<{width}}" + "".join(f" {h:>9}" for h, _ in columns)
    lines = [head + f" {'seconds':>8} {'requests':>8} {'cached':>7} {'tokens':>9} {'cost ($)':>9}"]
    for r in results:
        cells = "".join(_cell(_metric(r, key), scale) for _, key in columns)
        if r.usage is None:
            spent = f" {'-':>8} {'-':>7} {'-':>9} {'-':>9}"
        else:
            cost = r.usage["estimated_cost_usd"]
            spent = f" {r.usage['requests']:>8} {r.usage['cache_hits']:>7} {r.usage['input_tokens']:>9,}" + (
                f" {cost:>9.4f}" if cost is not None else f" {'-':>9}"
            )
        lines.append(f"  {r.model:<{width}}{cells} {r.seconds:8.1f}{spent}")
    return lines


def compare(
    models: Sequence[str],
    load: Callable[[str | None], Any],
    evaluator: Any,
    columns: Sequence[tuple[str, str | None]],
    scale: float,
    as_json: bool,
    title: str,
) -> None:
    """Print every model's results on `evaluator`: a table under `title`, or JSON with one object each."""
    results = evaluate_models(models, load, evaluator)
    if as_json:
        typer.echo(json.dumps({"title": title, "models": [r.to_dict() for r in results]}, indent=2))
        return
    typer.echo(f"{title}, {len(results)} models")
    for line in table(results, columns, scale):
        typer.echo(line)
