"""int8 graphs that munjang could ship, measured side by side: how close to fp32 and how fast.

The record of the search for "5x sentence-transformers at fp32 accuracy" (issue 6) on a CPU without
AMX: every variant runs the same length-sorted batches (2,048-token budget) of the same corpus in one
process, round after round, and is compared with the fp32 graph (mean-pooled, normalized vectors).

Variants (all from munjang's own fp32 ONNX export of the model):
  - ort-dynamic: ONNX Runtime dynamic int8 (per-channel int8 weights, uint8 activations per tensor);
    munjang's `onnx` int8 backend;
  - ort-dynamic-smooth: the same after SmoothQuant (Xiao et al. 2023, `munjang.inference.smoothquant`):
    each weight MatMul's input is divided per channel by s = max|X|^a / max|W|^(1-a) and the weight rows
    multiplied by s (exact in float), with max|X| from the bundled demo sentences;
  - ort-nbits8: ONNX Runtime MatMulNBits, 8-bit weights in blocks of 32, int8 compute (accuracy_level 4);
  - ov-int8-plain: OpenVINO with int8 weights, activations quantized on the fly in groups of 32
    (munjang's `openvino` int8 backend before SmoothQuant);
  - ov-int8-token: the same with one group per token (DYNAMIC_QUANTIZATION_GROUP_SIZE 384);
  - ov-int8: SmoothQuant first, then as ov-int8-plain: munjang's `openvino` int8 backend where NNCF
    is not installed;
  - ov-fp32 / ov-bf16: OpenVINO on the fp32 graph with f32 / bf16 inference precision (munjang's
    `openvino` fp32 and bf16 backends): bf16 matmuls with float accumulation, no quantization;
  - ov-static: NNCF post-training static int8 (`nncf.quantize`, transformer model type: SmoothQuant,
    int8 activations with calibrated per-tensor ranges, fast bias correction), calibrated on STSb
    sentences held apart from the timed corpus: what sentence-transformers' openvino int8 export does;
  - ov-static-bf16: ov-static compiled with bf16 inference precision (the ops left in float run in bf16);
  - ov-static-fc: static int8 on the fully connected layers only (the two attention MatMuls stay float),
    bf16 for the rest;
  - ov-static-mixed: ov-static-fc with each layer's FFN down-projection (the MatMul after GELU, whose
    input has the widest range) also left in bf16: of the six kinds of MatMul, keeping that one in
    float recovers the most accuracy. munjang's `openvino` int8 ships this graph (`static_int8.py`),
    calibrated on its bundled texts with SmoothQuant alpha 0.8 instead of NNCF's 0.95;
  - ov-static-ac: NNCF's accuracy control on the SmoothQuant int8-weight graph: static int8 first,
    then the quantizers that hurt most are reverted (those MatMuls stay on the dynamic int8 path)
    until the mean cosine to fp32 on a second held-apart set is within --max-drop.

    python bench/int8_variants.py                 # all-MiniLM-L6-v2, 10,000 English sentences
    python bench/int8_variants.py --n 2000 --rounds 1 --no-nncf
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result

BUDGET = 2048


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10000, help="English sentences (default 10000)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    p.add_argument("--alpha", type=float, default=0.5, help="SmoothQuant migration strength (default 0.5)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--calibration", type=int, default=2000, help="held-apart sentences for NNCF")
    p.add_argument("--max-drop", type=float, default=0.0006, help="ov-static-ac: mean-cosine budget")
    p.add_argument("--no-nncf", action="store_true", help="skip the NNCF static int8 variants")
    p.add_argument("--name", default="int8_variants")
    return p.parse_args(argv)


def batches(tokenizer: Any, texts: list[str]) -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Length-sorted padded batches of at most BUDGET tokens: (row indices, graph inputs)."""
    ids = tokenizer(texts)["input_ids"]
    order = np.argsort([len(x) for x in ids], kind="stable")
    out, i = [], 0
    while i < len(order):
        n = 1
        while i + n < len(order) and n < 256 and (n + 1) * len(ids[order[i + n]]) <= BUDGET:
            n += 1
        rows = order[i : i + n]
        i += n
        width = max(len(ids[j]) for j in rows)
        input_ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros_like(input_ids)
        for r, j in enumerate(rows):
            input_ids[r, : len(ids[j])] = ids[j]
            mask[r, : len(ids[j])] = 1
        out.append((rows, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": 0 * mask}))
    return out


def ort_nbits8(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.quantization import matmul_nbits_quantizer as nbits

    config = nbits.DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, accuracy_level=4, bits=8)
    quantizer = nbits.MatMulNBitsQuantizer(
        onnx.load(str(src)), bits=8, block_size=32, is_symmetric=True, accuracy_level=4, algo_config=config
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(dst))


def pooled(tokens: np.ndarray, feed: dict[str, np.ndarray]) -> np.ndarray:
    """Mean-pooled, L2-normalized sentence vectors of one batch."""
    mask = feed["attention_mask"][..., None]
    vectors = (tokens * mask).sum(axis=1) / mask.sum(axis=1)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def nncf_variants(
    core: Any, fp32: Path, weights_int8: Path, calibration: list, validation: list, max_drop: float
) -> dict[str, Any]:
    """NNCF static int8 of the fp32 graph (whole, or leaving some MatMuls float) and accuracy-controlled
    static int8 of the int8-weight graph: {name: (model, OpenVINO inference precision)}."""
    import nncf

    names = [p.get_any_name() for p in core.read_model(str(fp32)).inputs]
    common = {"model_type": nncf.ModelType.TRANSFORMER, "subset_size": len(calibration)}
    data = nncf.Dataset(calibration, lambda feed: {k: feed[k] for k in names})
    static = nncf.quantize(core.read_model(str(fp32)), data, **common)
    matmuls = [
        op.get_friendly_name()
        for op in core.read_model(str(fp32)).get_ops()
        if op.get_type_name() == "MatMul"
    ]
    attention = [n for n in matmuls if re.search(r"attention/self/MatMul(_1)?$", n)]
    down = [n for n in matmuls if re.search(r"layer\.\d+/output/dense/MatMul$", n)]
    fc = nncf.quantize(
        core.read_model(str(fp32)), data, ignored_scope=nncf.IgnoredScope(names=attention), **common
    )
    mixed = nncf.quantize(
        core.read_model(str(fp32)), data, ignored_scope=nncf.IgnoredScope(names=attention + down), **common
    )

    def validate(compiled: Any, items: Any) -> float:
        request = compiled.create_infer_request()
        inputs = [p.get_any_name() for p in compiled.inputs]
        cosines = [
            (pooled(np.asarray(request.infer({k: feed[k] for k in inputs})[0]), feed) * ref).sum(axis=1)
            for feed, ref in items
        ]
        return float(np.concatenate(cosines).mean())

    controlled = nncf.quantize_with_accuracy_control(
        core.read_model(str(weights_int8)),
        calibration_dataset=data,
        validation_dataset=nncf.Dataset(validation, lambda item: {k: item[0][k] for k in names}),
        validation_fn=validate,
        max_drop=max_drop,
        drop_type=nncf.DropType.ABSOLUTE,
        **common,
    )
    return {
        "ov-static": (static, "f32"),
        "ov-static-bf16": (static, "bf16"),
        "ov-static-fc": (fc, "bf16"),
        "ov-static-mixed": (mixed, "bf16"),
        "ov-static-ac": (controlled, "f32"),
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    env = print_environment()
    import onnx
    import onnxruntime as ort
    import openvino as ov

    import munjang
    from munjang.inference import smoothquant
    from munjang.inference.onnx_export import onnx_artifact, quantize_int8_weights, write_int8_dynamic

    encoder = munjang.load_encoder(device="cpu")
    transformer = encoder.transformer
    fp32 = onnx_artifact(transformer, None, "fp32")
    work = Path(tempfile.mkdtemp(prefix="munjang-int8-"))
    calibration = batches(transformer.tokenizer, smoothquant.calibration_texts())
    smoothed = onnx.load(str(fp32))
    smoothquant.smooth(smoothed, [feed for _, feed in calibration], args.alpha)
    onnx.save(smoothed, str(work / "smooth-fp32.onnx"))
    write_int8_dynamic(fp32, work / "dyn.onnx")
    write_int8_dynamic(work / "smooth-fp32.onnx", work / "dyn-smooth.onnx")
    ort_nbits8(fp32, work / "nbits8.onnx")
    quantize_int8_weights(transformer, fp32, work / "w8.onnx", smooth=False)
    quantize_int8_weights(transformer, fp32, work / "w8-smooth.onnx")

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.log_severity_level = 3
    core = ov.Core()

    def ort_runner(path: Path) -> Any:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda feed: session.run(None, {k: feed[k] for k in names})[0]

    def ov_runner(model: Path | Any, group: int | None = None, precision: str = "f32") -> Any:
        config: dict[str, Any] = {
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": args.threads,
            "INFERENCE_PRECISION_HINT": precision,
        }
        if group is not None:
            config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = group
        if isinstance(model, Path):
            model = core.read_model(str(model))
        compiled = core.compile_model(model, "CPU", config)
        request = compiled.create_infer_request()
        names = [p.get_any_name() for p in compiled.inputs]
        return lambda feed: request.infer({k: feed[k] for k in names})[0]

    runners = {
        "ort-fp32": ort_runner(fp32),
        "ort-dynamic": ort_runner(work / "dyn.onnx"),
        "ort-dynamic-smooth": ort_runner(work / "dyn-smooth.onnx"),
        "ort-nbits8": ort_runner(work / "nbits8.onnx"),
        "ov-int8-plain": ov_runner(work / "w8.onnx"),
        "ov-int8-token": ov_runner(work / "w8.onnx", group=384),
        "ov-int8": ov_runner(work / "w8-smooth.onnx"),
        "ov-fp32": ov_runner(fp32),
        "ov-bf16": ov_runner(fp32, precision="bf16"),
    }
    pool = load_corpus(15487, seed=0, lang="en")  # every distinct STSb sentence, shuffled
    corpus = pool[: args.n]
    work_batches = batches(transformer.tokenizer, corpus)
    if not args.no_nncf:
        held_apart = pool[args.n :]
        if len(held_apart) < args.calibration + 500:
            raise SystemExit(f"--n {args.n} leaves too few held-apart sentences for NNCF calibration")
        calibration = [feed for _, feed in batches(transformer.tokenizer, held_apart[: args.calibration])]
        reference_run = runners["ov-fp32"]
        validation = [
            (feed, pooled(np.asarray(reference_run(feed)), feed))
            for _, feed in batches(transformer.tokenizer, held_apart[args.calibration :])
        ]
        for name, model in nncf_variants(
            core, fp32, work / "w8-smooth.onnx", calibration, validation, args.max_drop
        ).items():
            runners[name] = ov_runner(model[0], precision=model[1])

    def encode(run: Any) -> np.ndarray:
        out = np.zeros((len(corpus), transformer.hidden_size), np.float32)
        for rows, feed in work_batches:
            out[rows] = pooled(np.asarray(run(feed)), feed)
        return out

    reference = encode(runners["ort-fp32"])
    results: dict[str, Any] = {}
    for name, run in runners.items():
        cosine = (encode(run) * reference).sum(axis=1)
        results[name] = {
            "cosine_mean": round(float(cosine.mean()), 5),
            "cosine_min": round(float(cosine.min()), 4),
        }
        results[name]["rounds"] = []
    for r in range(args.rounds):
        for name, run in runners.items():
            start = time.perf_counter()
            encode(run)
            results[name]["rounds"].append(round(len(corpus) / (time.perf_counter() - start), 1))
            print(f"  round {r + 1} {name:<20} {results[name]['rounds'][-1]:8.1f} sent/s", flush=True)
    for row in results.values():
        row["sentences_per_s_median"] = float(np.median(row["rounds"]))
    base = results["ort-fp32"]["sentences_per_s_median"]
    print(f"\n{'variant':<20} {'sent/s':>8} {'x fp32':>7} {'cos mean':>9} {'cos min':>8}")
    for name, row in results.items():
        row["ratio_to_ort_fp32"] = round(row["sentences_per_s_median"] / base, 3)
        print(
            f"{name:<20} {row['sentences_per_s_median']:8.1f} {row['ratio_to_ort_fp32']:7.2f} "
            f"{row['cosine_mean']:9.5f} {row['cosine_min']:8.4f}"
        )
    payload = {
        "model": "all-MiniLM-L6-v2 (embedded)",
        "n": len(corpus),
        "alpha": args.alpha,
        "nncf": None if args.no_nncf else {"calibration": args.calibration, "max_drop": args.max_drop},
        "results": results,
    }
    print(f"result: {write_result(args.name, payload, env)}")


if __name__ == "__main__":
    main()
