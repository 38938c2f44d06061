"""Where a PostgreSQL collection's add spends its time, beside the folder backend's, in one run.

The cheap encoder and Korean passages of `collection_scale.py` (a random 64-d static model: encoding
costs little, so storage shows); each backend gets a warm-up add, then `--rounds` adds of `--batch`
passages. Per round: passages/s and the seconds spent in the store's writes (`put_embeddings`,
`insert`, which includes the BM25 postings, `index_passages`, and the VACUUM after each commit,
`vacuum_postings`) and in the collection's own work (`Encoding.tokenize`: Kiwi, `vectors`: encoding,
`plan`: passages). Times taken on a loaded machine compare only within one run.

    python bench/postgres_add_profile.py --batch 5000 --rounds 2 --name postgres_add_profile
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import cheap_encoder, passages
from common import load_corpus, print_environment, write_result


def timed(spent: collections.Counter[str], owner: Any, name: str) -> None:
    """Wrap `owner.name` so that its seconds add up in `spent[name]`."""
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - began

    setattr(owner, name, wrapper)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--name", default="postgres_add_profile")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver

    from munjang.search import Collection
    from munjang.search.backends.postgres import store as postgres_store
    from munjang.search.collection import encoding

    spent: collections.Counter[str] = collections.Counter()
    for name in ("insert", "put_embeddings", "existing", "cached_hashes", "vacuum_postings"):
        timed(spent, postgres_store.PostgresStore, name)
    timed(spent, postgres_store, "index_passages")
    for name in ("tokenize", "vectors", "plan"):
        timed(spent, encoding.Encoding, name)
    work = Path(tempfile.mkdtemp(prefix="munjang-addprofile-"))
    model = str(cheap_encoder(work / "static64"))
    pool = load_corpus(5000, seed=0, lang="ko")
    server = pgserver.get_server(work / "pg", cleanup_mode="stop")
    rows: list[dict[str, Any]] = []
    try:
        for kind in ("postgres", "folder"):
            where, url = ("profile", server.get_uri()) if kind == "postgres" else (str(work / "folder"), None)
            collection = Collection.create(where, model, backend=url, index="exact")
            collection.add([f"w{i}" for i in range(200)], passages(200, 99, pool), show_progress_bar=False)
            for r in range(args.rounds):
                spent.clear()
                ids = [f"d{r}_{i}" for i in range(args.batch)]
                began = time.perf_counter()
                collection.add(ids, passages(args.batch, r, pool), show_progress_bar=False)
                seconds = time.perf_counter() - began
                row = {
                    "backend": kind,
                    "round": r,
                    "passages_per_s": round(args.batch / seconds, 1),
                    "seconds": round(seconds, 2),
                    "spent_s": {k: round(v, 2) for k, v in spent.most_common()},
                }
                rows.append(row)
                print(row, flush=True)
            collection.close()
    finally:
        server.cleanup()
    payload = {"batch": args.batch, "rounds": args.rounds, "rows": rows}
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
