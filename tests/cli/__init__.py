"""Tests of the `munjang` command (munjang/cli.py and the cli_*.py modules beside it)."""
