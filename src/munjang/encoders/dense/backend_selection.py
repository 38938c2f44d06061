"""Which backend a SentenceEncoder's `encode` runs on: the user's (backend, precision), or "auto", the
fastest configuration measured to keep fp32 accuracy on this machine (`inference/autotune.py`).

`load_encoder` gives "auto" unless told otherwise (or `$MUNJANG_ENCODE_BACKEND`, e.g. `torch:fp32`, says
otherwise for a whole process). A precision without a backend ("auto" + "fp32") runs on torch, so
`precision="fp32"` stays exact. While a model is being trained its weights change under any exported
graph, so "auto" then runs on torch fp32 (exact, on the live weights) from the first optimizer step on.

Once `encode` runs by default on OpenVINO, whose compiled graph holds its own copy of the weights, torch's
copy is freed just before that graph is compiled (when the weights are still the model folder's): a
process never holds both. Whatever needs them again (the torch backend, an export, `parameters()`,
`state_dict()`, `save`, moving the model, training) reads them back from the folder first.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ...inference.autotune import Choice, cached_choice, choose
from ...inference.backends import build_backend, resolve_backend
from ...inference.base import BACKENDS, TokenBackend
from ...inference.torch_weights import Record, TorchWeights
from ...modules import Transformer

if TYPE_CHECKING:
    from pathlib import Path

AUTO = "auto"
BACKEND_ENV = "MUNJANG_ENCODE_BACKEND"


def default_configuration() -> tuple[str, str]:
    """`$MUNJANG_ENCODE_BACKEND` ("auto", "torch", or "backend:precision" such as "torch:fp32"), else auto."""
    value = os.environ.get(BACKEND_ENV, "").strip()
    if not value:
        return AUTO, AUTO
    backend, _, precision = value.partition(":")
    try:
        return normalized(backend, precision or None)
    except ValueError as e:
        raise ValueError(f"${BACKEND_ENV}={value!r}: {e}") from None


def normalized(backend: str | None, precision: str | None) -> tuple[str, str]:
    """(backend, precision) as a caller of `load_encoder` / `set_backend` means them: nothing is the
    process default, a backend alone runs at fp32, a precision alone runs on torch (through "auto")."""
    if backend is None and precision is None:
        return default_configuration()
    if backend is None:
        backend = AUTO
    if precision is None:
        precision = AUTO if backend == AUTO else "fp32"
    if backend != AUTO and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from auto, {', '.join(BACKENDS)}")
    return backend, precision


class BackendSelection:
    """The backend half of SentenceEncoder (mixed in): set, resolve, build and cache backends."""

    if TYPE_CHECKING:
        model_folder: Path | None
        backend_options: dict[str, Any]

        @property
        def transformer(self) -> Transformer: ...

        @property
        def device(self) -> torch.device: ...

        @property
        def input_module(self) -> Any: ...

        encode: Callable[..., Any]

        def describe(self) -> dict[str, Any]: ...

    def _init_backends(self) -> None:
        self.backend_name, self.precision = "torch", "fp32"
        self.backend_options = {}
        # (backend, precision, device, options) -> the backend built for them, and the optimizer
        # generation and weights state it was built under (exported graphs hold a copy of the weights)
        self._backends: dict[tuple[Any, ...], TokenBackend] = {}
        self._built_under: dict[tuple[Any, ...], Record] = {}
        self._auto_choice: dict[str, Choice] = {}  # device -> the measured choice
        self._auto_lock = threading.Lock()
        self._auto_baseline: Record | None = None
        # torch's copy of the transformer weights: still the folder's? released? (release_torch_weights)
        self.torch_weights = TorchWeights()

    def remember_folder(self, folder: Path) -> None:
        """Record that the weights now in memory are the ones in `folder` (what `load_encoder` read):
        only then may they be freed and read back from it."""
        self.model_folder = folder
        if isinstance(self.input_module, Transformer):
            self.torch_weights.mark_from_folder(self.transformer.auto_model)

    def _weights_from_folder(self) -> bool:
        """Whether the weights in memory are still the model folder's (none changed them since)."""
        if self.torch_weights.is_released:
            return True
        if self.model_folder is None or not isinstance(self.input_module, Transformer):
            return False
        return self.torch_weights.from_folder(self.transformer.auto_model)  # any in-place edit or step

    def set_backend(self, backend: str | None = None, precision: str | None = None, **options: Any) -> None:
        """Choose what `encode` runs on by default: `backend` auto | torch | onnx | openvino and
        `precision` auto | fp32 | bf16 | fp16 | int8 (see the module docstring for how they combine).
        `options` go to the backend (onnx/openvino: `threads`, `optimize`; torch: `lean`)."""
        backend, precision = normalized(backend, precision)
        if backend != AUTO:
            backend, precision = resolve_backend(backend, precision, self.device)
            self._check_static_backend(backend)
        elif precision != AUTO:
            resolve_backend("torch", precision, self.device)
        self.backend_name, self.precision, self.backend_options = backend, precision, dict(options)
        if backend == AUTO and self._auto_baseline is None and isinstance(self.input_module, Transformer):
            self._auto_baseline = self.torch_weights.record(self.transformer.auto_model)

    def configuration(self, backend: str | None = None, precision: str | None = None) -> tuple[str, str]:
        """The (backend, precision) that `encode(backend=..., precision=...)` runs on, "auto" resolved
        (measuring it the first time on this machine, unless cached)."""
        name, prec = backend or self.backend_name, precision or self.precision
        if name == AUTO:
            if prec != AUTO:
                name = "torch"
            elif not isinstance(self.input_module, Transformer) or self._trained_since_auto():
                name, prec = "torch", "fp32"
            else:
                choice = self.auto_choice()
                name, prec = choice.backend, choice.precision
        name, prec = resolve_backend(name, prec, self.device)
        self._check_static_backend(name)
        return name, prec

    def auto_choice(self) -> Choice:
        """What backend "auto" chose for this model on this device, with the measurements."""
        device = str(self.device)
        with self._auto_lock:
            if device not in self._auto_choice:
                before = set(self._backends)
                choice = choose(self._measure, self._fingerprint(), self.device)
                chosen = (choice.backend, choice.precision)
                for key in set(self._backends) - before:  # each holds a copy of the weights
                    if (key[0], key[1]) != chosen:
                        del self._backends[key]
                        self._built_under.pop(key, None)
                self._auto_choice[device] = choice
            return self._auto_choice[device]

    def known_auto_choice(self) -> Choice | None:
        """The automatic choice when it is known without measuring (made in this process, or read
        from the cache); None when "auto" would measure now."""
        device = str(self.device)
        with self._auto_lock:
            if device not in self._auto_choice:
                found = cached_choice(self._fingerprint(), self.device)
                if found is None:
                    return None
                self._auto_choice[device] = found
            return self._auto_choice[device]

    def release_backends(self, keep: tuple[str, str]) -> None:
        """Drop every built backend but `keep` (backend, precision): each holds a copy of the weights."""
        for key in [k for k in self._backends if (k[0], k[1]) != keep]:
            del self._backends[key]
            self._built_under.pop(key, None)

    def release_torch_weights(self) -> bool:
        """Free torch's copy of the transformer weights while `encode` runs on an exported backend
        (OpenVINO, ONNX Runtime), which holds its own: a served model then costs its weights once.
        The first call that needs them again (the torch backend, an export) reads them back from the
        model folder. True when released; a model without a folder, or on torch, keeps them."""
        if self.torch_weights.is_released:
            return True
        if not self._weights_from_folder() or self.configuration()[0] == "torch":
            return False
        self._release()
        return True

    def _release(self) -> None:
        """Swap every transformer weight for an empty tensor (shapes and checksums kept to check the
        read-back); the transformer reads them back before anything uses them."""
        self.torch_weights.release(self.transformer.auto_model)
        self.transformer.restore_weights = self.restore_torch_weights

    def restore_torch_weights(self) -> None:
        """Read freed torch weights back from the model folder (a no-op when they are in memory)."""
        if self.torch_weights.is_released:
            self._restore_torch_weights()

    def _release_before_compile(self, name: str, precision: str) -> Callable[[], None] | None:
        """What `build_backend` runs before compiling (name, precision): free torch's weights, when the
        backend is OpenVINO and what `encode` runs on by default (so no call needs torch meanwhile)
        and the weights are the folder's to read back. None when they are to stay."""
        if name != "openvino" or self.torch_weights.is_released or not self._weights_from_folder():
            return None
        if self.backend_name == AUTO and self.precision == AUTO:
            known = self._auto_choice.get(str(self.device))
            default = (known.backend, known.precision) if known is not None else None
        else:
            default = (self.backend_name, self.precision)
        if default != (name, precision):
            return None
        return self._release

    def _restore_torch_weights(self) -> None:
        """Read the released weights back from the model folder, checked against the shapes and
        checksums of what was released."""
        from ..formats import read_encoder_folder

        folder = self.model_folder
        assert folder is not None

        def read(dtype: torch.dtype) -> dict[str, torch.Tensor]:
            options = {"trust_remote_code": False, "dtype": dtype, "max_seq_length": None}
            modules, _ = read_encoder_folder(
                folder, {**options, "model_kwargs": None, "tokenizer_kwargs": None}
            )
            transformer = modules[0]
            if not isinstance(transformer, Transformer):
                raise RuntimeError(f"{folder} no longer holds a transformer model")
            return dict(transformer.auto_model.named_parameters())

        model = self.transformer.auto_model
        self.torch_weights.restore(model, read, folder)
        self.transformer.restore_weights = None
        # the same values at new addresses: not trained, so what was built from them still holds
        if self._auto_baseline is not None:
            self._auto_baseline = self.torch_weights.record(model)
        for key in self._built_under:
            self._built_under[key] = self.torch_weights.record(model)

    def info(self) -> dict[str, Any]:
        """`describe()` plus what `encode` runs on and, under "auto", why (`munjang info`)."""
        backend, precision = self.configuration()
        details = {**self.describe(), "backend": backend, "precision": precision}
        if not (self.backend_name == AUTO and self.precision == AUTO):
            details["chosen_by"] = "the caller"
        elif not isinstance(self.input_module, Transformer):
            details["chosen_by"] = f"auto: a {type(self.input_module).__name__} model runs on torch"
        elif self._trained_since_auto():
            details["chosen_by"] = "auto: torch fp32 while the weights are trained in this process"
        else:
            details["chosen_by"] = self.auto_choice().describe()
        return details

    def backend(self, backend: str | None = None, precision: str | None = None) -> TokenBackend:
        """The backend object for (backend, precision), built on first use and cached (exported
        ONNX/OpenVINO artefacts are also cached on disk beside the model).

        An exported backend holds a copy of the weights, so it is rebuilt once an optimizer has
        changed them (training in this process); the torch backend reads the live weights itself."""
        name, prec = self.configuration(backend, precision)
        key = (name, prec, self.device, tuple(sorted(self.backend_options.items())))
        found = self._backends.get(key)
        if found is not None and name != "torch" and self._trained_since(key):
            found = None
        if self.torch_weights.is_released and (found is None or name == "torch"):
            self._restore_torch_weights()
        if found is None:
            release = self._release_before_compile(name, prec)
            extra = {} if release is None else {"before_compile": release}  # only OpenVINO takes it
            found = build_backend(
                name, prec, self.transformer, self.model_folder, self.backend_options, **extra
            )
            self._backends[key] = found
            self._built_under[key] = self.torch_weights.record(self.transformer.auto_model)
        return found

    def warmup(self, backend: str | None = None, precision: str | None = None) -> None:
        """Run a few inputs of different lengths through the chosen backend so the first real call
        pays no set-up (weight casts, kernel selection, the "auto" measurement): call once before
        serving traffic. The one-row batches also build a pipelined backend's throughput model
        (OpenVINO's streams)."""
        words = ["warm", "up", "the", "sentence", "encoder", "before", "the", "first", "request", "arrives"]
        texts = [" ".join(words[: 1 + i % len(words)] * (1 + i // 4)) for i in range(8)]
        self.encode(texts, backend=backend, precision=precision, show_progress_bar=False)
        self.encode(texts, backend=backend, precision=precision, batch_size=1, show_progress_bar=False)
        self.encode(texts[0], backend=backend, precision=precision)

    def _measure(self, backend: str, precision: str, texts: Sequence[str]) -> tuple[np.ndarray, float]:
        start = time.perf_counter()
        vectors = self.encode(
            list(texts),
            backend=backend,
            precision=precision,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32), time.perf_counter() - start

    def _fingerprint(self) -> str | None:
        """The weights' fingerprint and the modules after them: what a measured choice is valid for."""
        from ...inference.artifacts import model_fingerprint

        try:
            weights = model_fingerprint(self.transformer)
        except Exception:  # a backbone that cannot be hashed is measured each process, never cached
            return None
        modules = [type(m).__name__ for m in self]  # type: ignore[attr-defined]
        return hashlib.sha256(f"{weights}:{modules}".encode()).hexdigest()

    def _check_static_backend(self, backend: str) -> None:
        if not isinstance(self.input_module, Transformer) and backend != "torch":
            raise ValueError(
                f"a {type(self.input_module).__name__} model runs on torch only, not {backend!r}"
            )

    def _trained_since_auto(self) -> bool:
        """Whether an optimizer changed the weights since "auto" was set (then auto runs torch fp32)."""
        if self._auto_baseline is None:
            return False
        changed, self._auto_baseline = self.torch_weights.changed_since(
            self._auto_baseline, self.transformer.auto_model
        )
        return changed

    def _trained_since(self, key: tuple[Any, ...]) -> bool:
        """Whether an optimizer changed the weights since the backend under `key` was built."""
        changed, self._built_under[key] = self.torch_weights.changed_since(
            self._built_under[key], self.transformer.auto_model
        )
        return changed
