"""Class-based TF-IDF (c-TF-IDF), as BERTopic defines it: which words set one cluster apart from the rest.

All documents of a class (a topic, including the outliers' class -1) are joined into one document.
For word t in class c:

    W(t, c) = tf(t, c) * log(1 + A / f(t))

where tf(t, c) is t's count in class c divided by the number of words in c (the row, L1-normalised),
f(t) the count of t over all classes and A the average number of words per class (rounded down, as
BERTopic's `int(...)`). A word frequent in one class and rare elsewhere weighs most.

Tokens: Kiwi nouns (and Latin words) for Korean documents, sklearn's word analyser (lowercased words
of two or more characters, English stop words removed) for the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from ..search.index.tokenizers import KiwiTokenizer
from .candidates import is_korean

TOPIC_TAGS = ("NNG", "NNP", "SL", "SH")


def topic_tokens(
    docs: Sequence[str], stop_words: str | Sequence[str] | None = "english", show_progress_bar: bool = False
) -> list[list[str]]:
    """The words c-TF-IDF counts for each document: Kiwi nouns for Korean, analysed words otherwise.

    A string `stop_words` ("english") applies to non-Korean documents; a list applies to both.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    korean_stop = None if isinstance(stop_words, str) else stop_words
    kiwi = KiwiTokenizer(pos_tags=TOPIC_TAGS, stopwords=korean_stop)
    words = CountVectorizer(stop_words=stop_words).build_analyzer()
    korean = [i for i, doc in enumerate(docs) if is_korean(doc)]
    out: list[list[str]] = [[] for _ in docs]
    korean_tokens = kiwi.tokenize_many([docs[i] for i in korean], show_progress_bar)
    for i, tokens in zip(korean, korean_tokens, strict=True):
        out[i] = tokens
    korean_rows = set(korean)
    for i, doc in enumerate(docs):
        if i not in korean_rows:
            out[i] = list(words(doc))
    return out


def class_counts(
    tokens: Sequence[Sequence[str]], labels: Sequence[int] | np.ndarray
) -> tuple[list[int], list[str], sparse.csr_matrix]:
    """(classes in ascending order, vocabulary in sorted order, class x word count matrix)."""
    values = np.asarray(labels)
    if len(values) != len(tokens):
        raise ValueError(f"{len(tokens)} token lists but {len(values)} labels")
    classes = sorted({int(v) for v in values})
    vocabulary = sorted({t for doc in tokens for t in doc})
    column = {t: j for j, t in enumerate(vocabulary)}
    row = {c: i for i, c in enumerate(classes)}
    rows, cols = [], []
    for doc, label in zip(tokens, values.tolist(), strict=True):
        for t in doc:
            rows.append(row[int(label)])
            cols.append(column[t])
    data = np.ones(len(rows), dtype=np.float64)
    counts = sparse.csr_matrix((data, (rows, cols)), shape=(len(classes), len(vocabulary)))
    counts.sum_duplicates()
    return classes, vocabulary, counts


def c_tf_idf(counts: sparse.spmatrix | np.ndarray) -> sparse.csr_matrix:
    """c-TF-IDF of a class x word count matrix (see the module docstring)."""
    x = sparse.csr_matrix(counts, dtype=np.float64)
    if x.shape[1] == 0:
        return x
    frequency = np.asarray(x.sum(axis=0)).ravel()
    average = int(np.asarray(x.sum(axis=1)).mean())
    idf = np.log(average / np.maximum(frequency, 1e-12) + 1)
    totals = np.asarray(x.sum(axis=1)).ravel()
    tf = sparse.diags(1.0 / np.where(totals > 0, totals, 1.0)) @ x
    return sparse.csr_matrix(tf @ sparse.diags(idf))


def top_words(
    weights: sparse.csr_matrix, vocabulary: Sequence[str], n_words: int = 10
) -> list[list[tuple[str, float]]]:
    """Each class's `n_words` heaviest words with their weights, heaviest first (zero weights left out)."""
    out = []
    for i in range(weights.shape[0]):
        row = weights.getrow(i)
        order = np.argsort(-row.data, kind="stable")[:n_words]
        out.append([(vocabulary[row.indices[k]], float(row.data[k])) for k in order if row.data[k] > 0])
    return out
