"""Trainer: fine-tune a SentenceEncoder or a CrossEncoder with one loss or several (multi-task), on one
process or many.

Built on `accelerate` for device placement, DDP (`torchrun`) and mixed precision; the loop itself,
the batch plan and the checkpoints are munjang's, so that a resumed run is bit-for-bit the run that
was interrupted and one process with a global batch matches N processes sharing it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from tqdm.auto import tqdm

from ..data.example import Example, ListwiseExample
from .args import TrainingArguments
from .checkpoint import (
    LoopState,
    capture_rng,
    list_checkpoints,
    load_checkpoint,
    prune_checkpoints,
    restore_rng,
)
from .checkpoint import save_checkpoint as write_checkpoint
from .model_card import write_model_card

TrainingItem = Example | ListwiseExample  # pairs, triplets, ... or a query with a list of documents


class TrainableModel(Protocol):
    """What the trainer needs from a model (`SentenceEncoder` and `CrossEncoder` both provide it)."""

    @property
    def device(self) -> torch.device: ...

    def to(self, device: Any) -> Any: ...

    def training_features(
        self, columns: Sequence[Sequence[str]], prompt_name: str | None = None
    ) -> list[dict[str, Any]]: ...

    def word_embeddings(self) -> nn.Module: ...

    def describe(self) -> dict[str, Any]: ...

    def save(self, path: Any) -> None: ...


class Evaluator(Protocol):
    """Anything that scores a model: returns named metrics and names its primary one."""

    primary_metric: str | None

    def __call__(self, model: Any) -> dict[str, float]: ...


class _Tasks(nn.Module):
    """All losses behind one module, so DDP wraps (and syncs) the shared encoder exactly once."""

    def __init__(self, losses: Mapping[str, nn.Module]) -> None:
        super().__init__()
        # Task names are free text; module keys must not clash with nn.Module attributes ("train").
        self.keys = {name: f"task{i}" for i, name in enumerate(sorted(losses))}
        self.losses = nn.ModuleDict({self.keys[name]: loss for name, loss in losses.items()})

    def forward(self, task: str, features: list[dict[str, Any]], labels: torch.Tensor | None) -> torch.Tensor:
        loss: torch.Tensor = self.losses[self.keys[task]](features, labels)
        return loss


def _labels(batch: Sequence[Example]) -> torch.Tensor | None:
    """Stack the labels of a batch: float scores, int classes, or teacher vectors."""
    labels = [ex.label for ex in batch]
    if all(label is None for label in labels):
        return None
    if any(label is None for label in labels):
        raise ValueError("a batch mixes examples with and without labels")
    if isinstance(labels[0], tuple):
        return torch.tensor(labels, dtype=torch.float32)
    if all(isinstance(label, int) and not isinstance(label, bool) for label in labels):
        return torch.tensor(labels, dtype=torch.long)
    return torch.tensor(labels, dtype=torch.float32)


def _columns_and_labels(
    task: str, batch: Sequence[TrainingItem]
) -> tuple[list[list[str]], torch.Tensor | None]:
    """The text columns a model tokenizes and the labels of a batch. A batch of `ListwiseExample`s
    becomes (query, document) pair columns and a NaN-padded label matrix (`listwise_batch`)."""
    listwise = [ex for ex in batch if isinstance(ex, ListwiseExample)]
    if listwise:
        if len(listwise) != len(batch):
            raise ValueError(f"data set {task!r} mixes ListwiseExample with Example")
        from ..encoders.cross.losses.listwise import listwise_batch

        return listwise_batch(listwise)
    examples = [ex for ex in batch if isinstance(ex, Example)]
    columns = len(examples[0].texts)
    if any(len(ex.texts) != columns for ex in examples):
        raise ValueError(f"data set {task!r} mixes examples with different numbers of texts")
    return [[ex.texts[c] for ex in examples] for c in range(columns)], _labels(examples)


def resolve_mixed_precision(choice: str, device: torch.device) -> str:
    """ "auto" -> bf16 on GPUs with bf16 and CPUs with AMX, fp16 on older GPUs, else "no"."""
    if choice != "auto":
        return choice
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if device.type == "cpu":
        capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: "")()
        return "bf16" if "AMX" in str(capability).upper() else "no"
    return "no"


class Trainer:
    """Train `model` with `loss` on `train_data`, evaluating with `evaluator`.

    - One task: `Trainer(model, CosineSimilarityLoss(model), examples, evaluator, args)`.
    - Several: `Trainer(model, {"nli": mnrl, "sts": cosine}, {"nli": triplets, "sts": pairs}, ...)`;
      batches alternate between the data sets (`args.multi_task`).

    Output folder: `final/` (the model after training), `best/` (the best by the evaluator's primary
    metric), `checkpoints/` (resumable states), `metrics.jsonl` (loss and evaluation log; with several
    tasks, each task's own loss too).
    """

    def __init__(
        self,
        model: TrainableModel,
        loss: nn.Module | Mapping[str, nn.Module],
        train_data: Sequence[TrainingItem] | Mapping[str, Sequence[TrainingItem]],
        evaluator: Evaluator | None = None,
        args: TrainingArguments | None = None,
        *,
        data_description: Mapping[str, str] | None = None,
        on_step: Callable[[int, float], None] | None = None,
    ) -> None:
        self.model = model
        self.args = args or TrainingArguments()
        datasets: dict[str, Sequence[TrainingItem]] = (
            dict(train_data) if isinstance(train_data, Mapping) else {"train": list(train_data)}
        )
        losses = dict(loss) if isinstance(loss, Mapping) else dict.fromkeys(datasets, loss)
        if set(losses) != set(datasets):
            raise ValueError(
                f"losses {sorted(losses)} and data sets {sorted(datasets)} must have the same names"
            )
        for name, data in datasets.items():
            if len(data) == 0:
                raise ValueError(f"training data {name!r} is empty")
        self.datasets: dict[str, Sequence[TrainingItem]] = datasets
        self.losses = losses
        self.evaluator = evaluator
        self.data_description = dict(data_description or {})
        self.on_step = on_step
        self.output_dir = Path(self.args.output_dir)
        self.metrics_file = self.output_dir / "metrics.jsonl"

    # -- the batch plan ------------------------------------------------------------------------
    def _global_batch(self, world: int) -> int:
        return self.args.batch_size * world

    def epoch_plan(self, epoch: int, world: int = 1) -> list[tuple[str, list[int]]]:
        """The epoch's global batches, in order: (data set, example indices). Same on every process."""
        size = self._global_batch(world)
        per_task: dict[str, list[list[int]]] = {}
        for t, (name, data) in enumerate(sorted(self.datasets.items())):
            generator = torch.Generator().manual_seed(self.args.seed * 1_000_003 + epoch * 101 + t)
            order = torch.randperm(len(data), generator=generator).tolist()
            batches = [order[i : i + size] for i in range(0, len(order), size)]
            if world > 1:  # every process needs its share of every batch
                batches = [b for b in batches if len(b) >= world]
            per_task[name] = batches
        plan: list[tuple[str, list[int]]] = []
        names = sorted(per_task)
        longest = max(len(b) for b in per_task.values())
        shortest = min(len(b) for b in per_task.values())
        for i in range(longest if self.args.multi_task == "round_robin" else shortest):
            plan.extend((name, per_task[name][i]) for name in names if i < len(per_task[name]))
        return plan

    def total_steps(self, world: int = 1) -> int:
        accumulation = self.args.gradient_accumulation_steps
        per_epoch = sum(
            math.ceil(len(self.epoch_plan(e, world)) / accumulation) for e in range(self.args.epochs)
        )
        return min(per_epoch, self.args.max_steps) if self.args.max_steps else per_epoch

    # -- training --------------------------------------------------------------------------------
    def train(self, resume_from_checkpoint: str | bool | None = None) -> dict[str, Any]:
        """Run training; `resume_from_checkpoint=True` continues from the newest checkpoint (or a path).

        Ctrl-C writes a checkpoint at the last completed step, then re-raises KeyboardInterrupt.
        Returns a summary: steps, seconds, final and best metrics.
        """
        from accelerate import Accelerator
        from accelerate.utils import DistributedDataParallelKwargs, set_seed

        args = self.args
        set_seed(args.seed)
        device = self.model.device
        mixed = resolve_mixed_precision(args.mixed_precision, device)
        _release_accelerator_state()
        # Some parameters never get a gradient (BERT's pooler head; another task's classifier in
        # multi-task runs), which DDP must be told about.
        ddp = DistributedDataParallelKwargs(find_unused_parameters=True)
        accelerator = Accelerator(mixed_precision=mixed, cpu=device.type == "cpu", kwargs_handlers=[ddp])
        self.model.to(accelerator.device)
        world, rank = accelerator.num_processes, accelerator.process_index
        if args.freeze_word_embeddings:
            for param in self.model.word_embeddings().parameters():
                param.requires_grad_(False)
        tasks = _Tasks(self.losses)
        optimizer = _adamw(self._parameter_groups(tasks), args.learning_rate)
        total = self.total_steps(world)
        scheduler = _linear_schedule(optimizer, int(total * args.warmup_ratio), total)
        tasks, optimizer = accelerator.prepare(tasks, optimizer)
        unwrapped: _Tasks = accelerator.unwrap_model(tasks)

        loop = LoopState()
        if resume_from_checkpoint:
            folder = self._checkpoint_to_resume(resume_from_checkpoint)
            loop, rng = load_checkpoint(folder, unwrapped, optimizer, scheduler)
            restore_rng(rng)
            accelerator.print(f"resumed from {folder} at step {loop.global_step}")
        elif accelerator.is_main_process:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            self.metrics_file.write_text("")
            (self.output_dir / "training_args.json").write_text(json.dumps(args.to_dict(), indent=2))

        tasks.train()
        start = time.perf_counter()
        rng_after_step = capture_rng()
        progress = tqdm(
            total=total,
            initial=loop.global_step,
            desc="Training",
            unit="step",
            disable=not (args.show_progress_bar and accelerator.is_main_process),
        )
        window: dict[str, list[float]] = {}  # each task's losses since the last log
        try:
            while loop.epoch < args.epochs and not (args.max_steps and loop.global_step >= args.max_steps):
                plan = self.epoch_plan(loop.epoch, world)
                micro = 0
                while loop.plan_position + micro < len(plan):
                    task, indices = plan[loop.plan_position + micro]
                    micro += 1
                    batch = [self.datasets[task][i] for i in indices[rank::world]]
                    last_micro = (
                        micro == args.gradient_accumulation_steps or loop.plan_position + micro == len(plan)
                    )
                    loss_value = self._forward_backward(accelerator, tasks, task, batch, micro, last_micro)
                    window.setdefault(task, []).append(loss_value)
                    if not last_micro:
                        continue
                    if args.max_grad_norm > 0:
                        accelerator.clip_grad_norm_(tasks.parameters(), args.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    loop.global_step += 1
                    loop.plan_position += micro
                    micro = 0
                    rng_after_step = capture_rng()
                    progress.update(1)
                    losses = [value for values in window.values() for value in values]
                    mean_loss = self._reduce_mean(accelerator, sum(losses) / len(losses))
                    progress.set_postfix(loss=f"{mean_loss:.4f}", epoch=loop.epoch)
                    if self.on_step is not None:
                        self.on_step(loop.global_step, mean_loss)
                    if loop.global_step % args.logging_steps == 0:
                        record = {
                            "type": "train",
                            "loss": mean_loss,
                            "learning_rate": scheduler.get_last_lr()[0],
                            "elapsed_s": time.perf_counter() - start,
                        }
                        if len(self.datasets) > 1:  # every process has the same plan, so the same tasks
                            for name, values in sorted(window.items()):
                                record[f"loss_{name}"] = self._reduce_mean(
                                    accelerator, sum(values) / len(values)
                                )
                        self._log(accelerator, loop, record)
                        window.clear()
                    if args.eval_steps and loop.global_step % args.eval_steps == 0:
                        self._evaluate(accelerator, tasks, loop)
                    if args.save_checkpoints and args.save_steps and loop.global_step % args.save_steps == 0:
                        self._save_checkpoint(
                            accelerator, unwrapped, optimizer, scheduler, rng_after_step, loop
                        )
                    if args.max_steps and loop.global_step >= args.max_steps:
                        break
                else:
                    loop.epoch += 1
                    loop.plan_position = 0
                    if not args.eval_steps or loop.global_step % args.eval_steps:
                        self._evaluate(accelerator, tasks, loop)
                    if args.save_checkpoints and (not args.save_steps or loop.global_step % args.save_steps):
                        self._save_checkpoint(
                            accelerator, unwrapped, optimizer, scheduler, rng_after_step, loop
                        )
                    continue
                break
        except KeyboardInterrupt:
            self._save_checkpoint(accelerator, unwrapped, optimizer, scheduler, rng_after_step, loop)
            progress.close()
            accelerator.print(
                f"\ninterrupted at step {loop.global_step}: checkpoint saved in "
                f"{self.output_dir / 'checkpoints'}; train again with resume to continue"
            )
            raise
        progress.close()
        seconds = time.perf_counter() - start
        tasks.eval()
        final_metrics = self._final(accelerator, tasks, loop)
        return {
            "global_step": loop.global_step,
            "epochs": loop.epoch,
            "train_seconds": seconds,
            "final_metrics": final_metrics,
            "best_metric": loop.best_metric,
            "best_step": loop.best_step,
            "output_dir": str(self.output_dir),
        }

    def _forward_backward(
        self,
        accelerator: Any,
        tasks: nn.Module,
        task: str,
        batch: list[TrainingItem],
        micro: int,
        last_micro: bool,
    ) -> float:
        texts, labels = _columns_and_labels(task, batch)
        features = [
            {k: v.to(accelerator.device) if torch.is_tensor(v) else v for k, v in tokens.items()}
            for tokens in self.model.training_features(texts, self.args.prompt_name)
        ]
        if labels is not None:
            labels = labels.to(accelerator.device)
        accumulation = self.args.gradient_accumulation_steps
        sync = accelerator.no_sync(tasks) if not last_micro else nullcontext()
        with sync, accelerator.autocast():
            loss = tasks(task, features, labels)
            accelerator.backward(loss / accumulation)
        return float(loss.detach())

    @staticmethod
    def _reduce_mean(accelerator: Any, value: float) -> float:
        if accelerator.num_processes == 1:
            return value
        tensor = torch.tensor([value], device=accelerator.device)
        return float(accelerator.reduce(tensor, reduction="mean").item())

    def _parameter_groups(self, tasks: nn.Module) -> list[dict[str, Any]]:
        decay, no_decay = [], []
        for name, param in tasks.named_parameters():
            if not param.requires_grad:
                continue
            if param.ndim < 2 or "LayerNorm" in name or "layer_norm" in name or name.endswith(".bias"):
                no_decay.append(param)
            else:
                decay.append(param)
        return [
            {"params": decay, "weight_decay": self.args.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]

    def _checkpoint_to_resume(self, choice: str | bool) -> Path:
        if isinstance(choice, str) and choice not in ("latest", "true", "True"):
            folder = Path(choice)
            if not folder.is_dir():
                raise FileNotFoundError(f"{folder}: no such checkpoint folder")
            return folder
        found = list_checkpoints(self.output_dir / "checkpoints")
        if not found:
            raise FileNotFoundError(f"{self.output_dir / 'checkpoints'}: no checkpoint to resume from")
        return found[-1]

    def _save_checkpoint(
        self,
        accelerator: Any,
        unwrapped: nn.Module,
        optimizer: Any,
        scheduler: Any,
        rng: dict[str, Any],
        loop: LoopState,
    ) -> None:
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            folder = self.output_dir / "checkpoints" / f"checkpoint-{loop.global_step}"
            write_checkpoint(folder, unwrapped.state_dict(), optimizer, scheduler, rng, loop)
            prune_checkpoints(self.output_dir / "checkpoints", max(self.args.save_total_limit, 1))
        accelerator.wait_for_everyone()

    def _log(self, accelerator: Any, loop: LoopState, record: dict[str, Any]) -> None:
        entry = {"step": loop.global_step, "epoch": loop.epoch, **record}
        loop.history.append(entry)
        if accelerator.is_main_process:
            with open(self.metrics_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    def _evaluate(self, accelerator: Any, tasks: nn.Module, loop: LoopState) -> dict[str, float] | None:
        if self.evaluator is None:
            return None
        accelerator.wait_for_everyone()
        tasks.eval()
        metrics = self.evaluator(self.model)
        tasks.train()
        primary = self.evaluator.primary_metric
        self._log(accelerator, loop, {"type": "eval", **metrics})
        if primary is not None and primary in metrics:
            value = metrics[primary]
            if loop.best_metric is None or value > loop.best_metric:
                loop.best_metric, loop.best_step = value, loop.global_step
                if accelerator.is_main_process:
                    self._save_model(self.output_dir / "best", metrics)
        accelerator.wait_for_everyone()
        return metrics

    def _final(self, accelerator: Any, tasks: nn.Module, loop: LoopState) -> dict[str, float] | None:
        metrics = None
        if self.evaluator is not None:
            last_eval = next((h for h in reversed(loop.history) if h.get("type") == "eval"), None)
            if last_eval is not None and last_eval["step"] == loop.global_step:
                metrics = {k: v for k, v in last_eval.items() if k not in ("type", "step", "epoch")}
            else:
                metrics = self._evaluate(accelerator, tasks, loop)
        if accelerator.is_main_process:
            self._save_model(self.output_dir / "final", metrics)
        accelerator.wait_for_everyone()
        return metrics

    def _save_model(self, folder: Path, metrics: Mapping[str, float] | None) -> None:
        self.model.save(folder)
        write_model_card(
            folder,
            model=self.model,
            losses=self.losses,
            data={name: len(data) for name, data in self.datasets.items()},
            data_description=self.data_description,
            args=self.args,
            metrics=dict(metrics or {}),
        )


def _adamw(groups: list[dict[str, Any]], lr: float) -> torch.optim.AdamW:
    """AdamW with the fused kernel (one pass over all tensors) where torch has it, else the loop."""
    try:
        return torch.optim.AdamW(groups, lr=lr, fused=True)
    except (RuntimeError, ValueError):
        return torch.optim.AdamW(groups, lr=lr)


def _release_accelerator_state() -> None:
    """Let a second training run in the same process pick its own precision.

    accelerate keeps one process-wide state and refuses a new Accelerator whose mixed precision
    differs from the first; the per-run part can be reset safely (the process group is kept).
    """
    from accelerate.state import AcceleratorState

    if AcceleratorState._shared_state:
        AcceleratorState._reset_state(reset_partial_state=False)


def _linear_schedule(
    optimizer: torch.optim.Optimizer, warmup: int, total: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up from 0 over `warmup` steps, then linear decay to 0 at `total`."""

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
