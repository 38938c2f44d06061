"""BEIR-format retrieval data: a corpus, queries and graded relevance judgements (qrels).

A BEIR folder holds

- ``corpus.jsonl``: one JSON object a line, ``{"_id": ..., "title": ..., "text": ..., ...}``; ``title`` is
  optional and any other field is kept as metadata of the document;
- ``queries.jsonl``: one JSON object a line, ``{"_id": ..., "text": ...}`` (other fields are ignored);
- ``qrels/<split>.tsv``: tab-separated ``query-id corpus-id score`` rows, under that header line, with an
  integer relevance grade (0 = judged not relevant).

Each file may instead be gzip-compressed with a ``.gz`` suffix (``corpus.jsonl.gz``); a folder with both
forms of one file is refused as ambiguous. Files are streamed line by line, so large corpora are not read
into memory twice.

Malformed content raises `DataFormatError` naming the file and the 1-based line: invalid JSON or UTF-8, a
record that is not an object, a missing or empty ``_id``, a missing ``text`` (an empty query, or a document
whose title and text are both empty), a duplicate id, a qrels row without exactly three tab-separated
fields, a non-integer score, or the same (query, document) pair judged twice. Nothing is dropped silently;
only blank lines are passed over.

Qrels rows that name an id missing from the other files are not malformed, and real BEIR sets have them
(qrels for documents removed from a corpus). `load_beir(..., unknown_ids=...)` decides what happens:

- ``"keep"`` (default): rows naming an unknown document are kept, as BEIR and pytrec_eval do, so that
  document counts as relevant but can never be retrieved and the scores equal published BEIR numbers;
- ``"drop"``: such rows are dropped, so the scores measure only what can be retrieved;
- ``"error"``: the first such row raises `DataFormatError`.

Rows naming an unknown query are dropped under "keep" and "drop" (a query without text cannot be
evaluated). Either way a warning gives the number of rows and the first line, and `RetrievalData.counts`
records them (``unknown_query_rows``, ``unknown_corpus_rows``).

As in BEIR's loader, only the queries that have a qrels row in the split are loaded (``queries.jsonl`` often
holds the queries of every split). Queries whose rows all have score 0 are kept in the data but, as in BEIR,
MTEB and sentence-transformers, are left out of evaluation: `RetrievalData.relevant_docs` has only queries
with at least one document of score > 0.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataFormatError

QRELS_HEADER = ("query-id", "corpus-id", "score")
UNKNOWN_ID_MODES = ("keep", "drop", "error")


@dataclass
class RetrievalData:
    """A retrieval test set: documents, queries and graded relevance judgements.

    `corpus` maps a document id to ``{"title": str, "text": str, ...metadata}``; `queries` maps a query id
    to its text; `qrels` maps a query id to ``{document id: grade}``, where a grade > 0 means relevant.
    `source` says where the data came from and `counts` what the loader or builder saw (see its docstring).
    """

    corpus: dict[str, dict[str, Any]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    source: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    def relevant_docs(self) -> dict[str, set[str]]:
        """Query id -> ids of its relevant documents (grade > 0), for the queries that are evaluated.

        Queries without text or without any relevant document are left out, as BEIR does.
        """
        out: dict[str, set[str]] = {}
        for qid, judged in self.qrels.items():
            relevant = {doc for doc, grade in judged.items() if grade > 0}
            if relevant and qid in self.queries:
                out[qid] = relevant
        return out

    def corpus_texts(self, sep: str = " ") -> dict[str, str]:
        """Document id -> ``title + sep + text``, stripped: the text a dense retriever encodes, as in BEIR."""
        return {
            doc_id: (doc.get("title", "") + sep + doc["text"]).strip() for doc_id, doc in self.corpus.items()
        }

    def stats(self) -> dict[str, int]:
        """Sizes: documents, queries, judged (query, document) pairs and the queries that are evaluated."""
        return {
            "corpus": len(self.corpus),
            "queries": len(self.queries),
            "qrels": sum(len(judged) for judged in self.qrels.values()),
            "evaluated_queries": len(self.relevant_docs()),
        }


def load_beir(
    folder: str | os.PathLike[str], split: str = "test", *, unknown_ids: str = "keep"
) -> RetrievalData:
    """Read a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (or their ``.gz``).

    `unknown_ids` ("keep", "drop" or "error") handles qrels rows naming an id missing from the corpus or
    the queries; see the module docstring. Raises FileNotFoundError for a missing folder or file and
    DataFormatError (file and line) for malformed content. `counts` of the result has ``corpus``,
    ``queries_in_file``, ``queries`` (those with qrels in the split), ``qrels_rows``,
    ``unknown_query_rows`` and ``unknown_corpus_rows``.
    """
    if unknown_ids not in UNKNOWN_ID_MODES:
        raise ValueError(f"unknown_ids must be one of {', '.join(UNKNOWN_ID_MODES)}, not {unknown_ids!r}")
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"BEIR folder not found: {folder}")
    corpus_file = _find(root, "corpus.jsonl")
    queries_file = _find(root, "queries.jsonl")
    qrels_file = _find(root / "qrels", f"{split}.tsv")

    corpus = _read_corpus(corpus_file)
    all_queries = _read_queries(queries_file)
    rows = _read_qrels(qrels_file)

    qrels: dict[str, dict[str, int]] = {}
    unknown_query: list[tuple[int, str]] = []
    unknown_corpus: list[tuple[int, str]] = []
    for line, qid, doc_id, grade in rows:
        if qid not in all_queries:
            unknown_query.append((line, qid))
            if unknown_ids == "error":
                raise _error(qrels_file, line, f"query-id {qid!r} is not in {queries_file.name}")
            continue
        if doc_id not in corpus:
            unknown_corpus.append((line, doc_id))
            if unknown_ids == "error":
                raise _error(qrels_file, line, f"corpus-id {doc_id!r} is not in {corpus_file.name}")
            if unknown_ids == "drop":
                continue
        qrels.setdefault(qid, {})[doc_id] = grade
    _warn_unknown(qrels_file, unknown_query, f"query-id not in {queries_file.name}", "dropped")
    _warn_unknown(
        qrels_file,
        unknown_corpus,
        f"corpus-id not in {corpus_file.name}",
        "kept (never retrievable)" if unknown_ids == "keep" else "dropped",
    )
    queries = {qid: text for qid, text in all_queries.items() if qid in qrels}
    counts = {
        "corpus": len(corpus),
        "queries_in_file": len(all_queries),
        "queries": len(queries),
        "qrels_rows": len(rows),
        "unknown_query_rows": len(unknown_query),
        "unknown_corpus_rows": len(unknown_corpus),
    }
    return RetrievalData(corpus, queries, qrels, source=os.fspath(folder), counts=counts)


def save_beir(
    data: RetrievalData, folder: str | os.PathLike[str], split: str = "test", *, compress: bool = False
) -> Path:
    """Write `data` as a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

    With `compress`, each file is written gzip-compressed with a ``.gz`` suffix. Texts are written as UTF-8
    (not escaped), so Korean stays readable. Raises ValueError for data BEIR files cannot hold: an id with
    a tab or line break, or a document without ``text`` or with a field named ``_id``. Returns the folder.
    """
    root = Path(folder)
    for qid, judged in data.qrels.items():
        for doc_id in (qid, *judged):
            _check_id(doc_id)
    suffix = ".gz" if compress else ""
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with _open_write(root / f"corpus.jsonl{suffix}") as out:
        for doc_id, doc in data.corpus.items():
            _check_id(doc_id)
            if "_id" in doc or not isinstance(doc.get("text"), str):
                raise ValueError(f"document {doc_id!r} needs a string 'text' and no '_id' field")
            record = {"_id": doc_id, "title": doc.get("title", ""), **doc}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    with _open_write(root / f"queries.jsonl{suffix}") as out:
        for qid, text in data.queries.items():
            _check_id(qid)
            out.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    with _open_write(root / "qrels" / f"{split}.tsv{suffix}") as out:
        out.write("\t".join(QRELS_HEADER) + "\n")
        for qid, judged in data.qrels.items():
            for doc_id, grade in judged.items():
                out.write(f"{qid}\t{doc_id}\t{int(grade)}\n")
    return root


# -- reading ---------------------------------------------------------------------------------------


def _find(folder: Path, name: str) -> Path:
    """`folder/name` or `folder/name.gz`; exactly one of them must exist."""
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.is_file() and packed.is_file():
        raise DataFormatError(f"{folder}: both {name} and {name}.gz exist; keep one")
    if plain.is_file():
        return plain
    if packed.is_file():
        return packed
    raise FileNotFoundError(f"BEIR file not found: {plain} (or {packed.name})")


def _error(path: Path, line: int, message: str) -> DataFormatError:
    return DataFormatError(f"{path} line {line}: {message}")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without the line break) for every non-blank line, decoded as UTF-8."""
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rb") as raw:
            for number, data in enumerate(raw, start=1):
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise _error(path, number, f"not valid UTF-8 ({err.reason})") from err
                if number == 1:
                    text = text.removeprefix("\ufeff")
                text = text.rstrip("\r\n")
                if text.strip():
                    yield number, text
    except (OSError, EOFError, zlib.error) as err:
        raise DataFormatError(f"{path} line {number + 1}: cannot read the file ({err})") from err


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, text in _lines(path):
        try:
            record = json.loads(text)
        except json.JSONDecodeError as err:
            raise _error(path, line, f"invalid JSON ({err.msg} at column {err.colno})") from err
        if not isinstance(record, dict):
            raise _error(path, line, f"expected a JSON object, got {type(record).__name__}")
        yield line, record


def _record_id(path: Path, line: int, record: dict[str, Any], seen: dict[str, int]) -> str:
    """The record's ``_id`` as a string (integers are accepted), checked for presence and uniqueness."""
    value = record.get("_id")
    if value is None:
        raise _error(path, line, "missing '_id'")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _error(path, line, f"'_id' is {type(value).__name__}, not a string")
    record_id = str(value)
    if not record_id.strip():
        raise _error(path, line, "'_id' is empty")
    if record_id in seen:
        raise _error(path, line, f"duplicate _id {record_id!r} (first on line {seen[record_id]})")
    seen[record_id] = line
    return record_id


def _string_field(path: Path, line: int, record: dict[str, Any], key: str, required: bool) -> str:
    value = record.get(key)
    if value is None:
        if required:
            raise _error(path, line, f"missing '{key}'")
        return ""
    if not isinstance(value, str):
        raise _error(path, line, f"'{key}' is {type(value).__name__}, not a string")
    return value


def _read_corpus(path: Path) -> dict[str, dict[str, Any]]:
    corpus: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for line, record in _records(path):
        doc_id = _record_id(path, line, record, seen)
        text = _string_field(path, line, record, "text", required=True)
        title = _string_field(path, line, record, "title", required=False)
        if not (title.strip() or text.strip()):
            raise _error(path, line, f"document {doc_id!r} has an empty title and text")
        extra = {k: v for k, v in record.items() if k not in ("_id", "title", "text")}
        corpus[doc_id] = {"title": title, "text": text, **extra}
    if not corpus:
        raise DataFormatError(f"{path}: no documents in the file")
    return corpus


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line, record in _records(path):
        qid = _record_id(path, line, record, seen)
        text = _string_field(path, line, record, "text", required=True)
        if not text.strip():
            raise _error(path, line, f"query {qid!r} has an empty text")
        queries[qid] = text
    if not queries:
        raise DataFormatError(f"{path}: no queries in the file")
    return queries


def _read_qrels(path: Path) -> list[tuple[int, str, str, int]]:
    """(line, query id, document id, grade) for every row; the header line is optional."""
    rows: list[tuple[int, str, str, int]] = []
    seen: dict[tuple[str, str], int] = {}
    first = True
    for line, text in _lines(path):
        fields = text.split("\t")
        if len(fields) != len(QRELS_HEADER):
            raise _error(
                path, line, f"expected 3 tab-separated fields (query-id corpus-id score), got {len(fields)}"
            )
        qid, doc_id, score = fields
        try:
            grade = int(score)
        except ValueError:
            if first and tuple(f.strip().lower() for f in fields) == QRELS_HEADER:
                first = False
                continue
            expected = f" (nor the header {' '.join(QRELS_HEADER)!r})" if first else ""
            raise _error(path, line, f"score {score!r} is not an integer{expected}") from None
        first = False
        if not qid or not doc_id:
            raise _error(path, line, "empty query-id or corpus-id")
        if (qid, doc_id) in seen:
            raise _error(
                path,
                line,
                f"query {qid!r} and document {doc_id!r} judged twice (also on line {seen[qid, doc_id]})",
            )
        seen[qid, doc_id] = line
        rows.append((line, qid, doc_id, grade))
    if not rows:
        raise DataFormatError(f"{path}: no qrels rows in the file")
    return rows


def _warn_unknown(path: Path, rows: list[tuple[int, str]], what: str, action: str) -> None:
    if rows:
        line, value = rows[0]
        warnings.warn(
            f"{path}: {len(rows)} qrels rows with a {what} {action} (first on line {line}: {value!r})",
            UserWarning,
            stacklevel=3,
        )


# -- writing ---------------------------------------------------------------------------------------


def _check_id(value: str) -> None:
    if not isinstance(value, str) or not value or any(c in value for c in "\t\r\n"):
        raise ValueError(
            f"id {value!r} cannot be written to BEIR files (empty, not a string, or a tab/line break)"
        )


def _open_write(path: Path) -> Any:
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8", newline="\n")
    return open(path, "w", encoding="utf-8", newline="\n")
