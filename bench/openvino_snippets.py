"""Where OpenVINO's snippets (one fused kernel per attention block) pay: multilingual-e5-small, openvino
bf16, inputs of several widths, with snippets never, always, and above `LONG_BATCH_TOKENS` (munjang's
setting), one encoder each, rounds interleaved. The evidence behind `openvino_backend.LONG_BATCH_TOKENS`.

    python bench/openvino_snippets.py

Widths: the Korean sentences of the encode benchmark (23 tokens mean with `query: `), then AutoRAG-ko
pages cut at 64, 128, 256 and 512 tokens (`max_seq_length`), so every batch of a width is that wide.
Texts per second, median of --repeats rounds; each setting's speed as a ratio to "never".
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
from munjang.inference import openvino_backend

MODEL = "multilingual-e5-small"
WIDTHS = (0, 64, 128, 256, 512)  # 0: the Korean sentences, their own widths
SETTINGS = {"never": 10**9, "always": 0, "munjang": openvino_backend.LONG_BATCH_TOKENS}


def _encode(encoder: Any, threshold: int, texts: list[str]) -> None:
    openvino_backend.LONG_BATCH_TOKENS = threshold
    encoder.encode(texts, show_progress_bar=False)


def speeds(sentences: list[str], pages: list[str], repeats: int) -> dict[str, dict[int, float]]:
    """Texts per second of each setting at each width, rounds interleaved across the settings (one
    encoder each, the module's threshold set before each call) so that drift in the machine's speed
    falls on all of them alike."""
    encoders = {name: munjang.load_encoder(MODEL, backend="openvino", precision="bf16") for name in SETTINGS}
    out: dict[str, dict[int, float]] = {name: {} for name in SETTINGS}
    for width in WIDTHS:
        texts = sentences if width == 0 else pages[: min(len(pages), 240 * 512 // width)]
        for name, encoder in encoders.items():
            openvino_backend.LONG_BATCH_TOKENS = SETTINGS[name]
            encoder.max_seq_length = 512 if width == 0 else width
            encoder.encode(texts[:200], show_progress_bar=False)  # compiles this width's graphs
        runs = {name: partial(_encode, encoder, SETTINGS[name], texts) for name, encoder in encoders.items()}
        for name, rate in interleaved_rates(runs, len(texts), repeats).items():
            out[name][width] = rate
        print(width, {name: out[name][width] for name in SETTINGS}, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--name", default="openvino_snippets")
    args = parser.parse_args(argv)
    env = print_environment()
    sentences = ["query: " + t for t in load_corpus(3000, lang="ko")]
    pages = ["passage: " + t for t in load_autorag()[0].values()]
    measured = speeds(sentences, pages, args.repeats)
    results: dict[str, Any] = {
        name: {"threshold_tokens": None if name == "never" else threshold, "texts_per_s": measured[name]}
        for name, threshold in SETTINGS.items()
    }
    never = results["never"]["texts_per_s"]
    for row in results.values():
        row["ratio_to_never"] = {w: round(v / never[w], 3) for w, v in row["texts_per_s"].items()}
    print({name: row["ratio_to_never"] for name, row in results.items()})
    path = write_result(
        args.name, {"model": MODEL, "widths": list(WIDTHS), "repeats": args.repeats, "results": results}, env
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
