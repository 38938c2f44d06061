"""Exported inference artefacts (ONNX graphs): where they live, whose weights they hold, how they are reused.

Place. `<model folder>/onnx/`, beside the weights the way sentence-transformers keeps its `onnx/` folder,
when that folder can be written; otherwise (no model folder, a read-only one, or one inside an installed
package such as the embedded default model in site-packages, which pip owns) the user cache
`$MUNJANG_CACHE/artifacts/<fingerprint>/onnx/`, `$MUNJANG_CACHE` defaulting to `~/.cache/munjang`.

Identity. The fingerprint is a SHA-256 over the backbone's class, its config JSON and the name, dtype,
shape and bytes of every parameter and buffer of the model in memory. It is exact (a model fine-tuned
in memory but not saved, or a folder re-saved after training, gets a new fingerprint) and cheap
(one SHA-256 pass over bytes already in memory), unlike file sizes or mtimes, which say nothing
about what was loaded.

Reuse. Each artefact `<name>.onnx` has a manifest `<name>.json` (munjang and library versions, opset,
precision, fingerprint, the file's SHA-256). A missing, stale or corrupt artefact is rebuilt, with a
logged warning when it existed, under a file lock so that two processes never build the same file at
once; files are written under a temporary name in the same folder and moved in place with `os.replace`,
so a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import site
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from .._util.atomic import atomic_write
from .._util.paths import cache_root
from .base import BackendError

logger = logging.getLogger(__name__)

# Bump when the way artefacts are built changes, so files built the old way are rebuilt.
ARTIFACT_FORMAT = 2
LOCK_TIMEOUT_S = 1800.0
_HASH_CHUNK = 1 << 22


def munjang_version() -> str:
    """The installed munjang version (recorded in manifests; a new version rebuilds the artefacts)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("munjang")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "unknown"


def model_fingerprint(transformer: Any) -> str:
    """SHA-256 (hex) of the backbone's class, config and every parameter and buffer, as held in memory
    (weights an encoder freed are read back first)."""
    ensure_weights = getattr(transformer, "ensure_weights", None)
    if ensure_weights is not None:
        ensure_weights()
    model = transformer.auto_model
    digest = hashlib.sha256()
    digest.update(f"{type(model).__module__}.{type(model).__qualname__}\n".encode())
    digest.update(model.config.to_json_string().encode())
    tensors = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    for name, tensor in tensors:
        data = tensor.detach()
        digest.update(f"\n{name}|{data.dtype}|{tuple(data.shape)}\n".encode())
        digest.update(data.cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _installed_package_roots() -> list[Path]:
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    with contextlib.suppress(AttributeError):
        roots.update(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        roots.add(site.getusersitepackages())
    return [Path(r).resolve() for r in roots if r]


def _inside_installed_packages(folder: Path) -> bool:
    resolved = folder.resolve()
    return any(resolved.is_relative_to(root) for root in _installed_package_roots())


def _writable(folder: Path) -> bool:
    """Whether files can be created in `folder` (made if missing), found by trying: root ignores modes."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".munjang-probe-"):
            pass
    except OSError:
        return False
    return True


def artifact_dir(
    model_folder: str | Path | None, transformer: Any, kind: str, fingerprint: str | None = None
) -> Path:
    """The folder for `kind` artefacts ("onnx") of this model, created if needed.

    `<model_folder>/<kind>` when the model folder exists, can be written and is not inside an installed
    package; else `cache_root()/artifacts/<fingerprint>/<kind>`. Pass `fingerprint` when it is already
    known, to skip hashing the weights again.
    """
    if model_folder is not None:
        folder = Path(model_folder)
        beside = folder / kind
        if folder.is_dir() and not _inside_installed_packages(folder) and _writable(beside):
            return beside
    fingerprint = fingerprint or model_fingerprint(transformer)
    cached = cache_root() / "artifacts" / fingerprint[:32] / kind
    if not _writable(cached):
        raise BackendError(
            f"cannot write inference artefacts to {cached}; set MUNJANG_CACHE to a writable folder"
        )
    return cached


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file's contents."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_path(artifact: Path) -> Path:
    """The manifest that describes `artifact` (`model.onnx` -> `model.json`)."""
    return artifact.with_suffix(".json")


def _problem(artifact: Path, expect: Mapping[str, Any]) -> str | None:
    """Why `artifact` cannot be reused, or None when its manifest matches `expect` and its bytes."""
    if not artifact.exists():
        return "missing"
    try:
        manifest = json.loads(manifest_path(artifact).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "its manifest is missing"
    except (OSError, UnicodeDecodeError, ValueError):
        return "its manifest is unreadable"
    if not isinstance(manifest, dict):
        return "its manifest is unreadable"
    for key, value in expect.items():
        if manifest.get(key) != value:
            return f"it was built with {key}={manifest.get(key)!r}, not {value!r}"
    if manifest.get("bytes") != artifact.stat().st_size or manifest.get("sha256") != file_sha256(artifact):
        return "its contents do not match its manifest (truncated or modified)"
    return None


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _clear_stale_temporaries(artifact: Path) -> None:
    """Remove temporaries a killed build left behind (only called while holding the artefact's lock)."""
    for path in (artifact, manifest_path(artifact)):
        for stale in path.parent.glob(f".{path.name}.*.tmp{path.suffix}"):
            stale.unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(artifact: Path) -> Iterator[None]:
    from filelock import FileLock, Timeout

    lock = FileLock(str(artifact.with_name(artifact.name + ".lock")))
    try:
        with lock.acquire(timeout=LOCK_TIMEOUT_S):
            yield
    except Timeout as e:
        raise BackendError(
            f"{artifact}: another process held the build lock for over {LOCK_TIMEOUT_S:.0f} s"
        ) from e


def ensure_artifact(
    artifact: Path,
    expect: Mapping[str, Any],
    build: Callable[[Path], Mapping[str, Any]],
    rebuild: bool = False,
) -> Path:
    """Return `artifact` once it exists and its manifest matches `expect`, building it if not.

    `build(tmp)` writes the file at `tmp` and returns extra manifest fields; the manifest records
    `expect`, those fields, the file's size and SHA-256. `rebuild=True` builds anew even when the
    manifest matches (for a file that passed its checks but could not be loaded).
    """
    if not rebuild and _problem(artifact, expect) is None:
        return artifact
    with _locked(artifact):
        problem = None if rebuild else _problem(artifact, expect)  # another process may have built it
        if not rebuild and problem is None:
            return artifact
        _clear_stale_temporaries(artifact)
        if rebuild:
            logger.warning("%s could not be loaded; rebuilding it", artifact)
        elif problem == "missing":
            logger.info("building %s", artifact)
        else:
            logger.warning("%s is unusable (%s); rebuilding it", artifact, problem)
        started = time.perf_counter()

        def write(tmp: Path) -> None:
            info = build(tmp)
            text = json.dumps(
                {
                    **expect,
                    **info,
                    "bytes": tmp.stat().st_size,
                    "sha256": file_sha256(tmp),
                    "build_seconds": round(time.perf_counter() - started, 2),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                },
                indent=2,
                sort_keys=True,
            )
            # The manifest goes first: a reader that sees it beside the old file finds a hash mismatch,
            # waits for this lock and then finds both new.
            atomic_write(manifest_path(artifact), lambda m: _write_text(m, text))

        atomic_write(artifact, write)
    return artifact
