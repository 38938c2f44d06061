"""A user-dictionary edit on a large collection (issue 73): the time to analyse every stored passage
again for BM25, and searches meanwhile.

A folder collection of `--passages` Korean passages (three KorSTS sentences each, one passage per
document, embedded by collection_scale.py's cheap static encoder: no dense cost to speak of) gets a
dictionary of noun compounds found in its passages. While `set_analysis` runs, a reader (another
Collection on the same folder, on a thread) searches a probe query without pause; each answer is
checked against the old analysis's answer and the new one. Reported: the re-analysis time and rate,
the searches answered meanwhile, errors, and whether every answer was the old or the new (never a
mix), the last the new. `--backend qdrant` does the same on a Qdrant collection in local mode
(the reader another Collection in this process: local mode is one process's), where the new tokens
fill a second BM25 slot; `--build-only` builds the collection and stops (a long build and the
timed edit can then run as two shorter benchmark runs).

    flock /tmp/munjang-bench.lock python bench/reanalysis_scale.py --passages 200000
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import cheap_encoder, passages
from common import load_corpus, print_environment, rss_bytes, write_result
from korean_user_dict import compounds
from munjang.search.collection.collection import Collection
from munjang.search.index.analysis import AnalysisSettings
from munjang.search.index.user_dictionary import UserWord


def peak_rss_bytes() -> int:
    """This process's peak resident memory since the last reset (VmHWM; 0 off Linux)."""
    status = Path("/proc/self/status")
    if not status.exists():
        return 0
    line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--passages", type=int, default=200_000)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-reanalysis"
    )
    parser.add_argument("--name", default=None)
    parser.add_argument("--backend", choices=["folder", "qdrant"], default="folder")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    env = print_environment()
    pool = load_corpus(10_000, lang="ko")
    folder: Path | str = args.cache / f"c{args.passages}"
    backend, built = None, args.cache / f"c{args.passages}"
    if args.backend == "qdrant":
        backend = f"qdrant+local://{args.cache / 'qdrant'}"
        folder, built = f"c{args.passages}", args.cache / "qdrant" / f"c{args.passages}"
    model = (
        cheap_encoder(args.cache / "static")
        if not (args.cache / "static").exists()
        else args.cache / "static"
    )
    texts = passages(args.passages, 0, pool)
    if not built.exists():
        col = Collection.create(folder, str(model), backend=backend)
        start = time.perf_counter()
        for i in range(0, len(texts), 20_000):
            col.add([f"d{j}" for j in range(i, min(i + 20_000, len(texts)))], texts[i : i + 20_000])
        print(f"built {len(texts)} passages in {time.perf_counter() - start:.0f} s", flush=True)
        col.close()
    if args.build_only:
        return
    found = Counter(word for text in pool for word, _ in compounds(text))
    words = [w for w, n in found.most_common(200)]
    probe = words[0]
    writer = Collection.open(folder, backend=backend)
    writer.set_analysis(AnalysisSettings())
    answers: list[list[str]] = []
    errors: list[str] = []
    ready, done = threading.Event(), threading.Event()
    first: list[list[str]] = []

    def search() -> None:  # a reader of its own (SQLite connections stay on their thread)
        reader = Collection.open(folder, backend=backend, readonly=True)
        first.append([h.id for h in reader.search(probe, mode="lexical", k=10)])
        ready.set()
        while not done.is_set():
            try:
                answers.append([h.id for h in reader.search(probe, mode="lexical", k=10)])
            except Exception as e:  # counted: the claim is that there are none
                errors.append(repr(e))
                time.sleep(0.01)
        reader.close()

    thread = threading.Thread(target=search)
    thread.start()
    ready.wait()
    old = first[0]
    rss_before = rss_bytes()
    reset_peak = Path("/proc/self/clear_refs")  # "5" resets VmHWM (Linux): the edit's own peak
    if reset_peak.exists():
        reset_peak.write_text("5")
    start = time.perf_counter()
    analysed = writer.set_analysis(AnalysisSettings(user_words=tuple(UserWord(w, "NNG") for w in words)))
    seconds = time.perf_counter() - start
    peak = peak_rss_bytes()
    after = len(answers)
    while len(answers) < after + 3 and thread.is_alive():  # a few answers after the switch
        time.sleep(0.01)
    done.set()
    thread.join()
    new = [h.id for h in writer.search(probe, mode="lexical", k=10)]
    kinds = ["old" if a == old else "new" if a == new else "other" for a in answers]
    writer.close()  # left with the dictionary: a next run starts by setting the defaults back
    row = {
        "backend": args.backend,
        "passages": args.passages,
        "dictionary_words": len(words),
        "probe": probe,
        "reanalysed": analysed,
        "reanalysis_s": round(seconds, 1),
        "passages_per_s": round(analysed / seconds),
        "rss_before_bytes": rss_before,
        "peak_rss_bytes": peak,  # the process's peak during the edit, the reader thread's included
        "searches_meanwhile": len(answers),
        "errors": errors[:5],
        "answers": dict(Counter(kinds)),
        "last_answer": kinds[-1] if kinds else None,
        "switched_once": re.fullmatch("o*n*", "".join(k[0] for k in kinds)) is not None,
        "answers_differ": old != new,
    }
    print(row)
    suffix = "" if args.backend == "folder" else f"-{args.backend}"
    write_result(args.name or f"reanalysis_scale{suffix}-{args.passages // 1000}k", row, env)


if __name__ == "__main__":
    main()
