"""Public names imported on first use (PEP 562), for packages whose imports are heavy (torch, models):
`import munjang` and `import munjang.search` stay light, and `from munjang import X` still works."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `names` maps a public name to the submodule defining it
    (a submodule maps to itself); any other submodule is found by its name. A value is kept in
    `namespace` (the package's globals) once imported, so the hook runs once per name."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = importlib.import_module(f"{package}.{module}")
        if module != name:
            value = getattr(value, name)
        namespace[name] = value
        return value

    return __getattr__
