"""Data readers: STS pairs, NLI, parallel sentences, generic tables and sentences to encode."""

from .beir import RetrievalData, load_beir, save_beir
from .example import Example, ListwiseExample
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
from .retrieval_sets import sts_retrieval_set
from .sts import STSData, read_sts
from .table import read_table
from .texts import TextRecord, read_records, read_texts

__all__ = [
    "NLI_LABELS",
    "AlignedSTSPair",
    "Example",
    "ListwiseExample",
    "NLIData",
    "ParallelData",
    "RetrievalData",
    "STSData",
    "TextRecord",
    "TripletExamples",
    "align_sts_pairs",
    "align_stsb_korsts",
    "load_beir",
    "nli_pair_examples",
    "nli_triplet_examples",
    "read_nli",
    "read_parallel",
    "read_records",
    "read_sts",
    "read_table",
    "read_texts",
    "save_beir",
    "split_parallel",
    "sts_examples",
    "sts_retrieval_set",
]
