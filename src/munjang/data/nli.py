"""Natural language inference (NLI) data: KorNLI, SNLI, MultiNLI, into premise/hypothesis/label lists.

`read_nli` reads a TSV, CSV or JSON Lines file with a column mapping. The defaults fit KorNLI
(``xnli.dev.ko.tsv``: header ``sentence1 sentence2 gold_label``), the SNLI/MultiNLI ``.txt``/``.jsonl``
releases (same column names) and, with ``premise="premise", hypothesis="hypothesis", label="label"``,
Hugging Face exports. Labels are the names in `NLI_LABELS` (any case) or their indices 0-2.

Every row is checked: a short row, an empty sentence or an unknown label raises `DataFormatError` naming
the file and the 1-based line. SNLI marks pairs the annotators did not agree on with the label ``-``
(``-1`` in Hugging Face exports); those are an error too unless `skip_unlabeled=True`, and then they are
counted in `NLIData.skipped_unlabeled`, never dropped silently. TSV files are read with quoting turned
off (`csv.QUOTE_NONE`): KorNLI and MultiNLI contain stray ``"`` characters.

The converters build training examples: `nli_pair_examples` for a softmax classifier over (u, v),
`nli_triplet_examples` for triplet and in-batch-negatives losses.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .checks import check_same_length
from .example import Example
from .sts import Column
from .table import TableFile

logger = logging.getLogger(__name__)

NLI_LABELS = ("entailment", "neutral", "contradiction")
ENTAILMENT, NEUTRAL, CONTRADICTION = range(3)
UNLABELED_MARKERS = ("-", "-1")


@dataclass
class NLIData:
    """Premise/hypothesis pairs with a class index each (``NLI_LABELS[label]`` is its name)."""

    premises: list[str]
    hypotheses: list[str]
    labels: list[int]
    source: str = ""
    skipped_unlabeled: int = 0

    def __post_init__(self) -> None:
        check_same_length(premises=self.premises, hypotheses=self.hypotheses, labels=self.labels)
        bad = [x for x in self.labels if isinstance(x, bool) or x not in range(len(NLI_LABELS))]
        if bad:
            raise ValueError(f"labels must be class indices 0-{len(NLI_LABELS) - 1}, got {bad[0]!r}")

    def __len__(self) -> int:
        return len(self.labels)

    def label_counts(self) -> dict[str, int]:
        """How many pairs carry each label, by name, in `NLI_LABELS` order."""
        counts = Counter(self.labels)
        return {name: counts[i] for i, name in enumerate(NLI_LABELS)}


def read_nli(
    path: str | os.PathLike[str],
    *,
    premise: Column = "sentence1",
    hypothesis: Column = "sentence2",
    label: Column = "gold_label",
    skip_unlabeled: bool = False,
    delimiter: str | None = None,
    has_header: bool | None = None,
    quoting: int | None = None,
) -> NLIData:
    """Read an NLI file into `NLIData` (see the module docstring for the formats and checks).

    Columns are header names (a header row is then expected) or 0-based indices (no header row unless
    `has_header=True`); JSON Lines needs names. Files ending in ``.gz`` are decompressed transparently.

    Raises FileNotFoundError for a missing file, DataFormatError (file and line) for a malformed row or a
    file without labelled pairs, and ValueError for contradictory options.
    """
    table = TableFile(path, delimiter=delimiter, has_header=has_header, quoting=quoting)
    premises: list[str] = []
    hypotheses: list[str] = []
    labels: list[int] = []
    skipped = 0
    for line, (p, h, value) in table.records((premise, hypothesis, label)):
        label_id = _label_id(table, value, line, skip_unlabeled)
        if label_id is None:
            skipped += 1
            continue
        premises.append(table.text(p, line, premise))
        hypotheses.append(table.text(h, line, hypothesis))
        labels.append(label_id)
    if not labels:
        raise table.empty("labelled sentence pairs")
    if skipped:
        logger.info("%s: left out %d unlabeled pairs", table.display, skipped)
    return NLIData(premises, hypotheses, labels, source=table.display, skipped_unlabeled=skipped)


def _label_id(table: TableFile, value: Any, line: int, skip_unlabeled: bool) -> int | None:
    """The class index of a label field; None for an unlabeled pair when those are skipped."""
    if isinstance(value, bool):
        raise table.error(line, f"label {value!r} is not an NLI label")
    key = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if key in UNLABELED_MARKERS:
        if skip_unlabeled:
            return None
        raise table.error(
            line,
            f"label {value!r} marks a pair without a gold label; "
            "pass skip_unlabeled=True to leave such pairs out",
        )
    if key in NLI_LABELS:
        return NLI_LABELS.index(key)
    if key is not None and key.isdigit() and int(key) < len(NLI_LABELS):
        return int(key)
    raise table.error(line, f"unknown label {value!r}; expected one of {', '.join(NLI_LABELS)} (or 0-2)")


def nli_pair_examples(data: NLIData) -> list[Example]:
    """One Example per pair: texts (premise, hypothesis), label the class index (for a softmax classifier)."""
    return [Example((p, h), y) for p, h, y in zip(data.premises, data.hypotheses, data.labels, strict=True)]


class TripletExamples(list[Example]):
    """A list of triplet Examples that also says how many premises could not give a triplet."""

    def __init__(self, examples: list[Example], premises_left_out: int) -> None:
        super().__init__(examples)
        self.premises_left_out = premises_left_out


def nli_triplet_examples(data: NLIData) -> TripletExamples:
    """(premise, entailed hypothesis, contradicting hypothesis) triplets, label None.

    Pairs are grouped by premise text. A premise yields one triplet per distinct entailed hypothesis,
    each paired with one of the premise's distinct contradicting hypotheses in turn (cycling through
    them in file order), so the result is deterministic. Premises without at least one entailed and one
    contradicting hypothesis give nothing; how many is in `premises_left_out` (and logged).
    """
    groups: dict[str, tuple[dict[str, None], dict[str, None]]] = {}
    for p, h, y in zip(data.premises, data.hypotheses, data.labels, strict=True):
        entailed, contradicting = groups.setdefault(p, ({}, {}))
        if y == ENTAILMENT:
            entailed.setdefault(h)
        elif y == CONTRADICTION:
            contradicting.setdefault(h)
    triplets: list[Example] = []
    left_out = 0
    for p, (entailed, contradicting) in groups.items():
        if not entailed or not contradicting:
            left_out += 1
            continue
        negatives = list(contradicting)
        for i, positive in enumerate(entailed):
            triplets.append(Example((p, positive, negatives[i % len(negatives)])))
    if left_out:
        logger.info(
            "%s: %d of %d premises lack an entailed or a contradicting hypothesis and give no triplet",
            data.source or "NLI data",
            left_out,
            len(groups),
        )
    return TripletExamples(triplets, left_out)
