"""The SBERT recipe on real Korean NLI, ablated: which training data lifts e5-small on KorSTS.

Every configuration starts from multilingual-e5-small and trains one or two stages through munjang's
training configs (the YAML each stage ran is written beside its output, so `munjang train --config`
repeats it). Stages:

  - sts: KorSTS train, CoSENT, 4 epochs, batch 16, lr 2e-5 (the KorSTS fine-tuning recipe);
  - nli-softmax: KLUE-NLI train pairs (24,998), SoftmaxLoss over (u, v, |u - v|) as in the SBERT paper,
    1 epoch, batch 32, lr 2e-5;
  - nli-mnrl: KLUE-NLI (premise, entailed, contradicting) triplets, MultipleNegativesRankingLoss with the
    contradiction as hard negative and scale 20 (SimCSE's temperature 0.05), 1 epoch, batch 64, lr 3e-5;
  - multitask: KorSTS (CoSENT), KLUE-NLI triplets (MNRL) and ParaKQC paraphrase pairs (MNRL), one batch
    of each in turn (round robin), batch 16, lr 2e-5, 3 epochs;
  - multitask-xnli-size: munjang-ko-small's recipe (KorSTS and 830 NLI triplets in turn, 4 epochs) with
    the first 830 KLUE-NLI triplets in place of KorNLI xnli.dev.ko's 830.

Configurations: sts | nli-softmax | nli-mnrl | nli-softmax -> sts | nli-mnrl -> sts (the ko-sbert-nli /
KR-SBERT path: NLI first, then STS from the NLI stage's best/) | multitask (the ko-sroberta-multitask
path, with the paraphrase sets) | multitask-xnli-size. Each stage keeps the step with the best
KorSTS dev Spearman (best/); the figures are KorSTS dev and test of that folder, reloaded. KorSTS test and
KorNLI xnli.test.ko are never used to choose anything; the SoftmaxLoss head's NLI accuracy on
xnli.test.ko is measured once, after training, with the head and weights of the last step.
All stages train with bf16 autocast (fp32 weights), the `query: ` prompt and frozen word embeddings.

A finished stage is not run again (its result is kept in its folder), and an interrupted stage resumes
from its last checkpoint, so a stopped run goes on where it stopped.

    python bench/korean_ablation.py                          # everything, ~3 h on 2 cores
    python bench/korean_ablation.py --only nli-mnrl,nli-mnrl+sts
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, shared_data_dir, write_result
from korean_model import korsts

KLUE = {"premise": "premise", "hypothesis": "hypothesis", "label": "label"}
COMMON = {
    "seed": 42,
    "prompt_name": "query",
    "freeze_word_embeddings": True,
    "mixed_precision": "bf16",
    "logging_steps": 20,
}


# Each task: (data file under the shared data folder, or "parakqc-pairs" for pairs written from
# ParaKQC by `parakqc_pairs`), format, loss.
TASKS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "korsts": ("korsts/sts-train.tsv.gz", "sts", {"name": "cosent"}),
    "klue-nli-pairs": ("klue-nli/klue-nli-train.jsonl.gz", "nli-pairs", {"name": "softmax"}),
    "klue-nli-triplets": ("klue-nli/klue-nli-train.jsonl.gz", "nli-triplets", {"name": "mnrl", "scale": 20}),
    "parakqc": ("parakqc-pairs", "table", {"name": "mnrl", "scale": 20}),
}
# The KorNLI xnli.dev.ko triplets of munjang-ko-small's recipe (examples/korean_model.yaml): the
# "multitask-xnli-size" stage takes as many KLUE-NLI triplets, to compare the two NLI sources at one share.
XNLI_DEV_TRIPLETS = 830
# Each stage: its tasks (a name, or (name, how many examples it keeps); several tasks train in turn,
# one batch each: round robin) and training settings.
STAGES: dict[str, tuple[list[str | tuple[str, int]], dict[str, Any]]] = {
    "sts": (["korsts"], {"epochs": 4, "batch_size": 16, "learning_rate": 2e-5, "eval_steps": 180}),
    "nli-softmax": (
        ["klue-nli-pairs"],
        {"epochs": 1, "batch_size": 32, "learning_rate": 2e-5, "eval_steps": 130},
    ),
    "nli-mnrl": (
        ["klue-nli-triplets"],
        {"epochs": 1, "batch_size": 64, "learning_rate": 3e-5, "eval_steps": 40},
    ),
    "multitask": (
        ["korsts", "klue-nli-triplets", "parakqc"],
        {
            "epochs": 3,
            "batch_size": 16,
            "learning_rate": 2e-5,
            "eval_steps": 180,
            "multi_task": "round_robin",
        },
    ),
    "multitask-xnli-size": (
        ["korsts", ("klue-nli-triplets", XNLI_DEV_TRIPLETS)],
        {
            "epochs": 4,
            "batch_size": 16,
            "learning_rate": 2e-5,
            "eval_steps": 180,
            "multi_task": "round_robin",
        },
    ),
}
# ParaKQC pairs per set: disjoint pairs of its sentences 1-6 (sentence 0 is the query of ParaKQC
# retrieval in bench/korean_retrieval.py, so it is never trained on).
PARAKQC_PAIRS_PER_SET = 3


def parakqc_pairs(data: Path, out: Path) -> Path:
    """ParaKQC as (anchor, positive) paraphrase pairs for MNRL, written to `out` (a TSV with a header):
    PARAKQC_PAIRS_PER_SET disjoint pairs per set of 10 paraphrases."""
    lines = (data / "parakqc" / "paraKQC_v1.txt").read_text(encoding="utf-8").splitlines()
    sentences = [line.split("\t")[2].strip() for line in lines]
    if len(sentences) % 10:
        raise ValueError(f"paraKQC_v1.txt has {len(sentences)} lines, not sets of 10")
    rows = ["anchor\tpositive"]
    for start in range(0, len(sentences), 10):
        for j in range(PARAKQC_PAIRS_PER_SET):
            rows.append(f"{sentences[start + 1 + 2 * j]}\t{sentences[start + 2 + 2 * j]}")
    out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def stage_config(stage: str, model: str, output_dir: Path, data: Path) -> dict[str, Any]:
    """The training config (as `munjang train --config` reads it) of one stage."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}")
    names, training = STAGES[stage]
    evaluators = [{"type": "sts", "name": "korsts-dev", "path": str(data / "korsts" / "sts-dev.tsv")}]
    tasks = []
    for entry in names:
        name, limit = (entry, None) if isinstance(entry, str) else entry
        path, fmt, loss = TASKS[name]
        task_data: dict[str, Any] = {"format": fmt}
        if name == "parakqc":
            pairs = parakqc_pairs(data, output_dir / "parakqc-pairs.tsv")
            task_data.update(path=str(pairs), columns=["anchor", "positive"])
        else:
            task_data["path"] = str(data / path)
        if fmt.startswith("nli"):
            task_data["format_options"] = KLUE
        task: dict[str, Any] = {"name": name, "data": task_data, "loss": loss}
        if limit is not None:
            task["limit"] = limit
        tasks.append(task)
    training = {**COMMON, **training, "save_steps": training["eval_steps"]}
    return {
        "model": model,
        "output_dir": str(output_dir),
        "tasks": tasks,
        "evaluator": evaluators,
        "training": training,
    }


CONFIGURATIONS: dict[str, list[str]] = {
    "sts": ["sts"],
    "nli-softmax": ["nli-softmax"],
    "nli-mnrl": ["nli-mnrl"],
    "nli-softmax+sts": ["nli-softmax", "sts"],
    "nli-mnrl+sts": ["nli-mnrl", "sts"],
    "multitask": ["multitask"],
    "multitask-xnli-size": ["multitask-xnli-size"],
}


def nli_accuracy(trainer: Any, data: Path) -> float:
    """The SoftmaxLoss head's accuracy on KorNLI xnli.test.ko, with the last step's weights and head."""
    from munjang.data import read_nli
    from munjang.evaluation import LabelAccuracyEvaluator

    head = next(iter(trainer.losses.values()))
    test = read_nli(data / "kornli" / "xnli.test.ko.tsv.gz")
    evaluator = LabelAccuracyEvaluator.from_nli(
        test, lambda u, v: head.classifier(head.classifier_input(u, v)), prompt_name="query", batch_size=64
    )
    return round(float(evaluator(trainer.model)["accuracy"]) * 100, 2)


def run_stage(stage: str, model: str, folder: Path, data: Path) -> dict[str, Any]:
    """Train one stage into `folder` (or read the result a finished run left there)."""
    from munjang.training.checkpoint import list_checkpoints
    from munjang.training.config import build, load_config

    done = folder / "ablation_stage.json"
    if done.exists():
        print(f"  {stage}: done before, {done}")
        return dict(json.loads(done.read_text()))
    config_path = folder / "train.yaml"
    resume = bool(list_checkpoints(folder / "checkpoints")) and config_path.exists()
    if not resume:
        if folder.exists():
            import shutil

            shutil.rmtree(folder)  # stopped before its first checkpoint: start over
        folder.mkdir(parents=True)
        config_path.write_text(yaml.safe_dump(stage_config(stage, model, folder, data), sort_keys=False))
    before = 0.0  # training time the metrics log recorded before an interruption
    if resume:
        logged = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        before = max([0.0, *(r["elapsed_s"] for r in logged if "elapsed_s" in r)])
    trainer, plan = build(load_config(config_path))
    start = time.perf_counter()
    summary = trainer.train(resume_from_checkpoint=resume or None)
    wall = before + time.perf_counter() - start
    result: dict[str, Any] = {
        "stage": stage,
        "from": model,
        "config": str(config_path),
        "examples": {t["name"]: t["examples"] for t in plan["tasks"]},
        "steps": summary["global_step"],
        "best_step": summary["best_step"],
        "best_dev_during_training": round(float(summary["best_metric"]) * 100, 2),
        "wall_seconds": round(wall, 1),
        "resumed": resume,
        "steps_per_second": round(summary["global_step"] / wall, 4),
        "korsts_best": korsts(str(folder / "best"), data, precision="fp32"),
        "curve": [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()],
    }
    if stage == "nli-softmax":
        result["xnli_test_accuracy_last_step"] = nli_accuracy(trainer, data)
    done.write_text(json.dumps(result, indent=1))
    print(f"  {stage}: KorSTS {result['korsts_best']}, {result['steps']} steps in {wall:.0f} s")
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--only", default=",".join(CONFIGURATIONS), help="comma-separated configurations")
    parser.add_argument("--runs", default="runs/korean-ablation", help="folder of the stages' outputs")
    parser.add_argument("--name", default="korean_ablation")
    args = parser.parse_args(argv)
    env = print_environment()
    data = shared_data_dir()
    chosen = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CONFIGURATIONS]
    if unknown:
        parser.error(f"unknown configurations {unknown}; choose from {', '.join(CONFIGURATIONS)}")
    runs = Path(args.runs).resolve()
    results: dict[str, Any] = {"base": {"model": args.model}}
    from munjang.models.hub import resolve_model_path

    results["base"]["korsts"] = korsts(str(resolve_model_path(args.model)), data, precision="fp32")
    print(f"{args.model}: KorSTS {results['base']['korsts']}")
    for name in chosen:
        print(f"{name}:")
        model, stages = args.model, []
        for i, stage in enumerate(CONFIGURATIONS[name]):
            prefix = "+".join(CONFIGURATIONS[name][: i + 1])  # a shared first stage trains once
            stages.append(run_stage(stage, model, runs / prefix, data))
            model = str(runs / prefix / "best")
        results[name] = {
            "korsts": stages[-1]["korsts_best"],
            "wall_seconds": round(sum(s["wall_seconds"] for s in stages), 1),
            "stages": stages,
        }
    print(f"\n{'configuration':<18} {'dev':>6} {'test':>6} {'wall s':>7}")
    for name in chosen:
        row = results[name]
        print(f"{name:<18} {row['korsts']['dev']:>6} {row['korsts']['test']:>6} {row['wall_seconds']:>7}")
    print(f"wrote {write_result(args.name, results, env)}")


if __name__ == "__main__":
    main()
