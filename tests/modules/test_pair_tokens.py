"""Pairs of long texts tokenize in time and memory that grow with their length: each text is cut
alone a few tokens past the model's limit before it is paired, and the ids a pair keeps are the
same as without the cut (the tokenizer's pair truncation kept every combination of the texts'
overflowing pieces: two 63,000-character texts took 25 s and 12 GB)."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

WORDS = [
    "시장",
    "주식이",
    "급락했다",
    "guitar",
    "playing",
    "unbelievably",
    "서울특별시",
    "2024년",
    "3.14",
    "!",
]


def texts(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


@pytest.mark.parametrize("side", ["right", "left"])
def test_cut_pairs_keep_the_same_ids(encoder, side: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    transformer = encoder.transformer
    monkeypatch.setattr(transformer.tokenizer, "truncation_side", side)
    firsts = [texts(i, n) for i, n in enumerate([3, 40, 300, 700, 900, 2000])]
    seconds = [texts(100 + i, n) for i, n in enumerate([900, 2000, 5, 700, 300, 2500])]
    uncut = transformer._token_ids(list(firsts), list(seconds), True)
    assert transformer.tokenize_pairs(firsts, seconds) == uncut
    cut_firsts, cut_seconds = list(firsts), list(seconds)
    transformer._cut_pairs(cut_firsts, cut_seconds)
    assert cut_firsts[:2] == firsts[:2] and cut_seconds[2] == seconds[2]  # short texts untouched
    assert len(cut_seconds[5]) < len(seconds[5]) // 4  # long ones cut


def test_a_pair_of_100k_character_texts_tokenizes_in_bounded_memory() -> None:
    code = (
        "import resource; from munjang import load_encoder; "
        "t = load_encoder(device='cpu').transformer; "
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
        "s = ' '.join(f'tok{i}' for i in range(14000)); assert len(s) > 100_000; "
        "ids = t.tokenize_pairs([s], [s])['input_ids'][0]; "
        "print(len(ids), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    length, grown_mb = map(int, out.split())
    assert length == 256 and grown_mb < 200, out  # was > 12,000 MB
