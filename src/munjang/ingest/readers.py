"""Files to `SourceDocument`s: which files (`find_files`) and how each is read (`read_file`), for
plain text, Markdown, HTML and PDF."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .decode import decode
from .document import ReadError, SourceDocument
from .html import read_html
from .markdown import read_markdown
from .pdf import read_pdf

SUFFIXES: dict[str, str] = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
MAX_BYTES = 100 * 1024 * 1024


def file_format(path: Path) -> str | None:
    """ "text", "markdown", "html" or "pdf" by the file's suffix (any case), else None."""
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


def read_file(path: Path, root: Path | None = None, max_bytes: int = MAX_BYTES) -> SourceDocument:
    """Read one file into a SourceDocument (the format by its suffix). Raises ReadError, naming the file,
    for a missing, oversized, binary, empty, encrypted, corrupt or image-only file, or an unsupported
    suffix."""
    path = Path(path)
    kind = file_format(path)
    if kind is None:
        raise _unsupported(path)
    try:
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
    metadata: dict[str, Any] = {"path": path.as_posix(), "format": kind, "bytes": len(raw)}
    title: str | None = None
    if kind == "pdf":
        pdf = read_pdf(raw, path)
        text, title = pdf.text, pdf.title
        metadata |= {"pages": pdf.pages, "page_starts": pdf.page_starts}
    elif kind == "html":
        text, title = read_html(raw, path)
    elif kind == "markdown":
        text, title = read_markdown(decode(raw, path))
    else:
        text = decode(raw, path)
    if not text.strip():
        raise ReadError(path, "no text" if raw else "no text (empty file)")
    return SourceDocument(document_id(path, root), text, title, metadata)


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
