"""Texts shipped inside the package (`resources/`): the demo collection and the demo search corpus.

The demo uses them, and so does int8 calibration (SmoothQuant needs a few real sentences in both
languages), which is why they live below both.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any


def demo_documents() -> list[dict[str, Any]]:
    """The bundled demo collection: 70 sentences, Korean and English, seven topics (id, text, metadata)."""
    text = files("munjang").joinpath("resources/demo_collection.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def demo_corpus() -> list[str]:
    """The bundled search corpus (short Korean and English sentences)."""
    text = files("munjang").joinpath("resources/demo_corpus.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]
