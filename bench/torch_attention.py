"""Where torch's fused attention kernel pays on the CPU: multilingual-e5-small through munjang's lean
torch forward, fp32 and bf16, inputs of several widths, with the fused kernel never, always, and from
`CPU_FUSED_ATTENTION_TOKENS` (munjang's setting), rounds interleaved. The evidence behind
`torch_backend.CPU_FUSED_ATTENTION_TOKENS`.

    python bench/torch_attention.py

Widths: the Korean sentences of the encode benchmark (23 tokens mean with `query: `), then AutoRAG-ko
pages cut at 128, 256 and 512 tokens (`max_seq_length`). Texts per second, median of --repeats
rounds; each setting's speed as a ratio to "never" (two batched matmuls).
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from autorag import load_autorag
from common import interleaved_rates, load_corpus, print_environment, write_result
from munjang.inference import torch_backend

MODEL = "multilingual-e5-small"
WIDTHS = (0, 128, 256, 512)  # 0: the Korean sentences, their own widths
SETTINGS = {"never": 10**9, "always": 0, "munjang": torch_backend.CPU_FUSED_ATTENTION_TOKENS}


def _encode(encoder: Any, threshold: int, texts: list[str]) -> None:
    torch_backend.CPU_FUSED_ATTENTION_TOKENS = threshold
    encoder.encode(texts, show_progress_bar=False)


def speeds(
    precision: str, sentences: list[str], pages: list[str], repeats: int
) -> dict[str, dict[int, float]]:
    """Texts per second of each setting at each width (one encoder, the threshold set before each call,
    the settings' rounds interleaved so that drift in the machine's speed falls on all of them alike)."""
    encoder = munjang.load_encoder(MODEL, backend="torch", precision=precision)
    out: dict[str, dict[int, float]] = {name: {} for name in SETTINGS}
    for width in WIDTHS:
        texts = sentences if width == 0 else pages[: min(len(pages), 120 * 512 // width)]
        encoder.max_seq_length = 512 if width == 0 else width
        runs = {name: partial(_encode, encoder, threshold, texts) for name, threshold in SETTINGS.items()}
        for name, rate in interleaved_rates(runs, len(texts), repeats).items():
            out[name][width] = rate
        print(precision, width, {name: out[name][width] for name in SETTINGS}, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--name", default="torch_attention")
    args = parser.parse_args(argv)
    env = print_environment()
    sentences = ["query: " + t for t in load_corpus(2000, lang="ko")]
    pages = ["passage: " + t for t in load_autorag()[0].values()]
    results: dict[str, Any] = {}
    for precision in ("fp32", "bf16"):
        measured = speeds(precision, sentences, pages, args.repeats)
        never = measured["never"]
        results[precision] = {
            name: {
                "threshold_tokens": None if name == "never" else SETTINGS[name],
                "texts_per_s": row,
                "ratio_to_never": {w: round(v / never[w], 3) for w, v in row.items()},
            }
            for name, row in measured.items()
        }
        print(precision, {name: r["ratio_to_never"] for name, r in results[precision].items()}, flush=True)
    payload = {"model": MODEL, "widths": list(WIDTHS), "repeats": args.repeats, "results": results}
    path = write_result(args.name, payload, env)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
