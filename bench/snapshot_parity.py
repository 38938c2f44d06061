"""Migration parity on AutoRAG-ko: a folder collection exported and imported into PostgreSQL, that
one into Qdrant (local mode), that one back into a folder; each copy against the original.

The 720 AutoRAG-ko pages (chunked by the default budget, so documents of several passages and their
spans travel) embedded by collection_scale.py's cheap encoder (64-d static: the parity does not
depend on the model, and encoding costs little); the 114 questions searched dense, BM25 (Kiwi) and
hybrid, top 10. Reported per hop: export / import seconds, whether ids, texts, metadata and spans are
equal, and how many rankings are identical (ids and scores within 1e-5 relative; hits whose scores
tie within that tolerance may swap), with the largest score difference; and that no encoder (no
torch) was loaded by any import.

    python bench/snapshot_parity.py
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from autorag import load_autorag
from collection_scale import cheap_encoder
from common import print_environment, write_result

MODES = ("dense", "lexical", "hybrid")


def _rankings(col: Any, questions: list[str]) -> dict[str, list[list[tuple[str, float]]]]:
    return {
        mode: [[(h.id, h.score) for h in col.search(q, k=10, mode=mode)] for q in questions] for mode in MODES
    }


def _same(want: list[tuple[str, float]], got: list[tuple[str, float]], tol: float = 1e-5) -> bool:
    def close(a: float, b: float) -> bool:
        return abs(a - b) <= tol * max(1.0, abs(a), abs(b))

    if len(want) != len(got) or not all(close(w[1], g[1]) for w, g in zip(want, got, strict=True)):
        return False
    scores = dict(want)
    return all(
        doc == want[i][0] or close(score, scores.get(doc, want[-1][1])) for i, (doc, score) in enumerate(got)
    )


def _count(want: list[list[tuple[str, float]]], got: list[list[tuple[str, float]]]) -> int:
    return sum(_same(w, g) for w, g in zip(want, got, strict=True))


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("an encoder was loaded by an import")


def _documents(col: Any, ids: list[str]) -> list[Any]:
    return [(d.id, d.text, d.metadata, d.chunk, d.start, d.end) for d in col.get(ids)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="snapshot_parity")
    args = parser.parse_args()
    environment = print_environment()
    import pgserver

    import munjang.encoders.embedder as embedder
    from munjang.search import Collection

    load_embedder = embedder.load_embedder

    pages, questions, _ = load_autorag()
    queries = list(questions.values())
    work = Path(tempfile.mkdtemp(prefix="munjang-parity-"))
    server = pgserver.get_server(work / "pg", cleanup_mode="stop")
    try:
        model = cheap_encoder(work / "static64")
        ids = list(pages)
        source = Collection.create(work / "folder", str(model))
        source.add(ids, list(pages.values()), [{"page": i} for i in ids], show_progress_bar=False)
        want, documents = _rankings(source, queries), _documents(source, ids)
        encoder = source.encoder
        info = source.info()
        hops = [("folder", work / "folder", None), ("postgres", "autorag", server.get_uri())]
        hops += [("qdrant", "autorag", f"qdrant+local://{work / 'qdrant'}"), ("folder", work / "back", None)]
        rows = []
        current = source
        for (kind, location, backend), (from_kind, *_) in zip(hops[1:], hops[:-1], strict=True):
            file = work / f"{kind}.snapshot"
            started = time.perf_counter()
            current.export(file, show_progress_bar=False)
            exported = time.perf_counter() - started
            current.close()
            embedder.load_embedder = _refuse  # the import must load no model
            try:
                started = time.perf_counter()
                current = Collection.import_(file, location, backend=backend, show_progress_bar=False)
                imported = time.perf_counter() - started
            finally:
                embedder.load_embedder = load_embedder
            current.use_encoder(encoder)
            got = _rankings(current, queries)
            rows.append(
                {
                    "hop": f"{from_kind} -> {kind}",
                    "export_s": round(exported, 2),
                    "import_s": round(imported, 2),
                    "documents_equal": _documents(current, ids) == documents,
                    "encoder_loaded_by_import": False,
                    **{
                        f"{mode}_identical": f"{_count(want[mode], got[mode])}/{len(queries)}"
                        for mode in MODES
                    },
                    "max_score_difference": max(
                        abs(ws - gs)
                        for mode in MODES
                        for w, g in zip(want[mode], got[mode], strict=True)
                        for (_, ws), (_, gs) in zip(w, g, strict=False)
                    ),
                }
            )
            print(rows[-1])
        current.close()
        result = {"pages": len(pages), "passages": info["passages"], "questions": len(queries), "hops": rows}
        print("wrote", write_result(args.name, result, environment))
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
