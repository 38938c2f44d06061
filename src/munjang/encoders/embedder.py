"""The Embedder protocol: what evaluators, collections and the CLI call on an encoder, so a local
`SentenceEncoder` and a `RemoteEncoder` serve them alike; and `load_embedder`, the one place a
model name becomes either (a remote name such as `openai:<model>`, else a local model)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Sentences in, one vector each out; plus the facts about the vectors that callers ask for."""

    prompts: dict[str, str]
    default_prompt_name: str | None
    similarity_fn_name: str

    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
    ) -> Any: ...

    def get_embedding_dimension(self) -> int: ...

    def similarity(self, a: Any, b: Any) -> Any: ...

    def describe(self) -> dict[str, Any]: ...


# load_encoder's options with the values that leave a remote model as it is.
LOCAL_DEFAULTS: dict[str, tuple[Any, ...]] = {
    "backend": (None, "auto"),
    "precision": (None, "auto"),
    "threads": (None,),
}


def load_embedder(
    name_or_path: str | os.PathLike[str] | None = None, *, device: str | None = None, **options: Any
) -> Embedder:
    """A RemoteEncoder for a remote name (`openai:`, `tei:`, `remote:`; see `munjang.encoders.remote.names`),
    else `load_encoder(name_or_path, device=device, **options)`. Local-only options (backend,
    precision, threads) are refused for a remote model unless left at their defaults."""
    from .remote import is_remote_name

    if is_remote_name(name_or_path):
        from .remote import RemoteEncoder

        for key, value in options.items():
            if value not in LOCAL_DEFAULTS.get(key, ()):
                raise ValueError(f"{key}={value!r} does not apply to a remote model ({name_or_path})")
        return RemoteEncoder(str(name_or_path))
    from .dense.encoder import load_encoder

    return load_encoder(name_or_path, device=device, **options)
