"""Where a CrossEncoder's `predict` runs (mixed into CrossEncoder): torch, OpenVINO, or "auto".

- "torch": the module as loaded, any dtype (and what training always runs on);
- "openvino" at "fp32" or "bf16": a BERT-style cross-encoder's whole pipeline, or an LLM reranker's
  decoder and two head rows, traced into one graph (`inference/pair_scores.py`, `causal_scores.py`),
  built on first use and rebuilt when the weights change;
- "auto": the fastest of those that keeps torch fp32's scores, measured once per model and machine and
  cached (`inference/autotune.py` with `score_autotune.py`'s metric); torch fp32 once the weights were
  trained in this process.

Once a graph is compiled, torch's copy of the transformer weights is released (the graph holds its
own), so a model on OpenVINO costs its weights once; whatever needs them again (the torch backend, a
forward pass for training, `save`, a graph rebuild) reads them back from the folder they were loaded
from, checked against what was released.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from ...inference.autotune import Choice, choose
from ...inference.causal_scores import OpenVINOCausalScorer
from ...inference.pair_scores import OpenVINOPairScorer, OpenVINOScorer
from ...inference.torch_weights import Record, TorchWeights
from ...modules.causal_lm import CausalLMTransformer
from .score_autotune import SCORES

BACKENDS = ("torch", "openvino", "auto")
PROBE_PAIRS = [("probe query", "a probe document of a few words"), ("질의", "짧은 문서")]

if TYPE_CHECKING:
    from ...modules import Transformer


class ScoreBackends:
    """The backend half of CrossEncoder: set, resolve (auto), build, release and restore weights."""

    if TYPE_CHECKING:

        @property
        def transformer(self) -> Transformer: ...

        @property
        def device(self) -> torch.device: ...

        def tokenize(
            self, pairs: Sequence[tuple[str, str]], prompt: str | None = None
        ) -> dict[str, Tensor]: ...

        predict: Callable[..., Any]

        def children(self) -> Iterator[nn.Module]: ...

    def _init_backends(self) -> None:
        self.backend, self.precision = "torch", "fp32"
        self.backend_threads: int | None = None
        self._scorers: dict[str, OpenVINOScorer] = {}  # precision -> its graph
        self._auto_choice: Choice | None = None
        self._auto_baseline: Record | None = None
        self._auto_lock = threading.Lock()
        # torch's copy of the transformer weights: all the folder's? released? (release_torch_weights)
        self.torch_weights = TorchWeights()
        self._measuring = False

    def set_backend(
        self, backend: str = "torch", precision: str = "fp32", threads: int | None = None
    ) -> None:
        """Where `predict` runs: "torch" (as loaded), "openvino" ("fp32" or "bf16", on the CPU) or
        "auto" (measured: see the module docstring). Training always runs on torch."""
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if backend == "openvino":
            if self.device.type != "cpu":
                raise ValueError("the openvino backend runs cross-encoders on the CPU")
            self._scorer(precision, threads)  # checks the precision and the head now
        self.backend, self.backend_threads = backend, threads
        self.precision = "auto" if backend == "auto" else precision
        if backend == "auto" and self._auto_baseline is None:
            self._auto_baseline = self.torch_weights.record(self.transformer.auto_model)
        if backend == "torch":
            self._restore_torch_weights()
            self._scorers.clear()  # each holds a copy of the weights

    def configuration(self) -> tuple[str, str]:
        """The (backend, precision) `predict` runs on now, "auto" resolved (measured on first use)."""
        if self.backend != "auto":
            return self.backend, self.precision
        if self._trained_since_auto():
            return "torch", "fp32"
        choice = self.auto_choice()
        return choice.backend, choice.precision

    def auto_choice(self) -> Choice:
        """What "auto" chose for this model on this machine, with the measurements."""
        with self._auto_lock:
            if self._auto_choice is None:
                self._measuring = True  # torch's weights stay while the candidates alternate
                try:
                    self._auto_choice = choose(self._measure, self._fingerprint(), self.device, metric=SCORES)
                finally:
                    self._measuring = False
                for precision in [p for p in self._scorers if p != self._auto_choice.precision]:
                    del self._scorers[precision]  # each holds a copy of the weights
                if self._auto_choice.backend == "torch":
                    self._scorers.clear()
            return self._auto_choice

    def backend_info(self) -> dict[str, Any]:
        """What `predict` runs on, and why (for `munjang info`)."""
        backend, precision = self.configuration()
        info: dict[str, Any] = {"backend": backend, "precision": precision}
        if self.backend != "auto":
            info["chosen_by"] = "the caller"
        elif self._trained_since_auto():
            info["chosen_by"] = "auto: torch fp32 while the weights are trained in this process"
        else:
            info["chosen_by"] = self.auto_choice().describe()
        return info

    # -- the graphs ------------------------------------------------------------------------------
    def _scorer(self, precision: str, threads: int | None = None) -> OpenVINOScorer:
        found = self._scorers.get(precision)
        if found is None:
            transformer = self.transformer
            if isinstance(transformer, CausalLMTransformer):
                found = OpenVINOCausalScorer(transformer, precision, threads)
            else:
                probe = self.tokenize(PROBE_PAIRS)
                found = OpenVINOPairScorer(
                    list(self.children()), transformer.auto_model, probe, precision, threads
                )
            self._scorers[precision] = found
        return found

    def active_scorer(self) -> OpenVINOScorer | None:
        """The compiled graph `predict` uses now (None: torch), its weights released once compiled."""
        backend, precision = self.configuration()
        if backend == "torch":
            return None
        scorer = self._scorer(precision, self.backend_threads)
        if not (scorer.built and scorer.hold):
            self._restore_torch_weights()
            scorer.build()
            self.release_torch_weights()
        return scorer

    def _measure(
        self, backend: str, precision: str, pairs: Sequence[tuple[str, str]]
    ) -> tuple[np.ndarray, float]:
        saved = (self.backend, self.precision)
        self.backend, self.precision = backend, precision
        try:
            start = time.perf_counter()
            scores = self.predict(list(pairs), activation=torch.nn.Identity(), batch_size=8)
            return np.asarray(scores, dtype=np.float64).reshape(len(pairs), -1), time.perf_counter() - start
        finally:
            self.backend, self.precision = saved

    def _fingerprint(self) -> str | None:
        from ...inference.artifacts import model_fingerprint

        self._restore_torch_weights()
        try:
            weights = model_fingerprint(self.transformer)
        except Exception:  # a backbone that cannot be hashed is measured each process, never cached
            return None
        head = [
            (type(m).__name__, [tuple(p.shape) for p in m.parameters()]) for m in list(self.children())[1:]
        ]
        return hashlib.sha256(f"{weights}:{head}".encode()).hexdigest()

    # -- torch's copy of the weights -------------------------------------------------------------
    def mark_weights_from_folder(self) -> None:
        """Say that every transformer weight was just read from the folder the model reports
        (`name_or_path`): the loader calls it when no weight was newly initialised. Only then, and
        while no weight changed since, can torch's copy be released and read back."""
        self.torch_weights.mark_from_folder(self.transformer.auto_model)

    def _source_folder(self) -> Path | None:
        name = getattr(self.transformer.auto_model, "name_or_path", "") or ""
        folder = Path(name) if name else None
        return folder if folder is not None and (folder / "config.json").exists() else None

    def release_torch_weights(self) -> bool:
        """Free torch's copy of the transformer weights (the compiled graphs hold their own). True when
        released; a model whose weights are not all those of its folder keeps them."""
        weights = self.torch_weights
        if weights.is_released:
            return True
        if (
            self._measuring
            or self._source_folder() is None
            or not weights.from_folder(self.transformer.auto_model)
        ):
            return False
        weights.release(self.transformer.auto_model)
        for scorer in self._scorers.values():
            scorer.hold = True
        return True

    def _restore_torch_weights(self) -> None:
        """Read released weights back from their folder (a no-op when none are released), checked
        against the shapes and checksums of what was released."""
        if not self.torch_weights.is_released:
            return
        folder = self._source_folder()
        model = self.transformer.auto_model
        if folder is None:
            raise RuntimeError("the folder of the released weights is gone")

        def read(dtype: torch.dtype) -> dict[str, Tensor]:
            return dict(type(model).from_pretrained(str(folder), dtype=dtype).named_parameters())

        self.torch_weights.restore(model, read, folder)
        if self._auto_baseline is not None:  # the same values at new addresses: not trained
            self._auto_baseline = self.torch_weights.record(model)
        for scorer in self._scorers.values():
            scorer.hold = False
            scorer.rebase()

    def _trained_since_auto(self) -> bool:
        """Whether an optimizer changed the weights since "auto" was set (then auto runs torch fp32)."""
        if self._auto_baseline is None:
            return False
        changed, self._auto_baseline = self.torch_weights.changed_since(
            self._auto_baseline, self.transformer.auto_model
        )
        return changed
