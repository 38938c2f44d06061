"""Turning a checked training config into a run: file checks, the plan, the `Trainer`, training.

`check_models` and `check_files` look for what the config names on disk; `describe` is the plan as
data; `build` reads the data files, loads the model and makes the losses and evaluators; `run` trains.
Parsing and checking the YAML is `config_sections`' job; this module trusts what it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..data.example import Example
from ..errors import DataFormatError, MunjangError
from .config_sections import evaluator_classes, loss_registry
from .config_types import ConfigError, EvaluatorConfig, LossConfig, ModelRef, TaskConfig, TrainConfig


def _model_refs(config: TrainConfig) -> list[ModelRef]:
    refs = [config.model]
    refs += [t.data.teacher for t in config.tasks if t.data.teacher is not None]
    refs += [e.teacher for e in config.evaluators if e.teacher is not None]
    return refs


def check_models(config: TrainConfig) -> None:
    """Check that every model folder in the config (model, teachers) exists; hub ids are left to loading.

    Kept apart from `check_files` so that a config can be validated where its models are absent (CI).
    """
    for ref in _model_refs(config):
        if ref.is_path and not Path(ref.target).is_dir():
            raise FileNotFoundError(f"{ref.key}: {ref.target}: no such model folder")


def check_files(config: TrainConfig) -> None:
    """Check that every data file in the config exists (without reading it)."""
    for where, path in [
        *((f"{t.key}.data.path", t.data.path) for t in config.tasks),
        *((f"{e.key}.path", e.path) for e in config.evaluators),
    ]:
        if not path.is_file():
            raise FileNotFoundError(f"{where}: {path}: no such file")


def describe(config: TrainConfig) -> dict[str, Any]:
    """The run's plan as data (sizes and steps are None until `build` has read the files)."""
    return {
        "config": str(config.source),
        "model": config.model.value,
        "model_path": config.model.target,
        "output_dir": str(config.output_dir),
        "tasks": [
            {
                "name": t.name,
                "format": t.data.format,
                "path": str(t.data.path),
                "examples": None,
                "limit": t.limit,
                "loss": t.loss.name,
                "loss_options": dict(t.loss.options),
                **(
                    {"wraps": t.loss.inner.name, "wrapped_options": t.loss.inner.options}
                    if t.loss.inner
                    else {}
                ),
            }
            for t in config.tasks
        ],
        "evaluators": [
            {"type": e.type, "path": str(e.path), "size": None, "name": e.options.get("name", "")}
            for e in config.evaluators
        ],
        "steps": None,
        "training": config.training_args().to_dict(),
    }


def build(config: TrainConfig, *, dry_run: bool = False, models: bool = True) -> tuple[Any, dict[str, Any]]:
    """The `Trainer` for `config` and the plan (`describe` with sizes and steps filled in).

    Checks the data files (and, with `models`, the model folders) before loading anything. With
    `dry_run` it stops there and returns (None, plan): nothing is read, no model is loaded.
    """
    check_files(config)
    if models:
        check_models(config)
    info = describe(config)
    if dry_run:
        return None, info

    import torch

    from ..encoders.cross import load_cross_encoder
    from ..encoders.dense.encoder import load_encoder
    from ..encoders.embedder import load_embedder
    from .trainer import Trainer

    teachers: dict[str, Any] = {}

    def teacher(ref: ModelRef) -> Any:
        if ref.target not in teachers:
            teachers[ref.target] = load_embedder(ref.target, device=config.device)
        return teachers[ref.target]

    # Read the data before loading the model, so a bad row is reported at once; distillation data
    # waits for the model, whose dimension the teacher's must match.
    read = {t.name: _examples(t, None, teacher) for t in config.tasks if t.data.format != "parallel"}
    model: Any
    if config.architecture == "cross-encoder":
        model = load_cross_encoder(
            config.model.target,
            num_labels=config.num_labels,
            head=config.head,
            device=config.device,
            max_seq_length=config.max_seq_length,
        )
    else:
        model = load_encoder(
            config.model.target,
            pooling=config.pooling,
            device=config.device,
            max_seq_length=config.max_seq_length,
            precision="fp32",  # a model in training evaluates on its live weights, exactly
        )
    model.base_model = config.model.value  # named in the model card
    args = config.training_args()
    torch.manual_seed(args.seed)  # heads some losses add (softmax) start the same on every run
    datasets: dict[str, list[Example]] = {}
    losses: dict[str, Any] = {}
    for task, plan in zip(config.tasks, info["tasks"], strict=True):
        datasets[task.name] = read[task.name] if task.name in read else _examples(task, model, teacher)
        losses[task.name] = _make_loss(task.loss, model, config.architecture)
        plan["examples"] = len(datasets[task.name])
    evaluators = [_make_evaluator(ev, losses, teacher, config.architecture) for ev in config.evaluators]
    for ev, plan in zip(evaluators, info["evaluators"], strict=True):
        plan["size"] = len(ev)
    evaluator: Any = None
    if len(evaluators) == 1:
        evaluator = evaluators[0]
    elif evaluators:
        from ..evaluation import SequentialEvaluator

        evaluator = SequentialEvaluator(evaluators)
    trainer = Trainer(
        model,
        losses,
        datasets,
        evaluator,
        args,
        data_description={t.name: str(t.data.path) for t in config.tasks},
    )
    info["steps"] = trainer.total_steps()
    return trainer, info


def _read(key: str, reader: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a data reader, putting the config key in front of its errors."""
    try:
        return reader(*args, **kwargs)
    except DataFormatError as e:
        raise DataFormatError(f"{key}: {e}") from None
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{key}.format_options: {e}") from None


def _examples(task: TaskConfig, model: Any, teacher: Callable[[ModelRef], Any]) -> list[Example]:
    """The task's training examples; `model` is needed (for its dimension) by the parallel format only."""
    from ..data import (
        ParallelData,
        nli_pair_examples,
        nli_triplet_examples,
        read_nli,
        read_parallel,
        read_sts,
        read_table,
        sts_examples,
    )

    data, key, limit = task.data, f"{task.key}.data", task.limit
    examples: list[Example]
    if data.format == "sts":
        examples = sts_examples(_read(key, read_sts, data.path, **data.reader_options))
    elif data.format == "nli-pairs":
        examples = nli_pair_examples(_read(key, read_nli, data.path, **data.reader_options))
    elif data.format == "nli-triplets":
        examples = list(nli_triplet_examples(_read(key, read_nli, data.path, **data.reader_options)))
    elif data.format == "table":
        examples = _read(
            key, read_table, data.path, data.columns, label=data.label, label_type=data.label_type,
            **data.reader_options,
        )  # fmt: skip
    else:
        assert data.teacher is not None
        pairs: ParallelData = _read(key, read_parallel, data.path, **data.reader_options)
        if limit is not None:
            pairs = ParallelData(pairs.sources[:limit], pairs.targets[:limit], origin=pairs.origin)
        encoder = teacher(data.teacher)
        dim, student_dim = encoder.get_embedding_dimension(), model.get_embedding_dimension()
        if dim != student_dim:
            raise ConfigError(
                f"{key}.teacher: the teacher's embeddings have {dim} dimensions, the model's {student_dim}"
            )
        vectors = encoder.encode(
            pairs.sources,
            prompt_name=data.teacher_prompt_name,
            show_progress_bar=len(pairs) > 1000,
        )
        examples = [
            Example((s, t), tuple(float(x) for x in v))
            for s, t, v in zip(pairs.sources, pairs.targets, vectors, strict=True)
        ]
    if limit is not None:
        examples = examples[:limit]
    if not examples:
        why = (
            " (no premise has both an entailed and a contradicting hypothesis)"
            if data.format == "nli-triplets"
            else ""
        )
        raise DataFormatError(f"{key}: {data.path} gives no training examples{why}")
    return examples


def _make_loss(loss: LossConfig, model: Any, architecture: str = "bi-encoder") -> Any:
    LOSSES = loss_registry(architecture)
    options = dict(loss.options)
    if loss.inner is not None:
        options["loss"] = _make_loss(loss.inner, model)
    try:
        return LOSSES[loss.name](model, **options)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{loss.key}: {e}") from None


def _make_evaluator(
    ev: EvaluatorConfig,
    losses: Mapping[str, Any],
    teacher: Callable[[ModelRef], Any],
    architecture: str = "bi-encoder",
) -> Any:
    from ..data import (
        NLIData,
        ParallelData,
        STSData,
        nli_triplet_examples,
        read_nli,
        read_parallel,
        read_sts,
        read_table,
    )

    cls = evaluator_classes(architecture)[ev.type]
    n = ev.limit
    try:
        if ev.type == "classification":
            if ev.columns is not None:
                rows = _read(
                    ev.key,
                    read_table,
                    ev.path,
                    ev.columns,
                    label=ev.label,
                    label_type=int,
                    **ev.reader_options,
                )
                pairs_and_labels = [((r.texts[0], r.texts[1]), int(r.label)) for r in rows]
            else:
                nli_data: NLIData = _read(ev.key, read_nli, ev.path, **ev.reader_options)
                pairs_and_labels = list(
                    zip(
                        zip(nli_data.premises, nli_data.hypotheses, strict=True), nli_data.labels, strict=True
                    )
                )
            pairs_and_labels = pairs_and_labels[:n] if n is not None else pairs_and_labels
            return cls([p for p, _ in pairs_and_labels], [y for _, y in pairs_and_labels], **ev.options)
        if ev.type == "sts":
            sts: STSData = _read(ev.key, read_sts, ev.path, **ev.reader_options)
            if n is not None:
                sts = STSData(sts.sentences1[:n], sts.sentences2[:n], sts.scores[:n], source=sts.source)
            return cls.from_data(sts, **ev.options)
        if ev.type in ("translation", "mse"):
            pairs: ParallelData = _read(ev.key, read_parallel, ev.path, **ev.reader_options)
            if n is not None:
                pairs = ParallelData(pairs.sources[:n], pairs.targets[:n], origin=pairs.origin)
            if ev.type == "mse":
                assert ev.teacher is not None
                return cls.from_data(pairs, teacher(ev.teacher), **ev.options)
            return cls.from_data(pairs, **ev.options)
        if ev.type == "label-accuracy":
            nli: NLIData = _read(ev.key, read_nli, ev.path, **ev.reader_options)
            if n is not None:
                nli = NLIData(nli.premises[:n], nli.hypotheses[:n], nli.labels[:n], source=nli.source)
            head = losses[str(ev.loss_task)]
            return cls.from_nli(nli, lambda u, v: head.classifier(head.classifier_input(u, v)), **ev.options)
        if ev.columns is not None:
            label = {"label": ev.label, "label_type": int} if ev.type == "binary" else {}
            examples = _read(ev.key, read_table, ev.path, ev.columns, **label, **ev.reader_options)
        else:
            examples = list(nli_triplet_examples(_read(ev.key, read_nli, ev.path, **ev.reader_options)))
        return cls.from_examples(examples[:n] if n is not None else examples, **ev.options)
    except (ValueError, TypeError) as e:
        if isinstance(e, MunjangError):
            raise
        raise ConfigError(f"{ev.key}: {e}") from None


def run(
    config: TrainConfig,
    resume: bool = False,
    on_plan: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Build and train; returns the trainer's summary plus the output folders.

    A fresh run refuses an output folder that already holds checkpoints (they would mix with the new
    run's and a later resume could pick the stale ones); resume it or choose another folder.
    `on_plan` sees the plan once the data are read, before the first step.
    """
    from .checkpoint import list_checkpoints

    checkpoints = config.output_dir / "checkpoints"
    if resume and not list_checkpoints(checkpoints):
        raise FileNotFoundError(f"{checkpoints}: no checkpoint to resume from")
    if not resume and list_checkpoints(checkpoints):
        raise ConfigError(
            f"output_dir: {config.output_dir} holds checkpoints of an earlier run; "
            "resume it (--resume), or choose another output_dir or delete the folder"
        )
    trainer, info = build(config)
    if on_plan is not None:
        on_plan(info)
    summary: dict[str, Any] = trainer.train(resume_from_checkpoint=True if resume else None)
    evaluator = trainer.evaluator
    summary["best_metric_name"] = getattr(evaluator, "primary_metric", None) if evaluator else None
    outputs = {
        "final": config.output_dir / "final",
        "best": config.output_dir / "best",
        "checkpoints": checkpoints,
        "metrics": config.output_dir / "metrics.jsonl",
    }
    summary["outputs"] = {name: str(path) for name, path in outputs.items() if path.exists()}
    return summary


__all__ = ["build", "check_files", "check_models", "describe", "run"]
