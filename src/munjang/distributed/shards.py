"""The output folder of a sharded encode: `manifest.json` plus `part-00000.parquet`, `part-00001.parquet`...

Shard i holds rows [i * shard_size, (i + 1) * shard_size) of the corpus, with columns `id` (string) and
`embedding` (fixed-size list of float32). Each shard is written under a temporary name and renamed,
so a shard file that exists is complete; a killed run leaves at most temporary files, which the next
run removes. The manifest says what the shards are embeddings of (model, encode options, shard size,
row count, digest of the inputs): a rerun that differs in any of these is refused instead of mixing
two corpora or two models in one folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .._util.atomic import atomic_write
from ..errors import MunjangError
from .corpus import require_pyarrow

MANIFEST = "manifest.json"
FORMAT = "munjang-embeddings/1"
# Manifest entries that must match for a rerun to continue the same folder.
IDENTITY_KEYS = ("format", "model", "dim", "encode_options", "shard_size", "total_rows", "inputs_sha256")
_TEMP_PREFIX = ".tmp-"


class EmbeddingsFolderError(MunjangError, ValueError):
    """The output folder holds something else: other inputs, another model, or shards without a manifest;
    or another run is writing to it."""


def shard_name(index: int) -> str:
    """`part-00007.parquet` for shard 7."""
    return f"part-{index:05d}.parquet"


def shard_count(total_rows: int, shard_size: int) -> int:
    """How many shards `total_rows` rows make."""
    return -(-total_rows // shard_size)


def _atomic_write_bytes(target: Path, data: bytes) -> None:
    atomic_write(target, lambda tmp: tmp.write_bytes(data), fsync=True, prefix=_TEMP_PREFIX)


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise EmbeddingsFolderError(f"{path}: not a readable manifest ({e})") from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EmbeddingsFolderError(f"{path}: not a munjang embeddings manifest")
    return manifest


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Write (or replace) the manifest atomically."""
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    _atomic_write_bytes(folder / MANIFEST, text.encode("utf-8"))


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [
        f"{key}: {old.get(key)!r} there, {new.get(key)!r} now"
        for key in IDENTITY_KEYS
        if old.get(key) != new.get(key)
    ]


def prepare_folder(folder: Path, manifest: dict[str, Any], *, overwrite: bool = False) -> dict[str, Any]:
    """Make `folder` ready for the shards `manifest` describes; return the manifest in force.

    A folder with a matching manifest is continued (its shards are kept); one with a different manifest,
    or with shards but no manifest, is refused unless `overwrite`, which removes the old shards first.
    """
    old = read_manifest(folder)
    shards = sorted(folder.glob("part-*.parquet"))
    if overwrite:
        for path in shards:
            path.unlink()
    elif old is not None:
        changed = _differences(old, manifest)
        if changed:
            raise EmbeddingsFolderError(
                f"{folder} holds embeddings of other inputs or another model ({'; '.join(changed)}); "
                "use a new output folder, or overwrite it (--force / overwrite=True)"
            )
        return old
    elif shards:
        raise EmbeddingsFolderError(
            f"{folder} has {len(shards)} shard files but no {MANIFEST}: they cannot be matched to these "
            "inputs; use a new output folder, or overwrite it (--force / overwrite=True)"
        )
    write_manifest(folder, manifest)
    return manifest


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold `folder`'s lock file, so that two runs never write one folder (the OS frees it if we die)."""
    from filelock import FileLock, Timeout

    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / ".lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise EmbeddingsFolderError(f"{folder}: another run is writing to this folder") from None
    try:
        yield
    finally:
        lock.release()


def remove_temporary_files(folder: Path) -> int:
    """Delete what interrupted writes left behind; return how many files went."""
    stale = [p for p in folder.glob(f"{_TEMP_PREFIX}*") if p.is_file()]
    for path in stale:
        path.unlink()
    return len(stale)


def shard_is_complete(path: Path, rows: int, dim: int) -> bool:
    """True when `path` is a readable shard of `rows` rows of `dim`-dimensional embeddings."""
    if not path.is_file():
        return False
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return False
    kind = schema.field("embedding").type if "embedding" in schema.names else None
    return (
        metadata.num_rows == rows
        and "id" in schema.names
        and kind is not None
        and pa.types.is_fixed_size_list(kind)
        and kind.list_size == dim
    )


def write_shard(folder: Path, index: int, ids: list[str], vectors: np.ndarray) -> Path:
    """Write shard `index` (ids and float32 vectors) atomically; return its path."""
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(ids):
        raise ValueError(f"shard {index}: {len(ids)} ids but vectors of shape {vectors.shape}")
    embedding = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    table = pa.table({"id": pa.array(ids, type=pa.string()), "embedding": embedding})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    target = folder / shard_name(index)
    _atomic_write_bytes(target, sink.getvalue().to_pybytes())
    return target


def read_embeddings(folder: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """(ids, float32 matrix) of a finished folder, in corpus order.

    Raises EmbeddingsFolderError when the folder has no manifest or a shard is missing (the encode
    has not finished: rerun it to complete the folder).
    """
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    path = Path(folder)
    manifest = read_manifest(path)
    if manifest is None:
        raise EmbeddingsFolderError(f"{path}: no {MANIFEST}; not an embeddings folder")
    count = shard_count(manifest["total_rows"], manifest["shard_size"])
    missing = [shard_name(i) for i in range(count) if not (path / shard_name(i)).is_file()]
    if missing:
        raise EmbeddingsFolderError(
            f"{path}: {len(missing)} of {count} shards are missing ({missing[0]}, ...); "
            "rerun the encode to finish it"
        )
    tables = [pq.read_table(path / shard_name(i)) for i in range(count)]
    table = pa.concat_tables(tables)
    ids = table.column("id").to_pylist()
    flat = table.column("embedding").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return ids, np.asarray(flat, dtype=np.float32).reshape(len(ids), manifest["dim"])
