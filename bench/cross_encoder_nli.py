"""NLI with a cross-encoder: e5-small + SBERT head (3 labels) trained with CrossEntropyLoss on KorNLI
xnli.dev (default) or KLUE-NLI train, accuracy on xnli.test.ko (never trained or chosen on), beside the
bi-encoder SoftmaxLoss classifier trained on xnli.dev (bench/results/ablation_concat.json, (u, v, |u-v|)).
The trained model is saved in <output-dir>/final: the first stage of the cross-encoder's NLI -> KorSTS
path (bench/cross_encoder_korsts.py --init).

    python bench/cross_encoder_nli.py            # writes bench/results/cross_encoder_nli.json
    python bench/cross_encoder_nli.py --train klue --epochs 1 --batch-size 32 --mixed-precision bf16 \
        --output-dir runs/ce-klue-nli-e5 --name cross_encoder_klue_nli
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, training_arguments, write_result
from munjang.data import nli_pair_examples, read_nli
from munjang.encoders.cross.evaluation import CrossEncoderClassificationEvaluator
from munjang.encoders.cross.losses import CrossEntropyLoss
from munjang.training import Trainer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--output-dir", default="runs/ce-xnli-e5")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--train", choices=("xnli-dev", "klue"), default="xnli-dev")
    parser.add_argument("--mixed-precision", default="no", help="no or bf16 (autocast)")
    parser.add_argument("--name", default="cross_encoder_nli", help="result file name")
    args = parser.parse_args(argv)
    env = environment()
    print_environment(env)
    shared = shared_data_dir()
    data = shared / "kornli"
    if args.train == "klue":
        klue = shared / "klue-nli" / "klue-nli-train.jsonl.gz"
        train = nli_pair_examples(read_nli(klue, premise="premise", hypothesis="hypothesis", label="label"))
    else:
        train = nli_pair_examples(read_nli(data / "xnli.dev.ko.tsv"))
    test = read_nli(data / "xnli.test.ko.tsv.gz")
    evaluator = CrossEncoderClassificationEvaluator(
        list(zip(test.premises, test.hypotheses, strict=True)), test.labels, name="xnli-test", batch_size=64
    )
    model = munjang.load_cross_encoder(args.model, num_labels=3, device="cpu")
    training_args = training_arguments(args, save_checkpoints=False, mixed_precision=args.mixed_precision)
    start = time.perf_counter()
    Trainer(model, CrossEntropyLoss(model), train, None, training_args).train()
    wall = time.perf_counter() - start
    model.save(Path(args.output_dir) / "final")
    metrics = evaluator(model)
    concat_file = Path(__file__).resolve().parent / "results" / "ablation_concat.json"
    bi = json.loads(concat_file.read_text()) if concat_file.exists() else {}
    print(f"cross-encoder xnli.test.ko accuracy {metrics['accuracy'] * 100:.2f}, macro F1 "
          f"{metrics['f1_macro'] * 100:.2f}; {len(train):,} training pairs, {wall:.0f} s")  # fmt: skip
    write_result(
        args.name,
        {
            "model": args.model,
            "args": vars(args),
            "train_pairs": len(train),
            "test_pairs": len(test.labels),
            "test_metrics": metrics,
            "wall_seconds": wall,
            "bi_encoder_softmax_same_data": {
                "source": "bench/results/ablation_concat.json",
                "results": bi.get("results"),
            },
        },
        env=env,
    )


if __name__ == "__main__":
    main()
