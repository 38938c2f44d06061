"""Parsing a training config's sections (data, loss, task, evaluator, training) and their fit checks.

Each `parse_*` reads one YAML mapping into its config dataclass and rejects what cannot work (an
unknown name, an option the loss or evaluator does not take, a loss that cannot read what the data
format gives) with the key it is about, so a bad config fails before anything heavy is loaded.
`load_config` (in `munjang.training.config`) calls these for the whole file; `loss_registry` and
`evaluator_classes` are shared with `config_build`, which constructs what was checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from .args import TrainingArguments
from .config_types import (
    CROSS_ENCODER_EVALUATOR_TYPES,
    CROSS_ENCODER_FORMATS,
    EVALUATOR_TYPES,
    FORMATS,
    ConfigError,
    DataConfig,
    EvaluatorConfig,
    LossConfig,
    TaskConfig,
)
from .config_yaml import (
    Section,
    as_column,
    as_columns,
    as_count,
    as_model_ref,
    as_path,
    as_text,
    checked_options,
    coerce,
    keyword_parameters,
)

# Keys of `data:` besides path, format and format_options, and the formats they belong to.
_DATA_KEYS = {
    "columns": ("table",),
    "label": ("table",),
    "label_type": ("table",),
    "teacher": ("parallel",),
    "teacher_prompt_name": ("parallel",),
}
# Evaluator keys that are not evaluator arguments, and the types they belong to.
_EVALUATOR_KEYS = {
    "columns": ("triplet", "binary", "classification"),
    "label": ("binary", "classification"),
    "loss_task": ("label-accuracy",),
    "teacher": ("mse",),
}
# Evaluator constructor arguments that carry the data, filled in from the file.
_EVALUATOR_DATA_ARGS = {
    "sentences1", "sentences2", "scores", "labels", "anchors", "positives", "negatives",
    "source_sentences", "target_sentences", "sentence_pairs", "classifier", "teacher", "device", "pairs",
}  # fmt: skip


def _readers() -> dict[str, Callable[..., Any]]:
    from ..data import read_nli, read_parallel, read_sts, read_table

    return {
        "sts": read_sts,
        "nli": read_nli,
        "table": read_table,
        "parallel": read_parallel,
    }


_FORMAT_READER = {
    "sts": "sts",
    "nli-pairs": "nli",
    "nli-triplets": "nli",
    "table": "table",
    "parallel": "parallel",
}


def _reader_options(section: Section, reader: str, set_by_config: Sequence[str]) -> dict[str, Any]:
    value = section.get("format_options", {})
    key = section.sub("format_options")
    options = Section(value, key).values
    function = _readers()[reader]
    params = keyword_parameters(function, ("path", *set_by_config))
    return checked_options(options, params, key, function.__name__)


def _label_type(value: Any, key: str) -> Any:
    if value in ("float", "int"):
        return float if value == "float" else int
    if isinstance(value, Mapping) and value:
        for name, index in value.items():
            if (
                not isinstance(name, str)
                or isinstance(index, bool)
                or not isinstance(index, int)
                or index < 0
            ):
                raise ConfigError(
                    f"{key}: map label names to class indices (0 or more), got {name!r}: {index!r}"
                )
        return dict(value)
    raise ConfigError(
        f"{key}: expected float, int or a mapping of label names to class indices, got {value!r}"
    )


def _parse_data(value: Any, key: str, base: Path) -> DataConfig:
    section = Section(value, key)
    fmt = section.need("format")
    if fmt not in FORMATS:
        raise ConfigError(
            f"{section.sub('format')}: unknown format {fmt!r}; choose from {', '.join(FORMATS)}"
        )
    path = as_path(section.need("path"), base, section.sub("path"))
    for name, formats in _DATA_KEYS.items():
        if section.has(name) and fmt not in formats:
            raise ConfigError(f"{section.sub(name)}: only for format {' or '.join(formats)}, not {fmt}")
    data = DataConfig(path, fmt, {}, key)
    if fmt == "table":
        data.columns = as_columns(section.need("columns"), section.sub("columns"))
        if section.has("label"):
            data.label = as_column(section.get("label"), section.sub("label"))
        if section.has("label_type"):
            if data.label is None:
                raise ConfigError(f"{section.sub('label_type')}: set data.label to read a label")
            data.label_type = _label_type(section.get("label_type"), section.sub("label_type"))
    if fmt == "parallel":
        data.teacher = as_model_ref(section.need("teacher"), base, section.sub("teacher"))
        prompt = section.get("teacher_prompt_name")
        data.teacher_prompt_name = (
            None if prompt is None else as_text(prompt, section.sub("teacher_prompt_name"))
        )
    set_by_config = ("columns", "label", "label_type") if fmt == "table" else ()
    data.reader_options = _reader_options(section, _FORMAT_READER[fmt], set_by_config)
    section.done(["path", "format", "format_options", *(k for k, f in _DATA_KEYS.items() if fmt in f)])
    return data


def loss_registry(architecture: str) -> Mapping[str, Any]:
    if architecture == "cross-encoder":
        from ..encoders.cross.losses import CROSS_ENCODER_LOSSES

        return CROSS_ENCODER_LOSSES
    from ..losses import LOSSES

    return LOSSES


def _parse_loss(value: Any, key: str, architecture: str = "bi-encoder") -> LossConfig:
    LOSSES = loss_registry(architecture)
    if isinstance(value, str):
        value = {"name": value}
    section = Section(value, key)
    name = section.need("name")
    if name not in LOSSES:
        kind = "cross-encoder loss" if architecture == "cross-encoder" else "loss"
        raise ConfigError(f"{section.sub('name')}: unknown {kind} {name!r}; choose from {', '.join(LOSSES)}")
    params = keyword_parameters(LOSSES[name].__init__, ("self", "model"))
    inner = None
    if name == "matryoshka":
        inner = _parse_loss(section.need("loss"), section.sub("loss"))
        if inner.name in ("softmax", "matryoshka"):
            raise ConfigError(f"{inner.key}.name: matryoshka cannot wrap {inner.name}")
        params.pop("loss")
    settable = {
        n: p for n, p in params.items() if not any(t in str(p.annotation) for t in ("Module", "Loss"))
    }
    given = section.rest()
    for option in given:
        if option in params and option not in settable:
            raise ConfigError(f"{key}.{option}: takes a Python object and cannot be set from a config")
    options = checked_options(given, settable, key, f"loss {name!r}")
    return LossConfig(name, options, key, inner)


def _shape(data: DataConfig) -> tuple[int, str | None]:
    """Texts per example and label kind (float, int, vector or None) that a data format gives."""
    if data.format == "sts":
        return 2, "float"
    if data.format == "nli-pairs":
        return 2, "int"
    if data.format == "nli-triplets":
        return 3, None
    if data.format == "parallel":
        return 2, "vector"
    columns = len(data.columns or [])
    if data.label is None:
        return columns, None
    return columns, "float" if data.label_type is float else "int"


def _check_loss_fits(loss: LossConfig, data: DataConfig) -> None:
    """Reject a loss that cannot read what the data format gives (its `label_kind` against the
    format's labels); fill in a classifier's num_labels."""
    from ..losses import LOSSES

    effective = loss.inner or loss
    cls = LOSSES[effective.name]
    columns, label = _shape(data)
    where = f"{loss.key}.name"
    low, high = cls.min_columns, cls.max_columns
    if columns < low or (high is not None and columns > high):
        wanted = f"{low}" if low == high else f"{low} or more" if high is None else f"{low} to {high}"
        raise ConfigError(
            f"{where}: loss {effective.name!r} reads {wanted} texts per example, "
            f"but format {data.format} gives {columns}"
        )
    kind = cls.label_kind
    if kind is not None and label is None:
        hint = " (set data.label)" if data.format == "table" else ""
        raise ConfigError(
            f"{where}: loss {effective.name!r} needs labels, but format {data.format} has none{hint}"
        )
    if kind == "vector" and label != "vector":
        raise ConfigError(
            f"{where}: loss {effective.name!r} trains towards teacher embeddings: use format parallel"
        )
    if label == "vector" and kind != "vector":
        raise ConfigError(f"{where}: format parallel gives teacher embeddings as labels: use loss mse")
    if kind == "class":
        if label != "int":
            raise ConfigError(
                f"{where}: loss {effective.name!r} needs class labels: use format nli-pairs, or table with "
                "label_type int or a mapping"
            )
        if "num_labels" not in loss.options:
            if data.format == "nli-pairs":
                loss.options["num_labels"] = 3
            elif isinstance(data.label_type, Mapping):
                loss.options["num_labels"] = max(data.label_type.values()) + 1
    for part in (loss, loss.inner):
        if part is None:
            continue
        params = keyword_parameters(LOSSES[part.name].__init__, ("self", "model", "loss"))
        missing = [n for n, p in params.items() if p.default is p.empty and n not in part.options]
        if missing:
            raise ConfigError(f"{part.key}.{missing[0]}: missing (required by loss {part.name!r})")


def _check_cross_loss_fits(loss: LossConfig, data: DataConfig) -> int:
    """Reject a cross-encoder loss that cannot read the data; return the number of labels it needs."""
    where = f"{loss.key}.name"
    if data.format not in CROSS_ENCODER_FORMATS:
        raise ConfigError(
            f"{data.key}.format: a cross-encoder trains on labelled pairs; "
            f"use {', '.join(CROSS_ENCODER_FORMATS)}, not {data.format}"
        )
    columns, label = _shape(data)
    if columns != 2:
        raise ConfigError(
            f"{where}: a cross-encoder reads 2 texts per example, format {data.format} gives {columns}"
        )
    if label is None:
        raise ConfigError(f"{where}: loss {loss.name!r} needs labels (set data.label)")
    if loss.name == "cross-entropy":
        if label != "int":
            raise ConfigError(
                f"{where}: loss 'cross-entropy' needs class labels: use nli-pairs or label_type int"
            )
        if data.format == "nli-pairs":
            return 3
        if isinstance(data.label_type, Mapping):
            return int(max(data.label_type.values())) + 1
        return 0  # unknown: num_labels must be given
    if data.format == "nli-pairs":
        raise ConfigError(f"{where}: nli-pairs gives class labels: use loss 'cross-entropy'")
    return 1


def parse_task(value: Any, key: str, base: Path, architecture: str = "bi-encoder") -> TaskConfig:
    section = Section(value, key)
    data = _parse_data(section.need("data"), section.sub("data"), base)
    name = as_text(section.get("name", data.format), section.sub("name"))
    loss = _parse_loss(section.need("loss"), section.sub("loss"), architecture)
    limit = section.get("limit")
    limit = None if limit is None else as_count(limit, section.sub("limit"))
    section.done(["name", "data", "loss", "limit"])
    if architecture == "bi-encoder":
        _check_loss_fits(loss, data)
    return TaskConfig(name, data, loss, limit, key)


def evaluator_classes(architecture: str = "bi-encoder") -> dict[str, Any]:
    if architecture == "cross-encoder":
        from ..encoders.cross.evaluation import (
            CrossEncoderClassificationEvaluator,
            CrossEncoderCorrelationEvaluator,
        )

        return {
            "sts": CrossEncoderCorrelationEvaluator,
            "classification": CrossEncoderClassificationEvaluator,
        }
    from ..evaluation import (
        BinaryClassificationEvaluator,
        LabelAccuracyEvaluator,
        MSEEvaluator,
        STSEvaluator,
        TranslationEvaluator,
        TripletEvaluator,
    )

    return {
        "sts": STSEvaluator,
        "triplet": TripletEvaluator,
        "binary": BinaryClassificationEvaluator,
        "translation": TranslationEvaluator,
        "label-accuracy": LabelAccuracyEvaluator,
        "mse": MSEEvaluator,
    }


def _evaluator_reader(kind: str, has_columns: bool) -> str:
    if kind == "sts":
        return "sts"
    if kind in ("translation", "mse"):
        return "parallel"
    if kind == "binary" or has_columns:
        return "table"
    return "nli"  # triplet and classification without columns read an NLI file


def parse_evaluator(
    value: Any, key: str, base: Path, prompt_name: str | None, architecture: str = "bi-encoder"
) -> EvaluatorConfig:
    section = Section(value, key)
    kind = section.need("type")
    types = CROSS_ENCODER_EVALUATOR_TYPES if architecture == "cross-encoder" else EVALUATOR_TYPES
    if kind not in types:
        raise ConfigError(
            f"{section.sub('type')}: unknown {'cross-encoder ' if architecture == 'cross-encoder' else ''}"
            f"evaluator type {kind!r}; "
            f"choose from {', '.join(types)}"
        )
    path = as_path(section.need("path"), base, section.sub("path"))
    for name, kinds in _EVALUATOR_KEYS.items():
        if section.has(name) and kind not in kinds:
            raise ConfigError(
                f"{section.sub(name)}: only for evaluator type {' or '.join(kinds)}, not {kind}"
            )
    ev = EvaluatorConfig(kind, path, {}, {}, key)
    if section.has("columns"):
        ev.columns = as_columns(section.get("columns"), section.sub("columns"))
        wanted = 3 if kind == "triplet" else 2
        if len(ev.columns) != wanted:
            raise ConfigError(f"{section.sub('columns')}: a {kind} evaluator reads {wanted} columns")
    if kind == "binary" or (kind == "classification" and ev.columns is not None):
        ev.columns = ev.columns or ["sentence1", "sentence2"]
        ev.label = as_column(section.get("label", "label"), section.sub("label"))
    if kind == "label-accuracy":
        ev.loss_task = as_text(section.need("loss_task"), section.sub("loss_task"))
    if kind == "mse":
        ev.teacher = as_model_ref(section.need("teacher"), base, section.sub("teacher"))
    limit = section.get("limit")
    ev.limit = None if limit is None else as_count(limit, section.sub("limit"))
    reader = _evaluator_reader(kind, ev.columns is not None)
    set_by_config = ("columns", "label", "label_type") if reader == "table" else ()
    ev.reader_options = _reader_options(section, reader, set_by_config)
    cls = evaluator_classes(architecture)[kind]
    params = keyword_parameters(cls.__init__, ("self", *_EVALUATOR_DATA_ARGS))
    ev.options = checked_options(section.rest(), params, key, f"the {kind} evaluator")
    if "prompt_name" in params and "prompt_name" not in ev.options and "prompt" not in ev.options:
        ev.options["prompt_name"] = prompt_name  # evaluate with the prompt the model is trained with
    return ev


def parse_training(value: Any, base_key: str = "training") -> TrainingArguments:
    section = Section(value if value is not None else {}, base_key)
    known = {f.name: str(f.type) for f in fields(TrainingArguments)}
    values: dict[str, Any] = {}
    for name, item in section.values.items():
        key = section.sub(name)
        if name == "output_dir":
            raise ConfigError(f"{key}: set output_dir at the top level of the config")
        if name not in known:
            choices = ", ".join(n for n in sorted(known) if n != "output_dir")
            raise ConfigError(f"{key}: unknown training argument; known: {choices}")
        if name == "mixed_precision" and item is False:
            item = "no"  # YAML reads a bare `no` as false
        annotation = known[name]
        if annotation in ("MixedPrecision",) or annotation.startswith("Literal"):
            annotation = "str"
        if annotation.startswith("dict"):
            values[name] = dict(Section(item, key).values)
        else:
            values[name] = coerce(item, annotation, key)
    try:
        return TrainingArguments(**values)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{base_key}: {e}") from None


def cross_encoder_labels(tasks: Sequence[TaskConfig], given: int | None) -> int:
    """The one head size every cross-encoder task agrees on (given, or inferred from loss and data)."""
    needed = {t.key: _check_cross_loss_fits(t.loss, t.data) for t in tasks}
    known = {n for n in needed.values() if n}
    if given is not None:
        for key, n in needed.items():
            if n and n != given:
                raise ConfigError(f"{key}.loss: needs {n} labels, but num_labels is {given}")
        return given
    if len(known) > 1:
        raise ConfigError(
            f"num_labels: the tasks need different head sizes ({sorted(known)}); one model has one head"
        )
    if not known:
        raise ConfigError("num_labels: cannot tell the number of classes from the data; set num_labels")
    return known.pop()


__all__ = [
    "cross_encoder_labels",
    "evaluator_classes",
    "loss_registry",
    "parse_evaluator",
    "parse_task",
    "parse_training",
]
