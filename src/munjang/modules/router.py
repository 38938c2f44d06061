"""Router: different module pipelines for queries and documents (asymmetric models).

Inference-free SPLADE routes queries through a `SparseStaticEmbedding` and documents through the MLM
path. Saved as sentence-transformers saves it: each module in a sub-folder `<route>_<i>_<Class>`, and
`router_config.json` = {"types": {folder: class path}, "structure": {route: [folders]},
"parameters": {"default_route", "allow_empty_key", "route_mappings"}}.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from torch import nn

from ..errors import ModelLoadError
from .base import Features, Module, read_json, write_json

CONFIG_FILE = "router_config.json"


class Router(Module):
    """Named routes ("query", "document", ...) of modules; `route(task)` picks one.

    A task with a route of its own (or a `route_mappings` entry) takes it; no task takes
    `default_route`; a task with no route is an error naming the routes there are.
    """

    st_type: ClassVar[str] = "sentence_transformers.models.Router"
    folder_name: ClassVar[str] = ""

    def __init__(
        self,
        routes: Mapping[str, Sequence[Module]],
        default_route: str | None = None,
        allow_empty_key: bool = True,
        route_mappings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        if not routes or any(not modules for modules in routes.values()):
            raise ValueError("a Router needs at least one route, each with at least one module")
        if default_route is not None and default_route not in routes:
            raise ValueError(f"default_route {default_route!r} is not one of the routes {sorted(routes)}")
        self.routes = nn.ModuleDict({name: nn.ModuleList(modules) for name, modules in routes.items()})
        self.default_route = default_route
        self.allow_empty_key = allow_empty_key
        self.route_mappings = dict(route_mappings or {})

    def route_name(self, task: str | None) -> str:
        """The route `task` takes (None: the default route)."""
        if task is not None:
            name = self.route_mappings.get(task, task)
            if name in self.routes:
                return name
            raise ValueError(f"no route for task {task!r}; this model's routes: {', '.join(self.routes)}")
        if self.default_route is None:
            raise ValueError(f"this model has no default route; name a task ({', '.join(self.routes)})")
        return self.default_route

    def route(self, task: str | None) -> list[Module]:
        """The modules of the route `task` takes."""
        modules = self.routes[self.route_name(task)]
        assert isinstance(modules, nn.ModuleList)
        return [m for m in modules if isinstance(m, Module)]

    def forward(self, features: Features) -> Features:
        for module in self.route(features.get("task")):
            features = module(features)
        return features

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "default_route": self.default_route,
            "allow_empty_key": self.allow_empty_key,
            "route_mappings": {str((task, None)): name for task, name in self.route_mappings.items()},
        }

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        types: dict[str, str] = {}
        structure: dict[str, list[str]] = {}
        for name in self.routes:
            structure[name] = []
            for i, module in enumerate(self.route(name)):
                folder = f"{name}_{i}_{type(module).__name__}"
                module.save(path / folder)
                types[folder] = module.st_type
                structure[name].append(folder)
        config = {"types": types, "structure": structure, "parameters": self.get_config_dict()}
        write_json(path / CONFIG_FILE, config)

    @classmethod
    def load(
        cls, path: str | Path, load: Callable[[str, Path], Module] | None = None, **kwargs: Any
    ) -> Router:
        """Load each route's modules: `load(class path, folder)` builds one (munjang.encoders.formats
        passes it, as it knows the module classes)."""
        path = Path(path)
        file = path / CONFIG_FILE
        if load is None:
            raise ValueError("Router.load needs `load`; load a model folder with munjang.load_sparse_encoder")
        if not file.exists():
            raise ModelLoadError(f"{path}: a Router module but no {CONFIG_FILE}")
        config = read_json(file)
        types, structure = config.get("types"), config.get("structure")
        if not isinstance(types, dict) or not isinstance(structure, dict):
            raise ModelLoadError(f"{file}: expected 'types' and 'structure' objects")
        root = path.resolve()
        loaded: dict[str, Module] = {}
        for folder, type_name in types.items():
            sub = path / str(folder)
            if Path(str(folder)).is_absolute() or not sub.resolve().is_relative_to(root) or sub == path:
                raise ModelLoadError(f"{file}: module folder {folder!r} points outside the model folder")
            if not sub.is_dir():
                raise ModelLoadError(f"{file}: module folder {folder!r} is missing")
            loaded[str(folder)] = load(str(type_name), sub)
        routes: dict[str, list[Module]] = {}
        for name, folders in structure.items():
            if not isinstance(folders, list) or any(str(f) not in loaded for f in folders):
                raise ModelLoadError(f"{file}: route {name!r} names modules not listed in 'types'")
            routes[str(name)] = [loaded[str(f)] for f in folders]
        parameters = config.get("parameters") or {}
        try:
            return cls(
                routes,
                default_route=parameters.get("default_route"),
                allow_empty_key=bool(parameters.get("allow_empty_key", True)),
                route_mappings=_task_mappings(parameters.get("route_mappings") or {}),
            )
        except ValueError as e:
            raise ModelLoadError(f"{file}: {e}") from e

    def extra_repr(self) -> str:
        return f"routes={list(self.routes)}, default_route={self.default_route}"


def _task_mappings(mappings: Mapping[str, str]) -> dict[str, str]:
    """sentence-transformers keys route mappings by "(task, modality)"; text-only models use the task."""
    out: dict[str, str] = {}
    for key, name in mappings.items():
        try:
            task, modality = ast.literal_eval(str(key))
        except (ValueError, SyntaxError, TypeError):
            continue
        if task is not None and modality in (None, "text"):
            out[str(task)] = str(name)
    return out
