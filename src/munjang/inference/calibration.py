"""The bundled calibration texts: Korean and English, short and long, shipped with munjang.

Two things need texts that look like what users encode without asking the user for any: the automatic
backend checks each candidate's vectors against fp32 on them (`autotune`), and static int8 sets its
activation ranges from them (`static_int8`). Both use this one set so that what was calibrated is what
was checked.
"""

from __future__ import annotations

import json
from importlib.resources import files

import numpy as np


def calibration_texts() -> list[str]:
    """Korean and English sentences from the bundled demo data, alone and joined into passages of up
    to eight sentences (about 10 to 150 tokens), in a fixed order."""
    resources = files("munjang.resources")
    lines = resources.joinpath("demo_corpus.txt").read_text(encoding="utf-8").splitlines()
    rows = resources.joinpath("demo_collection.jsonl").read_text(encoding="utf-8").splitlines()
    base = [t for t in lines + [json.loads(r)["text"] for r in rows if r.strip()] if t.strip()]
    rng = np.random.default_rng(0)
    joined = [" ".join(rng.choice(base, size=int(rng.integers(2, 9)))) for _ in range(2 * len(base))]
    return base + joined
