"""A saved dense index's tail: the vectors added since the index file was written, in a file of its own.

A writer rewrites the whole dense index file (an HNSW graph, an exact matrix) only once a tenth of
the collection has changed since, because that costs what the collection holds. Without more, a new
reader would read up to that tenth back from the store, passage by passage through the embedding
cache, which grows with the collection. So in between, every `TAIL_EVERY` added passages, the writer
writes what was added since the whole save to `<index file>.tail-<label>` (labels ascending, vectors
as `ExactIndex` keeps them: normalized under cosine), replacing the previous tail. A reader maps the
index file and its newest tail and replays from the store only the passages added after the tail,
and the deletions since the index file (few rows, read by sequence). A tail that is missing or
damaged costs only that replay (a damaged one is set aside: `index/verified_file.py`); a tail goes
with its index file when a newer one is saved.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..index.array_file import write_arrays
from ..index.mapped_exact import MappedExactIndex
from ..index.verified_file import BAD, set_aside

# Passages added between two tail files.
TAIL_EVERY = 10_000
_TAIL = re.compile(r"\.tail-(\d+)")


def write_tail(
    index_file: Path, label: int, labels: np.ndarray, vectors: np.ndarray, metric: str, owner: str = ""
) -> None:
    """Write the tail of `index_file` up to store label `label` (atomically), then drop older ones.
    `owner`: the collection's id, checked when it is read."""
    path = index_file.with_name(f"{index_file.name}.tail-{label}")
    meta = {
        "kind": "tail",
        "dim": int(vectors.shape[1]),
        "metric": metric,
        "collection": owner,
        "label": label,
    }
    write_arrays(path, {"labels": np.asarray(labels, dtype=np.int64), "vectors": vectors}, meta)
    for old in index_file.parent.glob(f"{index_file.name}.tail-*"):
        if old != path and BAD not in old.name:
            old.unlink(missing_ok=True)


def read_tail(
    index_file: Path, dim: int, metric: str, owner: str = ""
) -> tuple[int, MappedExactIndex] | None:
    """(the store label it reaches, its vectors mapped) of `index_file`'s newest readable tail,
    verified; a damaged one is set aside."""
    found = []
    for path in index_file.parent.glob(f"{index_file.name}.tail-*"):
        match = _TAIL.fullmatch(path.name[len(index_file.name) :])
        if match:
            found.append((int(match.group(1)), path))
    for label, path in sorted(found, reverse=True):
        expect = {"kind": "tail", "collection": owner, "label": label}
        try:
            return label, MappedExactIndex.load(path, dim, metric, expect)
        except OSError:  # removed by the writer meanwhile: the store has it
            continue
        except ValueError as e:  # damaged: the store has it
            set_aside(path, e)
    return None
