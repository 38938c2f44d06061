"""What `len(collection)` and `info()` cost on a large PostgreSQL collection: the kept counts (the
`state` row every write updates, `storage/postgres_counts.py`) against counting the rows, as
munjang did before them.

On a collection kept by `bench/collection_scale.py --backend postgres --keep` (its database folder
is printed). A collection made before the counts gets them at its first writable open here: that
one-time count is timed too. Then, in alternating rounds, the median and worst milliseconds of
`len()` and of `info()` with the kept counts, and of the counting statements they replace.

    python bench/collection_scale.py --backend postgres --index hnsw --batch 100000 --batches 10 --keep
    python bench/collection_counts.py --database /tmp/munjang-scale-XXXX/pg
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result


def spread(times: list[float]) -> dict[str, float]:
    ms = [t * 1000 for t in times]
    return {"median_ms": round(statistics.median(ms), 3), "worst_ms": round(max(ms), 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--forget-counts",
        action="store_true",
        help="drop the kept counts first, as a collection made before them lacks them (to time adding them)",
    )
    parser.add_argument("--name", default="collection_counts")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver

    from munjang.search import Collection
    from munjang.search.backends.postgres.counts import counted_rows, has_counts

    server = pgserver.get_server(args.database, cleanup_mode="stop")
    with Collection.open(args.collection, backend=server.get_uri(), readonly=True) as reader:
        state = reader.store.t("state")  # type: ignore[attr-defined]
        if args.forget_counts and has_counts(reader.store):  # type: ignore[arg-type]
            reader.store.conn.execute(f"ALTER TABLE {state} DROP COLUMN documents, DROP COLUMN passages")  # type: ignore[attr-defined]
        had_counts = has_counts(reader.store)  # type: ignore[arg-type]
    started = time.perf_counter()
    collection = Collection.open(args.collection, backend=server.get_uri())  # adds them if missing
    open_s = time.perf_counter() - started
    store: Any = collection.store
    kept = store.counts()
    assert kept is not None and kept == counted_rows(store), "the kept counts disagree with the rows"
    ways: dict[str, Callable[[], Any]] = {
        "len_kept": lambda: len(collection),
        "len_counted": lambda: counted_rows(store).documents,
        "info_kept": collection.info,
        "passages_counted": lambda: counted_rows(store).passages,
    }
    for way in ways.values():  # pages read, plans made
        way()
    times: dict[str, list[float]] = {name: [] for name in ways}
    for turn in range(args.rounds):
        for name, way in ways.items() if turn % 2 == 0 else reversed(ways.items()):
            begun = time.perf_counter()
            way()
            times[name].append(time.perf_counter() - begun)
    results = {name: spread(ts) for name, ts in times.items()}
    # info() counted twice before (documents, then passages); now it reads the row for both.
    before = results["len_counted"]["median_ms"] + results["passages_counted"]["median_ms"]
    payload = {
        "documents": kept.documents,
        "passages": kept.passages,
        "had_counts": had_counts,
        "writable_open_s": round(open_s, 3),  # with counting every row once when had_counts is False
        "rounds": args.rounds,
        "timings": results,
        "len_ratio_counted_over_kept": round(
            results["len_counted"]["median_ms"] / results["len_kept"]["median_ms"], 1
        ),
        "info_counting_part_before_ms": round(before, 3),
    }
    print(payload, flush=True)
    collection.close()
    server.cleanup()
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
