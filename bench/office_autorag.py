"""AutoRAG-ko through the office readers: each source document's pages written into one HWPX file (one
section per page) and one DOCX file (a page break between pages) by tests/helpers/office_files.py,
read back by `munjang.ingest.read_file` and indexed (the readers' outline cuts passages page by page),
against indexing the same page texts directly (bench/autorag.py's setting: one document per page, the
collection's default chunking). A passage hit of an office file is mapped to its page by the outline's
page number; Recall@k as AutoRAG computes it (bench/autorag.py). The check: R@1 / R@5 of each format
within 0.01 of the direct index.

    PYTHONPATH=src python bench/office_autorag.py [--methods hybrid,dense,bm25]

Writes bench/results/office_autorag.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import office_files

import munjang
from autorag import KS, MODEL, autorag_recall, load_autorag
from common import print_environment, write_result
from munjang.ingest import read_file
from munjang.search.collection.collection import Collection
from munjang.search.collection.sections import page_at

WRITERS = {"hwpx": office_files.hwpx, "docx": office_files.docx}


def write_files(pages: dict[str, str], folder: Path) -> dict[str, dict[str, list[str]]]:
    """One file per format and source document; format -> file id -> its page ids in order."""
    by_source: dict[str, list[str]] = defaultdict(list)
    for page_id in pages:
        by_source[page_id.rsplit(" - ", 1)[0]].append(page_id)
    layout: dict[str, dict[str, list[str]]] = {kind: {} for kind in WRITERS}
    for n, (_, ids) in enumerate(sorted(by_source.items())):
        blocks: list[tuple[Any, ...]] = []
        for i, page_id in enumerate(ids):
            if i:
                blocks.append(("page",))
            blocks += [("p", line) for line in pages[page_id].split("\n") if line.strip()]
        for kind, writer in WRITERS.items():
            name = f"doc{n:03d}.{kind}"
            (folder / name).write_bytes(writer(blocks))
            layout[kind][name] = ids
    return layout


def rankings_by_page(
    col: Collection, questions: dict[str, str], pages_of: dict[str, list[str]], **search: Any
):
    out: dict[str, list[str]] = {}
    for qid, text in questions.items():
        ranked: list[str] = []
        for hit in col.search(text, k=100, unit="passage", **search):
            page = page_at(hit.metadata, hit.start) or 1
            page_id = pages_of[hit.id][page - 1]
            if page_id not in ranked:
                ranked.append(page_id)
        out[qid] = ranked[:10]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="hybrid,dense,bm25")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "munjang-office-autorag")
    args = parser.parse_args(argv)
    env = print_environment()
    pages, questions, relevant = load_autorag()
    encoder = munjang.load_encoder(MODEL)
    shutil.rmtree(args.work, ignore_errors=True)
    files = args.work / "files"
    files.mkdir(parents=True)
    started = time.perf_counter()
    layout = write_files(pages, files)
    modes = {m: {"mode": "lexical" if m == "bm25" else m} for m in args.methods.split(",")}
    results: dict[str, Any] = {}
    builds: dict[str, float] = {}

    start = time.perf_counter()
    direct = Collection.create(args.work / "direct", MODEL, encoder=encoder)
    direct.add(list(pages), list(pages.values()), batch_size=16, commit_every=100)
    builds["direct"] = round(time.perf_counter() - start, 1)
    identity = {p: [p] for p in pages}
    for method, search in modes.items():
        ranked = rankings_by_page(direct, questions, identity, **search)
        results.setdefault("direct", {})[method] = {
            f"recall@{k}": round(autorag_recall(ranked, relevant, k), 4) for k in KS
        }
    direct.close()
    for kind, pages_of in layout.items():
        start = time.perf_counter()
        docs = [read_file(files / name, files) for name in pages_of]
        read_s = time.perf_counter() - start
        col = Collection.create(args.work / kind, MODEL, encoder=encoder)
        col.add(
            [d.id for d in docs],
            [d.text for d in docs],
            [d.metadata for d in docs],
            batch_size=16,
            commit_every=20,
        )
        builds[kind] = round(time.perf_counter() - start, 1)
        builds[f"{kind}_read"] = round(read_s, 1)
        for method, search in modes.items():
            ranked = rankings_by_page(col, questions, pages_of, **search)
            row = {f"recall@{k}": round(autorag_recall(ranked, relevant, k), 4) for k in KS}
            base = results["direct"][method]
            row["delta_r1"] = round(row["recall@1"] - base["recall@1"], 4)
            row["delta_r5"] = round(row["recall@5"] - base["recall@5"], 4)
            row["within_0.01"] = abs(row["delta_r1"]) <= 0.01 and abs(row["delta_r5"]) <= 0.01
            results.setdefault(kind, {})[method] = row
            print(kind, method, row, flush=True)
        col.close()
    print("direct", results["direct"], flush=True)
    payload = {
        "model": MODEL,
        "pages": len(pages),
        "questions": len(questions),
        "files_per_format": len(layout["hwpx"]),
        "results": results,
        "build_s": builds,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    write_result("office_autorag", payload, env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
