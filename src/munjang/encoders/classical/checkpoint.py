"""Word2vec fitting that resumes: after each epoch the trained arrays and the random state are saved
to one file in the output folder (written whole, then renamed into place), with the fingerprint of
the corpus's tokens and the training options. A fit with the same fingerprint goes on after the
last saved epoch; another corpus or other options start over and say so. Saving the model removes
the file.

    .word2vec-checkpoint.npz   "header": JSON (format, version, fingerprint, epochs done, the random
                               state's scalars, the SHA-256 of each array), then the arrays:
                               the word vectors, the output weights, the random state's keys

Resuming is exact up to float rounding: gensim's learning rate falls linearly from `alpha` to
`min_alpha` over all the epochs, so the remaining epochs are trained from the rate the last saved
one ended at.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.atomic import atomic_write
from .folder import CHECKPOINT

logger = logging.getLogger(__name__)

FORMAT = "munjang-word2vec-checkpoint"
FORMAT_VERSION = 1
# gensim's trained arrays besides the word vectors (negative sampling's, hierarchical softmax's).
OUTPUT_WEIGHTS = ("syn1neg", "syn1")


def fingerprint(documents: Sequence[Sequence[str]], settings: dict[str, Any]) -> str:
    """SHA-256 of the training settings and every document's tokens, in order."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8"))
    for tokens in documents:
        digest.update("\x1f".join(tokens).encode("utf-8"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def _sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@dataclass
class EpochCheckpoint:
    """The checkpoint of one fit in `folder` (the model's output folder), for `fingerprint`; what
    it resumes, or why it starts over, is logged as a warning."""

    folder: Path
    fingerprint: str

    @property
    def path(self) -> Path:
        return self.folder / CHECKPOINT

    def save(self, model: Any, epochs_done: int) -> None:
        """Write `model`'s trained arrays and random state after `epochs_done` epochs."""
        name, keys, position, has_gauss, gauss = model.random.get_state()
        arrays = {"vectors": model.wv.vectors, "random_keys": keys}
        arrays |= {w: getattr(model, w) for w in OUTPUT_WEIGHTS if getattr(model, w, None) is not None}
        header = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "fingerprint": self.fingerprint,
            "epochs_done": epochs_done,
            "random": [name, int(position), int(has_gauss), float(gauss)],
            "sha256": {key: _sha256(value) for key, value in arrays.items()},
        }
        buffer = io.BytesIO()
        np.savez(buffer, header=np.array(json.dumps(header)), **arrays)
        data = buffer.getvalue()
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, lambda path: path.write_bytes(data))

    def restore(self, model: Any, epochs: int) -> int:
        """Put the checkpoint's arrays and random state into `model` (its vocabulary built from the
        same corpus) and return the epochs done; 0, saying why, when there is none to resume."""
        if not self.path.exists():
            return 0
        try:
            with np.load(self.path, allow_pickle=False) as stored:
                header = json.loads(str(stored["header"]))
                arrays = {key: stored[key] for key in header["sha256"]}
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
            logger.warning(f"{self.path}: unreadable ({e}); starting over")
            return 0
        if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
            logger.warning(f"{self.path}: another format; starting over")
            return 0
        if header["fingerprint"] != self.fingerprint:
            logger.warning(f"{self.path}: saved for another corpus or other options; starting over")
            return 0
        if any(_sha256(arrays[key]) != digest for key, digest in header["sha256"].items()):
            logger.warning(f"{self.path}: checksum mismatch (damaged); starting over")
            return 0
        done = int(header["epochs_done"])
        if not 0 < done <= epochs:
            return 0
        model.wv.vectors[...] = arrays["vectors"]
        for weights in OUTPUT_WEIGHTS:
            if weights in arrays:
                getattr(model, weights)[...] = arrays[weights]
        name, position, has_gauss, gauss = header["random"]
        model.random.set_state((name, arrays["random_keys"], position, has_gauss, gauss))
        logger.warning(f"resuming word2vec after epoch {done} of {epochs} ({self.path})")
        return done

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
