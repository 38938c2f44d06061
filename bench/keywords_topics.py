"""Korean keywords and topics with multilingual-e5-small, beside KeyBERT and BERTopic on the same inputs.

Keywords: KorSTS test sentences and chatbot-qa questions (--keyword-docs of each, 50 by default,
shuffled with seed 0).
munjang ranks Kiwi noun-phrase candidates (similarity, MMR, Max Sum). KeyBERT gets the same candidates
(a CountVectorizer whose analyser returns them) and the same vectors (a backend over munjang's encoder
with a shared cache): the agreement figure is the share of documents given the same keywords with the
same scores (KeyBERT rounds scores to 4 decimals, so keywords tied there may come in either order).
KeyBERT as users run it on Korean (its own CountVectorizer words) is shown too: the share of its
keywords that still carry a particle or an ending (Kiwi's last morpheme is J* or E*), and its overlap
with munjang's keywords.

Topics: --topic-docs chatbot questions, embedded once. munjang's `find_topics` (UMAP 5-d, HDBSCAN,
c-TF-IDF over Kiwi nouns) and BERTopic on the same embeddings with the same UMAP and HDBSCAN settings
and the same tokens (documents passed as their Kiwi nouns): the adjusted Rand index of the two
assignments and the share of topics whose top-10 c-TF-IDF words are the same. BERTopic with its
default vectorizer on the raw Korean questions (same reduced embeddings) shows what the words look
like without Kiwi. The plot goes to bench/results/topics_chatbot.png.

    python bench/keywords_topics.py                      # about 5 minutes on 2 busy cores
    python bench/keywords_topics.py --keyword-docs 20 --topic-docs 500   # a quick check
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `common`, also under `python -m ...`

from common import RESULTS_DIR, print_environment, shared_data_dir, write_result

METHODS = (("similarity", {}), ("mmr", {"use_mmr": True}), ("maxsum", {"use_maxsum": True}))


class CachedEncoder:
    """An encoder that keeps each text's vector, so KeyBERT and munjang see exactly the same vectors
    and the second one to run does not pay for encoding again."""

    def __init__(self, encoder: Any, prompt_name: str | None) -> None:
        self.encoder = encoder
        self.prompt_name = prompt_name
        self.cache: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            vectors = self.encoder.encode(missing, prompt_name=self.prompt_name, batch_size=64)
            self.cache.update(zip(missing, vectors, strict=True))
        return np.stack([self.cache[t] for t in texts])


def load_docs(n_keyword: int, n_topic: int) -> tuple[list[str], list[str], list[str]]:
    """(KorSTS test sentences, chatbot questions for keywords, chatbot questions for topics)."""
    data = shared_data_dir()
    with open(data / "korsts" / "sts-test.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    korsts = list(dict.fromkeys(r[5] for r in rows))
    with open(data / "chatbot-qa" / "ChatbotData.csv", encoding="utf-8", newline="") as f:
        questions = list(dict.fromkeys(r["Q"] for r in csv.DictReader(f)))
    random.Random(0).shuffle(korsts)
    random.Random(0).shuffle(questions)
    return korsts[:n_keyword], questions[:n_keyword], questions[:n_topic]


def carries_ending(phrase: str) -> bool:
    """Whether Kiwi reads the last morpheme of a keyword as a particle (J*) or an ending (E*)."""
    from munjang.search.index.tokenizers import shared_kiwi

    tokens = shared_kiwi().tokenize(phrase)
    return bool(tokens) and str(tokens[-1].tag)[0] in "JE"


def same_keywords(ours: list[Any], theirs: list[tuple[str, float]]) -> bool:
    """The same keywords with the same scores, within KeyBERT's rounding to 4 decimals."""
    mine = {k.phrase: k.score for k in ours}
    return mine.keys() == dict(theirs).keys() and all(abs(mine[w] - s) <= 1.01e-4 for w, s in theirs)


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def keyword_figures(cached: CachedEncoder, docs: list[str], top_n: int) -> dict[str, Any]:
    """munjang's keywords, KeyBERT's on the same candidates and vectors, and KeyBERT's own on the docs."""
    from keybert import KeyBERT
    from keybert.backend import BaseEmbedder
    from sklearn.feature_extraction.text import CountVectorizer

    from munjang.applications import extract_candidates, extract_keywords

    class Backend(BaseEmbedder):  # type: ignore[misc]
        def embed(self, documents: list[str], verbose: bool = False) -> np.ndarray:
            return cached.encode(list(documents))

    kiwi_started = time.perf_counter()
    candidates = extract_candidates(docs)
    candidate_seconds = time.perf_counter() - kiwi_started
    by_doc = dict(zip(docs, candidates, strict=True))
    keybert = KeyBERT(model=Backend())
    out: dict[str, Any] = {
        "documents": len(docs),
        "candidates_per_document": round(float(np.mean([len(c) for c in candidates])), 2),
        "candidate_extraction_seconds": round(candidate_seconds, 3),
    }
    ours_by_method = {}
    for method, flags in METHODS:
        started = time.perf_counter()
        ours = extract_keywords(cached, docs, top_n=top_n, method=method, candidates=candidates)
        ours_seconds = time.perf_counter() - started
        started = time.perf_counter()
        vectorizer = CountVectorizer(analyzer=lambda doc: by_doc[doc])
        theirs = keybert.extract_keywords(docs, vectorizer=vectorizer, top_n=top_n, **flags)
        theirs_seconds = time.perf_counter() - started
        # KeyBERT's Max Sum returns nothing for a document with fewer candidates than top_n (munjang
        # returns them all, ranked): those documents are counted apart, not compared.
        compared = [i for i, ref in enumerate(theirs) if ref or len(candidates[i]) >= top_n]
        # The same keywords with the same scores; KeyBERT rounds scores to 4 decimals, so two keywords
        # of one document can tie there and come in either order.
        same = [same_keywords(ours[i], theirs[i]) for i in compared]
        ours_by_method[method] = ours
        out[method] = {
            "identical_to_keybert": round(float(np.mean(same)), 4) if same else None,
            "documents_compared": len(compared),
            "munjang_seconds": round(ours_seconds, 3),
            "keybert_seconds_cached_vectors": round(theirs_seconds, 3),
        }
    started = time.perf_counter()
    plain = keybert.extract_keywords(docs, keyphrase_ngram_range=(1, 2), stop_words=None, top_n=top_n)
    plain_seconds = time.perf_counter() - started
    plain_words = [w for ref in plain for w, _ in ref]
    mine = ours_by_method["similarity"]
    overlap = [jaccard({w for w, _ in r}, {k.phrase for k in m}) for r, m in zip(plain, mine, strict=True)]
    munjang_words = [k.phrase for m in mine for k in m]
    out["keybert_own_candidates"] = {
        "share_with_particle_or_ending": round(float(np.mean([carries_ending(w) for w in plain_words])), 4),
        "munjang_share_with_particle_or_ending": round(
            float(np.mean([carries_ending(w) for w in munjang_words])), 4
        ),
        "jaccard_with_munjang": round(float(np.mean(overlap)), 4),
        "seconds": round(plain_seconds, 3),
    }
    out["samples"] = [
        {
            "text": doc,
            "munjang": [[k.phrase, round(k.score, 4)] for k in mine[i]],
            "munjang_mmr": [[k.phrase, round(k.score, 4)] for k in ours_by_method["mmr"][i]],
            "keybert_own_candidates": [[w, s] for w, s in plain[i]],
        }
        for i, doc in enumerate(docs[:5])
    ]
    return out


def topic_figures(encoder: Any, docs: list[str], min_topic_size: int, plot: Path) -> dict[str, Any]:
    """munjang's topics and BERTopic's on the same embeddings, settings and tokens."""
    import umap
    from bertopic import BERTopic
    from bertopic.dimensionality import BaseDimensionalityReduction
    from sklearn.cluster import HDBSCAN
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import adjusted_rand_score

    from munjang.applications import find_topics
    from munjang.applications.class_tfidf import c_tf_idf, class_counts, topic_tokens
    from munjang.applications.projection import project_2d, reduce_dimensions
    from munjang.applications.topic_plot import plot_topics

    started = time.perf_counter()
    vectors = encoder.encode(docs, prompt_name="query", batch_size=64, normalize_embeddings=True)
    encode_seconds = time.perf_counter() - started
    project_2d(reduce_dimensions(vectors[:200], 5, 0), "umap")  # numba compiles UMAP once, untimed
    started = time.perf_counter()
    model = find_topics(None, docs, min_topic_size=min_topic_size, embeddings=vectors, seed=0)
    munjang_seconds = time.perf_counter() - started
    plot_topics(model, plot, title=f"{len(docs)} chatbot-qa questions, multilingual-e5-small")

    started = time.perf_counter()
    tokens = topic_tokens(docs)  # BERTopic is timed with the tokenizing it is handed
    joined = [" ".join(t) for t in tokens]
    tokens_seconds = time.perf_counter() - started
    reducer = umap.UMAP(
        n_components=5, n_neighbors=15, min_dist=0.0, metric="cosine", random_state=0, n_jobs=1
    )
    bertopic = BERTopic(
        umap_model=reducer,
        hdbscan_model=HDBSCAN(min_cluster_size=min_topic_size),
        vectorizer_model=CountVectorizer(analyzer=str.split),
        language="multilingual",
    )
    started = time.perf_counter()
    their_labels = np.asarray(bertopic.fit_transform(joined, embeddings=vectors)[0])
    bertopic_seconds = time.perf_counter() - started + tokens_seconds
    ours = [t for t in model.topics if t.id >= 0]
    # Topics of equal size may be numbered the other way round (BERTopic sorts sizes with an unstable
    # sort), so each munjang topic is paired with the BERTopic topic most of its documents went to.
    # Words of equal weight may come in another order (or swap at the 10th place): a topic's words
    # agree when the weights of the two top-10 lists are the same and each of BERTopic's words has
    # that weight in munjang's c-TF-IDF.
    pair = {
        int(t): int(np.bincount(their_labels[model.assignments == t] + 1).argmax()) - 1
        for t in sorted(set(model.assignments.tolist()))
    }
    classes, vocabulary, counts = class_counts(tokens, model.assignments)
    weights = c_tf_idf(counts)
    bertopic_vocabulary = list(bertopic.vectorizer_model.get_feature_names_out())
    column = {w: j for j, w in enumerate(vocabulary)}
    row = {c: i for i, c in enumerate(classes)}
    their_rows = sorted(set(their_labels.tolist()))
    same_words = []
    for t in ours:
        theirs = [(w, s) for w, s in bertopic.get_topic(pair[t.id]) if w]
        mine = {w: float(weights[row[t.id], column[w]]) for w, _ in theirs}
        same_words.append(
            np.allclose([s for _, s in t.words], [s for _, s in theirs], rtol=1e-9)
            and all(abs(mine[w] - s) <= 1e-9 * max(1.0, s) for w, s in theirs)
        )
    aligned = bertopic.c_tf_idf_.toarray()[[their_rows.index(pair[c]) for c in classes]]
    same_vocabulary = bertopic_vocabulary == vocabulary
    difference = float(np.abs(weights.toarray() - aligned).max()) if same_vocabulary else None
    plain = BERTopic(
        umap_model=BaseDimensionalityReduction(),
        hdbscan_model=HDBSCAN(min_cluster_size=min_topic_size),
        language="multilingual",
    )
    plain.fit(docs, embeddings=reducer.embedding_)
    plain_words = [w for t in plain.get_topics() if t >= 0 for w, _ in plain.get_topic(t)]
    return {
        "documents": len(docs),
        "min_topic_size": min_topic_size,
        "encode_seconds": round(encode_seconds, 2),
        "munjang": {
            "topics": len(ours),
            "outliers": model.n_outliers,
            "seconds_after_encoding": round(munjang_seconds, 2),
            "seconds_include": "UMAP 5-d, HDBSCAN, Kiwi nouns, c-TF-IDF, and the 2-D UMAP map",
            "reduction": model.reduction,
        },
        "bertopic": {
            "topics": int(sum(1 for t in bertopic.get_topics() if t >= 0)),
            "outliers": int((their_labels == -1).sum()),
            "seconds_after_encoding": round(bertopic_seconds, 2),
            "seconds_include": "Kiwi nouns (munjang's), UMAP 5-d, HDBSCAN, c-TF-IDF; no 2-D map",
        },
        "adjusted_rand_index": round(float(adjusted_rand_score(model.assignments, their_labels)), 4),
        "topics_numbered_alike": sum(1 for c, b in pair.items() if c == b),
        "same_top_words_share": round(float(np.mean(same_words)) if same_words else 0.0, 4),
        "c_tf_idf_max_abs_difference": difference,
        "bertopic_default_vectorizer": {
            "share_of_words_with_particle_or_ending": round(
                float(np.mean([carries_ending(w) for w in plain_words])), 4
            ),
            "labels": [plain.topic_labels_[t] for t in sorted(plain.topic_labels_) if t >= 0][:8],
        },
        "topics": [t.to_dict(docs) for t in model.topics[:11]],
        "plot": str(plot.relative_to(RESULTS_DIR.parent.parent)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--keyword-docs", type=int, default=50, help="KorSTS and chatbot docs each")
    parser.add_argument("--topic-docs", type=int, default=2000, help="chatbot questions for topics")
    parser.add_argument("--min-topic-size", type=int, default=15)
    parser.add_argument("--top-n", type=int, default=5)
    args = parser.parse_args(argv)

    import munjang
    from munjang.applications import extract_candidates

    env = print_environment()
    encoder = munjang.load_encoder(args.model, device="cpu")
    korsts, chat, topic_docs = load_docs(args.keyword_docs, args.topic_docs)
    started = time.perf_counter()
    results: dict[str, Any] = {"model": args.model, "prompt_name": "query"}
    for name, docs in (("keywords_korsts", korsts), ("keywords_chatbot", chat)):
        cached = CachedEncoder(encoder, "query")
        encode_started = time.perf_counter()
        cached.encode(docs)
        cached.encode([c for found in extract_candidates(docs) for c in found])
        figures = {"encode_seconds": round(time.perf_counter() - encode_started, 2)}
        figures.update(keyword_figures(cached, docs, args.top_n))
        results[name] = figures
        print(name, {k: v for k, v in figures.items() if k != "samples"}, flush=True)
    plot = RESULTS_DIR / "topics_chatbot.png"
    results["topics_chatbot"] = topic_figures(encoder, topic_docs, args.min_topic_size, plot)
    print("topics_chatbot", {k: v for k, v in results["topics_chatbot"].items() if k != "topics"}, flush=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    path = write_result("keywords_topics", results, env)
    print(f"wrote {path} and {plot} in {results['total_seconds']} s")


if __name__ == "__main__":
    main()
