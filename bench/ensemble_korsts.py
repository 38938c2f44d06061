"""Output ensemble of KorSTS fine-tunes: how far combining the e5-small runs goes.

    python bench/ensemble_korsts.py            # the bench/train_korsts.py runs under runs/
    python bench/ensemble_korsts.py --models runs/a/best runs/b/best --name ensemble_korsts_ab

Each pair's ensemble score is the mean of the models' cosines (the same ranking as the cosine of the
concatenated, normalized embeddings, scaled). It is not a model one would ship (it costs one e5-small
per member), but it bounds what averaging these runs can give: a weight soup (bench/model_soup.py) or
a longer schedule is unlikely to beat it. KorSTS dev and test Spearman for each model and the ensemble.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.similarity import pairwise_cos_sim

DEFAULT_MODELS = [
    "runs/korsts-e5/best",
    "runs/korsts-e5-unfrozen/best",
    "runs/korsts-e5-teacher/best",
    "runs/korsts-e5-lr5e-5/best",
    "runs/korsts-e5-xling/best",
    "runs/korsts-e5-angle/best",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    parser.add_argument("--name", default="ensemble_korsts", help="result file name under bench/results")
    args = parser.parse_args(argv)
    missing = [m for m in args.models if not (Path(m) / "modules.json").is_file()]
    if missing:
        print(f"error: not model folders (no modules.json): {', '.join(missing)}", file=sys.stderr)
        return 2
    env = environment()
    print_environment(env)
    started = time.perf_counter()
    data = shared_data_dir() / "korsts"
    splits = {"dev": read_sts(data / "sts-dev.tsv"), "test": read_sts(data / "sts-test.tsv")}
    cosines: dict[str, dict[str, np.ndarray]] = {split: {} for split in splits}
    for name in args.models:
        encoder = munjang.load_encoder(name, device="cpu")
        for split, pairs in splits.items():
            a = encoder.encode(pairs.sentences1, prompt_name="query", batch_size=64)
            b = encoder.encode(pairs.sentences2, prompt_name="query", batch_size=64)
            cosines[split][name] = pairwise_cos_sim(a, b)
    figures: dict[str, dict[str, float]] = {}
    for split, pairs in splits.items():
        row = {name: float(spearmanr(c, pairs.scores)[0]) * 100 for name, c in cosines[split].items()}
        mean = np.mean(list(cosines[split].values()), axis=0)
        row["ensemble"] = float(spearmanr(mean, pairs.scores)[0]) * 100
        figures[split] = row
    for name in [*args.models, "ensemble"]:
        print(f"{name:40s} KorSTS dev {figures['dev'][name]:.2f}  test {figures['test'][name]:.2f}")
    path = write_result(
        args.name,
        {"models": args.models, "spearman": figures, "wall_seconds": round(time.perf_counter() - started, 1)},
        env=env,
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
