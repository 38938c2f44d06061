"""Model soup (Wortsman et al., 2022): average the weights of models fine-tuned from the same start.

Greedy soup: ingredients sorted by KorSTS dev Spearman; each is added to the soup only if the
soup's dev Spearman does not fall. Test Spearman is read once, for the best ingredient and for the
final soup (the choice never sees test).

    python bench/model_soup.py                 # the KorSTS runs of bench/train_korsts.py under runs/
    python bench/model_soup.py --ingredients runs/a/best runs/b/best --output runs/soup
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator

DEFAULT_INGREDIENTS = [
    "runs/korsts-e5/best",
    "runs/korsts-e5/final",
    "runs/korsts-e5-lr5e-5/best",
    "runs/korsts-e5-xling/best",
]


def average(folders: list[Path], output: Path) -> Path:
    """A copy of the first folder whose weights are the mean of every folder's weights."""
    states = [load_file(str(f / "model.safetensors")) for f in folders]
    keys = states[0].keys()
    for f, s in zip(folders, states, strict=True):
        if s.keys() != keys:
            raise ValueError(f"{f}: different parameters, not a soup ingredient")
    mean = {k: torch.stack([s[k].float() for s in states]).mean(0).to(states[0][k].dtype) for k in keys}
    if output.exists():
        shutil.rmtree(output)
    shutil.copytree(folders[0], output, ignore=shutil.ignore_patterns("model.safetensors", "trainer_state*"))
    save_file(mean, str(output / "model.safetensors"), metadata={"format": "pt"})
    return output


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ingredients", nargs="+", default=DEFAULT_INGREDIENTS)
    p.add_argument("--output", default="runs/korsts-e5-soup")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    env = print_environment()
    started = time.perf_counter()
    data = shared_data_dir()
    dev, test = read_sts(data / "korsts" / "sts-dev.tsv"), read_sts(data / "korsts" / "sts-test.tsv")

    def score(folder: Path, pairs) -> float:
        evaluator = STSEvaluator.from_data(
            pairs, similarity_fns=("cosine",), prompt_name="query", batch_size=64
        )
        return float(evaluator(munjang.load_encoder(str(folder), device="cpu"))["spearman_cosine"]) * 100

    folders = [Path(f) for f in args.ingredients if (Path(f) / "modules.json").exists()]
    if not folders:
        print("error: no ingredient model folders (modules.json + model.safetensors)", file=sys.stderr)
        return 1
    dev_scores = {str(f): score(f, dev) for f in folders}
    for f, s in dev_scores.items():
        print(f"ingredient {f}: KorSTS dev {s:.2f}")
    ranked = sorted(folders, key=lambda f: -dev_scores[str(f)])
    soup, best_dev = [ranked[0]], dev_scores[str(ranked[0])]
    steps = [{"added": str(ranked[0]), "dev": round(best_dev, 2)}]
    tmp = Path(args.output + ".try")
    for candidate in ranked[1:]:
        trial = score(average([*soup, candidate], tmp), dev)
        kept = trial >= best_dev
        print(f"  + {candidate}: soup dev {trial:.2f} ({'kept' if kept else 'dropped'})")
        steps.append({"added": str(candidate), "dev": round(trial, 2), "kept": kept})
        if kept:
            soup, best_dev = [*soup, candidate], trial
    shutil.rmtree(tmp, ignore_errors=True)
    final = average(soup, Path(args.output))
    best_test = score(ranked[0], test)
    soup_test = score(final, test)
    print(f"best ingredient {ranked[0]}: KorSTS test {best_test:.2f}")
    print(f"greedy soup of {len(soup)}: KorSTS dev {best_dev:.2f}, test {soup_test:.2f} -> {final}")
    if not args.no_write:
        payload = {
            "ingredients_dev": {k: round(v, 2) for k, v in dev_scores.items()},
            "greedy_steps": steps,
            "soup": [str(f) for f in soup],
            "best_ingredient": str(ranked[0]),
            "best_ingredient_test": round(best_test, 2),
            "soup_dev": round(best_dev, 2),
            "soup_test": round(soup_test, 2),
            "output": str(final),
            "wall_seconds": round(time.perf_counter() - started, 1),
        }
        print(f"wrote {write_result('model_soup', payload, env=env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
