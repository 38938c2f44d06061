"""Model folders' JSON files read and written (no torch: torch-free loaders read them too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import CorruptModelError

__all__ = ["read_json", "write_json"]


def read_json(path: Path) -> Any:
    """Read a JSON object, naming the file when it is not valid JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise CorruptModelError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    except UnicodeDecodeError as e:
        raise CorruptModelError(f"{path}: not UTF-8 text") from e
    return data


def write_json(path: Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
