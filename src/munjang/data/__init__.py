"""Data readers: sentence-pair similarity (STS) files into plain Python lists."""

from .sts import STSData, read_sts

__all__ = ["STSData", "read_sts"]
