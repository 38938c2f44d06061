"""A writer process for the snapshot consistency test: adds BATCHES batches of SIZE documents, each
batch one commit, and reports each one.

Usage: python tests/helpers/scripts/batch_writer.py FOLDER BATCHES SIZE (with $MUNJANG_BACKEND set,
FOLDER is the collection's name at that backend URL). Prints "ready" once the model is loaded, then
"committed N" after batch N (ids "bN-0" ... "bN-<SIZE-1>") is durable.
"""

from __future__ import annotations

import os
import sys

from munjang.search.collection.collection import Collection


def main() -> None:
    folder, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    col = Collection.open(folder, backend=os.environ.get("MUNJANG_BACKEND"))
    col.encoder.encode(["warm up"])
    print("ready", flush=True)
    for n in range(batches):
        ids = [f"b{n}-{i}" for i in range(size)]
        col.add(
            ids, [f"batch {n} document {i} about cats and rivers" for i in range(size)], commit_every=size
        )
        print(f"committed {n}", flush=True)
    col.close()


if __name__ == "__main__":
    main()
