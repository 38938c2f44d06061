"""Options shared by several `munjang` commands, defined once."""

from __future__ import annotations

from typing import Annotated

import typer

ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model name (munjang models list), folder, hub id, or a remote API: openai:<model>, tei:<url>, "
        "remote:<base_url>#<model> (docs/remote.md) (default: embedded all-MiniLM-L6-v2).",
    ),
]
ModelsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "-m",
        help="A model as for --model elsewhere (a remote API too); repeat it to compare models side by side.",
    ),
]
DeviceOption = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:N, mps (default: best available).")]
BatchOption = Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Sentences per batch.")]
PromptNameOption = Annotated[
    str | None, typer.Option("--prompt-name", help="A prompt of the model (e5: query, passage).")
]
PromptOption = Annotated[
    str | None,
    typer.Option(
        "--prompt",
        "--instruction",
        help="Literal text put before every input (a decoder embedder's instruction).",
    ),
]
FieldOption = Annotated[str, typer.Option(help="Text field (jsonl) or column (csv/tsv).")]
FormatOption = Annotated[str, typer.Option("--format", help="auto, txt, jsonl, csv, tsv.")]
QueryOption = Annotated[list[str], typer.Option("--query", "-q", help="Query text (repeat for several).")]
TopKOption = Annotated[int, typer.Option("--top-k", "-k", min=1, help="Results per query.")]
JsonLinesOption = Annotated[bool, typer.Option("--json", help="Print the results as JSON lines.")]
BackendOption = Annotated[
    str | None,
    typer.Option(
        help="auto (the default: the fastest configuration measured to keep fp32 accuracy here), "
        "torch, onnx or openvino."
    ),
]
PrecisionOption = Annotated[
    str | None,
    typer.Option(help="fp32 (exact, on torch without --backend), bf16, fp16, int8, or auto (the default)."),
]
ThreadsOption = Annotated[int | None, typer.Option(min=1, help="Threads for the model (default: all cores).")]
