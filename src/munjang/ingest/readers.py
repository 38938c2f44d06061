"""Files to `SourceDocument`s: which files (`find_files`) and how each is read (`read_file`), for
plain text, Markdown, HTML, PDF and the office formats (HWP, HWPX, DOCX, PPTX, XLSX: `OFFICE`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError
from .decode import decode
from .document import ReadError, SourceDocument
from .docx import read_docx
from .html import read_html
from .hwp import read_hwp
from .hwpx import read_hwpx
from .limits import DEFAULT_LIMITS, ReadLimits
from .markdown import read_markdown
from .pdf import read_pdf
from .pptx import read_pptx
from .xlsx import read_xlsx

SUFFIXES: dict[str, str] = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".hwp": "hwp",
    ".hwpx": "hwpx",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
}
# The structured readers: (raw, path, limits) -> (text, title, metadata with the outline:
# search/collection/sections.py).
OFFICE: dict[str, Callable[[bytes, Path, ReadLimits], tuple[str, str | None, dict[str, Any]]]] = {
    "hwp": read_hwp,
    "hwpx": read_hwpx,
    "docx": read_docx,
    "pptx": read_pptx,
    "xlsx": read_xlsx,
}
MAX_BYTES = 100 * 1024 * 1024


def file_format(path: Path) -> str | None:
    """The format ("text", "markdown", "html", "pdf", "hwp", ...: SUFFIXES) by the file's suffix (any
    case), else None."""
    return SUFFIXES.get(path.suffix.lower())


def document_id(path: Path, root: Path | None = None) -> str:
    """The id `read_file` gives `path`: its path relative to `root` in posix form (without a root,
    its name)."""
    if root is None:
        return path.name
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def read_file(
    path: Path,
    root: Path | None = None,
    max_bytes: int = MAX_BYTES,
    kind: str | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> SourceDocument:
    """Read one file into a SourceDocument (the format by its suffix, or `kind`). Raises ReadError,
    naming the file, for a missing, oversized, binary, empty, encrypted, DRM-protected, corrupt or
    image-only file, one over a read limit (`limits`), or an unsupported suffix; a reader whose
    library is missing raises MissingExtraError."""
    path = Path(path)
    kind = kind or file_format(path)
    if kind is None:
        raise _unsupported(path)
    try:
        if not path.is_file() and path.exists() and not path.is_dir():  # a FIFO or device would block
            raise ReadError(path, "not a regular file")
        size = path.stat().st_size
        if size > max_bytes:
            raise ReadError(path, f"{_mb(size)}, over the {_mb(max_bytes)} limit")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ReadError(path, "no such file") from None
    except IsADirectoryError:
        raise ReadError(path, "is a folder, not a file") from None
    except OSError as e:
        raise ReadError(path, e.strerror or str(e)) from None
    return read_bytes(raw, path, kind, document_id(path, root), limits)


def read_bytes(
    raw: bytes, path: Path, kind: str, doc_id: str | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> SourceDocument:
    """Read a file's bytes (already in memory: an upload) as format `kind`; `path` names it in errors
    and in the "path" metadata, `doc_id` defaults to its name. Raises ReadError as `read_file` does:
    whatever a reader's library raises on a hostile file becomes the ReadError of that file."""
    path = Path(path)
    try:
        document = _read_bytes(raw, path, kind, doc_id, limits)
    except (ReadError, MissingExtraError):
        raise
    except RecursionError:
        raise ReadError(path, f"cannot read the {kind} (nested too deeply)") from None
    except Exception as e:  # NotImplementedError, KeyError, ... from a library on a hostile file
        raise ReadError(
            path, f"cannot read the {kind} ({type(e).__name__}: {e})".replace("\n", " ")
        ) from None
    if len(document.text) > limits.max_chars:
        raise limits.over(path, "max_chars", "characters of text")
    return document


def _read_bytes(raw: bytes, path: Path, kind: str, doc_id: str | None, limits: ReadLimits) -> SourceDocument:
    metadata: dict[str, Any] = {"path": path.as_posix(), "format": kind, "bytes": len(raw)}
    title: str | None = None
    if kind in OFFICE:
        text, title, found = OFFICE[kind](raw, path, limits)
        metadata |= found
    elif kind == "pdf":
        pdf = read_pdf(raw, path)
        text, title = pdf.text, pdf.title
        metadata |= {"pages": pdf.pages, "page_starts": pdf.page_starts}
    elif kind == "html":
        text, title = read_html(raw, path)
    elif kind == "markdown":
        text, title = read_markdown(decode(raw, path))
    elif kind == "text":
        text = decode(raw, path)
    else:
        raise _unsupported(path)
    if not text.strip():
        raise ReadError(path, "no text" if raw else "no text (empty file)")
    return SourceDocument(doc_id or path.name, text, title, metadata)


def find_files(
    paths: Sequence[Path], recursive: bool = True, on_error: Callable[[ReadError], None] | None = None
) -> Iterator[tuple[Path, Path]]:
    """(file, root) for every file of a supported type in `paths`, each once, in a stable order: a
    folder yields its files (its subfolders' too unless `recursive=False`; hidden files and folders
    skipped) sorted by relative path, with the folder as root; a file yields itself with its parent as
    root. A missing path, or a file named explicitly whose type is unsupported, raises ReadError, or
    with `on_error` is passed to it and skipped."""
    seen: set[Path] = set()
    for given in map(Path, paths):
        try:
            found = _found(given, recursive)
        except ReadError as e:
            if on_error is None:
                raise
            on_error(e)
            continue
        for file, root in found:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                yield file, root


def _found(given: Path, recursive: bool) -> list[tuple[Path, Path]]:
    if given.is_dir():
        return [(file, given) for file in _walk(given, recursive)]
    if given.is_file():
        if file_format(given) is None:
            raise _unsupported(given)
        return [(given, given.parent)]
    raise ReadError(given, "no such file or folder")


def _walk(folder: Path, recursive: bool) -> list[Path]:
    files: list[Path] = []
    for top, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")] if recursive else []
        for name in names:
            file = Path(top) / name
            if not name.startswith(".") and file_format(file) is not None and file.is_file():
                files.append(file)
    return sorted(files, key=lambda f: f.relative_to(folder).as_posix())


def _unsupported(path: Path) -> ReadError:
    suffix = repr(path.suffix) if path.suffix else "(no suffix)"
    return ReadError(path, f"unsupported file type {suffix}; supported: {', '.join(SUFFIXES)}")


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"
