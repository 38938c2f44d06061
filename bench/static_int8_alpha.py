"""SmoothQuant's migration strength for munjang's static int8: how close to fp32 each alpha keeps the vectors.

munjang's `openvino` int8 is static int8 with the attention MatMuls and FFN down-projections in bf16,
calibrated on the bundled Korean and English texts (`munjang.inference.static_int8`). This builds that
graph with each alpha, exactly as munjang does but for alpha, and measures the mean and minimum cosine
of its mean-pooled vectors to the fp32 graph's on sentences kept apart from bench/encode.py's corpus
(the same language and source, none of the same sentences), for English MiniLM and Korean e5-small.
The alpha munjang ships is the one with the highest mean cosine on both.

    python bench/static_int8_alpha.py            # writes bench/results/static_int8_alpha.json
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import _pools, load_corpus, print_environment, write_result
from munjang.inference.calibration import calibration_texts
from munjang.inference.hardware import cpu_has_fast_bf16
from munjang.inference.onnx_export import _numpy_batches, onnx_artifact
from munjang.inference.static_int8 import ALPHA, quantize

# (model, language, prompt, sentences bench/encode.py times: kept out here)
MODELS = [(None, "en", "", 10000), ("multilingual-e5-small", "ko", "query: ", 3000)]


def held_apart(lang: str, timed: int, n: int) -> list[str]:
    """`n` sentences of `lang` that bench/encode.py's corpus of `timed` sentences does not contain."""
    korean, english = _pools()
    used = set(load_corpus(timed, seed=0, lang=lang))
    pool = [s for s in (korean if lang == "ko" else english) if s not in used]
    return random.Random(1).sample(pool, min(n, len(pool)))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--alphas", default="0.5,0.8,0.95", help="comma-separated (NNCF's default is 0.95)")
    p.add_argument("--n", type=int, default=3000, help="held-apart sentences per language")
    args = p.parse_args(argv)
    env = print_environment()
    import onnx
    import openvino as ov

    core = ov.Core()
    precision = "bf16" if cpu_has_fast_bf16() else "f32"
    work = Path(tempfile.mkdtemp(prefix="munjang-alpha-"))
    results: dict[str, Any] = {}
    for model, lang, prompt, timed in MODELS:
        transformer = munjang.load_encoder(model, device="cpu", precision="fp32").transformer
        fp32 = onnx_artifact(transformer, None, "fp32")
        texts = [prompt + s for s in held_apart(lang, timed, args.n)]
        batches = _numpy_batches(transformer, sorted(texts, key=len), rows=32)
        calibration = _numpy_batches(transformer, sorted(calibration_texts(), key=len))

        def vectors(path: Path, hint: str, batches: list = batches) -> np.ndarray:
            compiled = core.compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": hint})
            request = compiled.create_infer_request()
            names = [port.get_any_name() for port in compiled.inputs]
            out = []
            for batch in batches:
                tokens = np.asarray(request.infer({k: batch[k] for k in names})[0])
                mask = batch["attention_mask"][..., None].astype(np.float32)
                v = (tokens * mask).sum(1) / mask.sum(1)
                out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
            return np.concatenate(out)

        reference = vectors(fp32, "f32")
        name = f"{model or 'all-MiniLM-L6-v2'} ({lang})"
        results[name] = {"sentences": len(texts)}
        for alpha in [float(a) for a in args.alphas.split(",")]:
            graph = work / f"{lang}-{alpha}.onnx"
            onnx.save(quantize(onnx.load(str(fp32)), calibration, alpha)[0], str(graph))
            cosine = (vectors(graph, precision) * reference).sum(1)
            results[name][str(alpha)] = {
                "cosine_mean": round(float(cosine.mean()), 5),
                "cosine_min": round(float(cosine.min()), 4),
            }
            print(f"{name:<32} alpha {alpha:<5} cosine mean {cosine.mean():.5f} min {cosine.min():.4f}")
    alphas = [a for a in results[next(iter(results))] if a != "sentences"]
    best = {m: max(alphas, key=lambda a, m=m: r[a]["cosine_mean"]) for m, r in results.items()}
    print(f"best alpha per model: {best}; munjang ships {ALPHA}")
    write_result(
        "static_int8_alpha",
        {"precision_of_float_ops": precision, "results": results, "best": best, "shipped": ALPHA},
        env=env,
    )


if __name__ == "__main__":
    main()
