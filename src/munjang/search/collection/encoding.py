"""A collection's encoding: the model (loaded on first need), passages planned to fit its window,
dense vectors (plain, paced batch by batch beside a server's searches, or late-chunked), query
vectors and BM25 tokens. `Collection` holds one (`collection.encoding`); its searcher encodes
queries through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.base import CollectionError
from .image_files import ImageFiles
from .passages import ChunkingConfig, CountsTokens, Passage, PassagePlanner
from .sections import Section


class Encoding:
    """The models and encoding of one collection, configured by its stored `config`."""

    def __init__(
        self,
        config: dict[str, Any],
        folder: Path | None,
        chunking: ChunkingConfig,
        encoder: Any = None,
        device: str | None = None,
    ) -> None:
        self.config, self.folder, self.chunking, self.device = config, folder, chunking, device
        self._encoder = encoder
        self._analyzer: Any = None
        self._analyzer_generation = 0
        self._analyzer_entry: Any = None  # the config's tokenizer entry the analyzer was made from
        self._query_encoder: Any = None
        self.planner: PassagePlanner | None = None
        # Called before each batch of a write's work by a server that also answers searches on the
        # collection (`tokenize`): it may wait, and returns the torch threads the next batch may use.
        self.pace: Callable[[], int | None] | None = None

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ...encoders.embedder import load_embedder

            model = self.config["model"]
            self._encoder = load_embedder(None if model == "default" else model, device=self.device)
            dim = int(self._encoder.get_embedding_dimension())
            if dim != self.config["dim"]:
                raise CollectionError(
                    f"{model} gives {dim}-d vectors; this collection holds {self.config['dim']}-d"
                )
            self._query_encoder = None  # the full encoder encodes queries from now on
        return self._encoder

    @property
    def query_encoder(self) -> Any:
        """What encodes queries: the collection's encoder once loaded (or given); before that, for
        a static model found locally, its numpy twin (`StaticQueryEncoder`, the same vectors), so a
        process that only searches loads neither torch nor the model through it."""
        if self._encoder is not None:
            return self._encoder
        if self._query_encoder is None:
            self._query_encoder = self._static_query_encoder() or self.encoder
        return self._query_encoder

    def _static_query_encoder(self) -> Any:
        from ...encoders.static.query_encoder import StaticQueryEncoder
        from ...errors import MunjangError
        from ...models.hub import resolve_model_path

        model = self.config["model"]
        try:
            folder = resolve_model_path(None if model == "default" else model, local_files_only=True)
            encoder = StaticQueryEncoder.load(folder)
        except (MunjangError, OSError, ValueError):  # not found here: the full loader says why
            return None
        if encoder is None or encoder.get_embedding_dimension() != self.config["dim"]:
            return None
        return encoder

    def use_encoder(self, encoder: Any) -> None:
        """Encode with `encoder`, the collection's model already loaded elsewhere (a server's), in
        place of loading it again; refused when its vectors are not the collection's size."""
        dim = int(encoder.get_embedding_dimension())
        if dim != self.config["dim"]:
            raise CollectionError(
                f"the encoder gives {dim}-d vectors; this collection holds {self.config['dim']}-d"
            )
        self._encoder = encoder

    @property
    def images(self) -> ImageFiles | None:
        """The stored image files of an image collection (a folder collection's `images/`)."""
        return ImageFiles.of_collection(self.folder)

    def encode(
        self,
        texts: Sequence[str | Path],
        prompt_name: str | None,
        batch_size: int,
        progress: bool,
        queries: bool = False,
    ) -> np.ndarray:
        encoder = self.query_encoder if queries else self.encoder
        vectors = encoder.encode(
            list(texts),
            batch_size=batch_size,
            prompt_name=prompt_name,
            show_progress_bar=progress,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.config["dim"])

    def encode_documents(
        self, texts: list[str | Path], prompt_name: str | None, batch_size: int
    ) -> np.ndarray:
        """`encode` for a write, paced batch by batch when a `pace` hook is set (see `tokenize`);
        texts are sorted by length first, so batches stay as evenly padded as the encoder's own
        sort would make them."""
        if self.pace is None:
            return self.encode(texts, prompt_name, batch_size, False)
        from ...inference.hardware import torch_threads  # torch only once a write encodes

        order = sorted(range(len(texts)), key=lambda i: len(str(texts[i])))
        out = np.zeros((len(texts), self.config["dim"]), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            part = order[start : start + batch_size]
            with torch_threads(self.pace()):
                out[part] = self.encode([texts[i] for i in part], prompt_name, batch_size, False)
        return out

    def tokenize(self, texts: list[str], batch: int = 64) -> list[list[str]]:
        """Lexical tokens for a write. A `pace` hook, set by a server that also answers searches on
        this collection, is called before each batch of a write's work: it may wait while a search
        is in flight and returns the torch threads the next encoding batch may use (None: all)."""
        if self.pace is None:
            return list(self.tokenizer().tokenize_many(texts))
        tokens: list[list[str]] = []
        for start in range(0, len(texts), batch):
            self.pace()
            tokens += self.tokenizer().tokenize_many(texts[start : start + batch])
        return tokens

    def analyzer(self) -> Any:
        """The collection's lexical analysis (`index/analysis.py`): its tokenizer with the analysis
        settings in its config, made again only when their generation (bumped by each edit) moves or
        the config's tokenizer entry is replaced."""
        from ..index.analysis import AnalysisSettings

        generation = self.config.get("analysis_generation", 0)
        entry = self.config["lexical"]["tokenizer"]
        stale = self._analyzer_generation != generation or self._analyzer_entry is not entry
        if self._analyzer is None or stale:
            self._analyzer = self.analyzer_for(AnalysisSettings.from_config(self.config.get("analysis")))
            self._analyzer_generation, self._analyzer_entry = generation, entry
        return self._analyzer

    def analyzer_for(self, settings: Any) -> Any:
        """This collection's tokenizer with `settings` (an `AnalysisError` if it cannot honour them)."""
        from ..index.analysis import Analyzer

        # Collections made before the whole config was kept hold its name, and Kiwi's multi-word
        # dictionary (`tokenizer_from_config`'s rule for configs without `multi_words`).
        saved = self.config["lexical"]["tokenizer"]
        return Analyzer({"name": saved} if isinstance(saved, str) else saved, settings)

    def tokenizer(self) -> Any:
        """What documents are tokenized with for BM25."""
        return self.analyzer().documents

    def query_tokenizer(self) -> Any:
        """What queries are tokenized with for BM25 (query-time synonyms and typos on top)."""
        return self.analyzer().queries

    def warm_up(self) -> None:
        """Load the lexical analyser now. Kiwi's model takes a second or more to load and holds the
        interpreter lock meanwhile, so a server loads it when it opens a collection rather than
        stalling every thread at the first Korean text of a write."""
        self.tokenizer()("한국어 문장")

    def plan(
        self, texts: list[str], titles: list[str | None], outlines: list[list[Section] | None] | None = None
    ) -> list[list[Passage]]:
        """Each document's passages. An encoder that cannot count tokens (no `tokenizer` or
        `max_seq_length`) gets each document whole, as it would encode it."""
        encoder = self.encoder
        if not isinstance(encoder, CountsTokens):
            return [[Passage(0, 0, len(t), t, t)] for t in texts]
        if self.planner is None:
            name = self.config["document_prompt_name"]
            prompt = (getattr(encoder, "prompts", {}) or {}).get(name, "") if name else ""
            self.planner = PassagePlanner(encoder, self.chunking, prompt)
        return self.planner.plan(texts, titles, outlines)

    def vectors(
        self,
        passages: list[tuple[int, Passage, int]],
        inputs: list[str | Path],
        hashes: list[str],
        cached: set[str],
        texts: list[str],
        titles: list[str | None],
        batch_size: int,
    ) -> tuple[list[str], np.ndarray]:
        """The cache keys and vectors of the passages not in the embedding cache: each encoded on
        its own (its text, or an image document's image), or with late chunking (`late_chunking.py`)
        per document, all its passages at once."""
        prompt_name = self.config["document_prompt_name"]
        plain: dict[str, str | Path] = {}
        late: dict[int, list[tuple[Passage, str]]] = {}
        missing: set[int] = set()
        for (i, p, n), x, h in zip(passages, inputs, hashes, strict=True):
            if self.chunking.late and n > 1 and self.planner is not None:
                late.setdefault(i, []).append((p, h))
                if h not in cached:
                    missing.add(i)
            elif h not in cached:
                plain.setdefault(h, x)
        keys, parts = list(plain), []
        if plain:
            parts.append(self.encode_documents(list(plain.values()), prompt_name, batch_size))
        for i in sorted(missing):
            assert self.planner is not None
            doc = [p for p, _ in late[i]]
            parts.append(self.planner.late_vectors(texts[i], titles[i], doc, prompt_name, batch_size))
            keys += [h for _, h in late[i]]
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.config["dim"]), np.float32)
        return keys, vectors
