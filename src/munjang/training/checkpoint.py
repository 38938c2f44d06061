"""Training checkpoints: weights, optimizer, schedule, RNG streams and the loop position.

A checkpoint is written only at an optimizer-step boundary, with the RNG state as it was right after
that step, so a resumed run continues exactly as an uninterrupted one would have.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

STATE_FILE = "trainer_state.json"


@dataclass
class LoopState:
    """Where the loop stands: steps done, the epoch, and how far into that epoch's batch plan."""

    global_step: int = 0
    epoch: int = 0
    plan_position: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    history: list[dict[str, Any]] = field(default_factory=list)


def capture_rng() -> dict[str, Any]:
    """The state of every random stream a training step draws from."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _rng_files(rng: dict[str, Any]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Split RNG state into JSON (python, numpy) and tensors (torch), so no pickle is needed."""
    kind, keys, pos, has_gauss, cached = rng["numpy"]
    as_json = {
        "python": [rng["python"][0], list(rng["python"][1]), rng["python"][2]],
        "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
    }
    tensors = {"torch": rng["torch"]}
    for i, state in enumerate(rng.get("cuda", [])):
        tensors[f"cuda.{i}"] = state
    return as_json, tensors


def _rng_from_files(as_json: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    version, internal, gauss = as_json["python"]
    kind, keys, pos, has_gauss, cached = as_json["numpy"]
    rng: dict[str, Any] = {
        "python": (version, tuple(internal), gauss),
        "numpy": (kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached),
        "torch": tensors["torch"],
    }
    cuda = [tensors[k] for k in sorted(k for k in tensors if k.startswith("cuda."))]
    if cuda:
        rng["cuda"] = cuda
    return rng


def save_checkpoint(
    folder: Path,
    module_state: dict[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    rng: dict[str, Any],
    loop: LoopState,
) -> None:
    """Write a checkpoint atomically: into a temporary folder first, renamed when complete."""
    from safetensors.torch import save_file

    partial = folder.with_name(folder.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    # Tied weights share storage; safetensors wants each tensor stored once, so write copies.
    weights = {k: v.detach().cpu().clone().contiguous() for k, v in module_state.items()}
    save_file(weights, str(partial / "model.safetensors"))
    torch.save(optimizer.state_dict(), partial / "optimizer.pt")
    torch.save(scheduler.state_dict(), partial / "scheduler.pt")
    rng_json, rng_tensors = _rng_files(rng)
    save_file(rng_tensors, str(partial / "rng.safetensors"))
    with open(partial / "rng.json", "w", encoding="utf-8") as f:
        json.dump(rng_json, f)
    with open(partial / STATE_FILE, "w", encoding="utf-8") as f:
        json.dump(asdict(loop), f, indent=2)
    if folder.exists():
        shutil.rmtree(folder)
    partial.rename(folder)


def load_checkpoint(
    folder: Path, module: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any
) -> tuple[LoopState, dict[str, Any]]:
    """Restore weights, optimizer and schedule in place; return the loop state and RNG state.

    Optimizer and schedule states are read with torch's weights-only unpickler (no code runs).
    """
    from safetensors.torch import load_file

    missing, unexpected = module.load_state_dict(load_file(str(folder / "model.safetensors")), strict=False)
    if missing or unexpected:
        raise ValueError(
            f"{folder}: checkpoint does not match the model "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", weights_only=True))
    scheduler.load_state_dict(torch.load(folder / "scheduler.pt", weights_only=True))
    with open(folder / "rng.json", encoding="utf-8") as f:
        rng = _rng_from_files(json.load(f), load_file(str(folder / "rng.safetensors")))
    with open(folder / STATE_FILE, encoding="utf-8") as f:
        loop = LoopState(**json.load(f))
    return loop, rng


def list_checkpoints(checkpoints_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    if not checkpoints_dir.is_dir():
        return []
    found = [p for p in checkpoints_dir.glob("checkpoint-*") if (p / STATE_FILE).exists() and p.is_dir()]
    return sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[-1]))


def prune_checkpoints(checkpoints_dir: Path, keep: int) -> None:
    """Delete all but the newest `keep` checkpoints."""
    if keep <= 0:
        return
    for old in list_checkpoints(checkpoints_dir)[:-keep]:
        shutil.rmtree(old)
