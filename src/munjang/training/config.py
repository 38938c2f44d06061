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

import inspect
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from ..data.example import Example
from ..errors import DataFormatError, MunjangError
from ..hub import looks_like_hub_id
from .args import TrainingArguments

FORMATS = ("sts", "nli-pairs", "nli-triplets", "table", "parallel")
EVALUATOR_TYPES = ("sts", "triplet", "binary", "translation", "label-accuracy", "mse")
ARCHITECTURES = ("bi-encoder", "cross-encoder")
CROSS_ENCODER_FORMATS = ("sts", "nli-pairs", "table")
CROSS_ENCODER_EVALUATOR_TYPES = ("sts", "classification")

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


class ConfigError(MunjangError, ValueError):
    """A training config is invalid; the message names the YAML key (or file and line)."""


@dataclass
class ModelRef:
    """A model named in the config: `value` as written, `target` a resolved folder or a hub id."""

    value: str
    target: str
    is_path: bool
    key: str


@dataclass
class LossConfig:
    """A loss by its `LOSSES` name and keyword arguments; `inner` is the loss a matryoshka wraps."""

    name: str
    options: dict[str, Any]
    key: str
    inner: LossConfig | None = None


@dataclass
class DataConfig:
    """Where a task's examples come from and how to read them."""

    path: Path
    format: str
    reader_options: dict[str, Any]
    key: str
    columns: list[str | int] | None = None
    label: str | int | None = None
    label_type: Any = float
    teacher: ModelRef | None = None
    teacher_prompt_name: str | None = None


@dataclass
class TaskConfig:
    """One training task: data, loss and an optional cap on the number of examples."""

    name: str
    data: DataConfig
    loss: LossConfig
    limit: int | None
    key: str


@dataclass
class EvaluatorConfig:
    """One evaluator: its type, data file, reader options and constructor arguments."""

    type: str
    path: Path
    reader_options: dict[str, Any]
    options: dict[str, Any]
    key: str
    columns: list[str | int] | None = None
    label: str | int | None = None
    loss_task: str | None = None
    teacher: ModelRef | None = None
    limit: int | None = None


@dataclass
class TrainConfig:
    """A parsed and checked training config (see the module docstring for the YAML layout)."""

    source: Path
    model: ModelRef
    output_dir: Path
    tasks: list[TaskConfig]
    evaluators: list[EvaluatorConfig]
    training: TrainingArguments
    pooling: str | list[str] | None = None
    max_seq_length: int | None = None
    device: str | None = None
    architecture: str = "bi-encoder"
    head: str = "auto"
    num_labels: int | None = None

    def training_args(self) -> TrainingArguments:
        """The training arguments, writing to `output_dir`."""
        return replace(self.training, output_dir=str(self.output_dir))


# -- reading the YAML ------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """Safe loading that rejects a key given twice in one mapping (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such config file")
    text = path.read_text(encoding="utf-8")
    try:
        return yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path} line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None


class _Section:
    """A YAML mapping at `key`, read key by key; `done()` rejects the keys nobody asked for."""

    def __init__(self, value: Any, key: str) -> None:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key or 'the config'}: expected a mapping, got {_kind(value)}")
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise ConfigError(f"{key or 'the config'}: key {bad[0]!r} is not a name")
        self.values: dict[str, Any] = dict(value)
        self.key = key
        self.used: set[str] = set()

    def sub(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def has(self, name: str) -> bool:
        return name in self.values and self.values[name] is not None

    def get(self, name: str, default: Any = None) -> Any:
        self.used.add(name)
        value = self.values.get(name)
        return default if value is None else value

    def need(self, name: str) -> Any:
        self.used.add(name)
        if self.values.get(name) is None:
            raise ConfigError(f"{self.sub(name)}: missing (required)")
        return self.values[name]

    def rest(self) -> dict[str, Any]:
        """The keys not read so far (and marks them read)."""
        left = {k: v for k, v in self.values.items() if k not in self.used}
        self.used.update(left)
        return left

    def done(self, known: Sequence[str]) -> None:
        unknown = [k for k in self.values if k not in self.used]
        if unknown:
            raise ConfigError(f"{self.sub(unknown[0])}: unknown key; expected one of {', '.join(known)}")


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: expected a non-empty text, got {value!r}")
    return value


def _count(value: Any, key: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{key}: expected a whole number of at least {minimum}, got {value!r}")
    return value


def _column(value: Any, key: str) -> str | int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError(f"{key}: a column is a header name or a 0-based index, not {value!r}")
    return value


def _columns(value: Any, key: str) -> list[str | int]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key}: expected a list of column names or indices, got {value!r}")
    return [_column(v, f"{key}[{i}]") for i, v in enumerate(value)]


def _resolve(value: Any, base: Path, key: str) -> Path:
    """A path from the config: `~` expanded, relative ones taken from the YAML file's folder."""
    path = Path(_text(value, key)).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def _model_ref(value: Any, base: Path, key: str) -> ModelRef:
    """A folder (resolved like any path) or, when it looks like one and is no local folder, a hub id."""
    text = _text(value, key)
    local = Path(text).expanduser()
    if local.is_absolute() or text.startswith(("~", ".")) or not looks_like_hub_id(text):
        return ModelRef(text, str(_resolve(text, base, key)), True, key)
    if (base / local).exists():
        return ModelRef(text, str((base / local).resolve()), True, key)
    return ModelRef(text, text, False, key)


def _coerce(value: Any, annotation: str, key: str) -> Any:
    """Check a scalar option against its annotation; numbers written as text ("2e-5") become floats.

    PyYAML reads ``2e-5`` (no dot) as a string, so float options accept numeric text.
    """
    optional = "None" in annotation
    base = annotation.replace("| None", "").replace("None |", "").strip()
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{key}: expected a value, got nothing")
    if base == "float":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{key}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if base == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    if base == "bool" and not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if base == "str" and not isinstance(value, str):
        raise ConfigError(f"{key}: expected a text, got {value!r}")
    return value


def _parameters(function: Callable[..., Any], skip: Sequence[str]) -> dict[str, inspect.Parameter]:
    """The keyword-settable parameters of `function`, minus `skip`."""
    return {
        name: p
        for name, p in inspect.signature(function).parameters.items()
        if name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def _options(
    values: Mapping[str, Any], params: Mapping[str, inspect.Parameter], key: str, owner: str
) -> dict[str, Any]:
    """`values` checked against the parameters of `owner` (unknown names and simple types)."""
    out = {}
    for name, value in values.items():
        if name not in params:
            choices = ", ".join(params) or "none"
            raise ConfigError(f"{key}.{name}: unknown option of {owner}; options: {choices}")
        out[name] = _coerce(value, str(params[name].annotation), f"{key}.{name}")
    return out


# -- the sections ------------------------------------------------------------------------------------


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


def _reader_options(section: _Section, reader: str, set_by_config: Sequence[str]) -> dict[str, Any]:
    value = section.get("format_options", {})
    key = section.sub("format_options")
    options = _Section(value, key).values
    function = _readers()[reader]
    params = _parameters(function, ("path", *set_by_config))
    return _options(options, params, key, function.__name__)


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
    section = _Section(value, key)
    fmt = section.need("format")
    if fmt not in FORMATS:
        raise ConfigError(
            f"{section.sub('format')}: unknown format {fmt!r}; choose from {', '.join(FORMATS)}"
        )
    path = _resolve(section.need("path"), base, section.sub("path"))
    for name, formats in _DATA_KEYS.items():
        if section.has(name) and fmt not in formats:
            raise ConfigError(f"{section.sub(name)}: only for format {' or '.join(formats)}, not {fmt}")
    data = DataConfig(path, fmt, {}, key)
    if fmt == "table":
        data.columns = _columns(section.need("columns"), section.sub("columns"))
        if section.has("label"):
            data.label = _column(section.get("label"), section.sub("label"))
        if section.has("label_type"):
            if data.label is None:
                raise ConfigError(f"{section.sub('label_type')}: set data.label to read a label")
            data.label_type = _label_type(section.get("label_type"), section.sub("label_type"))
    if fmt == "parallel":
        data.teacher = _model_ref(section.need("teacher"), base, section.sub("teacher"))
        prompt = section.get("teacher_prompt_name")
        data.teacher_prompt_name = (
            None if prompt is None else _text(prompt, section.sub("teacher_prompt_name"))
        )
    set_by_config = ("columns", "label", "label_type") if fmt == "table" else ()
    data.reader_options = _reader_options(section, _FORMAT_READER[fmt], set_by_config)
    section.done(["path", "format", "format_options", *(k for k, f in _DATA_KEYS.items() if fmt in f)])
    return data


def _loss_registry(architecture: str) -> Mapping[str, Any]:
    if architecture == "cross-encoder":
        from ..cross_encoder.losses import CROSS_ENCODER_LOSSES

        return CROSS_ENCODER_LOSSES
    from ..losses import LOSSES

    return LOSSES


def _parse_loss(value: Any, key: str, architecture: str = "bi-encoder") -> LossConfig:
    LOSSES = _loss_registry(architecture)
    if isinstance(value, str):
        value = {"name": value}
    section = _Section(value, key)
    name = section.need("name")
    if name not in LOSSES:
        kind = "cross-encoder loss" if architecture == "cross-encoder" else "loss"
        raise ConfigError(f"{section.sub('name')}: unknown {kind} {name!r}; choose from {', '.join(LOSSES)}")
    params = _parameters(LOSSES[name].__init__, ("self", "model"))
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
    options = _options(given, settable, key, f"loss {name!r}")
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
    """Reject a loss that cannot read what the data format gives; fill in softmax's num_labels."""
    from ..losses import LOSSES, MSELoss, SoftmaxLoss

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
    if cls.needs_labels and label is None:
        hint = " (set data.label)" if data.format == "table" else ""
        raise ConfigError(
            f"{where}: loss {effective.name!r} needs labels, but format {data.format} has none{hint}"
        )
    if cls is MSELoss and label != "vector":
        raise ConfigError(f"{where}: loss 'mse' trains towards teacher embeddings: use format parallel")
    if label == "vector" and cls is not MSELoss:
        raise ConfigError(f"{where}: format parallel gives teacher embeddings as labels: use loss mse")
    if cls is SoftmaxLoss:
        if label != "int":
            raise ConfigError(
                f"{where}: loss 'softmax' needs class labels: use format nli-pairs, or table with "
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
        params = _parameters(LOSSES[part.name].__init__, ("self", "model", "loss"))
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


def _parse_task(value: Any, key: str, base: Path, architecture: str = "bi-encoder") -> TaskConfig:
    section = _Section(value, key)
    data = _parse_data(section.need("data"), section.sub("data"), base)
    name = _text(section.get("name", data.format), section.sub("name"))
    loss = _parse_loss(section.need("loss"), section.sub("loss"), architecture)
    limit = section.get("limit")
    limit = None if limit is None else _count(limit, section.sub("limit"))
    section.done(["name", "data", "loss", "limit"])
    if architecture == "bi-encoder":
        _check_loss_fits(loss, data)
    return TaskConfig(name, data, loss, limit, key)


def _evaluator_classes(architecture: str = "bi-encoder") -> dict[str, Any]:
    if architecture == "cross-encoder":
        from ..cross_encoder.evaluation import (
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


def _parse_evaluator(
    value: Any, key: str, base: Path, prompt_name: str | None, architecture: str = "bi-encoder"
) -> EvaluatorConfig:
    section = _Section(value, key)
    kind = section.need("type")
    types = CROSS_ENCODER_EVALUATOR_TYPES if architecture == "cross-encoder" else EVALUATOR_TYPES
    if kind not in types:
        raise ConfigError(
            f"{section.sub('type')}: unknown {'cross-encoder ' if architecture == 'cross-encoder' else ''}"
            f"evaluator type {kind!r}; "
            f"choose from {', '.join(types)}"
        )
    path = _resolve(section.need("path"), base, section.sub("path"))
    for name, kinds in _EVALUATOR_KEYS.items():
        if section.has(name) and kind not in kinds:
            raise ConfigError(
                f"{section.sub(name)}: only for evaluator type {' or '.join(kinds)}, not {kind}"
            )
    ev = EvaluatorConfig(kind, path, {}, {}, key)
    if section.has("columns"):
        ev.columns = _columns(section.get("columns"), section.sub("columns"))
        wanted = 3 if kind == "triplet" else 2
        if len(ev.columns) != wanted:
            raise ConfigError(f"{section.sub('columns')}: a {kind} evaluator reads {wanted} columns")
    if kind == "binary" or (kind == "classification" and ev.columns is not None):
        ev.columns = ev.columns or ["sentence1", "sentence2"]
        ev.label = _column(section.get("label", "label"), section.sub("label"))
    if kind == "label-accuracy":
        ev.loss_task = _text(section.need("loss_task"), section.sub("loss_task"))
    if kind == "mse":
        ev.teacher = _model_ref(section.need("teacher"), base, section.sub("teacher"))
    limit = section.get("limit")
    ev.limit = None if limit is None else _count(limit, section.sub("limit"))
    reader = _evaluator_reader(kind, ev.columns is not None)
    set_by_config = ("columns", "label", "label_type") if reader == "table" else ()
    ev.reader_options = _reader_options(section, reader, set_by_config)
    cls = _evaluator_classes(architecture)[kind]
    params = _parameters(cls.__init__, ("self", *_EVALUATOR_DATA_ARGS))
    ev.options = _options(section.rest(), params, key, f"the {kind} evaluator")
    if "prompt_name" in params and "prompt_name" not in ev.options and "prompt" not in ev.options:
        ev.options["prompt_name"] = prompt_name  # evaluate with the prompt the model is trained with
    return ev


def _parse_training(value: Any, base_key: str = "training") -> TrainingArguments:
    section = _Section(value if value is not None else {}, base_key)
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
            values[name] = dict(_Section(item, key).values)
        else:
            values[name] = _coerce(item, annotation, key)
    try:
        return TrainingArguments(**values)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{base_key}: {e}") from None


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
    raw = _read_yaml(source)
    if raw is None:
        raise ConfigError(f"{source}: the config is empty")
    base = source.parent
    top = _Section(raw, "")
    model = _model_ref(top.need("model"), base, "model")
    pooling = top.get("pooling")
    if (
        pooling is not None
        and not isinstance(pooling, str)
        and not (isinstance(pooling, list) and pooling and all(isinstance(p, str) for p in pooling))
    ):
        raise ConfigError(f"pooling: expected a pooling name or a list of them, got {pooling!r}")
    max_len = top.get("max_seq_length")
    max_seq_length = None if max_len is None else _count(max_len, "max_seq_length")
    device = top.get("device")
    device = None if device is None else _text(device, "device")
    out = _resolve(top.get("output_dir", f"runs/{source.stem}"), base, "output_dir")
    if output_dir is not None:
        out = Path(output_dir).expanduser().resolve()
    training = _parse_training(top.get("training"))
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
    head = _text(top.get("head", "auto"), "head")
    if head not in ("auto", "seeds", "native"):
        raise ConfigError(f"head: choose auto, seeds or native, not {head!r}")
    num_labels = None if top.get("num_labels") is None else _count(top.get("num_labels"), "num_labels")

    tasks_value = top.need("tasks")
    if isinstance(tasks_value, Mapping):
        tasks_value = [tasks_value]
    if not isinstance(tasks_value, list) or not tasks_value:
        raise ConfigError(f"tasks: expected a list of one or more tasks, got {tasks_value!r}")
    tasks = [_parse_task(t, f"tasks[{i}]", base, architecture) for i, t in enumerate(tasks_value)]
    if cross:
        num_labels = _cross_encoder_labels(tasks, num_labels)
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
            _parse_evaluator(e, f"evaluator[{i}]", base, training.prompt_name, architecture)
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
        evaluators = [_parse_evaluator(ev_value, "evaluator", base, training.prompt_name, architecture)]
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


def _cross_encoder_labels(tasks: Sequence[TaskConfig], given: int | None) -> int:
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


# -- checking files and building the trainer ---------------------------------------------------------


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

    from ..cross_encoder import load_cross_encoder
    from ..encoder import load_encoder
    from .trainer import Trainer

    teachers: dict[str, Any] = {}

    def teacher(ref: ModelRef) -> Any:
        if ref.target not in teachers:
            teachers[ref.target] = load_encoder(ref.target, device=config.device)
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
    LOSSES = _loss_registry(architecture)
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

    cls = _evaluator_classes(architecture)[ev.type]
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
