"""A classical encoder's folder, written whole and checked before use.

    config_sentence_transformers.json  model_type "ClassicalEncoder", prompts, similarity (cosine)
    classical.json                     the format header: format name and version, the kind, the
                                       tokenizer, the fitting options, what was fitted on, and the
                                       SHA-256 of every file below
    vocabulary.json                    the terms, in column order
    <name>.npy                         the fitted arrays (idf; word vectors, SIF weights, component)

A file that is missing, changed or of another format version is refused on load, naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.atomic import atomic_write
from ..._util.json_files import read_json
from ...errors import ModelLoadError
from ..formats import CLASSICAL_MODEL_TYPE, is_classical_folder
from ..settings import EncoderSettings

# A word2vec fit's checkpoint, kept in the output folder until the model is saved there (checkpoint.py).
CHECKPOINT = ".word2vec-checkpoint.npz"
FORMAT = "munjang-classical"
FORMAT_VERSION = 1
HEADER = "classical.json"
VOCABULARY = "vocabulary.json"


@dataclass
class Saved:
    """What a classical folder holds: its kind, settings (tokenizer, options, provenance), terms, arrays."""

    kind: str
    config: dict[str, Any]
    vocabulary: list[str]
    arrays: dict[str, np.ndarray]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def _writer(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


def write_folder(folder: Path, saved: Saved) -> None:
    """Write `saved` into `folder` (created); each file appears whole, the header last."""
    folder.mkdir(parents=True, exist_ok=True)
    payloads = {VOCABULARY: json.dumps(saved.vocabulary, ensure_ascii=False).encode("utf-8")}
    payloads.update({f"{name}.npy": _npy_bytes(array) for name, array in saved.arrays.items()})
    for name, data in payloads.items():
        atomic_write(folder / name, _writer(data))
    EncoderSettings().write(folder, {"model_type": CLASSICAL_MODEL_TYPE})
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": saved.kind,
        **saved.config,
        "files": {name: _sha256(data) for name, data in payloads.items()},
    }
    text = json.dumps(header, indent=2, ensure_ascii=False) + "\n"
    atomic_write(folder / HEADER, lambda path: path.write_text(text, encoding="utf-8"))


def read_folder(folder: Path) -> Saved:
    """The contents of a classical folder, each file checked against the header's SHA-256."""
    if not is_classical_folder(folder):
        raise ModelLoadError(f"{folder}: not a classical encoder folder (no ClassicalEncoder model_type)")
    if not (folder / HEADER).exists():
        raise ModelLoadError(f"{folder}: {HEADER} is missing")
    header = read_json(folder / HEADER)
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        raise ModelLoadError(
            f"{folder / HEADER}: format {header.get('format')!r} version {header.get('format_version')!r}; "
            f"this munjang reads {FORMAT} version {FORMAT_VERSION}"
        )
    files = header.get("files")
    if not isinstance(files, Mapping) or VOCABULARY not in files:
        raise ModelLoadError(f"{folder / HEADER}: no checksums for its files")
    contents: dict[str, bytes] = {}
    for name, digest in files.items():
        path = folder / str(name)
        if Path(str(name)).name != name or not path.is_file():
            raise ModelLoadError(f"{folder}: {name} listed in {HEADER} is missing")
        data = path.read_bytes()
        if _sha256(data) != digest:
            raise ModelLoadError(f"{path}: checksum mismatch (changed or damaged since it was saved)")
        contents[str(name)] = data
    vocabulary = json.loads(contents.pop(VOCABULARY).decode("utf-8"))
    if not isinstance(vocabulary, list) or not all(isinstance(t, str) for t in vocabulary):
        raise ModelLoadError(f"{folder / VOCABULARY}: expected a list of terms")
    arrays = {
        name.removesuffix(".npy"): np.load(io.BytesIO(data), allow_pickle=False)
        for name, data in contents.items()
    }
    config = {k: v for k, v in header.items() if k not in ("format", "format_version", "kind", "files")}
    return Saved(str(header.get("kind")), config, vocabulary, arrays)


def check_replaceable(folder: Path) -> None:
    """ValueError unless `folder` may take a newly fitted model: absent, empty, a classical model's
    folder, or holding only a fit's checkpoint. Checked before fitting, so a long fit never ends
    in a refusal."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ValueError(f"{folder} is a file; choose a folder for the model")
    if any(p.name != CHECKPOINT for p in folder.iterdir()) and not is_classical_folder(folder):
        raise ValueError(f"{folder} exists and is not a classical model folder; choose another output")


def replace_folder(folder: Path) -> None:
    """Clear a folder that is about to hold a newly fitted model (`check_replaceable` first), its
    checkpoint included: a fit never deletes anything else."""
    check_replaceable(folder)
    if folder.exists():
        shutil.rmtree(folder)
