"""What a reader returns (`SourceDocument`) and how it fails (`ReadError`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import MunjangError


@dataclass(frozen=True)
class SourceDocument:
    """The text of one file, ready to be added to a collection.

    `id` is the file's path relative to the folder it was found under (posix form), so the same file
    gets the same id on every run; `metadata` holds "path", "format", "bytes", and for PDFs "pages"
    and "page_starts" (the character offset in `text` where each page begins)."""

    id: str
    text: str
    title: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


class ReadError(MunjangError):
    """A file could not be read into a document; the message is "PATH: the problem"."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.reason))
