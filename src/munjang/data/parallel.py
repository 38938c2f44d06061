"""Parallel sentences (a sentence and its translation), for multilingual distillation and its evaluation.

- `read_parallel`: a TSV/CSV or JSON Lines file with one source sentence and one target sentence per row.
- `align_stsb_korsts`: English-Korean pairs from the STS Benchmark and KorSTS, which translates it row by row.
- `align_sts_pairs`: the same alignment kept per scored pair, for cross-lingual STS training.
- `split_parallel`: a reproducible held-out part, e.g. for `TranslationEvaluator` or `MSEEvaluator`.

STSb/KorSTS alignment, as found in the shared files: in every split (train, dev, test) the key
(genre, filename, year, id) is unique in both files, both files list the keys in the same order, and
the scores of aligned rows are identical strings. Both datasets spell the forum genre ``main-forum``
in train and ``main-forums`` in dev/test; the two spellings are treated as one. Aligned rows give
11,498 / 3,000 / 2,758 pairs (train/dev/test), 10,536 / 2,910 / 2,552 after removing repeated pairs;
every English sentence has a single Korean translation within a split. Sentences are stripped of
surrounding whitespace (311 train and 12 test STSb sentences end in a space that KorSTS lacks).
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataFormatError
from .checks import check_same_length
from .sts import KORSTS_HEADER, STSB_MIN_FIELDS, Column, RowReader
from .table import TableFile

# STSb and KorSTS both spell the forum genre `main-forum` in train and `main-forums` in dev and test.
GENRE_SPELLINGS = {"main-forums": "main-forum"}


@dataclass
class ParallelData:
    """`targets[i]` translates `sources[i]`.

    `origin` names the file(s) the pairs came from (not `source`, which would read like `sources`);
    `info` holds counts from the reader, e.g. rows left out.
    """

    sources: list[str]
    targets: list[str]
    origin: str = ""
    info: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_same_length(sources=self.sources, targets=self.targets)

    def __len__(self) -> int:
        return len(self.sources)


def read_parallel(
    path: str | os.PathLike[str],
    *,
    source: Column | None = None,
    target: Column | None = None,
    delimiter: str | None = None,
    has_header: bool | None = None,
    quoting: int | None = None,
) -> ParallelData:
    """Read (source, target) sentence pairs.

    By default a delimited file (``.tsv``: tab, ``.csv``: comma) has no header and the pair in columns 0
    and 1 (further columns are ignored); JSON Lines records have ``source`` and ``target`` fields. Give
    column names to read a file with a header, e.g. ``source="english", target="non_english"``. Tab
    files are read with quoting turned off. An empty sentence or a short row raises `DataFormatError`
    with the file and line.
    """
    table = TableFile(path, delimiter=delimiter, has_header=has_header, quoting=quoting)
    default_source, default_target = ("source", "target") if table.is_json else (0, 1)
    columns = (default_source if source is None else source, default_target if target is None else target)
    sources: list[str] = []
    targets: list[str] = []
    for line, (s, t) in table.records(columns):
        sources.append(table.text(s, line, columns[0]))
        targets.append(table.text(t, line, columns[1]))
    if not sources:
        raise table.empty("sentence pairs")
    return ParallelData(sources, targets, origin=table.display)


@dataclass(frozen=True)
class _STSRow:
    line: int
    key: tuple[str, str, str, str]
    score: float
    sentence1: str
    sentence2: str


def _sts_rows(path: str | os.PathLike[str], korsts: bool) -> list[_STSRow]:
    """Keyed rows of a KorSTS (header, 7 fields) or STSb (no header, 7 or more fields) file."""
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"STS data file not found: {path}")
    reader = RowReader(file, display=os.fspath(path), min_score=0.0, max_score=5.0)
    rows = reader.rows()
    if korsts:
        header = next(rows, None)
        if header is None or tuple(header[1]) != KORSTS_HEADER:
            line = header[0] if header else 1
            raise reader.error(line, f"expected the KorSTS header {' '.join(KORSTS_HEADER)!r}")
    out: list[_STSRow] = []
    for line, fields in rows:
        if len(fields) < STSB_MIN_FIELDS or (korsts and len(fields) != len(KORSTS_HEADER)):
            raise reader.error(line, f"{len(fields)} tab-separated fields, expected {STSB_MIN_FIELDS}")
        genre, filename, year, pair_id = (f.strip() for f in fields[:4])
        key = (GENRE_SPELLINGS.get(genre, genre), filename, year, pair_id)
        score = reader.score(fields[4], line)
        s1 = reader.sentence(fields[5], line, "sentence1").strip()
        s2 = reader.sentence(fields[6], line, "sentence2").strip()
        out.append(_STSRow(line, key, score, s1, s2))
    if not out:
        raise DataFormatError(f"{reader.display}: no sentence pairs in the file")
    return out


@dataclass(frozen=True)
class AlignedSTSPair:
    """One STS pair in English (STSb) and in Korean (KorSTS), with its gold score (0-5)."""

    english: tuple[str, str]
    korean: tuple[str, str]
    score: float


@dataclass
class _Alignment:
    matched: list[tuple[_STSRow, _STSRow]]
    unmatched_stsb: int
    unmatched_korsts: int
    score_mismatches: int


def _align_rows(
    stsb_path: str | os.PathLike[str], korsts_path: str | os.PathLike[str], strict: bool
) -> _Alignment:
    english = _sts_rows(stsb_path, korsts=False)
    korean = _sts_rows(korsts_path, korsts=True)
    by_key: dict[tuple[str, str, str, str], list[_STSRow]] = defaultdict(list)
    for row in korean:
        by_key[row.key].append(row)
    taken: dict[tuple[str, str, str, str], int] = defaultdict(int)
    matched: list[tuple[_STSRow, _STSRow]] = []
    unmatched_en = mismatches = 0
    for en in english:
        candidates = by_key.get(en.key, [])
        if taken[en.key] >= len(candidates):
            if strict:
                raise DataFormatError(
                    f"{os.fspath(stsb_path)} line {en.line}: no KorSTS row with key {en.key} "
                    f"in {os.fspath(korsts_path)}"
                )
            unmatched_en += 1
            continue
        ko = candidates[taken[en.key]]
        taken[en.key] += 1
        if en.score != ko.score:
            if strict:
                raise DataFormatError(
                    f"{os.fspath(stsb_path)} line {en.line}: score {en.score:g} differs from "
                    f"{ko.score:g} on {os.fspath(korsts_path)} line {ko.line} (same key {en.key})"
                )
            mismatches += 1
            continue
        matched.append((en, ko))
    unmatched_ko = sum(len(rows) - taken[key] for key, rows in by_key.items())
    if strict and unmatched_ko:
        extra = next(r for key, rows in by_key.items() for r in rows[taken[key] :])
        raise DataFormatError(
            f"{os.fspath(korsts_path)} line {extra.line}: no STSb row with key {extra.key} "
            f"in {os.fspath(stsb_path)}"
        )
    if not matched:
        raise DataFormatError(
            f"{os.fspath(stsb_path)} and {os.fspath(korsts_path)}: no rows could be aligned"
        )
    return _Alignment(matched, unmatched_en, unmatched_ko, mismatches)


def align_sts_pairs(
    stsb_path: str | os.PathLike[str],
    korsts_path: str | os.PathLike[str],
    *,
    strict: bool = True,
) -> list[AlignedSTSPair]:
    """Row-by-row STSb/KorSTS alignment: each scored pair in both languages, in STSb row order.

    Matching and errors are as in `align_stsb_korsts`. This is the data for cross-lingual STS training:
    the English pair, the Korean pair and the mixed pairs (English sentence1 with Korean sentence2 and
    the reverse) all carry the same gold score.
    """
    alignment = _align_rows(stsb_path, korsts_path, strict)
    return [
        AlignedSTSPair((en.sentence1, en.sentence2), (ko.sentence1, ko.sentence2), en.score)
        for en, ko in alignment.matched
    ]


def align_stsb_korsts(
    stsb_path: str | os.PathLike[str],
    korsts_path: str | os.PathLike[str],
    *,
    strict: bool = True,
) -> ParallelData:
    """English-to-Korean sentence pairs from an STSb file and the KorSTS file of the same split.

    Rows are matched on (genre, filename, year, id), with the genre spellings ``main-forum`` and
    ``main-forums`` taken as one; if a key occurs several times in a file, its occurrences are matched
    in order. Each matched row gives two pairs (sentence1_en -> sentence1_ko, sentence2_en ->
    sentence2_ko), in STSb row order, stripped of surrounding whitespace; repeated identical pairs are
    kept once.

    With `strict=True` (the default) a row without a partner, or a matched row whose scores differ (a
    sign that the files are not translations of each other), raises DataFormatError naming the file and
    line. With `strict=False` such rows are left out. Either way `info` counts them: ``rows`` (matched),
    ``unmatched_stsb``, ``unmatched_korsts``, ``score_mismatches``, ``pairs`` (before removing repeats)
    and ``duplicate_pairs``.
    """
    alignment = _align_rows(stsb_path, korsts_path, strict)
    matched = alignment.matched
    pairs: dict[tuple[str, str], None] = {}
    for en, ko in matched:
        pairs.setdefault((en.sentence1, ko.sentence1))
        pairs.setdefault((en.sentence2, ko.sentence2))
    info = {
        "rows": len(matched),
        "unmatched_stsb": alignment.unmatched_stsb,
        "unmatched_korsts": alignment.unmatched_korsts,
        "score_mismatches": alignment.score_mismatches,
        "pairs": 2 * len(matched),
        "duplicate_pairs": 2 * len(matched) - len(pairs),
    }
    return ParallelData(
        [s for s, _ in pairs],
        [t for _, t in pairs],
        origin=f"{os.fspath(stsb_path)} + {os.fspath(korsts_path)}",
        info=info,
    )


def split_parallel(data: ParallelData, held_out: int, seed: int = 0) -> tuple[ParallelData, ParallelData]:
    """(rest, held_out) with `held_out` pairs drawn at random (reproducible for a given `seed`).

    Both parts keep the original order. Pairs are drawn by position: if the data repeats a source
    sentence with different translations, both parts may contain it.
    """
    if isinstance(held_out, bool) or not isinstance(held_out, int) or not 0 <= held_out <= len(data):
        raise ValueError(f"held_out must be a whole number from 0 to {len(data)}, not {held_out!r}")
    chosen = set(random.Random(seed).sample(range(len(data)), held_out))
    rest = [i for i in range(len(data)) if i not in chosen]
    kept = sorted(chosen)

    def part(indices: list[int], name: str) -> ParallelData:
        return ParallelData(
            [data.sources[i] for i in indices],
            [data.targets[i] for i in indices],
            origin=f"{data.origin} ({name}, seed {seed})" if data.origin else "",
        )

    return part(rest, "rest"), part(kept, "held out")
