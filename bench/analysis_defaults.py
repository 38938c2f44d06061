"""The default analysis changes no BM25 token (issue 73): every document and query of the five Korean
retrieval sets (bench/retrieval_sets.py, the samples bench/korean_retrieval.py uses) is tokenized by
a collection's default analysis (`Analyzer` with `AnalysisSettings()`, documents and queries) and by
the tokenizer of another source tree (`--baseline-src`, e.g. the main branch), and the token lists'
digests compared. Equal tokens give equal BM25 figures, so the published BM25 rows stand.

    flock /tmp/munjang-bench.lock python bench/analysis_defaults.py --baseline-src ../main/src
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from retrieval_sets import DEFAULT_QUERIES, KOREAN, LOADERS

TOKENIZE = """
import hashlib, json, sys
texts = json.load(sys.stdin)
from munjang.search.index.tokenizers import get_tokenizer
tokens = get_tokenizer("auto").tokenize_many(texts)
print(hashlib.sha256(json.dumps(tokens, ensure_ascii=False).encode()).hexdigest())
"""


def digest(tokens: list[list[str]]) -> str:
    return hashlib.sha256(json.dumps(tokens, ensure_ascii=False).encode()).hexdigest()


def main() -> None:
    from munjang.search.index.analysis import AnalysisSettings, Analyzer
    from munjang.search.index.tokenizers import get_tokenizer

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-src", type=Path, required=True, help="the src folder to compare with")
    parser.add_argument("--name", default="analysis_defaults")
    args = parser.parse_args()
    env = print_environment()
    analyzer = Analyzer(get_tokenizer("auto").get_config_dict(), AnalysisSettings())
    rows = {}
    for name in KOREAN:
        data = LOADERS[name]().sample(DEFAULT_QUERIES.get(name), 0)
        docs, queries = list(data.corpus.values()), list(data.queries.values())
        start = time.perf_counter()
        ours = digest(analyzer.documents.tokenize_many(docs) + [analyzer.queries(q) for q in queries])
        seconds = time.perf_counter() - start
        baseline = subprocess.run(
            [sys.executable, "-c", TOKENIZE],
            input=json.dumps(docs + queries, ensure_ascii=False),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(args.baseline_src.resolve())},
        ).stdout.strip()
        rows[name] = {"documents": len(docs), "queries": len(queries), "same_tokens": ours == baseline,
                      "seconds": round(seconds, 1)}  # fmt: skip
        print(name, rows[name], flush=True)
    path = write_result(args.name, {"baseline_src": str(args.baseline_src), "sets": rows}, env)
    print(f"wrote {path}")
    if not all(row["same_tokens"] for row in rows.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
