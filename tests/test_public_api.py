"""The public API as users reach it: every name in `munjang.__all__` and `munjang.search.__all__`,
`import munjang` without torch, and every munjang import in the README's and docs/'s Python examples
(the README's quick start itself runs in tests/test_readme.py)."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def python_blocks() -> list[tuple[str, str]]:
    """(file:line, code) of every fenced Python block in the README and docs/ that names munjang."""
    blocks = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for found in PYTHON_BLOCK.finditer(text):
            if "munjang" in found.group(1):
                line = text[: found.start()].count("\n") + 2
                blocks.append((f"{path.relative_to(ROOT)}:{line}", found.group(1)))
    return blocks


def munjang_imports(code: str) -> list[tuple[int, str, str | None]]:
    """(line, module, name or None) for each `import munjang...` and `from munjang... import name`."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "munjang":
                found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] == "munjang"]
    return found


def unresolved(module: str, name: str | None) -> str | None:
    """Why `from module import name` (or `import module`) fails, or None when it works."""
    try:
        imported = importlib.import_module(module)
    except ImportError as e:
        return f"{type(e).__name__}: {e}"
    if name is None or name == "*" or hasattr(imported, name):
        return None
    try:  # `from package import submodule`
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return f"{module} has no {name}"
    return None


BLOCKS = python_blocks()


@pytest.mark.parametrize("package", ["munjang", "munjang.search"])
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__, f"{package}.__all__ is empty"
    assert len(set(module.__all__)) == len(module.__all__), f"{package}.__all__ repeats a name"
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing, f"{package}: {missing}"
    assert set(module.__all__) <= set(dir(module))


def test_importing_the_packages_does_not_import_torch() -> None:
    """The lazy names keep `import munjang` and a searcher's `import munjang.search` light."""
    code = (
        "import json, sys\n"
        "import munjang\n"
        "after_munjang = 'torch' in sys.modules\n"
        "import munjang.search\n"
        "print(json.dumps([after_munjang, 'torch' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [False, False]


def test_the_docs_have_python_examples_that_import_munjang() -> None:
    assert any(where.startswith("README.md") for where, _ in BLOCKS)
    assert sum(len(munjang_imports(code)) for _, code in BLOCKS) >= 20


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_the_docs_imports_resolve(where: str, code: str) -> None:
    """Each munjang import in a doc's example names a module and a name that exist; the example
    itself is not run (most need models, data or a server)."""
    path, line = where.rsplit(":", 1)
    failures = [
        f"{path}:{int(line) + lineno - 1}: {module}{'' if name is None else f' import {name}'}: {why}"
        for lineno, module, name in munjang_imports(code)
        if (why := unresolved(module, name)) is not None
    ]
    assert not failures, "\n".join(failures)
