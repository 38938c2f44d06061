"""`munjang index ...`: persistent collections from the command line (create, add, search, delete, info)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..ingest import MAX_BYTES, SUFFIXES
from .index_text import SCORE_LEGEND, resume_or_refuse, snippet, stage_scores, stopped
from .options import BatchOption, DeviceOption, FieldOption, JsonLinesOption, ModelOption

app = typer.Typer()

FolderArgument = Annotated[
    Path, typer.Argument(help="The collection folder (with --backend: the collection's name).")
]
BackendOption = Annotated[
    str | None,
    typer.Option(
        envvar="MUNJANG_BACKEND",
        help="Keep the collection in PostgreSQL + pgvector at this postgresql:// URL, or in Qdrant "
        "(qdrant+local://FOLDER, qdrant://HOST:PORT/FOLDER), instead of a folder.",
    ),
]


def _open(folder: Path, backend: str | None, device: str | None = None, readonly: bool = False) -> Any:
    from ..search.collection.collection import Collection

    return Collection.open(_where(folder, backend), backend=backend, device=device, readonly=readonly)


def _where(folder: Path, backend: str | None) -> Any:
    return folder if backend is None else str(folder)


@app.command("create")
def create(
    folder: FolderArgument,
    backend: BackendOption = None,
    model: ModelOption = None,
    index: Annotated[str, typer.Option(help="Dense index: exact (brute force) or hnsw.")] = "exact",
    metric: Annotated[str, typer.Option(help="cosine or dot.")] = "cosine",
    tokenizer: Annotated[
        str,
        typer.Option(
            help="BM25 tokens: auto (Kiwi for Hangul, words otherwise), auto-mecab (MeCab for Hangul: "
            "a new process loads it in milliseconds, Kiwi in seconds), kiwi, mecab, word."
        ),
    ] = "auto",
    bm25_method: Annotated[str, typer.Option(help="lucene, robertson, atire, bm25l, bm25+.")] = "lucene",
    connectivity: Annotated[int, typer.Option(min=2, help="HNSW links per node (M).")] = 16,
    expansion_add: Annotated[int, typer.Option(min=1, help="HNSW ef at build time.")] = 128,
    expansion_search: Annotated[int, typer.Option(min=1, help="HNSW ef at query time.")] = 64,
    chunk_tokens: Annotated[
        int | None,
        typer.Option(
            min=16,
            help="Passage budget in tokens (default 128; BM25 reads each passage's window of the document).",
        ),
    ] = None,
    chunk_overlap: Annotated[
        int, typer.Option(min=0, help="Tokens of whole sentences repeated between passages.")
    ] = 32,
    chunking: Annotated[
        bool, typer.Option("--chunking/--no-chunking", help="Split documents longer than a passage.")
    ] = True,
    lexical_context: Annotated[
        str, typer.Option(help="What BM25 reads for a passage: window (of the document) or passage.")
    ] = "window",
    late_chunking: Annotated[
        bool,
        typer.Option(
            "--late-chunking", help="Pool each passage from a pass over its window of the document."
        ),
    ] = False,
    sparse_model: Annotated[
        str | None,
        typer.Option(help="A sparse (SPLADE) model folder or hub id: a third retriever (docs/sparse.md)."),
    ] = None,
    multi_vector_model: Annotated[
        str | None,
        typer.Option(
            help="A multi-vector (ColBERT) model folder or hub id: MaxSim search (docs/multi-vector.md)."
        ),
    ] = None,
    m3_model: Annotated[
        str | None,
        typer.Option(
            help="A bge-m3 folder or hub id in place of --model: dense, sparse, ColBERT in one pass."
        ),
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Create an empty collection bound to an embedding model."""
    from ..search.collection.collection import Collection

    hnsw = (
        {"connectivity": connectivity, "expansion_add": expansion_add, "expansion_search": expansion_search}
        if index == "hnsw"
        else None
    )
    col = Collection.create(
        _where(folder, backend),
        model,
        backend=backend,
        index=index,
        metric=metric,
        tokenizer=tokenizer,
        bm25={"method": bm25_method},
        hnsw=hnsw,
        chunking={
            "enabled": chunking,
            **({} if chunk_tokens is None else {"max_tokens": chunk_tokens}),
            "overlap_tokens": chunk_overlap,
            "lexical_context": lexical_context,
            "late": late_chunking,
        },
        device=device,
        sparse_model=sparse_model,
        multi_vector_model=multi_vector_model,
        m3_model=m3_model,
    )
    info = col.info()
    col.close()
    typer.echo(
        f"created {info['folder']}: {info['model']} "
        f"({info['dim']}-d, {info['metric']}, {info['index']} index)"
    )


AddFormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        help="auto; txt, jsonl, csv, tsv (files of records); files (one document per file); images "
        "(image files and folders of them, for a CLIP model; auto when every path holds images only).",
    ),
]


@app.command("add")
def add(
    folder: FolderArgument,
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Records: .txt (one per line), .jsonl, .csv or .tsv files. Or documents, one per file: "
            ".md, .html, .htm, .pdf, .hwp, .hwpx, .docx, .pptx, .xlsx files and folders of them (.txt too, "
            "inside folders or with --format files); the id is the path under the folder given.",
            show_default=False,
        ),
    ],
    backend: BackendOption = None,
    field: FieldOption = "text",
    id_field: Annotated[
        str, typer.Option(help="Id field / column; records without one get FILE:LINE as their id.")
    ] = "id",
    input_format: AddFormatOption = "auto",
    upsert: Annotated[bool, typer.Option("--upsert", help="Replace documents whose id exists.")] = False,
    skip_existing: Annotated[
        bool,
        typer.Option(
            "--skip-existing",
            help="Keep documents whose id exists, changed or not (a rerun of the same add resumes "
            "without it; always on for document files).",
        ),
    ] = False,
    recursive: Annotated[bool, typer.Option(help="Document folders: include subfolders.")] = True,
    max_file_mb: Annotated[
        float, typer.Option(min=0, help="Document files larger than this are reported, not read.")
    ] = MAX_BYTES / 2**20,
    batch_size: BatchOption = 32,
    commit_every: Annotated[
        int | None,
        typer.Option(min=1, help="Documents per committed transaction (default 1000; document files: 100)."),
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Add documents: records (jsonl: other fields become metadata; csv/tsv: other columns), or whole
    files (.md, .html, .pdf, .hwp, .hwpx, .docx, .pptx, .xlsx, .txt: path, format, title, pages and
    the office files' outline become metadata).

    Adding files resumes: files whose id is already in the collection are not read again (unless
    --upsert). A file that cannot be read is reported on one `error:` line and the rest are added; the
    exit status is then 1.
    """
    if upsert and skip_existing:
        raise ValueError("--upsert and --skip-existing exclude each other")
    if _reads_images(paths, input_format, recursive):
        with _open(folder, backend, device) as col:
            failed = _add_images(col, paths, upsert=upsert, recursive=recursive, batch_size=batch_size)
        if failed:
            raise typer.Exit(1)
        return
    if _reads_documents(paths, input_format):
        _add_files(
            folder,
            backend,
            paths,
            upsert=upsert,
            recursive=recursive,
            max_bytes=int(max_file_mb * 2**20),
            batch_size=batch_size,
            per_commit=commit_every or FILES_PER_COMMIT,
            device=device,
        )
        return
    from ..data import read_records

    records, ids, unreadable = [], [], []

    def skip(error: Exception) -> None:  # the record's line named, the others added
        typer.echo(f"error: {error}", err=True)
        unreadable.append(error)

    for path in paths:
        found = read_records(path, input_format, field, id_field=id_field, on_error=skip)
        records += found
        ids += [r.id if r.id is not None else f"{path.name}:{r.line}" for r in found]
    if not records:
        raise ValueError(f"{', '.join(map(str, paths))}: no documents")
    conflict = "upsert" if upsert else "skip" if skip_existing else "error"
    texts, metadata = [r.text for r in records], [r.metadata for r in records]
    with _open(folder, backend, device) as col:
        if conflict == "error":
            conflict = resume_or_refuse(col, ids, texts, metadata)
        try:
            result = col.add(
                ids,
                texts,
                metadata,
                on_conflict=conflict,
                batch_size=batch_size,
                commit_every=commit_every or 1000,
                show_progress_bar=True,
            )
        except KeyboardInterrupt:
            typer.echo(stopped(len(col), col.location), err=True)
            raise
        total = len(col)
    typer.echo(
        f"added {result.added}, updated {result.updated}, skipped {result.skipped}"
        + (f", failed {len(unreadable)}" if unreadable else "")
        + f" (encoded {result.encoded}, the rest from the cache); {total} documents in {col.location}"
    )
    if unreadable:
        raise typer.Exit(1)


# Document files: read and added this many at a time (fewer when their text passes FILE_BATCH_CHARS), so an
# interrupted add keeps every finished batch.
FILES_PER_COMMIT = 100
FILE_BATCH_CHARS = 20_000_000
RECORD_FORMATS = ("txt", "jsonl", "csv", "tsv")


def _reads_documents(paths: list[Path], input_format: str) -> bool:
    """Whether `paths` are document files (one document each) rather than files of records. With
    --format auto: folders and .md/.html/.htm/.pdf files are documents, and so is a .txt beside them;
    a .txt alone stays one record per line, as before documents were read."""
    from ..data.texts import detect_text_format
    from ..ingest import file_format

    if input_format in ("files", "images"):
        return input_format == "files"
    folders = [p for p in paths if p.is_dir()]
    if input_format != "auto":
        if input_format not in RECORD_FORMATS:
            raise ValueError(
                f"unknown --format {input_format!r}; choose auto, {', '.join(RECORD_FORMATS)}, files"
            )
        if folders:
            raise ValueError(f"{folders[0]} is a folder: --format {input_format} reads a file of records")
        return False
    documents = folders + [p for p in paths if file_format(p) not in (None, "text")]
    if not documents:
        return False
    records = [p for p in paths if not p.is_dir() and detect_text_format(p) in ("jsonl", "csv", "tsv")]
    if records:
        kind = "folder" if documents[0].is_dir() else "file"
        raise ValueError(
            f"{records[0]} holds records and {documents[0]} is a document {kind}: add them in separate runs"
        )
    return True


def _add_files(
    folder: Path,
    backend: str | None,
    paths: list[Path],
    *,
    upsert: bool,
    recursive: bool,
    max_bytes: int,
    batch_size: int,
    per_commit: int,
    device: str | None,
) -> None:
    """Read document files into the collection in committed batches, reporting each unreadable file on
    one line and going on; skip files whose id is stored (unless `upsert`)."""
    import logging
    import sys

    from tqdm.auto import tqdm

    from ..errors import MissingExtraError
    from ..ingest import ReadError, document_id, find_files, read_file

    # pypdf logs warnings about damaged PDFs; the one error line per file says enough.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    failed = 0

    def report(error: ReadError | str) -> None:
        nonlocal failed
        failed += 1
        tqdm.write(f"error: {error}", file=sys.stderr)

    with _open(folder, backend, device) as col:
        files: list[tuple[Path, Path, str]] = []
        owner: dict[str, Path] = {}
        for file, root in find_files(paths, recursive=recursive, on_error=report):
            doc_id = document_id(file, root)
            if doc_id in owner:
                report(
                    f"{file}: its id {doc_id!r} is already the id of {owner[doc_id]}; "
                    "add the folders from a common parent folder"
                )
                continue
            owner[doc_id] = file
            files.append((file, root, doc_id))
        if not files and not failed:
            raise ValueError(f"{', '.join(map(str, paths))}: no {', '.join(SUFFIXES)} files")
        skipped = 0
        if not upsert:
            # resuming: a stored file is not read again (one indexed lookup per id)
            pending = [f for f in files if f[2] not in col]
            skipped, files = len(files) - len(pending), pending
        totals = {"added": 0, "updated": 0}
        batch: list[Any] = []

        def commit() -> None:
            nonlocal skipped
            result = col.add(
                [d.id for d in batch],
                [d.text for d in batch],
                [{**d.metadata, **({"title": d.title} if d.title else {})} for d in batch],
                on_conflict="upsert" if upsert else "skip",
                batch_size=batch_size,
                commit_every=len(batch),
                show_progress_bar=False,
            )
            totals["added"] += result.added
            totals["updated"] += result.updated
            skipped += result.skipped
            batch.clear()

        finished = interrupted = False
        try:
            for file, root, _ in tqdm(files, desc="reading", unit="file", disable=None):
                try:
                    batch.append(read_file(file, root, max_bytes=max_bytes))
                except ReadError as e:
                    report(e)
                    continue
                except MissingExtraError as e:  # a reader's library is not installed: this file only
                    report(f"{file}: {e}")
                    continue
                if len(batch) >= per_commit or sum(len(d.text) for d in batch) >= FILE_BATCH_CHARS:
                    commit()
            if batch:
                commit()
            finished = True
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            typer.echo(
                f"added {totals['added']}, updated {totals['updated']}, skipped {skipped}, failed {failed}"
                f"{'' if finished else ' before stopping'}; {len(col)} documents in {col.location}"
            )
            if interrupted:
                typer.echo(stopped(len(col), col.location), err=True)
    if failed:
        raise typer.Exit(1)


def _image_files(paths: list[Path], recursive: bool) -> list[tuple[Path, Path | None]]:
    """The image files among `paths` (folders searched for them), each with the folder it was found in."""
    from ..images import IMAGE_SUFFIXES

    found: list[tuple[Path, Path | None]] = []
    for path in paths:
        if path.is_dir():
            inside = path.rglob("*") if recursive else path.glob("*")
            found += [(f, path) for f in sorted(inside) if f.suffix.lower() in IMAGE_SUFFIXES and f.is_file()]
        elif path.suffix.lower() in IMAGE_SUFFIXES:
            found.append((path, None))
    return found


def _reads_images(paths: list[Path], input_format: str, recursive: bool) -> bool:
    """Whether to add `paths` as images: --format images, or with auto, when they are image files and
    folders that hold images and no document files."""
    from ..ingest import file_format

    if input_format != "auto":
        return input_format == "images"
    if any(not p.is_dir() and file_format(p) is not None for p in paths):
        return False
    files = [p for p in paths if not p.is_dir()]
    if len(_image_files(files, recursive)) != len(files):
        return False
    for folder in (p for p in paths if p.is_dir()):
        inside = list(folder.rglob("*") if recursive else folder.glob("*"))
        if any(file_format(f) is not None for f in inside) or not _image_files([folder], recursive):
            return False
    return True


def _add_images(col: Any, paths: list[Path], *, upsert: bool, recursive: bool, batch_size: int) -> int:
    """Add image files in committed batches, skipping stored ids (unless `upsert`); each unreadable image
    is reported on one `error:` line and the rest are added. Returns how many failed."""
    import sys

    from tqdm.auto import tqdm

    from ..ingest import document_id

    files = [(f, document_id(f, root)) for f, root in _image_files(paths, recursive)]
    if not files:
        raise ValueError(f"{', '.join(map(str, paths))}: no image files")
    pending = files if upsert else [(f, i) for f, i in files if i not in col]
    added = updated = failed = 0
    conflict = "upsert" if upsert else "skip"
    try:
        starts = range(0, len(pending), FILES_PER_COMMIT)
        for start in tqdm(starts, desc="images", unit="batch", disable=None):
            batch = pending[start : start + FILES_PER_COMMIT]
            files_in, ids = [f for f, _ in batch], [i for _, i in batch]
            result = col.add_images(files_in, ids, on_conflict=conflict, batch_size=batch_size)
            for message in result.failed:
                tqdm.write(f"error: {message}", file=sys.stderr)
            added, updated = added + result.added, updated + result.updated
            failed += len(result.failed)
    finally:
        typer.echo(
            f"added {added} images, updated {updated}, skipped {len(files) - len(pending)}, failed {failed}; "
            f"{len(col)} documents in {col.location}"
        )
    return failed


def _query_images(paths: list[Path]) -> list[Any]:
    """The query images, read now so that a missing or broken file is one error naming it."""
    from ..images import load_image

    return [load_image(p) for p in paths]


def _weights(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--weights {text!r}: expected numbers separated by commas, e.g. 0.7,0.3") from None


@app.command("search")
def search(
    folder: FolderArgument,
    query: Annotated[
        list[str] | None, typer.Option("--query", "-q", help="Query text (repeat for several).")
    ] = None,
    image: Annotated[
        list[Path] | None,
        typer.Option("--image", help="Query image file, for a CLIP collection (repeat for several)."),
    ] = None,
    backend: BackendOption = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Results per query.")] = 10,
    mode: Annotated[
        str,
        typer.Option(
            help="dense, lexical (BM25), sparse, multi_vector (a collection with such a model), hybrid, "
            "or m3 (a bge-m3 collection: bge-m3's weighted score)."
        ),
    ] = "dense",
    hybrid: Annotated[bool, typer.Option("--hybrid", help="Same as --mode hybrid.")] = False,
    fusion: Annotated[
        str | None, typer.Option(help="Hybrid fusion: rrf or weighted (default: the collection default).")
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option(help="Fusion weights dense,lexical (e.g. 0.7,0.3); for m3 dense,sparse,colbert."),
    ] = None,
    rrf_k: Annotated[float, typer.Option(min=0, help="RRF constant.")] = 60.0,
    normalization: Annotated[
        str | None,
        typer.Option(help="Weighted fusion: minmax, zscore, none (default: the collection default)."),
    ] = None,
    candidates: Annotated[int, typer.Option(min=1, help="Candidates per retriever for fusion/rerank.")] = 100,
    rerank: Annotated[str | None, typer.Option(help="Cross-encoder that re-scores the candidates.")] = None,
    rerank_k: Annotated[int | None, typer.Option(min=1, help="How many candidates to rerank.")] = None,
    filters: Annotated[
        list[str] | None,
        typer.Option("--filter", help="Metadata filter: key=value (repeat: AND) or a JSON object."),
    ] = None,
    unit: Annotated[
        str, typer.Option(help="document (each once, its best passage) or passage.")
    ] = "document",
    aggregate: Annotated[str, typer.Option(help="Passage scores to a document's: max or sum.")] = "max",
    device: DeviceOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """Search a collection by meaning, by words, or both; filter by metadata; rerank."""
    from ..search.backends.filters import parse_filter_args

    spec = parse_filter_args(filters or [])
    if not query and not image:
        raise ValueError("give a query: --query TEXT or --image FILE")
    with _open(folder, backend, device, readonly=True) as col:
        results = col.search(
            [*(query or []), *_query_images(image or [])],
            k=top_k,
            mode="hybrid" if hybrid else mode,
            filter=spec,
            fusion=fusion,
            weights=_weights(weights),
            rrf_k=rrf_k,
            normalization=normalization,
            candidates=candidates,
            rerank=rerank,
            rerank_k=rerank_k,
            unit=unit,
            aggregate=aggregate,
        )
    for q, hits in zip([*(query or []), *(f"image {p}" for p in image or [])], results, strict=True):
        if as_json:
            rows = [
                {
                    "id": h.id,
                    "score": h.score,
                    "scores": h.scores,
                    "text": h.text,
                    "metadata": h.metadata,
                    "passage": {"chunk": h.chunk, "start": h.start, "end": h.end, "partial": h.partial},
                }
                for h in hits
            ]
            typer.echo(json.dumps({"query": q, "results": rows}, ensure_ascii=False))
            continue
        typer.echo(f"query: {q}")
        if not hits:
            typer.echo("  (no results)")
        for rank, h in enumerate(hits, 1):
            where = f" passage {h.chunk + 1}" if h.partial else ""
            typer.echo(
                f"  {rank:>3}. {h.score:.4f}{stage_scores(h.scores)}  [{h.id}{where}] {snippet(h.text)}"
            )
    if not as_json and any(results):
        typer.echo(SCORE_LEGEND.get("hybrid" if hybrid else mode, "(score: higher is better)"))


@app.command("delete")
def delete(
    folder: FolderArgument,
    ids: Annotated[list[str], typer.Argument(help="Ids of the documents to delete.")],
    backend: BackendOption = None,
) -> None:
    """Delete documents by id (unknown ids are reported, not an error)."""
    with _open(folder, backend) as col:
        removed = col.delete(ids)
        total = len(col)
    missing = len(set(ids)) - removed
    note = f" ({missing} ids were not in the collection)" if missing else ""
    typer.echo(f"deleted {removed}{note}; {total} documents left")


@app.command("info")
def info(
    folder: FolderArgument,
    backend: BackendOption = None,
    check: Annotated[bool, typer.Option("--check", help="Also verify database and indexes.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Model, sizes and index settings of a collection; --check verifies its integrity."""
    from ..search.index.verified_file import set_aside_files

    with _open(folder, backend, readonly=True) as col:
        described = col.info()
        if check:
            described["problems"] = col.check()
            if col.folder is not None:  # damaged index files set aside (then rebuilt), to be looked at
                described["set_aside"] = [str(p) for p in set_aside_files(Path(col.folder))]
    if as_json:
        typer.echo(json.dumps(described, ensure_ascii=False, indent=2))
    else:
        for key, value in described.items():
            typer.echo(f"{key:<22}{value}")
    if check and described["problems"]:
        raise typer.Exit(1)
