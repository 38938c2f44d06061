"""A writer process for the crash test: adds documents in batches and reports each committed batch.

Usage: python tests/helpers/scripts/collection_writer.py FOLDER ROUND SEED [WORDS] (with
$MUNJANG_BACKEND set, FOLDER is the collection's name at that backend URL). Each text has
WORDS (default 6) random words, so a collection with a small passage budget stores each as several
passages. Prints "ready" once the model is loaded, then
"committed ID ID ..." after every `add` that returned, and flushes the HNSW graph now and then, so
that a SIGKILL can land anywhere: encoding, tokenizing, inside a transaction, or mid-save.
"""

from __future__ import annotations

import os
import random
import sys

from munjang.search.collection.collection import Collection

WORDS = [
    "서울",
    "부산",
    "고양이",
    "강아지",
    "시장",
    "주식",
    "음악",
    "기타",
    "학교",
    "선생님",
    "guitar",
    "market",
    "cat",
    "school",
    "river",
    "music",
]


def main() -> None:
    folder, round_number, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    words = int(sys.argv[4]) if len(sys.argv) > 4 else 6
    rng = random.Random(seed)
    col = Collection.open(folder, backend=os.environ.get("MUNJANG_BACKEND"))
    col.encoder.encode(["warm up"])
    if col.sparse is not None:  # a collection with a sparse retriever loads its model too
        col.sparse.encoder.encode_document(["warm up"])
    if col.multi_vector is not None:  # and its multi-vector model
        col.multi_vector.encoder.encode_document(["warm up"])
    col.encoding.tokenizer()("워밍업 문장")
    print("ready", flush=True)
    n = 0
    while True:
        size = rng.randint(1, 12)
        ids = [f"r{round_number}-{n + i}" for i in range(size)]
        # Each text carries a token no other document has ("uid<round>x<n>"), so it can be looked up.
        texts = [f"{' '.join(rng.choices(WORDS, k=words))} uid{round_number}x{n + i}" for i in range(size)]
        col.add(ids, texts, [{"round": round_number}] * size, commit_every=rng.randint(1, 8))
        print("committed " + " ".join(ids), flush=True)
        n += size
        if rng.random() < 0.3:
            col.flush()
        if rng.random() < 0.2:
            col.upsert([ids[0]], [texts[0] + " 수정"])
            print("committed " + ids[0], flush=True)


if __name__ == "__main__":
    main()
