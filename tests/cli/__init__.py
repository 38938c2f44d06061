"""Tests of the `munjang` command (the `munjang.cli` package: one module per command group)."""
