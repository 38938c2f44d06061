"""What tuning a collection's Korean analysis buys on a domain set built from AutoRAG-ko (issue 73):
a user dictionary, synonyms and typo-tolerant queries, for BM25 and the default hybrid, with the
cost beside it (analysis speed, stored tokens, the time to re-analyse the collection).

The domain set, built reproducibly from AutoRAG-ko's 720 pages and 114 questions:
- the dictionary: noun compounds written as one word that Kiwi splits into 2-4 nouns (e.g.
  주택담보대출 -> 주택 담보 대출), at least 4 characters, found on at least 3 pages (a team builds its
  dictionary from its own documents the same way);
- `original`: the 114 questions as they are (no loss allowed here);
- `term`: one query per dictionary term found on 2-10 pages, the term alone, relevant = those pages;
- `abbreviation`: questions naming a dictionary term of 2-4 nouns, the term replaced by its
  abbreviation (the first syllable of each noun, 주택담보대출 -> 주택담대... -> 주담대, as Korean
  줄임말 are formed) where that abbreviation is on no page; the synonym rules are "abbreviation, term";
- `typo`: questions with one typical typo in a noun (ㅐ/ㅔ, ㅚ/ㅙ/ㅞ, ㅢ/ㅣ swapped in one syllable).

Each variant is set on one collection with `Collection.set_analysis` (the re-analysis is timed),
then every query set is searched by BM25 and by hybrid. R@1 and nDCG@10 (AutoRAG's recall).

    flock /tmp/munjang-bench.lock python bench/korean_user_dict.py
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from autorag import load_autorag
from common import print_environment, write_result
from munjang.evaluation.retrieval import evaluate_rankings
from munjang.search.collection.collection import Collection
from munjang.search.index.analysis import AnalysisSettings, Analyzer
from munjang.search.index.synonyms import SynonymRule
from munjang.search.index.tokenizers import get_tokenizer, shared_kiwi
from munjang.search.index.user_dictionary import UserWord

NOUNS = ("NNG", "NNP")
# Vowel swaps Korean writers make (and Kiwi's basic typo model knows): (medial index, its twin).
TWINS = {1: 5, 5: 1, 11: 10, 10: 15, 15: 11, 19: 20, 20: 19}  # ㅐ/ㅔ, ㅚ/ㅙ/ㅞ, ㅢ/ㅣ


def compounds(text: str) -> list[tuple[str, list[str]]]:
    """(word, its nouns) for each run of 2-4 nouns Kiwi finds inside one space-free word."""
    out = []
    tokens = shared_kiwi().tokenize(text)
    run: list[Any] = []
    for token in [*tokens, None]:
        joined = token is not None and token.tag in NOUNS and (not run or token.start == run[-1].end)
        if joined:
            run.append(token)
            continue
        if 2 <= len(run) <= 4:
            word = text[run[0].start : run[-1].end]
            if len(word) >= 4 and word == "".join(t.form for t in run):
                out.append((word, [t.form for t in run]))
        run = [token] if token is not None and token.tag in NOUNS else []
    return out


def typo(text: str, rng: random.Random) -> str | None:
    """`text` with one vowel of a noun swapped for its common misspelling, or None."""
    spots = []
    for token in shared_kiwi().tokenize(text):
        if token.tag not in NOUNS or token.len < 2:
            continue
        for i in range(token.start, token.end):
            code = ord(text[i]) - 0xAC00
            if 0 <= code < 11172 and (code // 28) % 21 in TWINS:
                spots.append(i)
    if not spots:
        return None
    i = rng.choice(spots)
    code = ord(text[i]) - 0xAC00
    medial = (code // 28) % 21
    swapped = chr(0xAC00 + (code // 588) * 588 + TWINS[medial] * 28 + code % 28)
    return text[:i] + swapped + text[i + 1 :]


def domain_set(
    pages: dict[str, str], questions: dict[str, str], relevant: dict[str, set[str]]
) -> dict[str, Any]:
    found: dict[str, list[str]] = {}
    where: dict[str, set[str]] = {}
    for pid, text in pages.items():
        for word, nouns in compounds(text):
            found[word] = nouns
            where.setdefault(word, set()).add(pid)
    dictionary = sorted(w for w in found if len(where[w]) >= 3)
    sets: dict[str, tuple[dict[str, str], dict[str, set[str]]]] = {"original": (questions, relevant)}
    terms = [w for w in dictionary if 2 <= len(where[w]) <= 10]
    sets["term"] = (
        {f"t{i}": w for i, w in enumerate(terms)},
        {f"t{i}": where[w] for i, w in enumerate(terms)},
    )
    everything = "\n".join(pages.values())
    rules: list[SynonymRule] = []
    abbreviated: dict[str, str] = {}
    for qid, question in questions.items():
        for word, nouns in compounds(question):
            short = "".join(n[0] for n in found.get(word, nouns))
            if word in found and len(short) >= 2 and short not in everything:
                abbreviated[qid] = question.replace(word, short)
                rules.append(SynonymRule((short, word)))
                break
    sets["abbreviation"] = (abbreviated, {q: relevant[q] for q in abbreviated})
    rng = random.Random(13)
    typos = {q: t for q, text in questions.items() if (t := typo(text, rng)) is not None}
    sets["typo"] = (typos, {q: relevant[q] for q in typos})
    return {
        "dictionary": [UserWord(w, "NNG") for w in dictionary],
        "synonyms": rules,
        "sets": sets,
        "examples": {
            "dictionary": dictionary[:10],
            "abbreviation": list(abbreviated.values())[:3],
            "typo": list(typos.values())[:3],
        },
    }


def scores(
    col: Collection, queries: dict[str, str], relevant: dict[str, set[str]], mode: str
) -> dict[str, float]:
    ids = list(queries)
    hits = col.search([queries[q] for q in ids], k=10, mode=mode)
    rankings = {q: list(dict.fromkeys(h.id for h in found)) for q, found in zip(ids, hits, strict=True)}
    metrics = evaluate_rankings(rankings, {q: {d: 1 for d in relevant[q]} for q in ids}, k_values=(1, 10))
    recall1 = statistics.fmean(len(set(rankings[q][:1]) & relevant[q]) / len(relevant[q]) for q in ids)
    return {"r@1": round(recall1, 4), "ndcg@10": round(metrics["ndcg@10"], 4), "queries": len(ids)}


def analysis_speed(texts: list[str], settings: AnalysisSettings) -> dict[str, float]:
    analyzer = Analyzer(get_tokenizer("auto").get_config_dict(), settings)
    analyzer.documents.tokenize_many(texts[:20])  # load Kiwi and the dictionary first
    start = time.perf_counter()
    tokens = analyzer.documents.tokenize_many(texts)
    seconds = time.perf_counter() - start
    chars = sum(len(t) for t in texts)
    return {
        "chars_per_s": round(chars / seconds),
        "tokens": sum(len(t) for t in tokens),
        "vocabulary": len(Counter(t for each in tokens for t in each)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-user-dict")
    parser.add_argument("--name", default="korean_user_dict")
    args = parser.parse_args()
    env = print_environment()
    pages, questions, relevant = load_autorag()
    built = domain_set(pages, questions, relevant)
    print(f"dictionary {len(built['dictionary'])} words, synonyms {len(built['synonyms'])} rules;",
          {k: len(v[0]) for k, v in built["sets"].items()}, built["examples"])  # fmt: skip
    folder = args.cache / "collection"
    if not folder.exists():
        col = Collection.create(folder)
        col.add(list(pages), list(pages.values()), show_progress_bar=True)
        col.close()
    col = Collection.open(folder)
    col.set_analysis(AnalysisSettings())
    variants = {
        "default": AnalysisSettings(),
        "dictionary": AnalysisSettings(user_words=tuple(built["dictionary"]), compounds="whole"),
        "dictionary-both": AnalysisSettings(user_words=tuple(built["dictionary"]), compounds="both"),
        "synonyms": AnalysisSettings(synonyms=tuple(built["synonyms"])),
        "typos": AnalysisSettings(typos="basic"),
        "all": AnalysisSettings(
            user_words=tuple(built["dictionary"]),
            compounds="both",
            synonyms=tuple(built["synonyms"]),
            typos="basic",
        ),
    }
    rows: dict[str, Any] = {}
    texts = list(pages.values())
    for name, settings in variants.items():
        start = time.perf_counter()
        analysed = col.set_analysis(settings)
        seconds = time.perf_counter() - start
        row: dict[str, Any] = {"reanalysis_s": round(seconds, 2), "passages_reanalysed": analysed}
        row["analysis"] = analysis_speed(texts, settings)
        for set_name, (queries, gold) in built["sets"].items():
            for mode in ("lexical", "hybrid"):
                row[f"{set_name}/{mode}"] = scores(col, queries, gold, mode)
        rows[name] = row
        print(name, row, flush=True)
    col.set_analysis(AnalysisSettings())
    col.close()
    sizes = {"dictionary_words": len(built["dictionary"]), "synonym_rules": len(built["synonyms"])}
    path = write_result(
        args.name, {"variants": rows, "domain_set": sizes, "examples": built["examples"]}, env
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
