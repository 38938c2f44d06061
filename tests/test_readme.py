"""The README's quick start runs as written, and runs again in the same folder."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_the_quick_start_runs_twice(e5_path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MUNJANG_MODELS", str(e5_path.parent))
    code = quick_start()
    for _ in range(2):
        exec(compile(code, "README.md", "exec"), {})
        printed = capsys.readouterr().out.splitlines()
        assert printed[-2].startswith("a ")  # the stock sentence first for "주식 폭락"
