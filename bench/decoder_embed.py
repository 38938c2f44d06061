"""Decoder embedder speed: munjang vs sentence-transformers on a Qwen3-Embedding-0.6B-shaped model
(random weights, fewer layers at the real width: see llm_shapes.py), encoding Korean sentences as
queries with the instruction prompt.

    python bench/decoder_embed.py                       # 4 of 28 layers, 512 KorSTS sentences, 2 rounds
    python bench/decoder_embed.py --layers 28 --sentences 128

Each configuration runs in a fresh process (its peak RSS its own), in alternating rounds; sentences/s
is the median over rounds. Configurations: munjang's default ("auto": the fastest backend that keeps
fp32 accuracy on this machine, chosen on first use, outside the timing), torch fp32 in both libraries
(sentence-transformers' default) and torch with bf16 weights in both. sentence-transformers' ONNX /
OpenVINO backends need `optimum`, not installed here. Accuracy beside speed: the lowest cosine of a
vector to sentence-transformers' fp32 vector.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result
from llm_rerank import peak_rss_bytes
from llm_shapes import build_embedder

CONFIGS = (
    "munjang auto",
    "munjang torch:fp32",
    "sentence-transformers torch:fp32",
    "munjang torch:bf16",
    "sentence-transformers torch:bf16",
)
REFERENCE = "sentence-transformers torch:fp32"


def encode_in_child(folder: str, config: str, texts: list[str], batch: int, threads: int) -> dict[str, Any]:
    """One timed pass over `texts` (as queries) in this fresh process: vectors, seconds, peak RSS."""
    import logging
    import os

    import torch

    os.environ.pop("MUNJANG_ENCODE_BACKEND", None)
    torch.set_num_threads(threads)
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    library, setting = config.split()
    if library == "munjang":
        import munjang

        if setting == "auto":
            model = munjang.load_encoder(folder, device="cpu", threads=threads)
        else:
            backend, precision = setting.split(":")
            model = munjang.load_encoder(
                folder, device="cpu", backend=backend, precision=precision, threads=threads
            )

        def run(items: list[str]) -> np.ndarray:
            return np.asarray(
                model.encode(items, prompt_name="query", batch_size=batch, show_progress_bar=False)
            )
    else:
        from sentence_transformers import SentenceTransformer

        dtype = torch.bfloat16 if setting.endswith("bf16") else torch.float32
        st = SentenceTransformer(folder, device="cpu", model_kwargs={"dtype": dtype})

        def run(items: list[str]) -> np.ndarray:
            vectors = st.encode(items, prompt_name="query", batch_size=batch, show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32)

    run(texts[:batch])  # warm-up (and munjang's automatic choice, measured once per model and machine)
    started = time.perf_counter()
    vectors = run(texts)
    seconds = time.perf_counter() - started
    info = model.info() if library == "munjang" else {}
    chosen = f"{info.get('backend')}:{info.get('precision')}" if info else setting
    return {
        "seconds": seconds,
        "vectors": vectors.tolist(),
        "peak_rss_bytes": peak_rss_bytes(),
        "ran_on": chosen,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args(argv)
    env = print_environment()
    texts = load_corpus(args.sentences, lang="ko")
    configs = [c.strip() for c in args.configs.split(",")]
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_embedder(Path(tmp) / "embedder", args.layers, load_corpus(4000, seed=1, lang="ko"))
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        mean_tokens = float(np.mean([len(tokenizer(t)["input_ids"]) for t in texts]))
        print(f"{len(texts)} Korean sentences, {mean_tokens:.1f} tokens each before the instruction")
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
        for round_ in range(args.rounds):
            for config in configs:
                with spawn.Pool(1) as pool:
                    out = pool.apply(
                        encode_in_child, (str(folder), config, texts, args.batch_size, args.threads)
                    )
                runs[config].append(out)
                rate = len(texts) / out["seconds"]
                print(f"  round {round_ + 1} {config:<34} {rate:8.1f} sentences/s  peak RSS "
                      f"{out['peak_rss_bytes'] / 2**20:,.0f} MiB  ({out['ran_on']})")  # fmt: skip
    reference = np.asarray(runs[REFERENCE if REFERENCE in runs else configs[0]][-1]["vectors"])
    results: dict[str, Any] = {}
    for config, outs in runs.items():
        vectors = np.asarray(outs[-1]["vectors"])
        results[config] = {
            "sentences_per_s": round(statistics.median(len(texts) / o["seconds"] for o in outs), 1),
            "seconds": [round(o["seconds"], 3) for o in outs],
            "peak_rss_mib": round(max(o["peak_rss_bytes"] for o in outs) / 2**20),
            "ran_on": outs[-1]["ran_on"],
            "min_cosine_vs_st_fp32": float(np.min(np.sum(vectors * reference, axis=1))),
        }
    for config, r in results.items():
        print(f"{config:<34} {r['sentences_per_s']:8.1f} sentences/s  {r['peak_rss_mib']:6,} MiB  "
              f"min cos {r['min_cosine_vs_st_fp32']:.6f}  ({r['ran_on']})")  # fmt: skip
    ratios = {}
    st_fp32 = results.get(REFERENCE)
    for config, r in results.items():
        if config.startswith("munjang") and st_fp32:
            ratios[f"{config} / st fp32"] = round(r["sentences_per_s"] / st_fp32["sentences_per_s"], 3)
    if "munjang torch:bf16" in results and "sentence-transformers torch:bf16" in results:
        bf16 = (
            results["munjang torch:bf16"]["sentences_per_s"]
            / results["sentence-transformers torch:bf16"]["sentences_per_s"]
        )
        ratios["munjang torch:bf16 / st bf16"] = round(bf16, 3)
    print(f"ratios: {ratios}")
    write_result(
        f"decoder_embed_{args.layers}l",
        {
            "model": f"Qwen3-Embedding-0.6B configuration, random weights, {args.layers} of 28 layers",
            "tokenizer": "byte-level BPE (32k) trained on KorSTS sentences",
            "sentences": len(texts),
            "mean_tokens_per_sentence": round(mean_tokens, 1),
            "prompt": "query (Qwen3-Embedding's instruction)",
            "batch_size": args.batch_size,
            "threads": args.threads,
            "rounds": args.rounds,
            "results": results,
            "ratios": ratios,
        },
        env=env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
