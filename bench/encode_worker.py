"""One encoder under test, in its own process, driven by `bench/encode.py` over stdin/stdout.

Runs under munjang's virtual environment (system "munjang" or "st" with the torch backend) or under
the peers' one (`make bench-peers`: sentence-transformers with its OpenVINO backend, whose
dependencies conflict with munjang's). It imports only what its system needs.

Protocol: one JSON object per line. The worker loads the model, warms it up and prints
{"ready": true, "load_s": ...}; then for each command line it prints one answer:
    {"cmd": "throughput"}      -> {"seconds": s}     (the corpus, saved once to <out>/<name>.corpus.npy)
    {"cmd": "latency"}         -> {"ms": [...]}      (each latency sentence encoded alone)
    {"cmd": "sts"}             -> {"path": ...}      (the STS sentences, saved to <out>/<name>.sts.npy)
    {"cmd": "quit"}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--system", choices=("munjang", "st"), required=True)
    p.add_argument("--backend", choices=("auto", "torch", "onnx", "openvino"), default="torch")
    p.add_argument("--precision", choices=("auto", "fp32", "fp16", "bf16", "int8"), default="fp32")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--model", required=True)
    p.add_argument("--task", required=True, help="JSON with corpus, latency, sts and calibration sentences")
    p.add_argument("--out", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=32, help="sentence-transformers' batch size")
    return p.parse_args()


def st_openvino_int8(model_dir: Path, calibration: list[str]) -> str:
    """sentence-transformers' own static int8 export (`export_static_quantized_openvino_model`),
    calibrated on local sentences instead of the default GLUE download; returns the file name."""
    import datasets
    from optimum.intel import OVQuantizer
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.backend import export_static_quantized_openvino_model

    def local_calibration(
        self: Any, *args: Any, preprocess_function: Any = None, num_samples: int = 300, **kw: Any
    ):
        rows = datasets.Dataset.from_dict({"sentence": calibration[:num_samples]})
        return rows.map(lambda ex: preprocess_function(ex), batched=True, remove_columns=["sentence"])

    OVQuantizer.get_calibration_dataset = local_calibration  # type: ignore[method-assign]
    model = SentenceTransformer(str(model_dir), backend="openvino", device="cpu")
    export_static_quantized_openvino_model(model, None, str(model_dir))
    return "openvino/openvino_model_qint8_quantized.xml"


class Runner:
    def __init__(self, args: argparse.Namespace, task: dict[str, Any]) -> None:
        self.args = args
        self.prompt = task.get("prompt") or ""
        if args.system == "munjang":
            import torch

            import munjang

            if args.threads:
                torch.set_num_threads(args.threads)
            if args.backend == "auto":  # what a user gets: load_encoder with no backend options
                os.environ.pop("MUNJANG_ENCODE_BACKEND", None)
                self.enc = munjang.load_encoder(args.model, device=args.device, threads=args.threads)
            else:
                options = {"threads": args.threads} if args.backend != "torch" and args.threads else {}
                self.enc = munjang.load_encoder(
                    args.model,
                    device=args.device,
                    backend=args.backend,
                    precision=args.precision,
                    backend_options=options,
                )
            self.enc.warmup()
            self.configuration = " ".join(self.enc.configuration())
        else:
            import torch
            from sentence_transformers import SentenceTransformer

            if args.threads:
                torch.set_num_threads(args.threads)
            kwargs: dict[str, Any] = {}
            model_dir = Path(args.model)
            if args.backend != "torch":
                # sentence-transformers writes its exported model beside the weights: use a copy.
                self.tmp = tempfile.mkdtemp(prefix="st-bench-")
                model_dir = Path(shutil.copytree(args.model, Path(self.tmp) / "model"))
                if args.precision == "int8":
                    kwargs["model_kwargs"] = {"file_name": st_openvino_int8(model_dir, task["calibration"])}
            self.st = SentenceTransformer(str(model_dir), device=args.device, backend=args.backend, **kwargs)
            if args.backend == "torch" and args.precision == "fp16":
                self.st.half()
            elif args.backend == "torch" and args.precision == "bf16":
                self.st.to(torch.bfloat16)
            self.st.encode(task["corpus"][:64], batch_size=args.batch_size)

    def encode(self, texts: list[str], single: bool = False) -> np.ndarray:
        if self.args.system == "munjang":
            if single:
                return np.asarray(self.enc.encode(texts[0], prompt=self.prompt))
            return np.asarray(self.enc.encode(texts, prompt=self.prompt, show_progress_bar=False))
        if single:
            return np.asarray(self.st.encode(texts[0], prompt=self.prompt or None))
        return np.asarray(
            self.st.encode(
                texts, batch_size=self.args.batch_size, prompt=self.prompt or None, show_progress_bar=False
            )
        )


def main() -> int:
    args = parse_args()
    task = json.loads(Path(args.task).read_text(encoding="utf-8"))
    out = Path(args.out)
    start = time.perf_counter()
    runner = Runner(args, task)
    ready = {"ready": True, "load_s": round(time.perf_counter() - start, 3)}
    ready["configuration"] = getattr(runner, "configuration", f"{args.backend} {args.precision}")
    print(json.dumps(ready), flush=True)
    saved = False
    for line in sys.stdin:
        cmd = json.loads(line)["cmd"]
        if cmd == "throughput":
            t0 = time.perf_counter()
            vectors = runner.encode(task["corpus"])
            seconds = time.perf_counter() - t0
            if not saved:
                np.save(out / f"{args.name}.corpus.npy", vectors.astype(np.float32))
                saved = True
            print(json.dumps({"seconds": seconds}), flush=True)
        elif cmd == "latency":
            times = []
            for text in task["latency"]:
                t0 = time.perf_counter()
                runner.encode([text], single=True)
                times.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps({"ms": times}), flush=True)
        elif cmd == "sts":
            path = out / f"{args.name}.sts.npy"
            np.save(path, runner.encode(task["sts_sentences"]).astype(np.float32))
            print(json.dumps({"path": str(path)}), flush=True)
        elif cmd == "quit":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
