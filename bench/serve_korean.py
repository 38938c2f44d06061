"""What a Korean user gets from `make run`: `munjang serve --demo` as started there, measured over HTTP.

1. `munjang serve --demo` starts in a subprocess on 127.0.0.1 with its default models (no --model),
   exactly as `make run` starts it, with `$MUNJANG_CACHE` pointing at a fresh folder so the demo
   collection is built anew (the models come from the usual models folder, pulled if missing).
2. KorSTS test through POST /v1/embeddings on the default model (`prompt_name: query`; MiniLM has
   no prompts): cosine Spearman x 100 over its 1,379 pairs.
3. The demo collection: leave-one-out over its 30 Korean documents through
   POST /v1/collections/demo/search (hybrid, the route's default): the share whose best hit other
   than itself is of its own topic (food, weather, sport, technology, animals, travel).
4. A few Korean queries and their top 3 (the examples in docs/benchmarks.md).
5. The same for `--model all-MiniLM-L6-v2` (English only), in a second server.

    python bench/serve_korean.py                 # writes bench/results/serve_korean.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, running_server, shared_data_dir, write_result
from munjang.applications.demo import demo_documents
from munjang.data import read_sts

QUERIES = ["요리하는 남자", "내일 비가 올까요?", "축구 경기 결과", "주식 시장이 폭락했다"]


def embed(client: httpx.Client, texts: list[str], prompt: str | None, batch: int = 64) -> np.ndarray:
    rows = []
    for i in range(0, len(texts), batch):
        body: dict[str, Any] = {"input": texts[i : i + batch]}
        if prompt is not None:
            body["prompt_name"] = prompt
        response = client.post("/v1/embeddings", json=body)
        response.raise_for_status()
        rows += [d["embedding"] for d in response.json()["data"]]
    return np.asarray(rows, dtype=np.float32)


def measure(url: str, data_dir: Path, prompt: str | None) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=300) as client:
        served = [m["id"] for m in client.get("/v1/models").json()["data"]]
        sts = read_sts(data_dir / "korsts" / "sts-test.tsv")
        a, b = embed(client, list(sts.sentences1), prompt), embed(client, list(sts.sentences2), prompt)
        cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        korsts = float(spearmanr(cosine, sts.scores).statistic) * 100
        korean = [d for d in demo_documents() if d["metadata"]["lang"] == "ko"]
        right, misses = 0, []
        for doc in korean:
            found = client.post("/v1/collections/demo/search", json={"query": doc["text"], "top_k": 2})
            found.raise_for_status()
            other = next(h for h in found.json()["data"] if h["id"] != doc["id"])
            if other["metadata"]["topic"] == doc["metadata"]["topic"]:
                right += 1
            else:
                misses.append(f"{doc['text']} -> {other['text']}")
        examples = {}
        for query in QUERIES:
            found = client.post("/v1/collections/demo/search", json={"query": query, "top_k": 3}).json()
            examples[query] = [[round(h["score"], 3), h["text"]] for h in found["data"]]
    return {
        "served": served,
        "korsts_test_spearman": round(korsts, 2),
        "demo_topic_top1": round(right / len(korean), 3),
        "demo_korean_documents": len(korean),
        "demo_misses": misses,
        "queries": examples,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="serve_korean")
    args = parser.parse_args(argv)
    environment = print_environment()
    data_dir = shared_data_dir()
    results: dict[str, Any] = {}
    runs = [("default", [], "query"), ("all-MiniLM-L6-v2", ["--model", "all-MiniLM-L6-v2"], None)]
    for label, models, prompt in runs:
        with tempfile.TemporaryDirectory(prefix="munjang-serve-") as cache:
            env = {**os.environ, "MUNJANG_CACHE": cache}
            env.setdefault("MUNJANG_MODELS", str(Path.home() / ".cache" / "munjang" / "models"))
            started = time.perf_counter()
            with running_server(["--demo", *models], env=env) as (url, _):
                startup = time.perf_counter() - started
                results[label] = {"startup_seconds": round(startup, 1), **measure(url, data_dir, prompt)}
        row = results[label]
        print(
            f"{label}: serves {', '.join(row['served'])}; KorSTS test {row['korsts_test_spearman']:.2f}; "
            f"demo topic top-1 {row['demo_topic_top1']:.3f}; started in {row['startup_seconds']} s"
        )
        for query, hits in row["queries"].items():
            print(f"  {query}")
            for score, text in hits:
                print(f"    {score:.3f}  {text}")
    print(f"wrote {write_result(args.name, results, environment)}")


if __name__ == "__main__":
    main()
