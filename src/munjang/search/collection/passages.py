"""From documents to passages: what a collection indexes for each document it is given.

An embedding model reads a fixed window of tokens (e5-small: 512) and silently drops the rest, so a
long document added whole is searchable by its first page only. A collection therefore stores a
document that does not fit as several passages: sentence-aligned chunks packed to a token budget of
the model's own tokenizer (`chunking.py`), each stored with its character span in the document.

Each passage is encoded and BM25-tokenized with the document's title (metadata field `title`, when
present) in front, so a passage taken out of its page still says what the page is about; the stored
passage text is the document's own text, so offsets point into it exactly.

Two sizes are at work, because the two retrievers want different ones (bench/autorag.py measures it
on AutoRAG-ko's pages, bench/long_documents.py on pages built from ParaKQC; 128 tokens loses least
against the better size on either). A dense vector of a long passage blurs what its parts say:
e5-small finds the right page far more often from 128-token passages than from whole 512-token
windows. BM25 wants the opposite: more of the page's words, and length normalisation over a fuller
text, rank pages better than scoring each small passage alone. So a document is first cut into
**windows** (the model's window) and each window into **passages** (`max_tokens`); each passage is
stored, encoded and returned on its own (with its offsets), and is BM25-tokenized with the text of
the window it was cut from (`lexical_context` "window"; the lexical index counts a window once). A
document that fits in one passage is one passage whatever the settings.

Settings (`Collection.create(chunking=...)`, kept in the collection's configuration):
- `enabled`: False stores every document whole, truncated by the model as it encodes it.
- `max_tokens`: the passage budget (default 128; None: the model's window, so only documents that
  do not fit are split).
- `overlap_tokens`: whole sentences of the previous passage repeated at the start of the next.
- `lexical_context`: "window" (default): BM25 reads each passage's window; "passage": the passage
  alone. A collection written before this setting existed reads as "passage" with the window as
  its budget, as it was built.
- `title_field`: the metadata field carried into each passage as context (None: none).
- `late`: late chunking (`late_chunking.py`): each passage's vector is pooled from a pass over a
  window of its document, so it carries the context around it.

A document with an outline (metadata "sections", written by the office readers: `sections.py`) that
does not fit one passage is cut section by section: no passage spans two sections, each carries the
document title and its section's heading path in front (as encoded and as BM25 reads it), and a
table's section is packed by whole rows (lines) instead of sentences. With late chunking the
passages are the outline's, pooled from windows of the whole document (no section path in front).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from ..backends.base import text_hash
from .chunking import Chunker, line_spans, token_counter
from .sections import Section

CHUNKING_DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "max_tokens": 128,
    "overlap_tokens": 32,
    "lexical_context": "window",
    "title_field": "title",
    "late": False,
}
# What a collection stored before `lexical_context` existed meant these (see the module docstring).
LEGACY_CHUNKING: dict[str, Any] = {"max_tokens": None, "lexical_context": "passage"}
LEXICAL_CONTEXTS = ("window", "passage")
# Special tokens ([CLS] ... [SEP], <s> ... </s>) a transformer adds around every input.
SPECIAL_TOKENS = 2


@dataclass(frozen=True)
class ChunkingConfig:
    """How documents become passages (see the module docstring)."""

    enabled: bool = True
    max_tokens: int | None = 128
    overlap_tokens: int = 32
    lexical_context: str = "window"
    title_field: str | None = "title"
    late: bool = False

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> ChunkingConfig:
        """Validated settings from a collection's stored configuration or a user's mapping."""
        values = dict(values or {})
        unknown = set(values) - set(CHUNKING_DEFAULTS)
        if unknown:
            raise ValueError(
                f"unknown chunking setting {sorted(unknown)[0]!r}; known: {', '.join(CHUNKING_DEFAULTS)}"
            )
        config = cls(**{**CHUNKING_DEFAULTS, **values})
        for flag in ("enabled", "late"):
            if not isinstance(getattr(config, flag), bool):
                raise ValueError(f"chunking {flag} must be true or false, not {getattr(config, flag)!r}")
        if config.max_tokens is not None and (
            isinstance(config.max_tokens, bool)
            or not isinstance(config.max_tokens, int)
            or config.max_tokens < 16
        ):
            raise ValueError(
                f"chunking max_tokens must be None or an integer >= 16, not {config.max_tokens!r}"
            )
        if isinstance(config.overlap_tokens, bool) or not isinstance(config.overlap_tokens, int):
            raise ValueError(f"chunking overlap_tokens must be an integer, not {config.overlap_tokens!r}")
        if config.overlap_tokens < 0:
            raise ValueError(f"chunking overlap_tokens must be >= 0, not {config.overlap_tokens}")
        if config.lexical_context not in LEXICAL_CONTEXTS:
            raise ValueError(
                f"chunking lexical_context must be one of {', '.join(LEXICAL_CONTEXTS)}, "
                f"not {config.lexical_context!r}"
            )
        if config.title_field is not None and not isinstance(config.title_field, str):
            raise ValueError(f"chunking title_field must be a string or None, not {config.title_field!r}")
        return config

    @classmethod
    def from_stored(cls, values: Mapping[str, Any] | None) -> ChunkingConfig:
        """The settings a collection was created with: what an older collection left out means what
        it meant when it was written (LEGACY_CHUNKING), not today's default."""
        return cls.from_mapping({**LEGACY_CHUNKING, **(values or {})})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Passage:
    """One passage of a document: its number, span in the document, the text stored (the span), the
    text encoded (the span with the title in front) and the text BM25 reads (`context`: the encoded
    text, or its window with the title in front)."""

    chunk: int
    start: int
    end: int
    text: str
    encoded: str
    context: str = ""

    @property
    def lexical(self) -> str:
        """What BM25 tokenizes for this passage."""
        return self.context or self.encoded


def with_title(title: str | None, text: str) -> str:
    """The text as encoded: the title in front, unless the text already begins with it."""
    if not title or text.lstrip().startswith(title):
        return text
    return f"{title}\n{text}"


def document_hash(text: str, title: str | None, outline: Sequence[Section] | None = None) -> str:
    """What tells a changed document: its text, the title its passages carry and its outline."""
    if not outline:
        return text_hash(with_title(title, text))
    return text_hash(with_title(title, text) + "\0" + repr([s.to_dict() for s in outline]))


def late_key(document: str, passage: Passage) -> str:
    """The embedding-cache key of a late-chunked passage: its vector depends on the whole document
    (`document`, its hash) and on where the passage lies in it, not on its text alone."""
    return text_hash(f"late:{document}:{passage.start}:{passage.end}")


def title_of(metadata: Mapping[str, Any] | None, config: ChunkingConfig) -> str | None:
    """The document's title from its metadata, when the configuration names a title field."""
    if config.title_field is None or not metadata:
        return None
    value = metadata.get(config.title_field)
    return value.strip() or None if isinstance(value, str) else None


@runtime_checkable
class CountsTokens(Protocol):
    """An encoder whose window can be counted in tokens, as sentence-transformers models and
    munjang's encoders can; one without (a remote API) encodes each document whole."""

    tokenizer: Any

    @property
    def max_seq_length(self) -> int: ...


class PassagePlanner:
    """Splits documents into passages that fit an encoder's window (and the configured budget)."""

    def __init__(self, encoder: CountsTokens, config: ChunkingConfig, prompt: str = "") -> None:
        if config.late:
            from .late_chunking import check_late_chunking

            check_late_chunking(encoder)
        self.encoder = encoder
        self.config = config
        self.count = token_counter(encoder.tokenizer)
        window = int(encoder.max_seq_length) - SPECIAL_TOKENS
        if prompt:
            window -= self.count([prompt])[0]
        self.window = window
        self.budget = min(window, config.max_tokens or window)
        if self.budget < 8:
            raise ValueError(f"the model's window leaves {self.budget} tokens per passage")

    def plan(
        self,
        texts: Sequence[str],
        titles: Sequence[str | None],
        outlines: Sequence[Sequence[Section] | None] | None = None,
    ) -> list[list[Passage]]:
        """The passages of each document, in order; a document that fits is one passage, one with an
        outline (`outlines`, None for a plain document) is cut section by section."""
        encoded = [with_title(t, x) for x, t in zip(texts, titles, strict=True)]
        if not self.config.enabled:
            return [[Passage(0, 0, len(x), x, whole)] for x, whole in zip(texts, encoded, strict=True)]
        sizes = self.count(encoded)
        shapes = list(outlines) if outlines is not None else [None] * len(texts)
        out: list[list[Passage]] = []
        for text, title, whole, size, outline in zip(texts, titles, encoded, sizes, shapes, strict=True):
            if size <= self.budget:
                out.append([Passage(0, 0, len(text), text, whole)])
                continue
            if outline:
                out.append(self._plan_outline(text, title, outline))
                continue
            heading = self.count([f"{title}\n"])[0] if title else 0
            windows = [(0, text)] if size <= self.window else self._split(text, self.window - heading)
            tiled = self.budget >= self.window  # the windows are the passages
            passages: list[Passage] = []
            for offset, window in windows:
                context = with_title(title, window) if self.config.lexical_context == "window" else ""
                for start, part in [(0, window)] if tiled else self._split(window, self.budget - heading):
                    begin, end = offset + start, offset + start + len(part)
                    encoded_part = with_title(title, part)
                    passages.append(Passage(len(passages), begin, end, part, encoded_part, context))
            out.append(passages)
        return out

    def _plan_outline(self, text: str, title: str | None, outline: Sequence[Section]) -> list[Passage]:
        """The passages of a document cut section by section (see the module docstring)."""
        passages: list[Passage] = []
        for section in outline:
            body = text[section.start : section.end]
            if not body.strip():
                continue
            head = "\n".join(p for p in (title, section.path) if p) or None
            rows = section.kind == "table"
            heading = self.count([f"{head}\n"])[0] if head else 0
            fits = self.count([with_title(head, body)])[0] <= self.window
            windows = [(0, body)] if fits else self._split(body, self.window - heading, rows)
            for offset, window in windows:
                context = with_title(head, window) if self.config.lexical_context == "window" else ""
                for start, part in self._split(window, self.budget - heading, rows):
                    begin = section.start + offset + start
                    encoded = with_title(head, part)
                    passages.append(Passage(len(passages), begin, begin + len(part), part, encoded, context))
        return passages

    def _split(self, text: str, room: int, rows: bool = False) -> list[tuple[int, str]]:
        """(offset, text) of the sentence-aligned chunks of `text` that fit `room` tokens (with `rows`,
        line-aligned: a table's rows are never cut unless one alone is over the budget)."""
        room = max(room, 8)
        overlap = 0 if rows else min(self.config.overlap_tokens, room // 2)
        chunker = Chunker(self.count, room, overlap)
        return [(c.start, c.text) for c in chunker.split(text, line_spans(text) if rows else None)]

    def late_vectors(
        self,
        text: str,
        title: str | None,
        passages: Sequence[Passage],
        prompt_name: str | None,
        batch_size: int,
    ) -> Any:
        """Late-chunked vectors of one document's passages (title read in front of each window)."""
        from .late_chunking import late_vectors

        prefix = f"{title}\n" if title else ""
        budget = self.window - (self.count([prefix])[0] if prefix else 0)
        return late_vectors(self.encoder, text, passages, self.count, budget, prefix, prompt_name, batch_size)
