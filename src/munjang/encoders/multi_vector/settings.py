"""What makes a transformer a late-interaction (ColBERT) encoder, read from and written to its folder.

Two layouts carry the same knobs:

- sentence-transformers >= 6 (`MultiVectorEncoder`): `sentence_bert_config.json` holds
  `query_length`, `document_length` and `query_expansion` ({strategy, attend, token, length});
  `N_MultiVectorMask/config.json` holds `skiplist_words` / `skiplist_tasks`; the query and document
  markers are text prompts (`prompts` in `config_sentence_transformers.json`).
- PyLate (and sentence-transformers' reading of it): `config_sentence_transformers.json` holds
  `query_prefix` / `document_prefix` (a marker token inserted after the first token),
  `query_length`, `document_length`, `do_query_expansion`, `attend_to_expansion_tokens` and
  `skiplist_words` (punctuation unless given); the modules are only Transformer + Dense, the
  masking and normalisation are implied.

Query expansion (ColBERT's query augmentation) pads a query to a fixed width with [MASK] tokens
that the encoder does not attend to (unless `attend`) but that MaxSim scores.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ModelLoadError
from ...modules.base import read_json

EXPANSION_STRATEGIES = ("fixed", "min")
SIMILARITIES = ("maxsim", "meanmaxsim")


@dataclass(frozen=True)
class QueryExpansion:
    """Pad queries with `token` (the tokenizer's mask token when None) up to `length` tokens.

    `fixed` also truncates queries to `length`; `min` only pads (longer queries stay whole).
    """

    length: int = 32
    strategy: str = "fixed"
    attend: bool = False
    token: str | None = None

    def __post_init__(self) -> None:
        if self.strategy not in EXPANSION_STRATEGIES:
            raise ModelLoadError(
                f"query_expansion strategy {self.strategy!r} is not one of {EXPANSION_STRATEGIES}"
            )
        if not isinstance(self.length, int) or isinstance(self.length, bool) or self.length < 1:
            raise ModelLoadError(f"query_expansion length must be a positive integer, not {self.length!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "attend": self.attend, "token": self.token, "length": self.length}

    @classmethod
    def from_dict(cls, data: Any, where: Path) -> QueryExpansion | None:
        if data is None:
            return None
        if not isinstance(data, dict) or set(data) - {"strategy", "attend", "token", "length"}:
            raise ModelLoadError(
                f"{where}: query_expansion must be an object of strategy/attend/token/length"
            )
        return cls(
            length=data.get("length"),  # type: ignore[arg-type]
            strategy=str(data.get("strategy")),
            attend=bool(data.get("attend", False)),
            token=data.get("token"),
        )


@dataclass
class LateInteractionSettings:
    """The multi-vector knobs of a model folder (see the module docstring for where each lives).

    `query_prefix` / `document_prefix` are marker tokens inserted after the first token (PyLate);
    prompts are text put before the input (sentence-transformers >= 6). Either, both or neither.
    """

    query_length: int | None = None
    document_length: int | None = None
    expansion: QueryExpansion | None = None
    skiplist_words: list[str] = field(default_factory=list)
    skiplist_tasks: list[str] = field(default_factory=lambda: ["document"])
    prompts: dict[str, str] = field(default_factory=dict)
    query_prefix: str | None = None
    document_prefix: str | None = None
    similarity_fn_name: str = "maxsim"
    normalize: bool = True

    def check(self) -> None:
        for name in ("query_length", "document_length"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 2):
                raise ModelLoadError(f"{name} must be an integer of at least 2, not {value!r}")
        if self.similarity_fn_name not in SIMILARITIES:
            raise ModelLoadError(f"similarity_fn_name must be one of {SIMILARITIES}")
        unknown = set(self.skiplist_tasks) - {"query", "document"}
        if unknown:
            raise ModelLoadError(f"skiplist_tasks may name query and document only, not {sorted(unknown)}")


def is_multi_vector_folder(folder: Path) -> bool:
    """Whether a folder holds a multi-vector model (sentence-transformers >= 6 or PyLate)."""
    settings = folder / "config_sentence_transformers.json"
    if not settings.exists():
        return False
    return read_json(settings).get("model_type") in ("MultiVectorEncoder", "ColBERT")


def _similarity(value: Any) -> str:
    text = str(value or "maxsim").lower()
    return text if text in SIMILARITIES else "maxsim"


def read_settings(folder: Path, entries: list[dict[str, Any]]) -> LateInteractionSettings:
    """The settings of a multi-vector folder whose modules.json lists `entries`."""
    top_file = folder / "config_sentence_transformers.json"
    top = read_json(top_file) if top_file.exists() else {}
    if not isinstance(top, dict):
        raise ModelLoadError(f"{top_file}: expected a JSON object")
    st_file = folder / "sentence_bert_config.json"
    transformer = read_json(st_file) if st_file.exists() else {}
    prompts = {str(k): str(v) for k, v in (top.get("prompts") or {}).items() if v is not None}
    settings = LateInteractionSettings(
        query_length=transformer.get("query_length"),
        document_length=transformer.get("document_length"),
        expansion=QueryExpansion.from_dict(transformer.get("query_expansion"), st_file),
        prompts=prompts,
        query_prefix=top.get("query_prefix") or None,
        document_prefix=top.get("document_prefix") or None,
        similarity_fn_name=_similarity(top.get("similarity_fn_name")),
    )
    types = [str(e.get("type", "")).rsplit(".", 1)[-1] for e in entries]
    pylate = top.get("model_type") == "ColBERT" and "MultiVectorMask" not in types
    if pylate:
        _read_pylate(settings, top)
    else:
        settings.normalize = "Normalize" in types
        for entry in entries:
            if str(entry.get("type", "")).endswith("MultiVectorMask"):
                mask_file = folder / str(entry.get("path", "")) / "config.json"
                mask = read_json(mask_file) if mask_file.exists() else {}
                if mask.get("keep_only_token_ids"):
                    raise ModelLoadError(f"{mask_file}: keep_only_token_ids (image patches) is not supported")
                settings.skiplist_words = [str(w) for w in mask.get("skiplist_words") or []]
                tasks = mask.get("skiplist_tasks") or ["document"]
                settings.skiplist_tasks = [tasks] if isinstance(tasks, str) else [str(t) for t in tasks]
    settings.check()
    return settings


def _read_pylate(settings: LateInteractionSettings, top: dict[str, Any]) -> None:
    """PyLate's top-level keys, with PyLate's defaults (query 32, document 180, punctuation skipped)."""
    settings.query_length = top.get("query_length") or 32
    settings.document_length = top.get("document_length") or 180
    if top.get("do_query_expansion", True) is not False:
        attend = bool(top.get("attend_to_expansion_tokens", top.get("attend_to_mask_tokens")) or False)
        settings.expansion = QueryExpansion(length=int(settings.query_length), attend=attend)
    words = top.get("skiplist_words")
    settings.skiplist_words = list(string.punctuation) if words is None else [str(w) for w in words]
    settings.skiplist_tasks = ["document"]
    settings.normalize = True
    # PyLate's own markers when the config names none; "" means no marker.
    if "query_prefix" not in top:
        settings.query_prefix = "[Q] "
    if "document_prefix" not in top:
        settings.document_prefix = "[D] "
