"""`config_sentence_transformers.json`: a sentence encoder's prompts, default prompt and similarity
function, read and written without torch (a torch-free query encoder reads them too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .._util.json_files import read_json, write_json
from ..errors import ModelLoadError

__all__ = [
    "DOCUMENT_PROMPT_NAMES",
    "QUERY_PROMPT_NAMES",
    "SIMILARITY_FUNCTIONS",
    "EncoderSettings",
    "library_versions",
    "prompt_text",
    "side_prompt_name",
]

SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")
# The prompts `encode_query` / `encode_document` use when a model has one, in sentence-transformers'
# order: "query" for queries; "document", else "passage" (e5), else "corpus" for documents.
QUERY_PROMPT_NAMES = ("query",)
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


@dataclass
class EncoderSettings:
    """What `config_sentence_transformers.json` holds besides version stamps."""

    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str = "cosine"

    @classmethod
    def read(cls, folder: Path) -> EncoderSettings:
        file = folder / "config_sentence_transformers.json"
        if not file.exists():
            return cls()
        data = read_json(file)
        similarity = data.get("similarity_fn_name") or "cosine"
        similarity = {"cos_sim": "cosine", "dot_score": "dot"}.get(similarity, similarity)
        if similarity not in SIMILARITY_FUNCTIONS:
            raise ModelLoadError(f"{file}: unknown similarity_fn_name {similarity!r}")
        prompts = {str(k): str(v) for k, v in (data.get("prompts") or {}).items()}
        default = data.get("default_prompt_name")
        if default is not None and default not in prompts:
            raise ModelLoadError(f"{file}: default_prompt_name {default!r} is not one of the prompts")
        return cls(prompts, default, similarity)

    def write(self, folder: Path, extra: dict[str, Any] | None = None) -> None:
        """Write the settings; `extra` adds keys (a sparse encoder's `model_type`, `max_active_dims`)."""
        write_json(
            folder / "config_sentence_transformers.json",
            {
                "__version__": library_versions(),
                "prompts": self.prompts,
                "default_prompt_name": self.default_prompt_name,
                "similarity_fn_name": self.similarity_fn_name,
                **(extra or {}),
            },
        )


def library_versions() -> dict[str, str]:
    out = {}
    for package in ("munjang", "transformers", "torch"):
        try:
            out["pytorch" if package == "torch" else package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            out[package] = "unknown"
    return out


def prompt_text(
    prompts: dict[str, str], default_prompt_name: str | None, prompt_name: str | None, prompt: str | None
) -> str:
    """The text to prepend: `prompt` as given, else the prompt named `prompt_name` (the default
    prompt when None, none without one); ValueError naming the known prompts for an unknown name."""
    if prompt is not None:
        return prompt
    name = prompt_name if prompt_name is not None else default_prompt_name
    if name is None:
        return ""
    if name not in prompts:
        known = ", ".join(sorted(prompts)) or "none"
        raise ValueError(f"unknown prompt name {name!r}; this model's prompts: {known}")
    return prompts[name]


def side_prompt_name(
    prompts: dict[str, str], side: str, prompt_name: str | None, prompt: str | None
) -> str | None:
    """The prompt name `encode_query` (`side` "query") or `encode_document` ("document") passes on:
    the caller's `prompt_name`; with neither a name nor literal `prompt` text, the model's first
    prompt of that side (`QUERY_PROMPT_NAMES`, `DOCUMENT_PROMPT_NAMES`) if it has one; else None,
    so the model's default prompt, if any, applies as in `encode` (sentence-transformers' rule)."""
    if prompt_name is not None or prompt is not None:
        return prompt_name
    names = {"query": QUERY_PROMPT_NAMES, "document": DOCUMENT_PROMPT_NAMES}.get(side)
    if names is None:
        raise ValueError(f"side must be 'query' or 'document', not {side!r}")
    return next((name for name in names if name in prompts), None)
