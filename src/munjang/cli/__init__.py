"""The `munjang` command: `main` parses the arguments and runs one command group's module."""

from .main import main

__all__ = ["main"]
