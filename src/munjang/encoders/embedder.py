"""The Embedder protocol: what evaluators, collections and the CLI call on an encoder, so a local
`SentenceEncoder` and a `RemoteEncoder` serve them alike; and `load_embedder`, the one place a
model name becomes either (a remote name such as `openai:<model>`, else a local model)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
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


def load_sparse_embedder(name_or_path: str | os.PathLike[str], *, device: str | None = None) -> Any:
    """A sparse encoder for a collection's sparse retriever or the server's sparse route: a classical
    term encoder (one-hot, bag of words, TF-IDF) for its folder, else `load_sparse_encoder` (SPLADE)."""
    from .formats import is_classical_folder

    if Path(name_or_path).is_dir() and is_classical_folder(Path(name_or_path)):
        from .classical.loading import load_classical_encoder

        encoder = load_classical_encoder(name_or_path)
        if encoder.kind == "word2vec":
            raise ValueError(
                f"{name_or_path} holds a dense word2vec encoder; a sparse retriever needs term vectors"
            )
        return encoder
    from .sparse.encoder import load_sparse_encoder

    return load_sparse_encoder(name_or_path, device=device)


def load_embedder(
    name_or_path: str | os.PathLike[str] | None = None, *, device: str | None = None, **options: Any
) -> Embedder:
    """A RemoteEncoder for a remote name (`openai:`, `tei:`, `remote:`; see `munjang.encoders.remote.names`),
    a classical encoder for a folder `munjang models fit-classical` wrote (one-hot, bag of words and
    TF-IDF give scipy CSR rows; word2vec numpy), else `load_encoder(name_or_path, device=device,
    **options)`. Local-only options (backend, precision, threads) are refused for a remote model
    unless left at their defaults."""
    from .formats import is_classical_folder
    from .remote import is_remote_name

    if name_or_path is not None and Path(name_or_path).is_dir() and is_classical_folder(Path(name_or_path)):
        from .classical.loading import load_classical_encoder

        return load_classical_encoder(name_or_path)
    if is_remote_name(name_or_path):
        from .remote import RemoteEncoder

        for key, value in options.items():
            if value not in LOCAL_DEFAULTS.get(key, ()):
                raise ValueError(f"{key}={value!r} does not apply to a remote model ({name_or_path})")
        return RemoteEncoder(str(name_or_path))
    from .dense.encoder import load_encoder

    return load_encoder(name_or_path, device=device, **options)
