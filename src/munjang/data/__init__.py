"""Data readers: STS pairs, NLI, parallel sentences, generic tables and sentences to encode."""

from .examples import sts_examples
from .nli import NLI_LABELS, NLIData, TripletExamples, nli_pair_examples, nli_triplet_examples, read_nli
from .parallel import (
    AlignedSTSPair,
    ParallelData,
    align_sts_pairs,
    align_stsb_korsts,
    read_parallel,
    split_parallel,
)
from .sts import STSData, read_sts
from .table import read_table
from .texts import read_texts

__all__ = [
    "NLI_LABELS",
    "AlignedSTSPair",
    "NLIData",
    "ParallelData",
    "STSData",
    "TripletExamples",
    "align_sts_pairs",
    "align_stsb_korsts",
    "nli_pair_examples",
    "nli_triplet_examples",
    "read_nli",
    "read_parallel",
    "read_sts",
    "read_table",
    "read_texts",
    "split_parallel",
    "sts_examples",
]
