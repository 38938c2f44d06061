"""Data readers: sentence-pair similarity (STS) files and sentences to encode, into plain Python lists."""

from .sts import STSData, read_sts
from .texts import read_texts

__all__ = ["STSData", "read_sts", "read_texts"]
