"""A model card (README.md) for a trained model: base model, data, loss, arguments, final metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch import nn


def _loss_config(loss: nn.Module) -> dict[str, Any]:
    get = getattr(loss, "get_config_dict", None)
    return dict(get()) if callable(get) else {}


def write_model_card(
    folder: Path,
    *,
    model: Any,
    losses: Mapping[str, nn.Module],
    data: Mapping[str, int],
    data_description: Mapping[str, str],
    args: Any,
    metrics: Mapping[str, float],
) -> None:
    """Write `folder/README.md` describing how the model in `folder` was trained."""
    info = model.describe()
    base = getattr(model, "base_model", None) or "unknown"
    cross = info.get("kind") == "cross-encoder"
    if cross:
        header = [
            "---",
            "library_name: munjang",
            "pipeline_tag: text-ranking",
            "tags: [sentence-transformers, cross-encoder, munjang]",
            "---",
            "",
            "# Cross-encoder trained with munjang",
            "",
            f"- Base model: `{base}`",
            f"- Architecture: {info['architecture']}, {info['layers']} layers, {info['head']} head, "
            f"{info['num_labels']} label(s), activation {info['activation']}, "
            f"max length {info['max_seq_length']}",
            "",
        ]
    else:
        header = [
            "---",
            "library_name: munjang",
            "pipeline_tag: sentence-similarity",
            "tags: [sentence-transformers, sentence-similarity, munjang]",
            "---",
            "",
            "# Sentence encoder trained with munjang",
            "",
            f"- Base model: `{base}`",
            f"- Architecture: {info['architecture']}, {info['layers']} layers, "
            f"{info['embedding_dimension']}-dim embeddings, pooling `{info['pooling']}`, "
            f"normalize: {info['normalize']}, max length {info['max_seq_length']}",
            f"- Similarity function: {info['similarity_fn_name']}; prompts: {info['prompts'] or 'none'}",
            "",
        ]
    lines = [
        *header,
        "## Training data",
        "",
    ]
    for name, size in data.items():
        where = data_description.get(name, "")
        lines.append(f"- `{name}`: {size:,} examples{f' from {where}' if where else ''}")
    lines += ["", "## Loss", ""]
    for name, loss in losses.items():
        lines.append(f"- `{name}`: {type(loss).__name__} {json.dumps(_loss_config(loss))}")
    lines += ["", "## Hyper-parameters", "", "```json", json.dumps(args.to_dict(), indent=2), "```", ""]
    lines += ["## Final metrics", ""]
    if metrics:
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in metrics.items()]
    else:
        lines.append("No evaluator was given.")
    lines += [
        "",
        "## Use",
        "",
        "```python",
        "import munjang",
        f'model = munjang.load_cross_encoder("{folder.name}")'
        if cross
        else f'encoder = munjang.load_encoder("{folder.name}")',
        "```",
        "",
        "The folder is in the sentence-transformers layout, so "
        f"`{'CrossEncoder' if cross else 'SentenceTransformer'}(path)` loads it too.",
        "",
    ]
    (folder / "README.md").write_text("\n".join(lines), encoding="utf-8")
