"""munjang's own Korean model as a user gets it: the registered model loaded by name, scored on KorSTS.

`make korean-model` trains examples/korean_model.yaml and registers munjang-ko-small. This loads it by
name (as `munjang.load_encoder("munjang-ko-small")` does), scores KorSTS dev and test (cosine
Spearman x 100, `query: ` prompt) beside the model it started from, and records how it was trained
(from its manifest: the step kept, steps, training time, tasks).

    make korean-model && python bench/korean_model.py      # writes bench/results/korean_model.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator
from munjang.models import describe


def korsts(model: str, data_dir: Path, **load: Any) -> dict[str, float]:
    """KorSTS dev and test Spearman (cosine, x 100, `query: ` prompt) of a model loaded by name or
    folder; `load` goes to `load_encoder` (e.g. precision="fp32")."""
    encoder = munjang.load_encoder(model, device="cpu", **load)
    scores = {}
    for split in ("dev", "test"):
        data = read_sts(data_dir / "korsts" / f"sts-{split}.tsv")
        evaluator = STSEvaluator.from_data(data, similarity_fns=("cosine",), prompt_name="query")
        scores[split] = round(evaluator(encoder)["spearman_cosine"] * 100, 2)
    return scores


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="munjang-ko-small")
    parser.add_argument("--base", default="multilingual-e5-small")
    parser.add_argument("--name", default="korean_model")
    args = parser.parse_args(argv)
    environment = print_environment()
    data_dir = shared_data_dir()
    manifest: dict[str, Any] = describe(args.model).get("manifest") or {}
    result = {
        "model": args.model,
        "korsts": korsts(args.model, data_dir),
        "base": args.base,
        "base_korsts": korsts(args.base, data_dir),
        "trained": {k: manifest.get(k) for k in ("base_model", "config", "kept", "train_seconds", "tasks")},
    }
    print(f"{args.model}: KorSTS {result['korsts']} (from {args.base}: {result['base_korsts']})")
    print(f"trained: {result['trained']}")
    print(f"wrote {write_result(args.name, result, environment)}")


if __name__ == "__main__":
    main()
