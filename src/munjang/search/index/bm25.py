"""Lexical search: BM25 over tokens, on bm25s's sparse matrix of precomputed per-term scores.

For a query q and document d of length |d| in a corpus of N documents (average length avgdl),
with tf = the count of term t in d and df = the number of documents that contain t,

    score(q, d) = sum over the tokens t of q (repeats count) of idf(t) * tfc(tf, |d|)

and the `method` picks the variant (Kamphuis et al., ECIR 2020, as implemented by bm25s):

    lucene (default)  idf = ln(1 + (N - df + 0.5) / (df + 0.5))   tfc = tf / (tf + k1 * L)
    robertson         idf = ln((N - df + 0.5) / (df + 0.5)), floored at 0;  tfc as lucene
    atire             idf = ln(N / df)                            tfc = tf * (k1 + 1) / (tf + k1 * L)
    bm25l             idf = ln((N + 1) / (df + 0.5))              tfc = (k1 + 1)(c + delta) / (k1 + c + delta)
    bm25+             idf = ln((N + 1) / df)                      tfc = tf * (k1 + 1) / (tf + k1 * L) + delta

where L = 1 - b + b * |d| / avgdl and c = tf / L. Lucene's idf is always positive; its scores omit
the constant factor (k1 + 1). For bm25l and bm25+, tfc(0) > 0: a document without a query term
still gets that term's constant "non-occurrence" score, so all documents score above zero.

Search returns, for each query, the documents that contain at least one query token (a document
without any scores 0 under lucene/robertson/atire and only the constant under bm25l/bm25+), best
first, ties by lower row. Query tokens absent from the corpus are ignored; a query without known
tokens has no hits.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataFormatError
from .tokenizers import Tokenizer, get_tokenizer, tokenizer_from_config
from .verified_file import DamagedIndexFile, checksum, mapped, opened

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
DTYPES = ("float32", "float64")
# Lv & Zhai's recommended deltas (also rank_bm25's defaults).
_DEFAULT_DELTA = {"bm25l": 0.5, "bm25+": 1.0}
CONFIG_NAME = "munjang_bm25.json"
_FORMAT = "munjang-bm25"
# 2: the config lists every file bm25s wrote with its size and xxh3-64 digest, and carries the
# digest of its own other keys; 1 (an older munjang's, no checksums) still loads, unverified.
_FORMAT_VERSION = 2
_VERSIONS = (1, 2)
# A config is a few kilobytes (a tokenizer's dictionary entries at most): past this it is not one.
MAX_CONFIG_BYTES = 16 << 20


@dataclass(frozen=True)
class LexicalHit:
    """One lexical search result: the document's row in the indexed corpus and its BM25 score."""

    row: int
    score: float


def _check_number(name: str, value: object, low: float, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, not {value!r}")
    number = float(value)
    if not (low <= number <= high) or math.isnan(number):
        bounds = f"at least {low}" if high == math.inf else f"between {low} and {high}"
        raise ValueError(f"{name} must be {bounds}, not {value!r}")
    return number


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, not {k!r}")
    return int(k)


def _check_token_lists(docs: Sequence[Sequence[str]], what: str) -> list[list[str]]:
    if isinstance(docs, str):
        raise TypeError(f"{what} must be a sequence of token lists, not a single string")
    out: list[list[str]] = []
    for i, doc in enumerate(docs):
        if isinstance(doc, str) or not isinstance(doc, Sequence):
            raise TypeError(
                f"{what}[{i}] is {type(doc).__name__}; expected a list of token strings "
                "(raw text goes through the text methods, which tokenize it)"
            )
        tokens = list(doc)
        for j, token in enumerate(tokens):
            if not isinstance(token, str):
                raise TypeError(f"{what}[{i}][{j}] is {type(token).__name__}, not str")
            if not token:
                raise ValueError(f"{what}[{i}][{j}] is an empty string; tokens must be non-empty")
        out.append(tokens)
    return out


def _check_texts(texts: Sequence[str], what: str) -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{what} must be a sequence of strings, not a single string; wrap it in a list")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"{what}[{i}] is {type(text).__name__}, not str")
    return out


def _config_digest(config: Mapping[str, Any]) -> str:
    """The xxh3-64 of a saved config's keys but its own digest (in a fixed order)."""
    rest = {key: value for key, value in config.items() if key != "xxh3"}
    return checksum(json.dumps(rest, sort_keys=True, ensure_ascii=False).encode("utf-8"))


def _file_digest(path: Path) -> tuple[int, str]:
    """(size, xxh3-64) of the regular file at `path` (a FIFO or a folder in its place is refused)."""
    with opened(path) as fd:
        data = mapped(fd)
        return (0, checksum(b"")) if data is None else (len(data), checksum(data))


def _verify_files(folder: Path, files: Any) -> None:
    """DataFormatError unless every file the config lists is in `folder`, whole (size and digest)."""
    if not isinstance(files, dict) or not files:
        raise DataFormatError(f"{folder / CONFIG_NAME}: lists no index files to verify")
    for name, want in files.items():
        path = folder / name
        if Path(name).name != name or not isinstance(want, dict):
            raise DataFormatError(f"{folder / CONFIG_NAME}: bad file entry {name!r}")
        try:
            size, digest = _file_digest(path)
        except FileNotFoundError:
            raise DataFormatError(f"{path}: missing (the BM25 index is incomplete)") from None
        except (OSError, DamagedIndexFile) as e:
            raise DataFormatError(f"{path}: cannot be read ({e})") from e
        if size != want.get("bytes"):
            raise DataFormatError(
                f"{path}: {size} bytes, its index config says {want.get('bytes')} (cut short or grown)"
            )
        if digest != want.get("xxh3"):
            raise DataFormatError(f"{path}: checksum mismatch (the file is garbled)")


def _fsync_tree(folder: Path) -> None:
    for path in folder.iterdir():
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())


class BM25Index:
    """A BM25 index over a fixed corpus, built with bm25s; search by text or by tokens.

    `tokenizer` is a name ("auto", "kiwi", "word"; see `munjang.search.index.tokenizers`) or a `Tokenizer`.
    `delta` applies to "bm25l" (default 0.5) and "bm25+" (default 1.0) only. `dtype` is the precision
    of the stored scores ("float32" halves the memory of "float64").

    Documents are rows 0..N-1 in the order given; `index` / `index_tokens` replace the whole index,
    since adding a document changes every idf. Empty documents (or ones without any token left after
    tokenization) are allowed: they keep their row and never match.
    """

    def __init__(
        self,
        tokenizer: str | Tokenizer | Mapping[str, Any] = "auto",
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        dtype: str = "float32",
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; valid methods: {', '.join(METHODS)}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
        self.k1 = _check_number("k1", k1, 0.0)
        self.b = _check_number("b", b, 0.0, 1.0)
        self.method = method
        if method in _DEFAULT_DELTA:
            self.delta: float | None = (
                _DEFAULT_DELTA[method] if delta is None else _check_number("delta", delta, 0.0)
            )
        elif delta is not None:
            raise ValueError(f"delta applies only to methods 'bm25l' and 'bm25+', not {method!r}")
        else:
            self.delta = None
        self.dtype = dtype
        if isinstance(tokenizer, str):
            self.tokenizer: Tokenizer = get_tokenizer(tokenizer)
        elif isinstance(tokenizer, Tokenizer):
            self.tokenizer = tokenizer
        elif isinstance(tokenizer, Mapping):
            self.tokenizer = tokenizer_from_config(tokenizer)
        else:
            raise TypeError(
                f"tokenizer must be a name or a Tokenizer (name, __call__, tokenize_many, "
                f"get_config_dict), not {type(tokenizer).__name__}"
            )
        self._n_docs = 0
        self._bm25: Any = None

    def __len__(self) -> int:
        """The number of indexed documents."""
        return self._n_docs

    def __repr__(self) -> str:
        delta = "" if self.delta is None else f", delta={self.delta}"
        return (
            f"BM25Index(documents={self._n_docs}, method={self.method!r}, k1={self.k1}, b={self.b}"
            f"{delta}, tokenizer={self.tokenizer.name!r})"
        )

    def get_config_dict(self) -> dict[str, Any]:
        """The settings (BM25 parameters and the tokenizer's config), JSON-serialisable."""
        return {
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "delta": self.delta,
            "dtype": self.dtype,
            "tokenizer": self.tokenizer.get_config_dict(),
        }

    def _new_bm25(self) -> Any:
        import bm25s

        return bm25s.BM25(
            k1=self.k1,
            b=self.b,
            delta=0.0 if self.delta is None else self.delta,
            method=self.method,
            dtype=self.dtype,
            backend="numpy",
            csc_backend="numpy",
        )

    def index(self, texts: Sequence[str], show_progress_bar: bool = False) -> None:
        """Tokenize `texts` and index them as rows 0..len(texts)-1, replacing any previous index."""
        checked = _check_texts(texts, "texts")
        tokens = self.tokenizer.tokenize_many(checked, show_progress_bar=show_progress_bar)
        self.index_tokens(tokens, show_progress_bar=show_progress_bar)

    def index_tokens(self, documents: Sequence[Sequence[str]], show_progress_bar: bool = False) -> None:
        """Index pre-tokenized documents (one token list each), replacing any previous index.

        The tokens must come from this index's tokenizer for text queries to match them.
        """
        docs = _check_token_lists(documents, "documents")
        self._n_docs = len(docs)
        if not any(docs):
            # No vocabulary at all (empty corpus or only empty documents): nothing can ever match.
            self._bm25 = None
            return
        bm25 = self._new_bm25()
        bm25.index(docs, create_empty_token=False, show_progress=show_progress_bar)
        self._bm25 = bm25

    def _token_ids(self, tokens: Sequence[str]) -> np.ndarray:
        vocab = self._bm25.vocab_dict
        return np.asarray([vocab[t] for t in tokens if t in vocab], dtype=np.int64)

    def _scores_from_ids(self, ids: np.ndarray) -> np.ndarray:
        if ids.size == 0:
            return np.zeros(self._n_docs, dtype=self.dtype)
        return np.asarray(self._bm25.get_scores_from_ids(ids))

    def get_scores(self, query: str) -> np.ndarray:
        """BM25 scores of every document (shape (N,), the index's dtype) for one text query."""
        return self.get_scores_tokens(self.tokenizer(query))

    def get_scores_tokens(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 scores of every document for one pre-tokenized query (unknown tokens add nothing)."""
        (query,) = _check_token_lists([tokens], "tokens")
        if self._bm25 is None:
            return np.zeros(self._n_docs, dtype=self.dtype)
        return self._scores_from_ids(self._token_ids(query))

    def search(
        self, queries: Sequence[str], k: int = 10, *, rows: Sequence[int] | np.ndarray | None = None
    ) -> list[list[LexicalHit]]:
        """The best `k` documents for each text query, best first (see the module docstring).

        `rows`, if given, restricts the hits to those rows (a filter); scores are not affected.
        """
        checked = _check_texts(queries, "queries")
        k = _check_k(k)
        allowed = self._check_rows(rows)
        return self._search(self.tokenizer.tokenize_many(checked), k, allowed)

    def search_tokens(
        self,
        queries: Sequence[Sequence[str]],
        k: int = 10,
        *,
        rows: Sequence[int] | np.ndarray | None = None,
    ) -> list[list[LexicalHit]]:
        """`search` for pre-tokenized queries."""
        k = _check_k(k)
        allowed = self._check_rows(rows)
        return self._search(_check_token_lists(queries, "queries"), k, allowed)

    def _check_rows(self, rows: Sequence[int] | np.ndarray | None) -> np.ndarray | None:
        """A boolean mask over the documents from a list of allowed rows (None: all rows)."""
        if rows is None:
            return None
        array = np.asarray(rows)
        if array.size == 0:
            return np.zeros(self._n_docs, dtype=bool)
        if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
            raise ValueError("rows must be a 1-d sequence of integer row numbers")
        if array.min() < 0 or array.max() >= self._n_docs:
            raise ValueError(f"rows must be between 0 and {self._n_docs - 1} (the index has {self._n_docs})")
        mask = np.zeros(self._n_docs, dtype=bool)
        mask[array] = True
        return mask

    def _search(self, queries: list[list[str]], k: int, allowed: np.ndarray | None) -> list[list[LexicalHit]]:
        if self._bm25 is None:
            return [[] for _ in queries]
        indices = self._bm25.scores["indices"]
        indptr = self._bm25.scores["indptr"]
        results: list[list[LexicalHit]] = []
        for tokens in queries:
            ids = self._token_ids(tokens)
            if ids.size == 0:
                results.append([])
                continue
            scores = self._scores_from_ids(ids)
            # Documents containing at least one query token: the columns of the CSC score matrix.
            matched = np.zeros(self._n_docs, dtype=bool)
            for t in ids:
                matched[indices[indptr[t] : indptr[t + 1]]] = True
            if allowed is not None:
                matched &= allowed
            rows = np.flatnonzero(matched)
            row_scores = scores[rows]
            if rows.size > k:
                # Keep everything tied with the k-th best so the tie-break by row sees all candidates.
                kth = np.partition(row_scores, rows.size - k)[rows.size - k]
                keep = row_scores >= kth
                rows, row_scores = rows[keep], row_scores[keep]
            order = np.lexsort((rows, -row_scores))[:k]
            results.append([LexicalHit(int(rows[i]), float(row_scores[i])) for i in order])
        return results

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the index to `folder` atomically: build it in a sibling temporary folder, then rename.

        A crash leaves either the previous folder or the new one, never a mix. An existing `folder`
        is replaced only if it is empty or holds a saved BM25 index.
        """
        folder = Path(folder)
        if folder.exists():
            if not folder.is_dir():
                raise FileExistsError(f"{folder} exists and is not a folder")
            if any(folder.iterdir()) and not (folder / CONFIG_NAME).is_file():
                raise FileExistsError(
                    f"{folder} is not empty and is not a BM25 index; refusing to replace it"
                )
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.parent / f".{folder.name}.tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            if self._bm25 is not None:
                self._bm25.save(tmp, show_progress=False)
            config = {
                "format": _FORMAT,
                "format_version": _FORMAT_VERSION,
                "num_docs": self._n_docs,
                "has_bm25s_files": self._bm25 is not None,
                **self.get_config_dict(),
            }
            if self._bm25 is not None:
                written = sorted(p for p in tmp.iterdir() if p.is_file())
                config["files"] = {
                    p.name: dict(zip(("bytes", "xxh3"), _file_digest(p), strict=True)) for p in written
                }
            config["xxh3"] = _config_digest(config)
            (tmp / CONFIG_NAME).write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
            _fsync_tree(tmp)
            if folder.exists():
                old = folder.parent / f".{folder.name}.old-{uuid.uuid4().hex}"
                os.replace(folder, old)
                try:
                    os.replace(tmp, folder)
                except BaseException:
                    os.replace(old, folder)
                    raise
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(cls, folder: str | os.PathLike[str], tokenizer: Tokenizer | None = None) -> BM25Index:
        """Load an index written by `save`, verified before bm25s reads it: the config's digest,
        then every index file's size and digest (DataFormatError naming the file that fails). An
        index saved by an older munjang (format version 1, no checksums) loads unverified.

        The tokenizer is rebuilt from the saved config; pass `tokenizer` for a custom one (its name
        must equal the saved tokenizer's name).
        """
        folder = Path(folder)
        config_path = folder / CONFIG_NAME
        if not folder.is_dir():
            raise FileNotFoundError(f"no BM25 index folder at {folder}")
        if not config_path.exists():
            raise FileNotFoundError(f"{folder} has no {CONFIG_NAME}: not a saved BM25 index")
        try:
            with opened(config_path) as fd:
                raw = os.read(fd, MAX_CONFIG_BYTES + 1)
        except DamagedIndexFile as e:
            raise DataFormatError(str(e)) from None
        if len(raw) > MAX_CONFIG_BYTES:
            raise DataFormatError(f"{config_path}: over {MAX_CONFIG_BYTES} bytes, not a BM25 index config")
        try:
            config = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataFormatError(f"{config_path}: not valid JSON ({e})") from e
        if not isinstance(config, dict) or config.get("format") != _FORMAT:
            raise DataFormatError(f"{config_path}: not a munjang BM25 index config")
        version = config.get("format_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > _FORMAT_VERSION:
            raise DataFormatError(
                f"{config_path}: format version {version} was written by a newer munjang "
                f"(this one reads versions {_VERSIONS[0]}-{_FORMAT_VERSION}); upgrade munjang to load it"
            )
        if "xxh3" in config and config["xxh3"] != _config_digest(config):
            raise DataFormatError(f"{config_path}: checksum mismatch (the config is garbled)")
        if version not in _VERSIONS or isinstance(version, bool):
            raise DataFormatError(
                f"{config_path}: format version {version!r} is not supported "
                f"(this munjang reads versions {_VERSIONS[0]}-{_FORMAT_VERSION})"
            )
        if version >= 2:
            if "xxh3" not in config:
                raise DataFormatError(f"{config_path}: no checksum (the config was edited or garbled)")
            if config.get("has_bm25s_files"):
                _verify_files(folder, config.get("files"))
        try:
            saved_tokenizer = config["tokenizer"]
            if not isinstance(saved_tokenizer, dict):
                raise DataFormatError(
                    f"{config_path}: 'tokenizer' must be an object, not {saved_tokenizer!r}"
                )
            if tokenizer is None:
                tokenizer = tokenizer_from_config(saved_tokenizer)
            elif tokenizer.name != saved_tokenizer.get("name"):
                raise ValueError(
                    f"the index was built with tokenizer {saved_tokenizer.get('name')!r}, "
                    f"not {tokenizer.name!r}; its tokens would not match"
                )
            index = cls(
                tokenizer,
                k1=config["k1"],
                b=config["b"],
                method=config["method"],
                delta=config["delta"],
                dtype=config["dtype"],
            )
            num_docs = int(config["num_docs"])
            has_files = bool(config["has_bm25s_files"])
        except KeyError as e:
            raise DataFormatError(f"{config_path}: missing key {e}") from e
        index._n_docs = num_docs
        if has_files:
            import bm25s

            try:
                bm25 = bm25s.BM25.load(folder, show_progress=False)
            except (OSError, ValueError) as e:
                raise DataFormatError(f"{folder}: the bm25s index files are missing or corrupt ({e})") from e
            if bm25.scores["num_docs"] != num_docs:
                raise DataFormatError(
                    f"{folder}: bm25s holds {bm25.scores['num_docs']} documents, the config says {num_docs}"
                )
            index._bm25 = bm25
        return index
