"""Training runs described by a YAML file, for `munjang train --config train.yaml`.

A config names the model, one or more tasks (data file, format, loss), optional evaluators and the
`TrainingArguments`. Everything is checked before anything heavy is loaded, and every error names the
YAML key it is about (``tasks[1].loss.name: unknown loss 'foo'; choose from ...``), so a typo fails in
a second instead of after the model has loaded. Relative paths are resolved against the YAML file's
folder, not the working directory, so a config means the same wherever it is run from; ``~`` expands.

Layout::

    model: ~/.cache/munjang/e5-small       # folder or hub id
    pooling: mean                          # optional override
    max_seq_length: 128                    # optional
    device: cpu                            # optional (default: best available)
    output_dir: runs/korsts                # default: runs/<config name>
    tasks:
      - name: sts
        data: {path: sts-train.tsv.gz, format: sts}
        loss: {name: cosent, scale: 20}
        limit: 1000
    evaluator: {type: sts, path: sts-dev.tsv}
    training: {epochs: 4, batch_size: 16}

A cross-encoder is trained the same way with ``architecture: cross-encoder`` (optional ``head``:
auto / seeds / native, and ``num_labels``, else 3 for nli-pairs with cross-entropy and 1 otherwise).
Its tasks read pairs (formats sts, nli-pairs, table with two columns and a label) with the losses
``bce``, ``mse`` or ``cross-entropy``; its evaluators are ``sts`` (correlation) and ``classification``
(an NLI file, or a table with ``columns`` and ``label``).

Data formats (``data.format``): ``sts`` (`read_sts`; labels are scores / 5), ``nli-pairs`` (`read_nli`,
class labels), ``nli-triplets`` (`read_nli`, (premise, entailed, contradicting) triplets), ``table``
(`read_table`: ``columns``, optional ``label`` and ``label_type``) and ``parallel`` (`read_parallel`,
distillation: ``teacher`` embeds the source, labels are its embeddings). ``data.format_options`` is
passed to the reader. Evaluator types: ``sts``, ``triplet``, ``binary``, ``translation``,
``label-accuracy`` (with ``loss_task`` naming a softmax task) and ``mse`` (with a ``teacher``); other
evaluator keys are the evaluator's own arguments (``name``, ``batch_size``, ``prompt_name``, ...).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# The config is split by concept: config_types (the dataclasses), config_yaml (reading and value
# checks), config_sections (each section's parser) and config_build (describe, build, run). This module
# is the public entry: `load_config`, and every name it has always exported.
from ..encoders.remote import is_remote_name
from .config_build import build, check_files, check_models, describe, run
from .config_sections import cross_encoder_labels, parse_evaluator, parse_task, parse_training
from .config_types import ARCHITECTURES, EVALUATOR_TYPES, FORMATS, ConfigError, EvaluatorConfig, TrainConfig
from .config_types import CROSS_ENCODER_EVALUATOR_TYPES as CROSS_ENCODER_EVALUATOR_TYPES
from .config_types import CROSS_ENCODER_FORMATS as CROSS_ENCODER_FORMATS
from .config_types import DataConfig as DataConfig
from .config_types import LossConfig as LossConfig
from .config_types import ModelRef as ModelRef
from .config_types import TaskConfig as TaskConfig
from .config_yaml import Section, as_count, as_model_ref, as_path, as_text, read_yaml

TOP_LEVEL_KEYS = (
    "model", "pooling", "max_seq_length", "device", "output_dir", "tasks", "evaluator", "training",
    "architecture", "head", "num_labels",
)  # fmt: skip


def load_config(
    path: str | os.PathLike[str], *, output_dir: str | os.PathLike[str] | None = None
) -> TrainConfig:
    """Read and check a training config; reads only the YAML file (see `build` for the data files).

    `output_dir` overrides the config's (relative to the working directory, as a command-line path is).
    Raises ConfigError naming the key (or file and line for a YAML syntax error), FileNotFoundError for
    a missing config file.
    """
    source = Path(path).expanduser().resolve()
    raw = read_yaml(source)
    if raw is None:
        raise ConfigError(f"{source}: the config is empty")
    base = source.parent
    top = Section(raw, "")
    model = as_model_ref(top.need("model"), base, "model")
    if is_remote_name(model.value):
        raise ConfigError(
            f"model: {model.value} is a remote API, which cannot be trained; it can be a teacher"
        )
    pooling = top.get("pooling")
    if (
        pooling is not None
        and not isinstance(pooling, str)
        and not (isinstance(pooling, list) and pooling and all(isinstance(p, str) for p in pooling))
    ):
        raise ConfigError(f"pooling: expected a pooling name or a list of them, got {pooling!r}")
    max_len = top.get("max_seq_length")
    max_seq_length = None if max_len is None else as_count(max_len, "max_seq_length")
    device = top.get("device")
    device = None if device is None else as_text(device, "device")
    out = as_path(top.get("output_dir", f"runs/{source.stem}"), base, "output_dir")
    if output_dir is not None:
        out = Path(output_dir).expanduser().resolve()
    training = parse_training(top.get("training"))
    architecture = top.get("architecture", "bi-encoder")
    if architecture not in ARCHITECTURES:
        raise ConfigError(f"architecture: choose {' or '.join(ARCHITECTURES)}, not {architecture!r}")
    cross = architecture == "cross-encoder"
    for name in ("head", "num_labels"):
        if top.has(name) and not cross:
            raise ConfigError(f"{name}: only for architecture: cross-encoder")
    if cross and pooling is not None:
        raise ConfigError("pooling: a cross-encoder has no pooling option (its head reads [CLS])")
    if cross and training.prompt_name is not None:
        raise ConfigError("training.prompt_name: cross-encoders take no prompts")
    head = as_text(top.get("head", "auto"), "head")
    if head not in ("auto", "seeds", "native"):
        raise ConfigError(f"head: choose auto, seeds or native, not {head!r}")
    num_labels = None if top.get("num_labels") is None else as_count(top.get("num_labels"), "num_labels")

    tasks_value = top.need("tasks")
    if isinstance(tasks_value, Mapping):
        tasks_value = [tasks_value]
    if not isinstance(tasks_value, list) or not tasks_value:
        raise ConfigError(f"tasks: expected a list of one or more tasks, got {tasks_value!r}")
    tasks = [parse_task(t, f"tasks[{i}]", base, architecture) for i, t in enumerate(tasks_value)]
    if cross:
        num_labels = cross_encoder_labels(tasks, num_labels)
    seen: dict[str, str] = {}
    for task in tasks:
        if task.name in seen:
            raise ConfigError(
                f"{task.key}.name: {task.name!r} is also the name of {seen[task.name]}; "
                "give each task its own name"
            )
        seen[task.name] = task.key

    evaluators: list[EvaluatorConfig] = []
    ev_value = top.get("evaluator")
    if isinstance(ev_value, list):
        if not ev_value:
            raise ConfigError("evaluator: the list is empty; leave the key out for no evaluator")
        evaluators = [
            parse_evaluator(e, f"evaluator[{i}]", base, training.prompt_name, architecture)
            for i, e in enumerate(ev_value)
        ]
        names: dict[str, str] = {}
        for ev in evaluators:
            ev.options.setdefault("name", ev.type)
            name = ev.options["name"]
            if name in names:
                raise ConfigError(
                    f"{ev.key}.name: {name!r} is also the name of {names[name]}; "
                    "give each evaluator its own name (it prefixes the metric names)"
                )
            names[name] = ev.key
    elif ev_value is not None:
        evaluators = [parse_evaluator(ev_value, "evaluator", base, training.prompt_name, architecture)]
    for ev in evaluators:
        if ev.loss_task is not None:
            owner = next((t for t in tasks if t.name == ev.loss_task), None)
            if owner is None:
                raise ConfigError(
                    f"{ev.key}.loss_task: no task named {ev.loss_task!r}; tasks: {', '.join(seen)}"
                )
            if owner.loss.name != "softmax":
                raise ConfigError(
                    f"{ev.key}.loss_task: task {owner.name!r} trains with loss {owner.loss.name!r}; "
                    "label-accuracy needs a softmax task"
                )
    top.done(TOP_LEVEL_KEYS)
    return TrainConfig(
        source=source,
        model=model,
        output_dir=out,
        tasks=tasks,
        evaluators=evaluators,
        training=training,
        pooling=pooling,
        max_seq_length=max_seq_length,
        device=device,
        architecture=architecture,
        head=head,
        num_labels=num_labels,
    )


__all__ = [
    "EVALUATOR_TYPES",
    "FORMATS",
    "ConfigError",
    "TrainConfig",
    "build",
    "check_files",
    "check_models",
    "describe",
    "load_config",
    "run",
]
