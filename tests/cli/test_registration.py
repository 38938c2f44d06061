"""How the `munjang` command is put together: every command module's `app` is in main.COMMANDS once,
no two commands of one group share a name (typer would keep the last without a word), and importing
the command loads no model code."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import typer

import munjang.cli
from munjang.cli.main import COMMANDS, app


def test_every_command_module_is_in_the_table_once() -> None:
    with_commands = set()
    for info in pkgutil.iter_modules(munjang.cli.__path__):
        if info.name == "__main__":  # runs the command
            continue
        module = importlib.import_module(f"munjang.cli.{info.name}")
        if isinstance(getattr(module, "app", None), typer.Typer) and info.name != "main":
            with_commands.add(module.__name__)
    listed = [module.__name__ for group in COMMANDS for module in group.modules]
    assert sorted(listed) == sorted(with_commands)


def test_no_command_hides_another() -> None:
    names: dict[str | None, list[str]] = {}
    for group in COMMANDS:
        names[group.name] = [
            info.name or info.callback.__name__.replace("_", "-")
            for module in group.modules
            for info in module.app.registered_commands
            if info.callback is not None
        ]
        assert len(names[group.name]) == len(set(names[group.name])), f"{group.name}: {names[group.name]}"
    assert not set(names[None]) & set(names), "a top-level command has a group's name"
    top = typer.main.get_command(app)
    assert isinstance(top, typer.core.TyperGroup)
    assert len(top.commands) == len(names[None]) + len(names) - 1


def test_importing_the_command_does_not_import_torch() -> None:
    """`munjang --help` and a typo's error stay fast: commands import their models inside."""
    code = "import json, sys\nimport munjang.cli\nprint(json.dumps('torch' in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) is False
