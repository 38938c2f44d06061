"""The import contract: munjang's modules form layers that only point down.

Every `munjang` import in `src/munjang` (at the top of a file or inside a function) is an edge from
the importing module to the imported one; importing a package's submodule is an edge to that
submodule, importing a name from a package an edge to its `__init__`. Three rules:

1. No cycles: the module graph is acyclic (imports only for type checking do not count here).
2. Layers: each module belongs to the entry of LAYERS that prefixes its name (the longest prefix
   wins; an entry is a package, or a part of one with a place of its own), and may import only
   modules of its own entry or of entries listed before it.
3. Storage stays behind `Collection`: the backend modules (STORAGE) are imported only inside
   `munjang.search`, so the CLI, the server and the rest reach a collection's data through it.

`search/` is layered: `search.index` (arrays in, labels and scores out) sits low, beside the
evaluators that use exact search; `search.backends` (the storage contract, the backends),
`search.followers` (in-process indexes that follow a store) and `search.collection` (Collection)
above the cross-encoder.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "munjang"

# Bottom first. An entry is a module or package under munjang.
LAYERS = [
    "version", "errors", "_util", "images", "similarity", "models", "modules",
    # the encoders: their torch-free parts below inference, the kinds above it, cross-encoders above
    # the evaluators and exact search they use
    "encoders.settings", "encoders.static", "encoders.formats", "inference", "encoders", "losses", "data",
    "search.index", "encoders.classical", "encoders.embedder", "evaluation", "encoders.cross",
    # search: the storage contract, the in-process followers of a store, the backends, Collection
    "search.backends.base", "search.backends.filters", "search.backends.disk_faults", "search.followers",
    "search.backends", "search.collection", "search",
    "ingest", "applications", "distributed", "training", "client", "integrations", "access", "server", "cli",
    "__init__",
]  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def type_only(tree: ast.AST) -> set[ast.AST]:
    """The import statements inside `if TYPE_CHECKING:` blocks: read by type checkers, never run."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            found |= {
                n for part in node.body for n in ast.walk(part) if isinstance(n, (ast.Import, ast.ImportFrom))
            }
    return found


def imports_of(name: str, path: Path, run_only: bool = False) -> set[str]:
    """The munjang modules `name` imports (`run_only`: leaving out imports for type checkers only)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = type_only(tree) if run_only else set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "munjang":
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "munjang"}
    return {t for t in found if t in MODULES and t != name}


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}
# What runs: a module may name a type of a module that imports it, for type checkers only (an
# `if TYPE_CHECKING:` import), so the two need no made-up Protocol; layers still point down.
RUN_GRAPH = {name: imports_of(name, path, run_only=True) for name, path in MODULES.items()}


# The backends and the indexes that follow a store: reached only through `Collection`. The
# contract's vocabulary (backends.base) and the filter language (backends.filters) are not backends.
STORAGE = {
    name
    for name in MODULES
    if name.startswith("munjang.search.backends.")
    and name not in {"munjang.search.backends.base", "munjang.search.backends.filters"}
}


def layer(name: str) -> int:
    local = name.removeprefix("munjang").removeprefix(".") or "__init__"
    matches = [i for i, entry in enumerate(LAYERS) if local == entry or local.startswith(entry + ".")]
    assert matches, f"{name} is in no layer: add it to LAYERS"
    return max(matches, key=lambda i: len(LAYERS[i]))


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        layer(name)


def test_imports_point_down() -> None:
    upward = [
        f"{a} ({LAYERS[layer(a)]}) imports {b} ({LAYERS[layer(b)]})"
        for a, targets in GRAPH.items()
        for b in targets
        if layer(b) > layer(a)
    ]
    assert not upward, "\n".join(sorted(upward))


def test_storage_is_reached_through_collection() -> None:
    outside = [
        f"{a} imports {b}"
        for a, targets in GRAPH.items()
        for b in targets & STORAGE
        if not a.startswith("munjang.search")
    ]
    assert not outside, "\n".join(sorted(outside))


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(RUN_GRAPH[name]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target] if target in path else [name, target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(RUN_GRAPH):
        if name not in state:
            visit(name, [name])


def test_the_contract_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: an upward import, top-level or inside a function, is found and ranked."""
    fake = tmp_path / "errors.py"
    fake.write_text("def f():\n    from .server.app import create_app\n\nfrom ..munjang import cli\n")
    found = imports_of("munjang.errors", fake)
    assert found == {"munjang.server.app", "munjang.cli"}
    assert all(layer(target) > layer("munjang.errors") for target in found)
