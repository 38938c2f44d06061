"""What the evaluators share: the encoder protocol, encoding, similarity checks and the `Evaluator` base."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from ..similarity import PAIRWISE_FUNCTIONS, SIMILARITY_NAMES

SIMILARITY_FNS = SIMILARITY_NAMES


class SupportsEncode(Protocol):
    """What the evaluators need from an encoder: `encode(list_of_str, **options) -> (n, dim) array`."""

    @property
    def encode(self) -> Callable[..., Any]: ...


def _encode_options(
    batch_size: int,
    prompt_name: str | None = None,
    prompt: str | None = None,
    show_progress_bar: bool | None = None,
) -> dict[str, Any]:
    """Keyword arguments for `encoder.encode`; `prompt_name` and `prompt` only when set.

    Leaving unset prompts out lets encoders without prompt support work too.
    """
    options: dict[str, Any] = {"batch_size": batch_size, "show_progress_bar": show_progress_bar}
    if prompt_name is not None:
        options["prompt_name"] = prompt_name
    if prompt is not None:
        options["prompt"] = prompt
    return options


def encode_texts(
    encoder: SupportsEncode,
    texts: Sequence[str],
    *,
    batch_size: int,
    prompt_name: str | None = None,
    prompt: str | None = None,
    show_progress_bar: bool | None = None,
) -> np.ndarray:
    """Embeddings of `texts` as a float64 (len(texts), dim) array (scipy CSR for an encoder of sparse
    rows), encoding each distinct text once.

    `prompt_name` and `prompt` are passed to `encoder.encode` only when set, so encoders without
    prompt support work too. Shared by the evaluators.
    """
    unique = list(dict.fromkeys(texts))
    options = _encode_options(batch_size, prompt_name, prompt, show_progress_bar)
    encoded = encoder.encode(unique, **options)
    # Term vectors (one-hot, bag of words, TF-IDF) stay scipy sparse rows: vocabulary-wide, mostly zero.
    vectors = (
        sp.csr_matrix(encoded, dtype=np.float64) if sp.issparse(encoded) else np.asarray(encoded, np.float64)
    )
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise ValueError(
            f"encoder returned shape {vectors.shape} for {len(unique)} sentences, "
            f"expected ({len(unique)}, dim)"
        )
    row = {text: i for i, text in enumerate(unique)}
    return vectors[[row[t] for t in texts]]


def check_similarity_fns(similarity_fns: Sequence[str] | str, main_similarity: str | None) -> tuple[str, ...]:
    """Validated, de-duplicated similarity function names (a single name may be given as a string)."""
    if isinstance(similarity_fns, str):
        similarity_fns = (similarity_fns,)
    if not similarity_fns:
        raise ValueError("similarity_fns is empty")
    for fn in (*similarity_fns, *([main_similarity] if main_similarity else [])):
        if fn not in PAIRWISE_FUNCTIONS:
            raise ValueError(f"unknown similarity function {fn!r}; choose from {', '.join(SIMILARITY_FNS)}")
    if main_similarity is not None and main_similarity not in similarity_fns:
        raise ValueError(
            f"main_similarity {main_similarity!r} is not among similarity_fns {list(similarity_fns)}"
        )
    return tuple(dict.fromkeys(similarity_fns))


def similarity_fns_to_compute(
    encoder: SupportsEncode, similarity_fns: tuple[str, ...], main_similarity: str | None
) -> tuple[str, tuple[str, ...]]:
    """(primary similarity function, the functions to compute) for a call on `encoder`.

    The primary one is `main_similarity`, else the encoder's `similarity_fn_name`, else cosine; it is
    computed as well when it is not among `similarity_fns`.
    """
    main = main_similarity or getattr(encoder, "similarity_fn_name", None) or "cosine"
    return main, similarity_fns if main in similarity_fns else (*similarity_fns, main)


class Evaluator(ABC):
    """Base of the evaluators: the options they share, encoding with them, config and repr.

    Calling an evaluator on an encoder returns its metrics (plain floats, keys not prefixed with
    `name`); `primary_metric` names the headline one, or is None until a call decides it.
    """

    #: Settings that `get_config_dict` includes when they are not None, in this order.
    optional_settings: tuple[str, ...] = ("prompt_name", "prompt")

    def __init__(
        self,
        name: str,
        batch_size: int,
        prompt_name: str | None,
        prompt: str | None,
        show_progress_bar: bool | None,
        primary_metric: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self.name = name
        self.batch_size = batch_size
        self.prompt_name = prompt_name
        self.prompt = prompt
        self.show_progress_bar = show_progress_bar
        self.primary_metric = primary_metric

    @abstractmethod
    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Evaluate `encoder` and return the metrics."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of items (pairs, triplets, ...) evaluated."""

    def encode_options(self) -> dict[str, Any]:
        """Keyword arguments for `encoder.encode` from this evaluator's options."""
        return _encode_options(self.batch_size, self.prompt_name, self.prompt, self.show_progress_bar)

    def encode(self, encoder: SupportsEncode, texts: Sequence[str]) -> np.ndarray:
        """`encode_texts` with this evaluator's batch size, prompt and progress bar options."""
        return encode_texts(
            encoder,
            texts,
            batch_size=self.batch_size,
            prompt_name=self.prompt_name,
            prompt=self.prompt,
            show_progress_bar=self.show_progress_bar,
        )

    def encode_columns(self, encoder: SupportsEncode, *columns: Sequence[str]) -> list[np.ndarray]:
        """Embeddings of each of `columns`, (len(column), dim) each, from one `encode` over all of them,
        so a text found in several columns (or twice in one) is encoded once."""
        vectors = self.encode(encoder, [text for column in columns for text in column])
        ends = np.cumsum([len(column) for column in columns])
        return [vectors[end - len(column) : end] for end, column in zip(ends, columns, strict=True)]

    def get_config_dict(self) -> dict[str, Any]:
        """The settings that change the numbers (for model cards and result logs); unset ones are left out."""
        config = self._settings()
        for key in self.optional_settings:
            value = getattr(self, key)
            if value is not None:
                config[key] = value
        return config

    def _settings(self) -> dict[str, Any]:
        """The settings `get_config_dict` always includes, before the optional ones."""
        return {}

    def _describe(self) -> str:
        """What `repr` shows after the name: the size and the settings that matter."""
        return f"{len(self)} pairs"

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"{type(self).__name__}({name}{self._describe()})"
