"""`munjang mcp` and `munjang serve --otlp-endpoint` without their extras: one error line naming the
`pip install` that fixes it, before any model is loaded."""

from __future__ import annotations

import sys

import pytest

from tests.helpers.cli import run_cli


@pytest.mark.parametrize(
    ("args", "module", "extra"),
    [
        (["mcp", "--collections-dir", "."], "mcp", "munjang[mcp]"),
        (
            ["serve", "--otlp-endpoint", "http://127.0.0.1:4318/v1/traces"],
            "opentelemetry.sdk",
            "munjang[otel]",
        ),
        (["serve", "--mcp"], "mcp", "munjang[mcp]"),
    ],
)
def test_a_missing_extra_is_one_error_line(args, module, extra, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails as if not installed
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert f"pip install '{extra}'" in err
