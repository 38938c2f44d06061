"""Collections at scale: what a commit and a new reader cost as a collection grows.

Korean passages (three KorSTS sentences each, one passage per document) are added in batches to one
collection, embedded by a cheap encoder (a random 64-d static model on multilingual-e5-small's
tokenizer: encoding costs little, so the storage and index costs show). After each batch:

- the add's throughput (passages/s) and the writer's RSS;
- the writer's first lexical and first hybrid search after the commit (what a server pays after
  each write), the database's background work (autovacuum) as they ran, and each query's hybrid
  search once more (the median: the search's cost at that size);
- a new reader process: open the collection and answer one hybrid search (what every CLI call,
  worker or server replica pays), split into import, open, loading the query encoder (the static
  model's numpy twin, without torch; whatever the size), loading the Korean analyser (Kiwi, or
  MeCab with `--tokenizer auto-mecab`), and the first hybrid search
  (the indexes: mapped from the files the writer saved, with what changed since beside them), and
  its peak RSS;
- the size of the index files the folder backend keeps beside the database.

    python bench/collection_scale.py --batch 100000 --batches 10       # the 1M run of the scale issue
    python bench/collection_scale.py --batch 50000 --batches 4 --name collection_scale-200k
    python bench/collection_scale.py --backend postgres --batch 20000 --batches 5 \
        --name collection_scale-postgres-100k                         # pgserver's PostgreSQL
    python bench/collection_scale.py --backend postgres --index hnsw --huge-pages \
        --name collection_scale-postgres-hnsw-hugepages-1m            # sysctl vm.nr_hugepages first

PostgreSQL runs with `shared_buffers` at a quarter of the machine's memory, PostgreSQL's own
advice for a dedicated server (`--shared-buffers 128MB`: pgserver's default). With 128 MB, a search
right after a commit reads most of the HNSW pages it visits back from the operating system's cache
while writing out the pages the add left dirty. `--huge-pages` runs it with `huge_pages = on`
(PostgreSQL's advice for large `shared_buffers`, the default of managed services such as Amazon
RDS): with 4 kB pages, each database process maps every buffer it touches for the first time
with a page fault, and after a commit a search's walk lands on thousands of buffers its process has
not touched yet.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, rss_bytes, write_result

QUERIES = [
    "주식 시장이 급락했다",
    "고양이가 소파에서 잔다",
    "내일 날씨는 맑겠습니다",
    "정부가 새 정책을 발표했다",
]


def cheap_encoder(folder: Path) -> Path:
    """A random 64-d static model on e5-small's tokenizer (seeded), saved by sentence-transformers."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    from munjang.models import pull

    torch.manual_seed(0)
    tokenizer = Tokenizer.from_file(str(pull("multilingual-e5-small").folder / "tokenizer.json"))
    SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=64)]).save(str(folder))
    return folder


def passages(n: int, start: int, pool: list[str]) -> list[str]:
    rng = random.Random(start)
    return [" ".join(rng.sample(pool, 3)) for _ in range(n)]


def reader(where: str, backend: str | None) -> dict[str, Any]:
    """Open the collection in this (new) process and answer one hybrid search. Split: import, open,
    loading the query encoder (paid by any process that encodes queries, whatever the collection's
    size), loading the Korean analyser (the same), then the first hybrid search itself (the indexes:
    what could grow with the collection), and a second one."""
    cpu = [time.process_time()]
    started = time.perf_counter()
    from munjang.search import Collection

    imported = time.perf_counter()
    collection = Collection.open(where, backend=backend, readonly=True)
    opened = time.perf_counter()
    cpu.append(time.process_time())
    # The query encoder loads: a static model's numpy twin, as a search would load it (a
    # transformer model would load torch and the model here).
    collection.query_encoder.encode([QUERIES[3]])
    encoder = time.perf_counter()
    cpu.append(time.process_time())
    collection.warm_up()  # the Korean analyser loads
    analyser = time.perf_counter()
    cpu.append(time.process_time())
    hits = collection.search(QUERIES[0], 10, mode="hybrid")
    done = time.perf_counter()
    cpu.append(time.process_time())
    collection.search(QUERIES[2], 10, mode="hybrid")
    second = time.perf_counter()
    return {
        # CPU seconds of this process (all threads) per stage: on a loaded machine the wall-clock
        # figures below stretch with the load, these much less.
        "cpu_s": {
            name: round(b - a, 3)
            for name, a, b in zip(
                ("import_and_open", "encoder_load", "analyser_load", "first_hybrid"),
                cpu,
                cpu[1:],
                strict=False,
            )
        },
        "import_s": round(imported - started, 3),
        "open_s": round(opened - imported, 3),
        "encoder_load_s": round(encoder - opened, 3),
        "analyser_load_s": round(analyser - encoder, 3),
        "first_hybrid_s": round(done - analyser, 3),
        "open_and_first_hybrid_s": round(done - imported, 3),
        "open_and_first_hybrid_without_encoder_and_analyser_s": round(done - analyser + opened - imported, 3),
        "second_hybrid_s": round(second - done, 3),
        "hits": len(hits),
        # VmHWM: this process's own peak (ru_maxrss keeps the forking writer's RSS across exec).
        "peak_rss_mib": round(peak_rss_kib() / 1024, 1),
        # The whole process's CPU split, and its page faults: the same loads have cost this reader
        # up to twice the CPU inside a run as alone, which these tell apart (work or the kernel's).
        **cpu_split(),
    }


def cpu_split() -> dict[str, Any]:
    """This process's user and system CPU seconds and minor page faults so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "user_s": round(usage.ru_utime, 3),
        "system_s": round(usage.ru_stime, 3),
        "minor_faults": int(usage.ru_minflt),
    }


def proc_number(path: str, key: str) -> int | None:
    """The first number on the line of a Linux /proc file that starts with `key` (None elsewhere)."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_kib() -> int:
    """The peak resident memory of this process's own image (Linux VmHWM; ru_maxrss elsewhere)."""
    peak = proc_number("/proc/self/status", "VmHWM:")
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) if peak is None else peak


def postmaster_pid(data_dir: Path) -> int:
    """The PostgreSQL server's main process for `data_dir` (its postmaster.pid's first line)."""
    return int((data_dir / "postmaster.pid").read_text().split()[0])


def cpu_seconds(server_pid: int | None) -> tuple[float, float]:
    """CPU seconds so far of this process (all threads) and of the database server (the postmaster,
    its live backends and those it has reaped); 0 for the server when there is none."""
    import psutil

    mine = time.process_time()
    if server_pid is None:
        return mine, 0.0
    main = psutil.Process(server_pid)
    times = main.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in main.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += child_times.user + child_times.system
    return mine, total


def index_files_mib(where: str) -> float:
    """The derived index files of a folder collection (BM25 segments, the dense matrix or graph)."""
    folder = Path(where)
    files = [*folder.glob("dense-*"), *folder.glob("lexical/*")]
    return round(sum(f.stat().st_size for f in files if f.is_file()) / 2**20, 1)


def quarter_of_memory() -> str:
    """A quarter of this machine's memory, in PostgreSQL's units (MB)."""
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return f"{pages * size // 4 // 2**20}MB"


def free_huge_pages() -> int:
    """The operating system's reserved huge pages still free (Linux /proc/meminfo; 0 elsewhere)."""
    return proc_number("/proc/meminfo", "HugePages_Free:") or 0


def require_huge_pages(server: Any) -> None:
    """Stop the server and exit with the command to run unless the operating system has reserved
    as many huge pages as PostgreSQL says its shared memory needs."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        need = int(conn.execute("SHOW shared_memory_size_in_huge_pages").fetchone()[0])
    if free_huge_pages() < need:
        server.cleanup()
        sys.exit(
            f"error: PostgreSQL's shared memory needs {need} huge pages and {free_huge_pages()} "
            f"are free; reserve them first (as root): sysctl vm.nr_hugepages={need + 64}"
        )


def with_huge_pages(server: Any, data_dir: Path) -> Any:
    """The server restarted with `huge_pages = on` (`require_huge_pages` first)."""
    import pgserver
    import psycopg

    require_huge_pages(server)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET huge_pages = 'on'")
    server.cleanup()
    return pgserver.get_server(data_dir, cleanup_mode="stop")


def background_work(monitor: Any) -> list[str]:
    """What the database server is doing besides the bench's own sessions: autovacuum and other
    maintenance running now (autovacuum starts on its own after a large commit, and on 2 cores it
    competes with the search being timed), and a background merge of HNSW segments building."""
    if monitor is None:
        return []
    rows = monitor.execute(
        "SELECT backend_type, left(query, 120) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND state = 'active' "
        "AND (backend_type <> 'client backend' OR application_name LIKE 'munjang merge%')"
    ).fetchall()
    return [f"{kind}: {query}" for kind, query in rows]


def timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    fn(*args, **kwargs)
    return round(time.perf_counter() - started, 4)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--backend", choices=["folder", "postgres"], default="folder")
    parser.add_argument("--index", choices=["exact", "hnsw"], default="exact")
    parser.add_argument("--tokenizer", default="auto", help="BM25 tokens: auto (Kiwi) or auto-mecab (MeCab)")
    parser.add_argument("--segment-size", type=int, help="passages per HNSW segment (default: munjang's)")
    parser.add_argument("--merge-workers", type=int, help="workers a PostgreSQL merge may take")
    parser.add_argument("--name", default="collection_scale")
    parser.add_argument(
        "--shared-buffers", default=quarter_of_memory(), help="PostgreSQL's shared_buffers (postgres backend)"
    )
    parser.add_argument(
        "--huge-pages",
        action="store_true",
        help="run PostgreSQL with huge_pages = on (reserve them first: the error says how many)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the collection (its folder is printed)")
    parser.add_argument("--reader", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reader:
        print(json.dumps(reader(args.reader, args.url)))
        return
    environment = print_environment()
    from munjang.search import Collection

    pool = load_corpus(5000, seed=0, lang="ko")
    work = Path(tempfile.mkdtemp(prefix="munjang-scale-"))
    model = cheap_encoder(work / "static64")
    server, shared_buffers, huge_pages = None, None, None
    if args.backend == "postgres":
        import pgserver
        import psycopg

        server = pgserver.get_server(work / "pg", cleanup_mode="stop")
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
        server.cleanup()  # a restart takes the setting
        server = pgserver.get_server(work / "pg", cleanup_mode="stop")
        if args.huge_pages:
            try:
                server = with_huge_pages(server, work / "pg")
            except SystemExit:
                shutil.rmtree(work, ignore_errors=True)  # the server is stopped: nothing of this run kept
                raise
        url: str | None = server.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            shared_buffers = conn.execute("SHOW shared_buffers").fetchone()[0]
            huge_pages = conn.execute("SHOW huge_pages").fetchone()[0]
        print(f"PostgreSQL shared_buffers: {shared_buffers}, huge_pages: {huge_pages}")
        where = "scale"
    else:
        url, where = None, str(work / "collection")
    server_pid = None if server is None else postmaster_pid(work / "pg")
    chosen = {"segment_size": args.segment_size, "merge_workers": args.merge_workers}
    hnsw = {"hnsw": {key: value for key, value in chosen.items() if value is not None}}
    collection = Collection.create(
        where, str(model), backend=url, index=args.index, tokenizer=args.tokenizer, **hnsw
    )
    monitor = None
    if url is not None:
        import psycopg

        monitor = psycopg.connect(url, autocommit=True)
    rows = []
    for b in range(args.batches):
        texts = passages(args.batch, b * args.batch, pool)
        ids = [f"d{b * args.batch + i}" for i in range(args.batch)]
        cpu = cpu_seconds(server_pid)
        add_s = timed(collection.add, ids, texts, show_progress_bar=False)
        add_cpu = [after - before for before, after in zip(cpu, cpu_seconds(server_pid), strict=True)]
        busy = background_work(monitor)
        lexical_s = timed(collection.search, QUERIES[1 + b % 3], 10, mode="lexical")
        hybrid_s = timed(collection.search, QUERIES[b % 4], 10, mode="hybrid")
        busy += background_work(monitor)
        # every query once more: what a hybrid search costs at this size once the commit is behind
        again = sorted(timed(collection.search, query, 10, mode="hybrid") for query in QUERIES)
        command = [sys.executable, __file__, "--reader", where, *(["--url", url] if url else [])]
        fresh = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
        row = {
            "passages": (b + 1) * args.batch,
            "add_passages_per_s": round(args.batch / add_s, 1),
            # CPU seconds the add cost this process and the database server: on a busy machine the
            # wall-clock rate above stretches with the load, passages per CPU-second much less.
            "add_cpu_s": {"writer": round(add_cpu[0], 2), "database": round(add_cpu[1], 2)},
            "add_passages_per_cpu_s": round(args.batch / max(sum(add_cpu), 1e-9), 1),
            "first_lexical_after_commit_s": lexical_s,
            "first_hybrid_after_commit_s": hybrid_s,
            "database_background_work": busy,
            "next_hybrid_s": {"median": round((again[1] + again[2]) / 2, 4), "max": again[-1]},
            "writer_rss_mib": round(rss_bytes() / 2**20, 1),
            "index_files_mib": index_files_mib(where) if url is None else None,
            "new_reader": fresh,
        }
        if url is not None and args.index == "hnsw":  # the graphs a search walks, merged or not
            meta = collection.store.get_meta()
            row["hnsw_merged"] = meta.get("hnsw_merged", [])
            row["hnsw_segments_made"] = meta.get("hnsw_segments")
        rows.append(row)
        print(row, flush=True)
    collection.close()
    if monitor is not None:
        monitor.close()
    if server is not None:
        server.cleanup()
    if args.keep:
        print(f"kept: {work}" + (f" (database folder {work / 'pg'}, collection {where!r})" if url else ""))
    else:  # a 1M-passage folder is gigabytes
        shutil.rmtree(work, ignore_errors=True)
    payload = {
        "backend": args.backend,
        "batch": args.batch,
        "segment_size": args.segment_size,
        "merge_workers": args.merge_workers,  # None: munjang's default
        "index": args.index,
        "tokenizer": args.tokenizer,
        "shared_buffers": shared_buffers,
        "huge_pages": huge_pages,
        "encoder": "random 64-d static model on multilingual-e5-small's tokenizer",
        "rows": rows,
        "last_batch_throughput_vs_first": round(
            rows[-1]["add_passages_per_s"] / rows[0]["add_passages_per_s"], 2
        ),
        "last_batch_cpu_throughput_vs_first": round(
            rows[-1]["add_passages_per_cpu_s"] / rows[0]["add_passages_per_cpu_s"], 2
        ),
        "load_average_at_end": list(os.getloadavg()),
    }
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
