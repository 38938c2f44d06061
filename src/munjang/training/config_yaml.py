"""Reading a training config's YAML and checking its values, before any section means anything.

`read_yaml` loads the file (rejecting duplicate keys, naming file and line on a syntax error);
`Section` reads one mapping key by key and rejects the keys nobody asked for; the `as_*` checkers,
`coerce` and `checked_options` turn one value into what its key needs or raise `ConfigError` naming
the key. They know nothing of tasks, losses or evaluators (that is `config_sections`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..models.hub import looks_like_hub_id
from .config_types import ConfigError, ModelRef


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


def read_yaml(path: Path) -> Any:
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


class Section:
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


def as_text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: expected a non-empty text, got {value!r}")
    return value


def as_count(value: Any, key: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{key}: expected a whole number of at least {minimum}, got {value!r}")
    return value


def as_column(value: Any, key: str) -> str | int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError(f"{key}: a column is a header name or a 0-based index, not {value!r}")
    return value


def as_columns(value: Any, key: str) -> list[str | int]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key}: expected a list of column names or indices, got {value!r}")
    return [as_column(v, f"{key}[{i}]") for i, v in enumerate(value)]


def as_path(value: Any, base: Path, key: str) -> Path:
    """A path from the config: `~` expanded, relative ones taken from the YAML file's folder."""
    path = Path(as_text(value, key)).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def as_model_ref(value: Any, base: Path, key: str) -> ModelRef:
    """A folder (resolved like any path) or, when it looks like one and is no local folder, a hub id;
    a remote name (`openai:<model>`, docs/remote.md) as it is, for teachers."""
    from ..encoders.remote import is_remote_name

    text = as_text(value, key)
    if is_remote_name(text):
        return ModelRef(text, text, False, key)
    local = Path(text).expanduser()
    if local.is_absolute() or text.startswith(("~", ".")) or not looks_like_hub_id(text):
        return ModelRef(text, str(as_path(text, base, key)), True, key)
    if (base / local).exists():
        return ModelRef(text, str((base / local).resolve()), True, key)
    return ModelRef(text, text, False, key)


def coerce(value: Any, annotation: str, key: str) -> Any:
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


def keyword_parameters(function: Callable[..., Any], skip: Sequence[str]) -> dict[str, inspect.Parameter]:
    """The keyword-settable parameters of `function`, minus `skip`."""
    return {
        name: p
        for name, p in inspect.signature(function).parameters.items()
        if name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def checked_options(
    values: Mapping[str, Any], params: Mapping[str, inspect.Parameter], key: str, owner: str
) -> dict[str, Any]:
    """`values` checked against the parameters of `owner` (unknown names and simple types)."""
    out = {}
    for name, value in values.items():
        if name not in params:
            choices = ", ".join(params) or "none"
            raise ConfigError(f"{key}.{name}: unknown option of {owner}; options: {choices}")
        out[name] = coerce(value, str(params[name].annotation), f"{key}.{name}")
    return out


__all__ = [
    "Section",
    "as_column",
    "as_columns",
    "as_count",
    "as_model_ref",
    "as_path",
    "as_text",
    "checked_options",
    "coerce",
    "keyword_parameters",
    "read_yaml",
]
