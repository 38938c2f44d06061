"""Running the `munjang` entry point in-process, as a user would from the shell."""

from __future__ import annotations

import sys

import pytest

from munjang.cli.main import main


def run_cli(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `munjang ARGS` through `munjang.cli.main`."""
    monkeypatch.setattr(sys, "argv", ["munjang", *args])
    code = 0
    try:
        main()
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
