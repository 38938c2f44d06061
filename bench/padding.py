"""Padding wasted by batching: munjang's token budget vs sentence-transformers' character-length sort.

Both sort longest first; sentence-transformers sorts by character count and cuts batches of 32,
munjang sorts by exact token count and fills batches up to a padded-token budget. Reported: the
share of computed tokens that are padding, per corpus language.

    python bench/padding.py                         # embedded all-MiniLM-L6-v2, 10,000 sentences
    python bench/padding.py --model multilingual-e5-small
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    env = print_environment()
    import munjang
    from munjang.encoders.dense.encoder import DEFAULT_MAX_ROWS, DEFAULT_MAX_TOKENS, TOKENIZE_CHUNK
    from munjang.inference import padding_fraction, token_budget_batches

    enc = munjang.load_encoder(args.model, device="cpu")
    results = {}
    for lang in ("en", "ko", "mixed"):
        corpus = load_corpus(args.n, seed=0, lang=lang)
        lengths = np.array([len(ids) for ids in enc.transformer.tokenize(corpus)["input_ids"]])
        real = padded = 0
        for start in range(0, len(corpus), TOKENIZE_CHUNK):
            part = lengths[start : start + TOKENIZE_CHUNK]
            batches = token_budget_batches(part, DEFAULT_MAX_TOKENS, DEFAULT_MAX_ROWS)
            real += int(part.sum())
            padded += sum(len(b) * int(part[b].max()) for b in batches)
        by_chars = np.argsort([-len(t) for t in corpus], kind="stable")
        st_batches = [by_chars[i : i + 32] for i in range(0, len(corpus), 32)]
        results[lang] = {
            "mean_tokens": round(float(lengths.mean()), 2),
            "munjang_padding": round(1 - real / padded, 4),
            "st_padding_bs32": round(padding_fraction(lengths, st_batches), 4),
        }
        r = results[lang]
        print(
            f"{lang:<6} mean {r['mean_tokens']:6.1f} tokens  munjang {r['munjang_padding']:.1%}  "
            f"sentence-transformers {r['st_padding_bs32']:.1%}"
        )
    if not args.no_write:
        name = "padding" if args.model is None else f"padding-{Path(args.model).name}"
        payload = {"model": args.model or "all-MiniLM-L6-v2 (embedded)", "n": args.n, "results": results}
        print(f"wrote {write_result(name, payload, env=env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
