"""WholeTextEncoder: a model that encodes whole texts, with no token-id path to batch (a CLIP or static
`SentenceEncoder`, a classical word2vec encoder). What the server's embeddings and similarity routes
call on such a model: its inputs are checked and counted here, then encoded in one call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol


class WholeTextEncoder(Protocol):
    """Texts in, one vector each out, with the length unit its limit and usage count in."""

    prompts: dict[str, str]
    default_prompt_name: str | None
    model_folder: Path | None

    @property
    def max_seq_length(self) -> int:
        """The longest input read, in the unit of `input_lengths`; longer ones are cut."""
        ...

    @property
    def normalizes(self) -> bool:
        """Whether the vectors come out unit length."""
        ...

    def input_lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's length as the model counts it against `max_seq_length` (tokens; a classical
        model's characters), before any cut."""
        ...

    def decode_ids(self, ids: list[int]) -> str:
        """The text of token ids (OpenAI's token-array input); ValueError naming an id outside the
        vocabulary, or for a model that reads text only."""
        ...

    def get_embedding_dimension(self) -> int: ...

    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
    ) -> Any: ...

    def similarity(self, a: Any, b: Any) -> Any: ...
