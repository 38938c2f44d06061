"""What the classical encoders share: the tokenizer (Kiwi content morphemes for Korean, the search
tokenizers' own), the bound on a text's length, the query / document sides and the folder they save."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...errors import InputTooLongError
from ...search.index.tokenizers import Tokenizer, get_tokenizer, tokenizer_from_config
from ..settings import prompt_text, side_prompt_name
from .folder import Saved, replace_folder, write_folder

# A text's characters read by the tokenizer (Kiwi's time grows with the length): longer texts are
# cut there, or refused with truncate=False.
DEFAULT_MAX_CHARS = 20_000


def make_tokenizer(name_or_config: str | dict[str, Any]) -> Tokenizer:
    """A search tokenizer by name ("auto": Kiwi for Hangul, else Unicode words) or saved config."""
    if isinstance(name_or_config, str):
        return get_tokenizer(name_or_config)
    return tokenizer_from_config(name_or_config)


def corpus_tokens(
    texts: Sequence[str], tokenizer: str | Tokenizer, show_progress_bar: bool
) -> tuple[Tokenizer, list[list[str]]]:
    """The tokenizer (made from its name when given one) and the tokens of a fitting corpus, each
    text read up to `DEFAULT_MAX_CHARS`."""
    analyzer = make_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    return analyzer, analyzer.tokenize_many([t[:DEFAULT_MAX_CHARS] for t in texts], show_progress_bar)


def as_texts(sentences: Sequence[str] | str) -> tuple[list[str], bool]:
    """(texts, whether one text was given), each checked to be a string."""
    single = isinstance(sentences, str)
    texts: list[str] = [sentences] if single else list(sentences)  # type: ignore[list-item]
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sentences[{i}] is {type(text).__name__}, not str")
    return texts, single


class ClassicalEncoder(ABC):
    """A fitted classical encoder: texts -> tokens (its tokenizer) -> a vector per text."""

    kind: str
    prompts: dict[str, str]
    default_prompt_name: str | None = None
    similarity_fn_name = "cosine"

    def __init__(self, tokenizer: Tokenizer, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, not {max_chars}")
        self.analyzer = tokenizer
        self.max_chars = max_chars
        self.prompts = {}
        self.model_folder: Path | None = None

    @property
    def max_seq_length(self) -> int:
        """The characters of a text that are read (the length bound of this kind of model)."""
        return self.max_chars

    def tokenize(
        self,
        texts: Sequence[str],
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        truncate: bool = True,
        show_progress_bar: bool | None = None,
    ) -> list[list[str]]:
        """The tokens of each text (after its prompt), each text cut at `max_chars` characters, or
        refused (InputTooLongError) with truncate=False."""
        head = prompt_text(self.prompts, self.default_prompt_name, prompt_name, prompt)
        prepared = [head + t for t in texts] if head else list(texts)
        for i, text in enumerate(prepared):
            if len(text) > self.max_chars:
                if not truncate:
                    raise InputTooLongError(
                        f"sentences[{i}] has {len(text)} characters, over the model's limit of "
                        f"{self.max_chars}; shorten it or encode with truncate=True"
                    )
                prepared[i] = text[: self.max_chars]
        progress = len(prepared) >= 10_000 if show_progress_bar is None else show_progress_bar
        return self.analyzer.tokenize_many(prepared, show_progress_bar=progress)

    # One vector per text: `encode(sentences, **options)`, with the options of the kind.
    encode: Callable[..., Any]

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The kind, vocabulary, tokenizer, options and what the model was fitted on."""

    def encode_query(self, sentences: Sequence[str] | str, **options: Any) -> Any:
        """`encode` for the query side of a search (the "query" prompt, if the model has one), unit
        length by default: a search's dot product is then the cosine."""
        options.setdefault("normalize_embeddings", True)
        options["prompt_name"] = side_prompt_name(
            self.prompts, "query", options.get("prompt_name"), options.get("prompt")
        )
        return self.encode(sentences, **options)

    def encode_document(self, sentences: Sequence[str] | str, **options: Any) -> Any:
        """`encode` for the document side of a search (a "document" prompt, if the model has one),
        unit length by default."""
        options.setdefault("normalize_embeddings", True)
        options["prompt_name"] = side_prompt_name(
            self.prompts, "document", options.get("prompt_name"), options.get("prompt")
        )
        return self.encode(sentences, **options)

    def tokenizer_config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.analyzer.get_config_dict()
        return config

    @abstractmethod
    def saved(self) -> Saved:
        """What `save` writes."""

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model's folder (replacing a classical model there); `load_embedder` reads it."""
        folder = Path(path)
        replace_folder(folder)
        write_folder(folder, self.saved())
        self.model_folder = folder
